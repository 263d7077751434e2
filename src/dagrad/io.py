"""`dg.save` / `dg.load`: state dicts in a NumPy `.npz` file, never pickle.

Arrays and Tensors become members under dotted names (`fc1.weight`), Python scalars 0-d arrays; a
JSON member, `__dagrad_structure__` (a uint8 array), records the nesting (dicts with string or int
keys, lists, tuples, ints, floats, bools, None, strings) so the object comes back exactly.

`dg.load` treats the file as untrusted: it parses the zip directory and each `.npy` header itself
(never `np.load` or unpickling), checks every declared size against `max_bytes` before reading
anything large, never inflates a member past its declared size, and checks the structure's size,
nesting and types. A malformed file raises a ValueError naming it; nothing in it is executed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import struct
import zipfile

import numpy as np

from ._core.errors import user_error
from ._core.tensor import Tensor

__all__ = ["save", "load"]

_STRUCTURE = "__dagrad_structure__"
_RESERVED = {_STRUCTURE, "file", "allow_pickle"}  # names np.savez cannot take as member names

DEFAULT_MAX_BYTES = 2**30  # dg.load's default budget for the arrays a file declares (load's docstring says why)
_MAX_DEPTH = 100  # nesting levels of dicts/lists/tuples: far beyond any state dict, far below Python's stack
_MAX_STRUCTURE_BYTES = 64 * 2**20  # the JSON member: ~400,000 entries; parsing it takes ~10x this in objects
_MAX_HEADER_BYTES = 10_000  # an .npy header (NumPy's own limit for untrusted headers)
_CHUNK = 2**20  # members are read (and inflated) this much at a time
_NUMERIC_KINDS = "biufc"  # bool, ints, floats, complex: no objects, strings, records, dates


def _flatten(obj, path, arrays, depth=0):
    """The JSON description of `obj`; its arrays go into `arrays` under dotted names."""

    def array_node(arr, kind):
        if arr.dtype.kind not in "biuf":
            raise user_error(TypeError, "dg.save", f"{path or 'the object'} has dtype {arr.dtype}; only bool, integer "
                             "and float arrays are saved (no object arrays, no pickle)")
        name = path or "value"
        key, k = name, 1
        while key in arrays or key in _RESERVED:
            key, k = f"{name}~{k}", k + 1
        arrays[key] = arr
        return {"t": kind, "k": key}

    if depth > _MAX_DEPTH:  # what dg.save writes, dg.load reads: it refuses deeper nesting
        raise user_error(ValueError, "dg.save", f"{path} is nested more than {_MAX_DEPTH} levels deep")
    if obj is None or isinstance(obj, str):
        return {"t": "json", "v": obj}
    if isinstance(obj, bool):
        return array_node(np.array(obj), "bool")
    if isinstance(obj, int):
        return array_node(np.array(obj, dtype=np.int64 if -2**63 <= obj < 2**63 else object), "int")
    if isinstance(obj, float):
        return array_node(np.array(obj, dtype=np.float64), "float")
    if isinstance(obj, (Tensor, np.ndarray, np.generic)):
        return array_node(np.asarray(obj.numpy() if isinstance(obj, Tensor) else obj), "array")
    if isinstance(obj, dict):
        items = []
        for key, value in obj.items():
            if isinstance(key, bool) or not isinstance(key, (str, int)):
                raise user_error(TypeError, "dg.save", f"dict keys must be strings or ints, got "
                                 f"{type(key).__name__} {key!r} at {path or 'the top level'}")
            _check_key(key, path)
            sub = f"{path}.{key}" if path else str(key)
            items.append([{"s": key} if isinstance(key, str) else {"i": key}, _flatten(value, sub, arrays, depth + 1)])
        return {"t": "dict", "items": items}
    if isinstance(obj, (list, tuple)):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {"t": kind, "items": [_flatten(v, f"{path}.{k}" if path else str(k), arrays, depth + 1)
                                     for k, v in enumerate(obj)]}
    raise user_error(TypeError, "dg.save", f"cannot save a {type(obj).__name__} at {path or 'the top level'} "
                     "(dagrad saves dicts, lists, tuples, arrays, Tensors, numbers, strings and None; never pickles)")


def _check_key(key, path):
    """A dict key, checked before anything is written: it becomes part of a zip member's name (UTF-8, ended by
    a NUL when read back), so a NUL or a character UTF-8 cannot encode (a lone surrogate) would write a file
    dg.load cannot read. Every other string round-trips (the empty one, '/', '..', newlines: the structure
    member keeps the key itself)."""
    if not isinstance(key, str):
        return
    where = f" (in {path})" if path else ""
    if "\0" in key:
        raise user_error(ValueError, "dg.save", f"dict key {key!r}{where} holds a NUL character, which a .npz member "
                         "name cannot hold (dg.load could not read the file back); rename the key")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError as err:
        raise user_error(ValueError, "dg.save", f"dict key {key!r}{where} holds {key[err.start]!r}, which UTF-8 "
                         "cannot encode (a lone surrogate), so a .npz member name cannot hold it; rename the "
                         "key") from None


def save(obj, path):
    """Saves a nesting of dicts, lists, tuples, arrays, Tensors, numbers, strings and None (a state dict)
    to exactly `path` as an `.npz` archive.

    >>> import dagrad as dg, numpy as np, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> model = dg.nn.Linear(2, 1)
    >>> dg.save({"model": model.state_dict(), "epoch": 3}, path)
    >>> checkpoint = dg.load(path)
    >>> checkpoint["epoch"], list(checkpoint["model"])
    (3, ['weight', 'bias'])
    >>> model.load_state_dict(checkpoint["model"])
    ([], [])
    """
    arrays = {}
    structure = json.dumps(_flatten(obj, "", arrays)).encode("utf-8")
    if len(structure) > _MAX_STRUCTURE_BYTES:
        raise ValueError(f"dg.save: the object's structure takes {len(structure)} bytes of JSON, more than dg.load "
                         f"reads ({_MAX_STRUCTURE_BYTES}); save fewer, larger arrays")
    arrays[_STRUCTURE] = np.frombuffer(structure, dtype=np.uint8)
    try:
        fh = open(path, "wb")  # closed below; a failed write removes the file
    except (OSError, ValueError) as err:  # a missing folder, a NUL in the path, ...
        raise user_error(type(err), "dg.save", f"cannot write {str(path)!r}: {err}") from None
    try:
        with fh:
            np.savez(fh, allow_pickle=False, **arrays)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(path)  # no partial file is left behind for dg.load to trip over
        raise


class _Malformed(ValueError):
    """A refusal dg.load raised itself (passed through as is; anything else a parser raises is wrapped)."""


def _malformed(path, why):
    return user_error(_Malformed, "dg.load", f"{path}: {why}")


def _refused(path, why):
    return user_error(_Malformed, "dg.load", f"refusing {path}: {why}. dagrad never unpickles a file (unpickling "
                      "can run arbitrary code); save with dg.save or np.savez of numeric arrays")


class _CappedFile:
    """The file as zipfile reads it, refusing any single read larger than `cap` before it happens:
    zipfile reads the whole central directory at once, of the size the file declares."""

    def __init__(self, fh, cap, path):
        self._fh, self._cap, self._path = fh, cap, path

    def read(self, n=-1):
        if n is None or n < 0:
            here = self._fh.tell()
            n = self._fh.seek(0, os.SEEK_END) - here
            self._fh.seek(here)
        if n > self._cap:
            raise _malformed(self._path, f"its zip directory declares {n} bytes, more than max_bytes allows "
                             f"({self._cap}); pass a larger max_bytes if you trust the file")
        return self._fh.read(n)

    def seek(self, offset, whence=os.SEEK_SET):
        return self._fh.seek(offset, whence)

    def tell(self):
        return self._fh.tell()

    def seekable(self):
        return True


def _declared_entries(fh):
    """How many members the zip's end record declares (zipfile's own search for that record, in
    short), or None. zipfile does not check that count: a damaged directory entry whose comment or
    extra field swallows the entries after it would silently drop them."""
    size = fh.seek(0, os.SEEK_END)
    start = max(0, size - 65536 - 22)  # the end record (22 bytes) and a comment of at most 64 KiB
    fh.seek(start)
    tail = fh.read()
    at = len(tail) - 22 if tail[-22:-18] == b"PK\x05\x06" and tail[-2:] == b"\0\0" else tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) < at + 22:
        return None
    entries = struct.unpack("<H", tail[at + 10:at + 12])[0]
    locator = start + at - 20  # a zip64 end record (more than 65535 members, or offsets past 4 GiB)
    if locator >= 56:
        fh.seek(locator)
        if fh.read(4) == b"PK\x06\x07":
            fh.seek(locator - 56)
            record = fh.read(56)
            if record[:4] == b"PK\x06\x06":
                entries = struct.unpack("<Q", record[32:40])[0]
    return entries


def _read_member(zf, info, key, path):
    """One `.npy` member as a NumPy array: its header checked against its declared size before the
    array is allocated, its bytes read a chunk at a time (zipfile checks the CRC at the end)."""
    fmt = np.lib.format
    with zf.open(info) as f:
        version = fmt.read_magic(f)
        read_header = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}.get(version)
        if read_header is None:
            raise _malformed(path, f"member {key!r} is an .npy file of format {version}; dagrad reads 1.0 and 2.0")
        shape, fortran_order, dtype = read_header(f, max_header_size=_MAX_HEADER_BYTES)
        if dtype.hasobject:
            raise _refused(path, f"member {key!r} is an object array (pickled Python objects)")
        if dtype.kind not in _NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
            raise _malformed(path, f"member {key!r} has dtype {dtype}; dagrad loads only bool, integer, float "
                             "and complex arrays")
        if any(n < 0 for n in shape):
            raise _malformed(path, f"member {key!r} declares a negative shape {shape}")
        nbytes = math.prod(shape) * dtype.itemsize
        header = f.tell()
        if header + nbytes != info.file_size:
            raise _malformed(path, f"member {key!r} declares shape {shape} of {dtype} ({nbytes} bytes), but holds "
                             f"{info.file_size - header} bytes of data")
        raw = np.empty(nbytes, dtype=np.uint8)  # within max_bytes: file_size was checked
        view = memoryview(raw)
        done = 0
        while done < nbytes:
            got = f.readinto(view[done:done + _CHUNK])
            if not got:
                raise _malformed(path, f"member {key!r} is truncated ({done} of {nbytes} bytes)")
            done += got
        if f.read(1):
            raise _malformed(path, f"member {key!r} holds more bytes than its header declares")
    arr = raw.view(dtype)
    if fortran_order:
        return arr.reshape(shape[::-1]).transpose()
    return arr.reshape(shape)


def _read_archive(fh, path, max_bytes):
    """{member name: array} of the archive, every size checked before it is read."""
    head = fh.read(8)
    if head[:1] == b"\x80":  # the opcode that starts a pickle (protocol 2 and later)
        raise _refused(path, "it holds pickled data")
    if head.startswith(b"\x93NUMPY"):
        raise _malformed(path, "it is a single .npy array, not an .npz archive written by dg.save")
    if not head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        raise _malformed(path, "it is not an .npz archive written by dg.save or np.savez (no zip signature)")
    fh.seek(0)
    # the zip directory's entries take about eight times their size in memory once parsed
    cap = math.inf if max_bytes is None else max(max_bytes // 8, _CHUNK)
    zf = zipfile.ZipFile(_CappedFile(fh, cap, path))
    infos = zf.infolist()
    declared = _declared_entries(fh)
    if declared != len(infos):
        raise _malformed(path, f"its zip directory is damaged: it declares {declared} members and lists "
                         f"{len(infos)}")
    names = {}
    total = 0
    for info in infos:
        name = info.filename
        if not name.endswith(".npy"):
            raise _malformed(path, f"member {name!r} is not an .npy array")
        if name[:-4] in names:
            raise _malformed(path, f"member {name!r} appears twice")
        if info.flag_bits & 0x1:
            raise _malformed(path, f"member {name!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            # bzip2 and lzma inflate a whole chunk at once, unbounded: only np.savez's two methods are read
            raise _malformed(path, f"member {name!r} uses zip compression method {info.compress_type}; dagrad "
                             "reads stored and deflated members (np.savez, np.savez_compressed)")
        names[name[:-4]] = info
        total += info.file_size
    if max_bytes is not None and total > max_bytes:
        raise _malformed(path, f"its members declare {total} bytes, more than max_bytes={max_bytes}; pass a larger "
                         "max_bytes if you trust the file")
    return {key: _read_member(zf, info, key, path) for key, info in names.items()}


def _unflatten(node, members, used, path, depth=0):
    """The object `node` (the structure's JSON) describes, its arrays taken from `members`."""

    def bad(why):
        return _malformed(path, f"its structure is damaged: {why}")

    if depth > _MAX_DEPTH:
        raise bad(f"nested more than {_MAX_DEPTH} levels deep")
    if not isinstance(node, dict) or not isinstance(node.get("t"), str):
        raise bad(f"an entry is {type(node).__name__}, not an object with a kind 't'")
    kind = node["t"]
    if kind == "json":
        if "v" not in node:
            raise bad("a 'json' entry has no value 'v'")
        value = node["v"]
        if value is not None and not isinstance(value, str):
            raise bad(f"a 'json' entry holds a {type(value).__name__}, not a string or null")
        return value
    if kind in ("array", "int", "float", "bool"):
        key = node.get("k")
        if not isinstance(key, str):
            raise bad(f"an {kind!r} entry names its member with a {type(key).__name__}")
        if key not in members or key == _STRUCTURE:
            raise bad(f"it names a missing member {key!r}")
        if key in used:
            raise bad(f"member {key!r} is named twice")
        used.add(key)
        arr = members[key]
        if kind == "array":
            return arr
        expected = {"int": "iu", "float": "f", "bool": "b"}[kind]
        if arr.shape != () or arr.dtype.kind not in expected:
            raise bad(f"member {key!r} should hold one {kind}, it holds shape {arr.shape} of {arr.dtype}")
        return {"int": int, "float": float, "bool": bool}[kind](arr[()])
    items = node.get("items")
    if kind in ("dict", "list", "tuple") and not isinstance(items, list):
        raise bad(f"a {kind!r} entry has no list of items")
    if kind == "dict":
        out = {}
        for item in items:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], dict) and len(item[0]) == 1):
                raise bad("a dict item is not a [key, value] pair")
            (tag, k), = item[0].items()
            if not ((tag == "s" and isinstance(k, str)) or (tag == "i" and type(k) is int)):
                raise bad(f"a dict key is {item[0]!r}, not a string or an int")
            if k in out:
                raise bad(f"dict key {k!r} appears twice")
            out[k] = _unflatten(item[1], members, used, path, depth + 1)
        return out
    if kind in ("list", "tuple"):
        values = [_unflatten(v, members, used, path, depth + 1) for v in items]
        return values if kind == "list" else tuple(values)
    raise bad(f"unknown entry kind {kind!r}")


