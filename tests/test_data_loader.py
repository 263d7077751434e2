"""Issue 29, `dagrad.utils.data`: Dataset, TensorDataset, Subset, random_split, the samplers and DataLoader, against
torch.utils.data (the same batches, in the same order, collated alike), the batch fast path against the per-example
protocol, Dask arrays read one batch at a time, and the errors of bad input."""

from __future__ import annotations

import collections
import sys
import threading

import numpy as np
import pytest

import dagrad as dg
from dagrad.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)

RNG = np.random.default_rng(29)
HERE = "test_data_loader.py"


def _here(offset=1):
    return f"{HERE}:{sys._getframe(1).f_lineno + offset}"


def _torch():
    return pytest.importorskip("torch", reason="the oracle tier needs torch (pip install -e '.[dev]')")


def _plain(value):
    """A batch as nested Python lists / dicts of NumPy arrays (Tensors of either library as arrays)."""
    if hasattr(value, "detach"):
        return value.detach().numpy()
    if isinstance(value, dg.Tensor):
        return value.numpy()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not isinstance(value, str):
        return type(value)(_plain(v) for v in value) if not hasattr(value, "_fields") else [_plain(v) for v in value]
    return value


def _same(ours, theirs):
    ours, theirs = _plain(ours), _plain(theirs)
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs)
        for k in theirs:
            _same(ours[k], theirs[k])
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), (ours, theirs)
        for a, b in zip(ours, theirs):
            _same(a, b)
    elif isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray) and ours.dtype == theirs.dtype and ours.shape == theirs.shape, (ours,
                                                                                                            theirs)
        np.testing.assert_array_equal(ours, theirs)
    else:
        assert ours == theirs


# ---------------------------------------------------------------- against torch.utils.data
@pytest.mark.oracle
@pytest.mark.parametrize("batch_size, drop_last", [(1, False), (7, False), (7, True), (50, False), (64, True)])
def test_batches_in_order_are_torchs(batch_size, drop_last):
    torch = _torch()
    x, y = RNG.standard_normal((50, 3, 2)), RNG.integers(0, 5, 50)
    ours = DataLoader(TensorDataset(x, y), batch_size=batch_size, drop_last=drop_last)
    theirs = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)),
                                         batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    got, expected = list(ours), list(theirs)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        _same(a, b)


class _Examples(Dataset):
    """Examples of every kind default_collate takes, as a user's Dataset returns them."""

    Point = collections.namedtuple("Point", "x y")

    def __init__(self, torch=None):
        self.torch = torch

    def __len__(self):
        return 9

    def __getitem__(self, i):
        array = np.arange(3.0) * i
        tensor = dg.tensor(array) if self.torch is None else self.torch.tensor(array)
        return {"image": array.reshape(1, 3), "label": i % 3, "weight": 0.5 * i, "flag": i % 2 == 0,
                "name": f"item{i}", "pair": (np.int64(i), [i, -i]), "point": self.Point(1.0 * i, array[:2]),
                "tensor": tensor}


@pytest.mark.oracle
def test_default_collation_of_nested_examples_is_torchs():
    torch = _torch()
    ours = list(DataLoader(_Examples(), batch_size=4))
    theirs = list(torch.utils.data.DataLoader(_Examples(torch), batch_size=4))
    for a, b in zip(ours, theirs):
        assert type(a["point"]) is _Examples.Point and isinstance(a["tensor"], dg.Tensor)
        a = dict(a, tensor=a["tensor"].numpy())
        # torch turns NumPy arrays and numbers into tensors; dagrad keeps them NumPy arrays, of the same dtypes
        _same(a, b)


def test_default_collate_by_hand():
    batch = default_collate([(np.zeros(2), 1, 2.5, True, "a"), (np.ones(2), 2, 3.5, False, "b")])
    assert isinstance(batch, list) and len(batch) == 5  # tuples collate to a list, as PyTorch's
    assert batch[1].dtype == np.int64 and batch[2].dtype == np.float64 and batch[3].dtype == bool
    assert batch[4] == ["a", "b"]
    t = default_collate([dg.tensor([1.0, 2.0]), dg.tensor([3.0, 4.0])])
    assert isinstance(t, dg.Tensor) and t.shape == (2, 2)
    with pytest.raises(RuntimeError, match=r"stack expects each array to be equal size, but got \(2,\) at entry 0 "
                                           r"and \(3,\) at entry 1"):
        default_collate([np.zeros(2), np.zeros(3)])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="found object"):
        default_collate([object(), object()])


