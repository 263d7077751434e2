"""dg.save / dg.load: exact round trips of nested state, and refusal of pickled content."""

from __future__ import annotations

import io
import pickle
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