def _load(fh, path, max_bytes):
    members = _read_archive(fh, path, max_bytes)
    if _STRUCTURE not in members:
        return members  # a plain .npz (np.savez): its arrays
    raw = members[_STRUCTURE]
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise _malformed(path, f"{_STRUCTURE} must be a 1-d uint8 array, got shape {raw.shape} of {raw.dtype}")
    if raw.size > _MAX_STRUCTURE_BYTES:
        raise _malformed(path, f"its structure takes {raw.size} bytes, more than dg.load reads "
                         f"({_MAX_STRUCTURE_BYTES})")
    try:
        structure = json.loads(raw.tobytes().decode("utf-8"))
    except RecursionError:
        raise _malformed(path, f"its structure is nested too deeply (dagrad writes at most {_MAX_DEPTH} "
                         "levels)") from None
    except (UnicodeDecodeError, ValueError) as err:
        raise _malformed(path, f"its structure is not valid UTF-8 JSON ({err})") from None
    used = set()
    obj = _unflatten(structure, members, used, path)
    unused = [key for key in members if key not in used and key != _STRUCTURE]
    if unused:
        raise _malformed(path, f"its structure is damaged: members {unused[:5]} are in no entry")
    return obj


def load(path, max_bytes=DEFAULT_MAX_BYTES):
    """Loads what `dg.save` wrote, as NumPy arrays (a plain `.npz` of numeric arrays loads as a dict).

    The file is untrusted: a malformed one (not a zip, truncated, a bad CRC, a damaged structure, a
    lying `.npy` header, ...) raises a ValueError naming it, and pickled data or object arrays are
    refused, never executed. A file that cannot be opened raises OSError, as `open` does.

    `max_bytes` bounds what a file may make dagrad allocate: the members' declared sizes are added up
    and the file refused before anything large is read. The default, 1 GiB (`dg.io.DEFAULT_MAX_BYTES`),
    holds a 100-million-parameter float64 model (800 MB) yet refuses a zip bomb (2 MB declaring 2 GiB).
    Pass a larger value, or None (no limit), for a bigger file you trust.

    >>> import dagrad as dg, numpy as np, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "state.npz")
    >>> dg.save({"step": 10, "lr": 0.1, "betas": (0.9, 0.999), "buf": [np.zeros(2), None]}, path)
    >>> dg.load(path)
    {'step': 10, 'lr': 0.1, 'betas': (0.9, 0.999), 'buf': [array([0., 0.]), None]}
    >>> dg.save({"w": np.zeros(1000)}, path)
    >>> dg.load(path, max_bytes=1000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: dg.load: ...state.npz: its members declare ... bytes, more than max_bytes=1000; ...
    """
    if max_bytes is not None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)):
            raise user_error(TypeError, "dg.load", f"max_bytes must be an int or None, got "
                             f"{type(max_bytes).__name__} {max_bytes!r}")
        if max_bytes < 0:
            raise user_error(ValueError, "dg.load", f"max_bytes must be >= 0, got {max_bytes}")
        max_bytes = int(max_bytes)
    with open(path, "rb") as fh:
        try:
            return _load(fh, path, max_bytes)
        except _Malformed as err:
            raise ValueError(str(err)) from None
        except Exception as err:  # noqa: BLE001 -- whatever a parser of this untrusted file raised (BadZipFile,
            # EOFError, zlib.error, struct.error, OSError from a seek the file asks for, ...): the file is malformed
            detail = f"{type(err).__name__}: {err}"
            if len(detail) > 200:
                detail = detail[:200] + "..."
            raise user_error(ValueError, "dg.load", f"{path}: the file is damaged or not an .npz archive written "
                             f"by dg.save or np.savez ({detail})") from err
