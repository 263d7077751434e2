"""`dg.save` / `dg.load`: state dicts in a NumPy `.npz` file, never pickle.

Arrays (and Tensors, saved as arrays) become members of the archive under dotted names
(`fc1.weight`, `state.0.exp_avg`); Python scalars are stored as 0-d arrays. A small JSON
member, `__dagrad_structure__` (bytes in a uint8 array), records the nesting — dicts
(string or integer keys), lists, tuples, ints, floats, bools, None and strings — so the
object comes back exactly. Loading uses `np.load(..., allow_pickle=False)`: a file holding
pickled data or object arrays is refused with an error; nothing in it is executed.
"""

from __future__ import annotations

import json
import zipfile

import numpy as np

from ._core.tensor import Tensor

__all__ = ["save", "load"]

_STRUCTURE = "__dagrad_structure__"
_RESERVED = {_STRUCTURE, "file", "allow_pickle"}  # names np.savez cannot take as member names


def _flatten(obj, path, arrays):
    """The JSON description of `obj`; its arrays go into `arrays` under dotted names."""

    def array_node(arr, kind):
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"dg.save: {path or 'the object'} has dtype {arr.dtype}; only bool, integer and float "
                            "arrays are saved (no object arrays, no pickle)")
        name = path or "value"
        key, k = name, 1
        while key in arrays or key in _RESERVED:
            key, k = f"{name}~{k}", k + 1
        arrays[key] = arr
        return {"t": kind, "k": key}

    if obj is None or isinstance(obj, str):
        return {"t": "json", "v": obj}
    if isinstance(obj, bool):
        return array_node(np.array(obj), "bool")
    if isinstance(obj, int):
        return array_node(np.array(obj, dtype=np.int64 if -2**63 <= obj < 2**63 else object), "int")
    if isinstance(obj, float):
        return array_node(np.array(obj, dtype=np.float64), "float")
    if isinstance(obj, Tensor):
        return array_node(np.asarray(obj.numpy()), "array")
    if isinstance(obj, (np.ndarray, np.generic)):
        return array_node(np.asarray(obj), "array")
    if isinstance(obj, dict):
        items = []
        for key, value in obj.items():
            if isinstance(key, bool) or not isinstance(key, (str, int)):
                raise TypeError(f"dg.save: dict keys must be strings or ints, got {type(key).__name__} {key!r}"
                                f" at {path or 'the top level'}")
            sub = f"{path}.{key}" if path else str(key)
            items.append([{"s": key} if isinstance(key, str) else {"i": key}, _flatten(value, sub, arrays)])
        return {"t": "dict", "items": items}
    if isinstance(obj, (list, tuple)):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {"t": kind, "items": [_flatten(v, f"{path}.{k}" if path else str(k), arrays) for k, v in enumerate(obj)]}
    raise TypeError(f"dg.save: cannot save a {type(obj).__name__} at {path or 'the top level'} (dagrad saves dicts, "
                    "lists, tuples, arrays, Tensors, numbers, strings and None; never pickles)")


def save(obj, path):
    """Saves a state dict (or any nesting of dicts, lists, arrays, Tensors, numbers, strings and None)
    to `path` as an `.npz` archive (written to exactly that path).

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
    structure = _flatten(obj, "", arrays)
    arrays[_STRUCTURE] = np.frombuffer(json.dumps(structure).encode("utf-8"), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, allow_pickle=False, **arrays)


def _refused(path, why):
    return ValueError(f"dg.load: refusing {path}: {why}. dagrad never unpickles a file (unpickling can run "
                      "arbitrary code); save with dg.save or np.savez of numeric arrays")


def _unflatten(node, members, path):
    kind = node["t"]
    if kind == "json":
        return node["v"]
    if kind in ("array", "int", "float", "bool"):
        arr = members(node["k"])
        if kind == "array":
            return arr
        return {"int": int, "float": float, "bool": bool}[kind](arr[()])
    if kind == "dict":
        out = {}
        for key, value in node["items"]:
            k = key["s"] if "s" in key else int(key["i"])
            out[k] = _unflatten(value, members, path)
        return out
    if kind in ("list", "tuple"):
        items = [_unflatten(v, members, path) for v in node["items"]]
        return items if kind == "list" else tuple(items)
    raise ValueError(f"dg.load: {path} has an unknown entry kind {kind!r} in its structure")


def load(path):
    """Loads what `dg.save` wrote (a plain `.npz` without dagrad's structure loads as a dict of arrays).

    Arrays come back as NumPy arrays. A file holding pickled data or object arrays is refused
    with a ValueError; nothing in it is run.

    >>> import dagrad as dg, numpy as np, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "state.npz")
    >>> dg.save({"step": 10, "lr": 0.1, "betas": (0.9, 0.999), "buf": [np.zeros(2), None]}, path)
    >>> dg.load(path)
    {'step': 10, 'lr': 0.1, 'betas': (0.9, 0.999), 'buf': [array([0., 0.]), None]}
    """
    try:
        archive = np.load(path, allow_pickle=False)
    except ValueError as err:
        with open(path, "rb") as fh:
            head = fh.read(1)
        if "pickle" in str(err) and head == b"\x80":  # the opcode that starts a pickle (protocol 2 and later)
            raise _refused(path, "it holds pickled data") from None
        raise ValueError(f"dg.load: {path} is not an .npz archive written by dg.save or np.savez") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"dg.load: {path} is a single .npy array, not an .npz archive written by dg.save")
    with archive:
        names = list(archive.files)

        def member(key):
            if key not in names:
                raise ValueError(f"dg.load: {path} is damaged: its structure names a missing member {key!r}")
            try:
                return archive[key]
            except ValueError as err:
                if "pickle" in str(err) or "Object arrays" in str(err):
                    raise _refused(path, f"member {key!r} is an object array (pickled Python objects)") from None
                raise
            except (zipfile.BadZipFile, OSError) as err:
                raise ValueError(f"dg.load: {path}: member {key!r} cannot be read ({err})") from None

        # check every member first: refuse the whole file if any is pickled
        loaded = {key: member(key) for key in names}
        if _STRUCTURE not in loaded:
            return dict(loaded)
        raw = loaded[_STRUCTURE]
        if raw.dtype != np.uint8:
            raise ValueError(f"dg.load: {path}: {_STRUCTURE} must be uint8 bytes, got dtype {raw.dtype}")
        try:
            structure = json.loads(raw.tobytes().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ValueError(f"dg.load: {path}: its structure entry is not valid JSON ({err})") from None
        return _unflatten(structure, lambda key: member(key) if key not in loaded else loaded[key], path)
