"""PyTorch's names around devices, default dtypes and grad modes (docs/coming-from.md, "PyTorch"):
`dg.cuda`, `set_default_device`, `set_default_dtype`, `no_grad`/`enable_grad`/`set_grad_enabled`/
`inference_mode` as decorators, PyTorch's own DataLoader over dagrad tensors, and the AttributeError of a
torch or jax name that dagrad lacks."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import dagrad as dg

HAS_CUPY = importlib.util.find_spec("cupy") is not None


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed: the answers depend on the GPU")
def test_cuda_without_cupy():
    assert dg.cuda.is_available() is False and dg.cuda.device_count() == 0
    dg.cuda.manual_seed_all(0)  # nothing to seed, as torch without a GPU
    with pytest.raises(ImportError, match=r"set_default_device: device 'cuda' needs CuPy.*pip install "
                                          r"'dagrad\[cupy\]'"):
        dg.set_default_device("cuda")
    with pytest.raises(ImportError, match=r"'cuda:1' needs CuPy"):
        dg.set_default_device("cuda:1")
    with pytest.raises(AttributeError, match=r"torch.cuda.synchronize.*docs/coming-from.md"):
        dg.cuda.synchronize  # noqa: B018


def test_default_device_is_the_cpu():
    dg.set_default_device("cpu")
    dg.set_default_device(None)
    dg.set_default_device(dg.device("cpu"))
    assert dg.get_default_device() == "cpu"
    with pytest.raises(ValueError, match="dagrad computes on the CPU only, got device='mps'"):
        dg.set_default_device("mps")


@pytest.fixture
def default_float32():
    dg.set_default_dtype(dg.float32)
    yield
    dg.set_default_dtype(dg.float64)


def test_set_default_dtype_makes_python_floats_and_the_factories_float32_as_torch(default_float32):
    import torch

    torch_default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    try:
        pairs = [(dg.tensor([1.5, 2.0]), torch.tensor([1.5, 2.0])), (dg.tensor(2.0), torch.tensor(2.0)),
                 (dg.tensor([1 + 2j]), torch.tensor([1 + 2j])), (dg.tensor([1, 2]), torch.tensor([1, 2])),
                 (dg.zeros(2), torch.zeros(2)), (dg.ones(2), torch.ones(2)), (dg.empty(2), torch.empty(2)),
                 (dg.rand(2), torch.rand(2)), (dg.randn(2), torch.randn(2)), (dg.eye(2), torch.eye(2)),
                 (dg.linspace(0, 1, 3), torch.linspace(0, 1, 3)), (dg.full((2,), 1.5), torch.full((2,), 1.5)),
                 (dg.full((2,), 7), torch.full((2,), 7)), (dg.arange(0, 1, 0.5), torch.arange(0, 1, 0.5)),
                 (dg.arange(3), torch.arange(3)), (dg.Tensor([1.0]), torch.Tensor([1.0]))]
        for ours, theirs in pairs:
            assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch."), (ours, theirs)
    finally:
        torch.set_default_dtype(torch_default)
    assert dg.get_default_dtype() == np.float32
    assert dg.nn.Linear(2, 3).weight.dtype == np.float32  # the layers' parameters too, as torch's
    assert dg.nn.BatchNorm1d(3).running_mean.dtype == np.float32
    assert dg.nn.LSTM(2, 3).weight_ih_l0.dtype == np.float32
    assert dg.nn.MultiheadAttention(4, 2).in_proj_weight.dtype == np.float32
    # NumPy values keep their dtype; dagrad.numpy follows NumPy
    assert dg.tensor(np.zeros(2)).dtype == np.float64 and dg.tensor(np.float64(1.0)).dtype == np.float64
    assert dg.numpy.zeros(2).dtype == np.float64
    assert (dg.tensor([1.0]) * 2.0).dtype == np.float32


def test_set_default_dtype_takes_floating_types_only():
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type, got int64"):
        dg.set_default_dtype(dg.int64)
    assert dg.get_default_dtype() == np.float64


def test_grad_modes_decorate_with_or_without_the_call():
    x = dg.ones(2, requires_grad=True)

    @dg.no_grad
    def bare(t):
        return t * 2

    @dg.no_grad()
    def called(t):
        return t * 2

    @dg.enable_grad
    def enabled(t):
        return t * 2

    @dg.inference_mode
    def inferred(t):
        return t * 2

    @dg.inference_mode(False)
    def not_inferred(t):
        return t * 2

    assert not bare(x).requires_grad and not called(x).requires_grad and not inferred(x).requires_grad
    assert not_inferred(x).requires_grad and bare.__name__ == "bare"
    with dg.no_grad():
        assert enabled(x).requires_grad
        assert not not_inferred(x).requires_grad  # inference_mode(False) leaves the mode as it is
    with dg.inference_mode():
        assert not (x * 2).requires_grad and dg.is_inference_mode_enabled()
    assert dg.is_grad_enabled() and not dg.is_inference_mode_enabled()
    with pytest.raises(TypeError, match=r"no_grad: takes no argument but a function to decorate, got int"):
        dg.no_grad(3)


def test_set_grad_enabled_as_a_call_a_context_and_a_decorator():
    x = dg.ones(2, requires_grad=True)

    @dg.set_grad_enabled(False)
    def off(t):
        return t * 2

    assert dg.is_grad_enabled()  # the decorator leaves the mode as it was
    assert not off(x).requires_grad and (x * 2).requires_grad
    with dg.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    with pytest.raises(TypeError, match="set_grad_enabled: mode must be True or False"):
        dg.set_grad_enabled("no")


def test_pytorchs_own_dataloader_batches_dagrad_tensors_with_dagrads_collate():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, TensorDataset

    x, y = dg.tensor(np.arange(20.0).reshape(10, 2)), dg.arange(10)
    dataset = TensorDataset(x, y)  # torch's: it asks len() and size(0), and indexes
    assert len(dataset) == 10 and dataset[3][0].tolist() == [6.0, 7.0]
    loader = DataLoader(dataset, batch_size=4, collate_fn=dg.utils.data.default_collate,
                        generator=torch.Generator().manual_seed(0), shuffle=True)
    seen = []
    for bx, by in loader:
        assert isinstance(bx, dg.Tensor) and isinstance(by, dg.Tensor) and bx.shape[1] == 2
        np.testing.assert_array_equal(bx.numpy()[:, 0], 2 * by.numpy())
        seen.extend(by.tolist())
    assert sorted(seen) == list(range(10))
    # dagrad's own DataLoader needs no collate_fn
    batches = list(dg.utils.data.DataLoader(dg.utils.data.TensorDataset(x, y), batch_size=4))
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


@pytest.mark.parametrize("name, parts", [
    ("pmap", ["JAX's jax.pmap", "dg.vmap", "docs/coming-from.md, 'JAX'"]),
    ("topk", ["PyTorch's torch.topk", "argsort", "docs/coming-from.md, 'PyTorch'"]),
    ("no_such_function", ["if it is torch.no_such_function or jax.no_such_function", "docs/coming-from.md"]),
])
def test_a_torch_or_jax_name_that_dagrad_lacks_says_what_to_use(name, parts):
    with pytest.raises(AttributeError) as info:
        getattr(dg, name)
    for part in parts:
        assert part in str(info.value)


def test_a_static_graph_op_takes_a_nested_list_operand():
    # a regression: the dtype rule read a list as NumPy's record layout ("Field elements must be 2- or 3-tuples")
    with dg.Graph() as g:
        x = dg.placeholder((None, 2))
        y = x * [[1.0, 2.0]]
        z = dg.add([1, 2], x)
    assert y.dtype == np.float64
    got = dg.Session(g).run([y, z], {x: np.ones((3, 2))})
    np.testing.assert_array_equal(got[0], np.ones((3, 2)) * [1.0, 2.0])
    np.testing.assert_array_equal(got[1], np.ones((3, 2)) + [1, 2])
