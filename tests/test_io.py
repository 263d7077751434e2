"""dg.save / dg.load: exact round trips of nested state, and refusal of pickled content."""

from __future__ import annotations

import io
import json
import pickle
import re
import struct
import sys
import tracemalloc
import zipfile

import numpy as np
import pytest

import dagrad as dg
from dagrad import nn


def test_state_dict_round_trip(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2, dtype=np.float32))
    path = tmp_path / "model.npz"
    dg.save(model.state_dict(), path)
    loaded = dg.load(path)
    assert list(loaded) == list(model.state_dict())
    for k, v in model.state_dict().items():
        assert loaded[k].dtype == v.dtype and loaded[k].shape == v.shape
        np.testing.assert_array_equal(loaded[k], v)
    other = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2, dtype=np.float32))
    other.load_state_dict(loaded)
    np.testing.assert_array_equal(other[0].weight.numpy(), model[0].weight.numpy())


def test_nested_structure_round_trips_exactly(tmp_path):
    obj = {
        "state": {0: {"step": 3, "exp_avg": np.arange(3.0), "flag": True}, 1: {"momentum_buffer": None}},
        "param_groups": [{"lr": 0.001, "betas": (0.9, 0.999), "params": [0, 1], "name": "main", "eps": 1e-8}],
        "big": 2**40, "neg": -1.5, "inf": float("inf"), "empty": {}, "nothing": [], "i32": np.array(7, np.int32),
        "tensor": dg.tensor([1.0, 2.0]), "dotted.key": 1, "dotted": {"key": 2},
    }
    path = tmp_path / "opt.npz"
    dg.save(obj, path)
    back = dg.load(path)
    assert back["state"][0]["step"] == 3 and type(back["state"][0]["step"]) is int
    assert back["state"][0]["flag"] is True
    assert back["state"][1] == {"momentum_buffer": None}
    assert back["param_groups"] == [{"lr": 0.001, "betas": (0.9, 0.999), "params": [0, 1], "name": "main",
                                     "eps": 1e-8}]
    assert back["big"] == 2**40 and back["neg"] == -1.5 and back["inf"] == float("inf")
    assert back["empty"] == {} and back["nothing"] == []
    assert back["i32"].dtype == np.int32 and back["i32"] == 7
    np.testing.assert_array_equal(back["tensor"], [1.0, 2.0])
    assert back["dotted.key"] == 1 and back["dotted"] == {"key": 2}  # colliding dotted names kept apart
    assert list(back) == list(obj)


def test_top_level_values_and_plain_npz(tmp_path):
    path = tmp_path / "x.npz"
    dg.save([1, "a", None], path)
    assert dg.load(path) == [1, "a", None]
    dg.save(np.eye(2), path)
    np.testing.assert_array_equal(dg.load(path), np.eye(2))
    np.savez(path, a=np.ones(2), b=np.zeros(1))
    assert list(dg.load(path)) == ["a", "b"]


def test_save_refuses_what_it_cannot_store_without_pickle(tmp_path):
    with pytest.raises(TypeError, match="cannot save a object"):
        dg.save({"f": object()}, tmp_path / "a.npz")
    with pytest.raises(TypeError, match="dtype object"):
        dg.save({"f": np.array([{}], dtype=object)}, tmp_path / "b.npz")
    with pytest.raises(TypeError, match="dict keys"):
        dg.save({(1, 2): 3}, tmp_path / "c.npz")


