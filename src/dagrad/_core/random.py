"""dagrad's default random generator: one per thread, shared by the factories (`dg.rand`, ...),
`dg.nn.init`, the layers' initialisations and dropout; `dg.manual_seed(n)` reseeds it."""

from __future__ import annotations

import threading

import numpy as np

_default = threading.local()  # each thread's default generator, in its `generator` attribute


def manual_seed(seed):
    """Reseeds the default generator (of this thread), as `torch.manual_seed`.

    >>> import dagrad as dg
    >>> dg.nn.init.manual_seed(0); a = dg.nn.init.default_generator().random()
    >>> dg.nn.init.manual_seed(0); a == dg.nn.init.default_generator().random()
    True
    """
    _default.generator = np.random.default_rng(seed)


def default_generator():
    """The default `np.random.Generator` (created unseeded on first use; see `manual_seed`)."""
    if getattr(_default, "generator", None) is None:
        _default.generator = np.random.default_rng()
    return _default.generator


def as_generator(generator):
    """`generator` as an `np.random.Generator`: None is the default one, an integer seeds a new one."""
    if generator is None:
        return default_generator()
    if isinstance(generator, (int, np.integer)):
        return np.random.default_rng(generator)
    return generator