def test_tensor_columns_batch_as_tensors_and_stay_differentiable():
    w = dg.tensor(RNG.standard_normal((6, 2)), requires_grad=True)
    labels = dg.tensor(np.arange(6))
    (xb, yb), = list(DataLoader(TensorDataset(w, labels), batch_size=6, shuffle=True,
                                generator=np.random.default_rng(0)))
    assert isinstance(xb, dg.Tensor) and isinstance(yb, dg.Tensor) and xb.requires_grad and not yb.requires_grad
    dg.sum(xb * 2).backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((6, 2), 2.0))
    np.testing.assert_array_equal(xb.numpy(), w.numpy()[yb.numpy()])  # rows and labels stay together


# ---------------------------------------------------------------- shuffling, samplers, the fast path
def test_shuffle_visits_every_example_once_in_a_new_order_each_pass_reproducibly():
    x = np.arange(23)
    loader = DataLoader(TensorDataset(x), batch_size=5, shuffle=True, generator=np.random.default_rng(3))
    first = np.concatenate([b for (b,) in loader])
    second = np.concatenate([b for (b,) in loader])
    assert sorted(first) == sorted(second) == list(range(23)) and not np.array_equal(first, second)
    again = DataLoader(TensorDataset(x), batch_size=5, shuffle=True, generator=np.random.default_rng(3))
    np.testing.assert_array_equal(np.concatenate([b for (b,) in again]), first)
    # without a generator: dagrad's default one, which dg.manual_seed reseeds
    dg.manual_seed(7)
    a = [b.tolist() for (b,) in DataLoader(TensorDataset(x), batch_size=5, shuffle=True)]
    dg.manual_seed(7)
    assert [b.tolist() for (b,) in DataLoader(TensorDataset(x), batch_size=5, shuffle=True)] == a
    seeded = DataLoader(TensorDataset(x), batch_size=5, shuffle=True, generator=11)
    assert [b.tolist() for (b,) in seeded] != [b.tolist() for (b,) in seeded]  # a seed makes ONE generator


def test_the_batch_fast_path_gives_what_the_per_example_protocol_gives():
    x, y = RNG.standard_normal((40, 2, 3)), RNG.integers(0, 4, 40)
    data = Subset(TensorDataset(x, dg.tensor(y)), list(range(39, 0, -2)))
    fast = DataLoader(data, batch_size=6, shuffle=True, generator=np.random.default_rng(1))
    slow = DataLoader(data, batch_size=6, shuffle=True, generator=np.random.default_rng(1),
                      collate_fn=lambda batch: default_collate(list(batch)))
    for a, b in zip(fast, slow, strict=True):
        _same(a, b)
    samples = []
    custom = DataLoader(data, batch_size=4, collate_fn=lambda batch: samples.append(batch) or len(batch))
    assert list(custom) == [4, 4, 4, 4, 4]
    assert all(isinstance(s, list) and isinstance(s[0], tuple) and len(s[0]) == 2 for s in samples)
    np.testing.assert_array_equal(samples[0][1][0], x[37])


def test_samplers_and_batch_samplers_as_torch():
    data = TensorDataset(np.arange(10))
    assert list(SequentialSampler(data)) == list(range(10))
    order = list(RandomSampler(data, generator=np.random.default_rng(0)))
    assert sorted(order) == list(range(10)) and all(type(i) is int for i in order)
    drawn = list(RandomSampler(data, replacement=True, num_samples=25, generator=np.random.default_rng(0)))
    assert len(drawn) == 25 and set(drawn) <= set(range(10))
    longer = list(RandomSampler(data, num_samples=25, generator=np.random.default_rng(0)))
    assert len(longer) == 25 and sorted(longer[:20]) == sorted(list(range(10)) * 2)
    batches = BatchSampler(SequentialSampler(data), 4, drop_last=False)
    assert list(batches) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] and len(batches) == 3
    loader = DataLoader(data, batch_sampler=batches)
    assert [b.tolist() for (b,) in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] and len(loader) == 3
    loader = DataLoader(data, sampler=[9, 0, 5], batch_size=2)
    assert [b.tolist() for (b,) in loader] == [[9, 0], [5]]
    assert [int(x) for (x,) in DataLoader(data, batch_size=None, sampler=[3, 1])] == [3, 1]  # no batching