class _Boom:
    """Unpickling this runs code: it would create the directory `marker`."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return (os.makedirs, (self.marker,))


def test_malicious_object_array_is_refused_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    evil = np.empty(1, dtype=object)
    evil[0] = _Boom(marker)
    path = tmp_path / "evil.npz"
    with open(path, "wb") as fh:
        np.savez(fh, weight=np.ones(2), evil=evil)  # np.savez pickles object arrays by default
    with pytest.raises(ValueError, match=r"refusing .*evil.*object array.*never unpickles"):
        dg.load(path)
    assert not marker.exists()
    assert np.load(path, allow_pickle=True)["evil"] is not None and marker.exists()  # the payload is real


def test_raw_pickle_file_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "model.npz"
    path.write_bytes(pickle.dumps({"weight": _Boom(marker)}))
    with pytest.raises(ValueError, match="refusing .*pickled data"):
        dg.load(path)
    assert not marker.exists()


def test_damaged_structure_and_not_npz(tmp_path):
    path = tmp_path / "bad.npz"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        arr = io.BytesIO()
        np.save(arr, np.frombuffer(b'{"t": "array", "k": "missing"}', np.uint8))
        z.writestr("__dagrad_structure__.npy", arr.getvalue())
    path.write_bytes(buf.getvalue())
    with pytest.raises(ValueError, match="missing member 'missing'"):
        dg.load(path)
    text = tmp_path / "text.npz"
    text.write_text("hello")
    with pytest.raises(ValueError, match="not an .npz archive"):
        dg.load(text)


# ---------------------------------------------------------------- malformed and hostile files
# Every one raises ValueError naming the file and the caller's line, and nothing leaks out of the
# parsers (BadZipFile, EOFError, MemoryError, RecursionError, KeyError, UnicodeDecodeError, ...).


def _here(offset=1):
    return f"test_io.py:{sys._getframe(1).f_lineno + offset}"


def _load_fails(path, match="", **kwargs):
    line = _here(2)
    with pytest.raises(ValueError) as info:
        dg.load(path, **kwargs)
    message = str(info.value)
    assert type(info.value) is ValueError, type(info.value)
    assert str(path) in message and line in message and re.search(match, message), message
    return message


def _npy(arr=None, header=None, data=None):
    """An .npy file's bytes: `arr` written by NumPy, or a `header` dict and raw `data` (for lies)."""
    buf = io.BytesIO()
    if arr is not None:
        np.lib.format.write_array(buf, np.asarray(arr), allow_pickle=False)
        return buf.getvalue()
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + data


