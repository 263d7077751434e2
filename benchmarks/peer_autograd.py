"""HIPS autograd's own test suite, run on dagrad with the namespaces swapped (issue 16).

    PYTHONPATH=src python benchmarks/peer_autograd.py [--src DIR] [--peer] [--timeout S] [-k EXPR]

Downloads autograd 1.9.1's sdist with `pip download --no-binary :all: --no-deps` (cached in
`--cache`, by default a directory under the system's temp dir), or takes an unpacked sdist with
`--src`. Copies its `tests/` to a temporary directory, replaces the word `autograd` by `dagrad` in
every `.py` file there (a word-boundary regex, nothing else changes) and runs pytest on the copy
with the dagrad of this checkout's `src/` first on the path. With pytest-timeout installed each
test gets `--timeout` seconds (default 60); without it there is no per-test limit.

Prints passed/failed/errors/skipped, the failing test ids grouped by the first line of their
error, and the wall time. `--peer` also runs the original tests on the installed autograd and
prints the ratio of the two wall times. Not a test: it needs the network (or `--src`).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

VERSION = "1.9.1"
SRC = Path(__file__).resolve().parent.parent / "src"
WORD = re.compile(r"\bautograd\b")


def fetch(cache: Path) -> Path:
    """The unpacked sdist of autograd VERSION, downloaded into `cache` once."""
    unpacked = cache / f"autograd-{VERSION}"
    if (unpacked / "tests").is_dir():
        return unpacked
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps", "--no-build-isolation",
         f"autograd=={VERSION}", "-d", str(cache)],
        check=True,
    )
    (archive,) = cache.glob(f"autograd-{VERSION}.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(cache, filter="data")
    return unpacked


def swapped_copy(tests: Path, dest: Path) -> Path:
    """`tests` copied to `dest`, with `autograd` replaced by `dagrad` in every .py file."""
    shutil.copytree(tests, dest)
    for path in sorted(dest.rglob("*.py")):
        path.write_text(WORD.sub("dagrad", path.read_text()))
    return dest


def run_pytest(tests: Path, pythonpath: str | None, timeout: float, select: str | None) -> tuple[Path, float, str]:
    """Runs pytest on `tests` (rootdir its parent, no config file); returns (junit xml, seconds, output)."""
    report = tests.parent / f"{tests.name}-junit.xml"
    cmd = [sys.executable, "-m", "pytest", tests.name, "-q", "-p", "no:cacheprovider", "-c", os.devnull,
           f"--rootdir={tests.parent}", f"--junitxml={report}", "--continue-on-collection-errors"]
    if importlib.util.find_spec("pytest_timeout") is not None:
        cmd.append(f"--timeout={timeout:g}")
    if select:
        cmd += ["-k", select]
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=tests.parent, env=env, capture_output=True, text=True)  # nosec B603
    return report, time.perf_counter() - start, done.stdout + done.stderr


def outcomes(report: Path) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Counts by outcome, and the failing ids grouped by the first line of their error."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    groups: dict[str, list[str]] = defaultdict(list)
    for case in ET.parse(report).getroot().iter("testcase"):  # nosec B314: pytest's own report
        test_id = f"{case.get('classname')}::{case.get('name')}"
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if bad is not None:
            counts["failed" if bad.tag == "failure" else "errors"] += 1
            message = (bad.get("message") or bad.text or "").strip().splitlines()
            groups[message[0][:160] if message else "(no message)"].append(test_id)
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return counts, groups


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, help="an unpacked autograd sdist (default: download it)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "dagrad-peer-autograd")
    parser.add_argument("--peer", action="store_true", help="also run the original tests on autograd")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per test (needs pytest-timeout)")
    parser.add_argument("-k", dest="select", help="pytest -k expression")
    parser.add_argument("--quiet", action="store_true", help="do not list the failing ids")
    args = parser.parse_args()

    sdist = args.src if args.src is not None else fetch(args.cache)
    with tempfile.TemporaryDirectory(prefix="dagrad-peer-") as tmp:
        tests = swapped_copy(sdist / "tests", Path(tmp) / "tests")
        report, seconds, output = run_pytest(tests, str(SRC), args.timeout, args.select)
        if not report.exists():
            print(output)
            return 2
        counts, groups = outcomes(report)
        ran = counts["passed"] + counts["failed"] + counts["errors"]
        print(f"dagrad on autograd {VERSION}'s tests: " + ", ".join(f"{v} {k}" for k, v in counts.items())
              + f"; {counts['passed']}/{ran} = {100 * counts['passed'] / max(ran, 1):.1f}% of the runnable tests")
        print(f"wall time {seconds:.1f} s")
        for message, ids in sorted(groups.items(), key=lambda item: -len(item[1])):
            print(f"\n[{len(ids)}] {message}")
            if not args.quiet:
                for test_id in ids:
                    print(f"    {test_id}")
        if args.peer:
            original = shutil.copytree(sdist / "tests", Path(tmp) / "original")
            report, peer_seconds, _ = run_pytest(original, None, args.timeout, args.select)
            peer_counts, _ = outcomes(report)
            print(f"\nautograd on its own tests: {peer_counts['passed']} passed in {peer_seconds:.1f} s; "
                  f"dagrad / autograd time = {seconds / peer_seconds:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