def test_dataset_subset_concat_and_the_getitems_protocol():
    class Counting(Dataset):
        def __init__(self):
            self.calls = []

        def __len__(self):
            return 6

        def __getitem__(self, i):
            return np.array([i, i * i])

        def __getitems__(self, indices):
            self.calls.append(list(indices))
            return [self[i] for i in indices]

    data = Counting()
    (batch,) = list(DataLoader(Subset(data, [5, 1, 2]), batch_size=3))
    assert data.calls == [[5, 1, 2]]
    np.testing.assert_array_equal(batch, [[5, 25], [1, 1], [2, 4]])
    both = data + TensorDataset(np.arange(3) * 10)
    assert isinstance(both, ConcatDataset) and len(both) == 9 and both[7] == (10,) and both[-1] == (20,)
    with pytest.raises(IndexError, match="index 9 is out of range for 9 examples"):
        both[9]


def test_random_split_by_lengths_and_fractions_as_torch():
    torch = pytest.importorskip("torch")
    data = TensorDataset(np.arange(11))
    for lengths in ([3, 8], [0.5, 0.5], [0.3, 0.3, 0.4], [0.1] * 10 + [0.0]):
        with pytest.warns(UserWarning, match="Length of split at index 10 is 0") if 0.0 in lengths else _nothing():
            ours = random_split(data, lengths, generator=np.random.default_rng(0))
            theirs = torch.utils.data.random_split(torch.arange(11), lengths)
        assert [len(s) for s in ours] == [len(s) for s in theirs]
        assert sorted(int(x) for s in ours for (x,) in (s[i] for i in range(len(s)))) == list(range(11))
    a = random_split(data, [4, 7], generator=np.random.default_rng(5))
    b = random_split(data, [4, 7], generator=np.random.default_rng(5))
    assert a[0].indices == b[0].indices


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# ---------------------------------------------------------------- Dask arrays: a batch reads its own rows only
class _Counting:
    """A Dask scheduler that counts its calls (one call is one `dask.compute`) and runs the synchronous one."""

    def __init__(self):
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, dsk, keys, **kwargs):
        import dask

        with self._lock:
            self.calls += 1
        return dask.get(dsk, keys, **kwargs)


class _Recording:
    """An array-like that notes which rows Dask reads from it."""

    def __init__(self, array):
        self.array, self.shape, self.dtype, self.ndim = array, array.shape, array.dtype, array.ndim
        self.rows = []

    def __getitem__(self, index):
        rows = index[0] if isinstance(index, tuple) else index
        self.rows.append((rows, rows + 1) if isinstance(rows, int) else (rows.start, rows.stop))
        return self.array[index]


def test_a_dask_backed_dataset_computes_one_batch_at_a_time_and_reads_only_its_chunks():
    da = pytest.importorskip("dask.array")
    import dask

    x, y = RNG.standard_normal((100, 3)), RNG.integers(0, 3, 100)
    source = _Recording(x)
    data = TensorDataset(da.from_array(source, chunks=(10, 3)), da.from_array(y, chunks=10))
    source.rows.clear()  # Dask's look at an empty slice, for the array's type
    counting = _Counting()
    with dask.config.set(scheduler=counting):
        loader = DataLoader(data, batch_size=10)
        assert counting.calls == 0 and source.rows == []  # nothing read to make it
        for k, (xb, yb) in enumerate(loader):
            assert type(xb) is np.ndarray and type(yb) is np.ndarray
            np.testing.assert_array_equal(xb, x[10 * k:10 * k + 10])
            np.testing.assert_array_equal(yb, y[10 * k:10 * k + 10])
            assert counting.calls == k + 1  # one compute per batch, for both arrays
            assert source.rows[-1] == (10 * k, 10 * k + 10)  # its own chunk, nothing more
        assert len(source.rows) == 10
        source.rows.clear()
        (xb, yb), = list(DataLoader(data, batch_size=3, sampler=[[42, 7, 45]][0]))[:1]
        np.testing.assert_array_equal(xb, x[[42, 7, 45]])
        assert sorted(source.rows) == [(0, 10), (40, 50)]  # the two chunks those rows are in
        shuffled = np.concatenate([b for b, _ in DataLoader(data, batch_size=16, shuffle=True,
                                                             generator=np.random.default_rng(0))])
        assert sorted(shuffled[:, 0]) == sorted(x[:, 0])
        source.rows.clear()
        single = data[5]
        np.testing.assert_array_equal(single[0], x[5])
        assert source.rows == [(5, 6)]