def _zip(path, members, compression=zipfile.ZIP_STORED):
    """A zip of {name: bytes} (names used as given)."""
    with zipfile.ZipFile(path, "w", compression=compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _structure(obj):
    return _npy(np.frombuffer(json.dumps(obj).encode(), np.uint8))


def _patch_declared_size(path, name, size):
    """Rewrites the uncompressed size the central directory declares for member `name`."""
    data = bytearray(path.read_bytes())
    entry = data.rindex(b"PK\x01\x02", 0, data.rindex(name.encode()) + 1)
    data[entry + 24:entry + 28] = struct.pack("<I", size)
    path.write_bytes(bytes(data))


@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good.npz"
    obj = {"model": {"w": np.arange(6.0).reshape(2, 3), "b": np.zeros(2, np.float32)}, "step": 7, "lr": 0.5,
           "flags": [True, None, "adam"], "betas": (0.9, 0.999)}
    dg.save(obj, path)
    return path, obj


def test_max_bytes_default_refuses_a_2_gib_declaration_from_a_tiny_file(tmp_path, good):
    path, _ = good
    _patch_declared_size(path, "model.w.npy", 0xFFFFFFF0)  # the file stays ~1 KB; it claims 4 GiB
    assert path.stat().st_size < 4096
    _load_fails(path, r"declare \d+ bytes, more than max_bytes=1073741824")
    assert dg.io.DEFAULT_MAX_BYTES == 2**30


def test_a_zip_bomb_over_max_bytes_is_refused_before_it_is_inflated(tmp_path):
    path = tmp_path / "bomb.npz"
    with open(path, "wb") as fh:
        np.savez_compressed(fh, w=np.zeros(2**20))  # 8 MB of zeros in an ~8 KB file
    assert path.stat().st_size < 100_000
    tracemalloc.start()
    try:
        _load_fails(path, r"declare 838\d+ bytes, more than max_bytes=1000000", max_bytes=1_000_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak  # refused from the declared sizes: nothing was inflated
    assert dg.load(path, max_bytes=10**7)["w"].shape == (2**20,)
    assert dg.load(path, max_bytes=None)["w"].shape == (2**20,)


def test_a_member_that_inflates_beyond_its_declared_size_is_read_with_a_cap(tmp_path):
    path = tmp_path / "liar.npz"
    header = _npy(header={"descr": "<f8", "fortran_order": False, "shape": (100,)}, data=b"")
    _zip(path, {"w.npy": header + bytes(50 * 2**20)}, zipfile.ZIP_DEFLATED)  # 50 MB of zeros
    _patch_declared_size(path, "w.npy", len(header) + 800)  # declares (and its header agrees) 100 floats
    tracemalloc.start()
    try:
        _load_fails(path, "CRC")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5 * 2**20, peak  # never inflated past the declared 928 bytes (plus a chunk)


def test_truncated_files(tmp_path, good):
    path, _ = good
    data = path.read_bytes()
    cut = tmp_path / "cut.npz"
    for size in (0, 1, 4, 30, 100, len(data) // 2, len(data) - 30, len(data) - 1):
        cut.write_bytes(data[:size])
        _load_fails(cut)


def test_wrong_magic_and_not_an_archive(tmp_path):
    path = tmp_path / "text.npz"
    path.write_bytes(b"hello, world")
    _load_fails(path, "not an .npz archive")
    _zip(path, {"w.npy": b"\x93NUMPX\x01\x00" + bytes(100)})
    _load_fails(path, "magic")
    np.save(tmp_path / "single.npy", np.ones(3))
    _load_fails(tmp_path / "single.npy", "single .npy array")
    _zip(path, {"w.txt": _npy(np.ones(2))})
    _load_fails(path, "'w.txt' is not an .npy array")


def test_bad_crc(tmp_path):
    path = tmp_path / "crc.npz"
    np.savez(path, w=np.arange(100.0))
    data = bytearray(path.read_bytes())
    data[data.index(np.arange(100.0).tobytes()) + 400] ^= 0x01  # one bit of one float
    path.write_bytes(bytes(data))
    _load_fails(path, "CRC")


def test_pickled_members_and_files(tmp_path):
    marker = tmp_path / "pwned"
    path = _zip(tmp_path / "p.npz", {"w.npy": pickle.dumps(_Boom(marker))})
    _load_fails(path, "magic")
    evil = np.empty(2, dtype=object)
    path = _zip(tmp_path / "o.npz", {"w.npy": _npy(header={"descr": "|O", "fortran_order": False, "shape": (2,)},
                                                   data=pickle.dumps(evil))})
    _load_fails(path, "object array")
    assert not marker.exists()


@pytest.mark.parametrize("arr", [np.array(["a", "b"]), np.array([(1, 2.0)], dtype="i4,f8"),
                                 np.array(["2020-01-01"], dtype="M8[D]")])
def test_non_numeric_members_are_refused(tmp_path, arr):
    path = _zip(tmp_path / "s.npz", {"w.npy": _npy(arr)})
    _load_fails(path, "loads only bool, integer, float and complex arrays")


@pytest.mark.parametrize("shape, nbytes, match", [
    ((1000,), 80, r"declares shape \(1000,\).*8000 bytes.*holds 80"),
    ((10,), 800, r"declares shape \(10,\).*80 bytes.*holds 800"),
    ((2**40, 2**40), 80, "declares shape"),
    ((-1,), 80, "negative shape"),
])
def test_npy_header_lies_about_its_shape(tmp_path, shape, nbytes, match):
    path = _zip(tmp_path / "h.npz", {"w.npy": _npy(header={"descr": "<f8", "fortran_order": False, "shape": shape},
                                                   data=bytes(nbytes))})
    _load_fails(path, match)


def test_npy_header_malformed(tmp_path):
    for header in (b"{'descr': '<f8', 'fortran_order': False}", b"{'descr': 'zz', 'fortran_order': False, "
                   b"'shape': (1,)}", b"__import__('os').system('touch pwned')", b"(" * 5000):
        raw = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header) + 1) + header + b"\n"
        path = _zip(tmp_path / "m.npz", {"w.npy": raw + bytes(8)})
        _load_fails(path)
    assert not (tmp_path / "pwned").exists()


def test_compression_methods_other_than_np_savez_are_refused(tmp_path):
    path = _zip(tmp_path / "b.npz", {"w.npy": _npy(np.ones(3))}, zipfile.ZIP_BZIP2)
    _load_fails(path, "compression method 12")


def test_a_member_twice_is_refused(tmp_path):
    path = tmp_path / "dup.npz"
    with zipfile.ZipFile(path, "w") as z, pytest.warns(UserWarning, match="Duplicate"):
        z.writestr("w.npy", _npy(np.ones(2)))
        z.writestr("w.npy", _npy(np.zeros(2)))
    _load_fails(path, "appears twice")


@pytest.mark.parametrize("structure, match", [
    (None, "not an object with a kind"),
    ([1, 2], "not an object with a kind"),
    ({"t": 3}, "not an object with a kind"),
    ({"t": "what"}, "unknown entry kind 'what'"),
    ({"t": "array", "k": "missing"}, "missing member 'missing'"),
    ({"t": "array", "k": ["w"]}, "names its member with a list"),
    ({"t": "array", "k": "__dagrad_structure__"}, "missing member"),
    ({"t": "int", "k": "w"}, r"'w' should hold one int, it holds shape \(3,\) of float64"),
    ({"t": "float", "k": "i"}, "should hold one float"),
    ({"t": "json", "v": {"a": 1}}, "holds a dict"),
    ({"t": "json"}, "no value"),
    ({"t": "dict", "items": {"a": 1}}, "no list of items"),
    ({"t": "dict", "items": [[{"s": "a"}]]}, r"not a \[key, value\] pair"),
    ({"t": "dict", "items": [[{"x": "a"}, {"t": "json", "v": None}]]}, "not a string or an int"),
    ({"t": "dict", "items": [[{"i": 1.5}, {"t": "json", "v": None}]]}, "not a string or an int"),
    ({"t": "dict", "items": [[{"s": "a"}, {"t": "json", "v": None}], [{"s": "a"}, {"t": "json", "v": None}]]},
     "'a' appears twice"),
    ({"t": "list", "items": None}, "no list of items"),
    ({"t": "list", "items": [{"t": "array", "k": "w"}, {"t": "array", "k": "w"}]}, "named twice"),
    ({"t": "array", "k": "w"}, r"members \['i'\] are in no entry"),
])
def test_structure_with_wrong_types_or_members(tmp_path, structure, match):
    path = _zip(tmp_path / "s.npz", {"w.npy": _npy(np.ones(3)), "i.npy": _npy(np.array(1)),
                                     "__dagrad_structure__.npy": _structure(structure)})
    _load_fails(path, match)


def test_structure_not_json_not_utf8_not_bytes(tmp_path):
    for raw, match in [(b'{"t": ', "not valid UTF-8 JSON"), (b'\xff\xfe{"t"}', "not valid UTF-8 JSON"),
                       (b"1" * 5000, "not valid UTF-8 JSON")]:
        path = _zip(tmp_path / "j.npz", {"__dagrad_structure__.npy": _npy(np.frombuffer(raw, np.uint8))})
        _load_fails(path, match)
    path = _zip(tmp_path / "f.npz", {"__dagrad_structure__.npy": _npy(np.ones(3))})
    _load_fails(path, "must be a 1-d uint8 array")


def test_deeply_nested_structure(tmp_path):
    deep = '{"t": "list", "items": [' * 100_000 + "]}" * 100_000  # RecursionError in json today
    path = _zip(tmp_path / "d.npz", {"__dagrad_structure__.npy": _npy(np.frombuffer(deep.encode(), np.uint8))})
    _load_fails(path, "nested too deeply")
    deep = '{"t": "list", "items": [' * 150 + "]}" * 150  # json parses it; dagrad refuses past 100 levels
    path = _zip(tmp_path / "e.npz", {"__dagrad_structure__.npy": _npy(np.frombuffer(deep.encode(), np.uint8))})
    _load_fails(path, "nested more than 100 levels")


def test_save_refuses_what_load_would_refuse_and_loads_what_it_saves(tmp_path):
    obj = []
    for _ in range(100):
        obj = [obj]
    dg.save(obj, tmp_path / "ok.npz")
    assert dg.load(tmp_path / "ok.npz") == obj
    with pytest.raises(ValueError, match="nested more than 100 levels"):
        dg.save([obj], tmp_path / "deep.npz")


def test_max_bytes_argument(tmp_path, good):
    path, obj = good
    line = _here(2)
    with pytest.raises(TypeError, match=f"dg.load: max_bytes must be an int or None.*{line}"):
        dg.load(path, max_bytes=1.5)
    with pytest.raises(ValueError, match="max_bytes must be >= 0"):
        dg.load(path, max_bytes=-1)
    _load_fails(path, "more than max_bytes=10", max_bytes=10)
    assert dg.load(path, max_bytes=np.int64(10**6))["step"] == 7


def test_a_file_that_cannot_be_opened_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        dg.load(tmp_path / "nothing.npz")


def _same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, (dict, list, tuple)):
        if type(a) is not type(b) or len(a) != len(b):
            return False
        if isinstance(a, dict):
            return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
        return all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def test_fuzz_byte_flips_and_truncations_raise_value_error_or_load_correctly(tmp_path, good):
    """Seeded random damage to a valid file: only ValueError (naming the file) ever escapes, and a
    file that still loads loads exactly what was saved."""
    path, obj = good
    clean = path.read_bytes()
    rng = np.random.default_rng(12)
    damaged = tmp_path / "damaged.npz"
    loaded = refused = 0
    for trial in range(1500):
        data = bytearray(clean)
        if trial % 5 == 0:
            data = data[:rng.integers(len(data))]
        for _ in range(rng.integers(1, 4)):
            if data:
                data[rng.integers(len(data))] ^= 1 << rng.integers(8)
        damaged.write_bytes(bytes(data))
        try:
            back = dg.load(damaged)
        except ValueError as err:
            assert str(damaged) in str(err) and type(err) is ValueError, err
            refused += 1
        else:
            assert _same(obj, back), (trial, back)
            loaded += 1
    assert refused > 1000 and loaded > 10, (refused, loaded)  # the damage reached both kinds of bytes


