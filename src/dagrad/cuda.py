"""`torch.cuda`'s questions, answered for dagrad: whether it can compute on an NVIDIA GPU (through CuPy,
an optional extra: `pip install 'dagrad[cupy]'`) and on how many.

dagrad computes on the GPU when a tensor's value is a CuPy array (`dg.tensor(cupy.asarray(x))`, see
docs/backends.md, "CuPy"). CuPy is imported only when these functions are asked (never by
`import dagrad`).

>>> import dagrad as dg
>>> dg.cuda.is_available() == (dg.cuda.device_count() > 0)
True
"""

from __future__ import annotations

import importlib
import importlib.util

from ._core.errors import missing_name

__all__ = ["is_available", "device_count", "manual_seed", "manual_seed_all"]

EXTRA = "pip install 'dagrad[cupy]'"


def _cupy():
    """The cupy module, or None when it is not installed (it is imported only now, when asked)."""
    if importlib.util.find_spec("cupy") is None:
        return None
    return importlib.import_module("cupy")


def device_count():
    """The number of GPUs CuPy sees (0 without CuPy, or without a GPU or its driver), as `torch.cuda.device_count`."""
    cupy = _cupy()
    if cupy is None:
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # CuPy's CUDARuntimeError (no driver, no device) and the like: no GPU to use
        return 0


def is_available():
    """Whether dagrad can compute on a GPU: CuPy is installed and sees one, as `torch.cuda.is_available`."""
    return device_count() > 0


def manual_seed(seed):
    """`torch.cuda.manual_seed`: dagrad's random values come from its one default generator (`dg.manual_seed`),
    on any device, so there is no GPU generator to seed; as PyTorch without a GPU, it does nothing."""


manual_seed_all = manual_seed


def __getattr__(name):
    raise missing_name(__name__, name, "PyTorch's torch.cuda.{}", {}, "PyTorch")