# ---------------------------------------------------------------- a training loop
def test_a_training_loop_over_a_data_loader_learns():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 4))
    y = (x @ np.array([1.0, -2.0, 0.5, 0.0]) > 0).astype(np.int64)
    train, test = random_split(TensorDataset(x, y), [0.75, 0.25], generator=rng)
    dg.manual_seed(0)
    model = dg.nn.Sequential(dg.nn.Linear(4, 16), dg.nn.ReLU(), dg.nn.Linear(16, 2))
    opt = dg.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(10):
        for xb, yb in DataLoader(train, batch_size=32, shuffle=True, generator=rng):
            loss = dg.nn.functional.cross_entropy(model(dg.tensor(xb)), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    (xt, yt), = list(DataLoader(test, batch_size=len(test)))
    assert (model(dg.tensor(xt)).numpy().argmax(1) == yt).mean() > 0.9


# ---------------------------------------------------------------- bad input: clear errors, nothing changed
BAD = [
    (lambda: TensorDataset(np.zeros((5, 2)), np.zeros(4)), ValueError,
     r"TensorDataset: the arrays must have the same number of rows \(examples\), got argument 0: 5 rows \(shape "
     r"\(5, 2\)\), argument 1: 4 rows \(shape \(4,\)\)"),
    (lambda: TensorDataset(), ValueError, "TensorDataset: needs at least one array"),
    (lambda: TensorDataset(np.float64(3.0)), ValueError, "argument 0 is 0-d"),
    (lambda: DataLoader(TensorDataset(np.zeros(3)), batch_size=0), ValueError,
     "DataLoader: batch_size should be a positive integer value .*got batch_size=0"),
    (lambda: DataLoader(TensorDataset(np.zeros(3)), batch_size=-2), ValueError, "got batch_size=-2"),
    (lambda: DataLoader(TensorDataset(np.zeros(3)), batch_size=2.0), ValueError, "got batch_size=2.0"),
    (lambda: DataLoader(TensorDataset(np.zeros(3)), batch_size=True), ValueError, "got batch_size=True"),
    (lambda: DataLoader(TensorDataset(np.zeros(3)), drop_last="yes"), ValueError,
     "drop_last should be a boolean value"),
    (lambda: DataLoader(TensorDataset(np.zeros(3)), shuffle=True, sampler=[0, 1]), ValueError,
     "sampler option is mutually exclusive with shuffle"),
    (lambda: DataLoader(TensorDataset(np.zeros(3)), batch_size=2, batch_sampler=[[0, 1]]), ValueError,
     "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
    (lambda: DataLoader(TensorDataset(np.zeros(3)), batch_size=None, drop_last=True), ValueError,
     "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"),
    (lambda: DataLoader(TensorDataset(np.zeros(3)), num_workers=2), NotImplementedError,
     "num_workers=2: dagrad loads batches in the main process only"),
    (lambda: DataLoader(TensorDataset(np.zeros(3)), prefetch_factor=2), ValueError,
     "prefetch_factor=2 needs worker processes"),
    (lambda: DataLoader(TensorDataset(np.zeros(3)), shuffle=True, generator=np.random.RandomState(0)), TypeError,
     "generator must be a numpy.random.Generator, a seed or None, got RandomState"),
    (lambda: DataLoader([1, 2], timeout=-1), ValueError, "timeout option should be non-negative"),
    (lambda: DataLoader(5), TypeError, "dataset must be a map-style dataset"),
    (lambda: random_split(TensorDataset(np.zeros(5)), [2, 2]), ValueError,
     r"random_split: the lengths \[2, 2\] must be non-negative and sum to the dataset's length, 5"),
    (lambda: random_split(TensorDataset(np.zeros(5)), [0.5, 0.6]), ValueError,
     "lengths must be integers, or fractions in"),
    (lambda: BatchSampler(SequentialSampler(range(3)), 0, False), ValueError,
     "BatchSampler: batch_size should be a positive integer value, but got batch_size=0"),
    (lambda: RandomSampler(range(3), num_samples=0), ValueError, "num_samples should be a positive integer value"),
]


@pytest.mark.parametrize("make, kind, says", BAD, ids=[str(k) for k in range(len(BAD))])
def test_bad_input_is_a_clear_error_at_the_users_line(make, kind, says):
    with pytest.raises(kind, match=says) as info:
        make()
    assert f"{HERE}:{make.__code__.co_firstlineno}" in str(info.value)


def test_a_failed_random_split_draws_nothing():
    dg.manual_seed(3)
    expected = dg.nn.init.default_generator().random()
    dg.manual_seed(3)
    with pytest.raises(ValueError):
        random_split(TensorDataset(np.zeros(5)), [2, 2])
    assert dg.nn.init.default_generator().random() == expected