# ---------------------------------------------------------------- dg.save's keys and paths (issue 24)

# keys that round-trip through dg.load: the structure member keeps each key, the member names are internal
ODD_KEYS = ["", "a/b", "/", "..", "a.b", "a~1", "a\nb", "a\\b", "\u00e9", "\u202e", "__dagrad_structure__", "file",
            "allow_pickle", "x" * 300]


def test_odd_but_valid_keys_round_trip(tmp_path):
    obj = {key: {key: np.arange(3.0) + i} for i, key in enumerate(ODD_KEYS)}
    dg.save(obj, tmp_path / "odd.npz")
    assert _same(dg.load(tmp_path / "odd.npz"), obj)


@pytest.mark.parametrize("key, what", [("a\x00b", "a NUL character"), ("\x00", "a NUL character"),
                                       ("a\ud800", "which UTF-8 cannot encode")], ids=["nul", "only nul", "surrogate"])
@pytest.mark.parametrize("nested", [False, True])
def test_a_key_a_npz_member_cannot_hold_is_refused_before_anything_is_written(tmp_path, key, what, nested):
    """A NUL (or a lone surrogate) in a key: the file was written and dg.load could not read it back (a NUL
    ends a zip member's name), or a raw UnicodeEncodeError left a partial file. Refused first: an existing
    file is left as it was."""
    path = tmp_path / "model.npz"
    dg.save({"weights": np.ones(2)}, path)
    before = path.read_bytes()
    obj = {"model": {key: np.ones(3)}} if nested else {key: np.ones(3), "step": 1}
    line = _here(3)
    with pytest.raises(ValueError, match=rf"^dg\.save: dict key {re.escape(ascii(key)[1:-1]).join(['.', '.'])}"
                                         rf".*{what}.*rename the key at .*{line}$") as info:
        dg.save(obj, path)
    assert path.read_bytes() == before
    assert str(info.value).isprintable()  # the key is shown escaped


def test_save_errors_name_the_line_and_a_failed_write_leaves_no_file(tmp_path, monkeypatch):
    line = _here(2)
    with pytest.raises(TypeError, match=rf"dg\.save: cannot save a object at f .*{line}"):
        dg.save({"f": object()}, tmp_path / "a.npz")
    line = _here(2)
    with pytest.raises(FileNotFoundError, match=rf"dg\.save: cannot write .*no_such_folder.* at .*{line}"):
        dg.save({"w": np.ones(2)}, tmp_path / "no_such_folder" / "a.npz")
    line = _here(2)
    with pytest.raises(ValueError, match=rf"dg\.save: cannot write .*embedded null.* at .*{line}"):
        dg.save({"w": np.ones(2)}, str(tmp_path / "a\x00.npz"))

    def failing_savez(fh, **arrays):
        fh.write(b"PK\x03\x04 half a file")
        raise OSError("No space left on device")

    monkeypatch.setattr(np, "savez", failing_savez)
    with pytest.raises(OSError, match="No space left"):
        dg.save({"w": np.ones(2)}, tmp_path / "full.npz")
    assert not (tmp_path / "full.npz").exists()  # nothing half-written for a later dg.load to trip over
