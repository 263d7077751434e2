"""The layers of `dg.nn`, with PyTorch's default initialisations (float64 parameters unless given `dtype=`).

Each checks its options when it is made (a ValueError or TypeError naming the layer), and its input's shape when
called, naming itself, the expected and the actual shape at the user's line.
"""

from __future__ import annotations

import math

import numpy as np

from .._core.errors import user_error
from ..ops.nn import linear as _linear_op
from . import functional as F
from . import init
from ._common import _affine, _empty, _size
from .module import Module

__all__ = [
    "Linear", "Dropout", "Dropout2d", "LayerNorm", "Embedding", "Sequential", "ModuleList",
    "ModuleDict", "Identity", "ReLU", "Tanh", "Sigmoid", "GELU", "SiLU", "LeakyReLU", "ELU", "Softplus", "Softmax",
    "LogSoftmax", "Flatten",
]


class Linear(Module):
    """y = x @ weight.T + bias; weight (out_features, in_features) from kaiming_uniform(a=sqrt(5)),
    bias from U(-1/sqrt(in_features), 1/sqrt(in_features)), as PyTorch.

    >>> import dagrad as dg
    >>> layer = dg.nn.Linear(3, 2)
    >>> layer
    Linear(in_features=3, out_features=2, bias=True)
    >>> layer(dg.tensor([[1.0, 2.0, 3.0]])).shape
    (1, 2)
    """

    def __init__(self, in_features, out_features, bias=True, dtype=None, generator=None):
        super().__init__()
        self.in_features = _size(in_features, "in_features", "Linear")
        self.out_features = _size(out_features, "out_features", "Linear")
        self.weight = _empty((self.out_features, self.in_features), dtype)
        self.bias = _empty((self.out_features,), dtype) if bias else None
        self.reset_parameters(generator)

    def reset_parameters(self, generator=None):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5), generator=generator)
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound, generator)

    def forward(self, x):
        xs = F._shape(x)
        if not xs or xs[-1] != self.in_features:
            raise F.shape_error(repr(self), f"(..., {self.in_features})", xs, x)
        return _linear_op(x, self.weight, self.bias)  # F.linear less its shape check, made above

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Dropout(Module):
    """Zeroes entries with probability p while training (scaling the rest by 1/(1-p)); identity in eval.

    >>> import dagrad as dg, numpy as np
    >>> drop = dg.nn.Dropout(0.5, generator=np.random.default_rng(0))
    >>> drop(dg.tensor(np.ones(4)))
    tensor([2., 0., 0., 0.])
    """

    def __init__(self, p=0.5, generator=None):
        super().__init__()
        self.p = F._probability(p, "p", "Dropout")
        self.generator = generator

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.generator)

    def extra_repr(self):
        return f"p={self.p}"


class Dropout2d(Module):
    """Zeroes whole channels of (N, C, H, W) inputs with probability p while training (scaling the rest by
    1/(1-p)), as PyTorch's; identity in eval.

    >>> import dagrad as dg, numpy as np
    >>> dg.nn.Dropout2d(0.2)
    Dropout2d(p=0.2, inplace=False)
    """

    def __init__(self, p=0.5, inplace=False, generator=None):
        super().__init__()
        self.p = F._probability(p, "p", "Dropout2d")
        self.inplace, self.generator = bool(inplace), generator

    def forward(self, x):
        xs = F._shape(x)
        if len(xs) not in (3, 4):
            raise F.shape_error(repr(self), "(N, C, H, W) (or (N, C, L))", xs, x)
        return F.dropout2d(x, self.p, self.training, generator=self.generator)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class LayerNorm(Module):
    """Normalises over the trailing `normalized_shape` dims; weight ones, bias zeros (no bias with `bias=False`).

    >>> import dagrad as dg
    >>> dg.nn.LayerNorm(3)
    LayerNorm((3,), eps=1e-05, elementwise_affine=True)
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(_size(n, "normalized_shape", "LayerNorm") for n in normalized_shape)
        if not self.normalized_shape:
            raise user_error(ValueError, "LayerNorm", "normalized_shape must have at least one dimension")
        self.eps = F._positive_number(eps, "eps", "LayerNorm")
        self.elementwise_affine = elementwise_affine
        weight, shift = _affine(self.normalized_shape, dtype, elementwise_affine)
        self.weight, self.bias = weight, shift if bias else None  # bias=False: a scale only, as PyTorch's

    def forward(self, x):
        xs = F._shape(x)
        k = len(self.normalized_shape)
        if len(xs) < k or tuple(xs[len(xs) - k:]) != self.normalized_shape:
            raise F.shape_error(repr(self), "(*, " + ", ".join(map(str, self.normalized_shape)) + ")", xs, x)
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class Embedding(Module):
    """A lookup table of `num_embeddings` vectors of size `embedding_dim`, initialised N(0, 1).

    >>> import dagrad as dg, numpy as np
    >>> dg.nn.Embedding(10, 3)(np.array([[1, 2], [3, 4]])).shape
    (2, 2, 3)
    """

    def __init__(self, num_embeddings, embedding_dim, dtype=None, generator=None):
        super().__init__()
        self.num_embeddings = _size(num_embeddings, "num_embeddings", "Embedding")
        self.embedding_dim = _size(embedding_dim, "embedding_dim", "Embedding")
        self.weight = _empty((self.num_embeddings, self.embedding_dim), dtype)
        init.normal_(self.weight, generator=generator)

    def forward(self, indices):
        return F.embedding(indices, self.weight)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"


class Sequential(Module):
    """Modules applied in order; indexable, iterable, sized.

    >>> import dagrad as dg
    >>> model = dg.nn.Sequential(dg.nn.Linear(4, 8), dg.nn.ReLU(), dg.nn.Linear(8, 2))
    >>> print(model)
    Sequential(
      (0): Linear(in_features=4, out_features=8, bias=True)
      (1): ReLU()
      (2): Linear(in_features=8, out_features=2, bias=True)
    )
    >>> len(model), type(model[1]).__name__
    (3, 'ReLU')
    """

    def __init__(self, *modules):
        super().__init__()
        for k, m in enumerate(modules):
            if not isinstance(m, Module):
                raise user_error(TypeError, "Sequential", f"argument {k} is a {type(m).__name__}, not a dg.nn.Module")
            setattr(self, str(k), m)

    def append(self, module):
        if not isinstance(module, Module):
            raise user_error(TypeError, "Sequential.append", f"expected a dg.nn.Module, got {type(module).__name__}")
        setattr(self, str(len(self._modules)), module)
        return self

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, k):
        items = list(self._modules.values())
        return Sequential(*items[k]) if isinstance(k, slice) else items[k]

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleList(Module):
    """Modules in a list, registered (so `parameters()` finds theirs), as PyTorch's: indexing (negative and
    slices), `len`, iteration, `append`, `extend`, `insert`, `pop`, `del`, `+=`. It has no `forward`.

    >>> import dagrad as dg
    >>> layers = dg.nn.ModuleList([dg.nn.Linear(2, 2) for _ in range(3)])
    >>> layers.append(dg.nn.ReLU()) is layers
    True
    >>> len(layers), len(list(layers.parameters())), type(layers[-1]).__name__
    (4, 6, 'ReLU')
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _index(self, index):
        """index as a position in [0, len), or an IndexError as a list's."""
        i, n = F._int(index, "index", "ModuleList"), len(self)
        if not -n <= i < n:
            raise user_error(IndexError, "ModuleList", f"index {i} is out of range for {n} modules")
        return i % n

    def _renumber(self, modules):
        """Registers `modules` as '0', '1', ... in place of the current ones (after an insertion or deletion)."""
        for name in list(self._modules):
            delattr(self, name)
        for k, m in enumerate(modules):
            setattr(self, str(k), m)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return self._modules[str(self._index(index))]

    def __setitem__(self, index, module):
        setattr(self, str(self._index(index)), _module(module, "ModuleList"))

    def __delitem__(self, index):
        modules = list(self._modules.values())
        del modules[index if isinstance(index, slice) else self._index(index)]
        self._renumber(modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList([*self, *other])

    def append(self, module):
        setattr(self, str(len(self)), _module(module, "ModuleList.append"))
        return self

    def extend(self, modules):
        try:
            modules = list(modules)
        except TypeError:
            raise user_error(TypeError, "ModuleList.extend", f"expected an iterable of modules, got "
                             f"{type(modules).__name__}") from None
        for m in modules:  # all checked before any is added
            _module(m, "ModuleList.extend")
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        modules = list(self._modules.values())
        modules.insert(F._int(index, "index", "ModuleList.insert"), _module(module, "ModuleList.insert"))
        self._renumber(modules)

    def pop(self, key):
        module = self[key]
        del self[key]
        return module


class ModuleDict(Module):
    """Modules by name, registered (so `parameters()` finds theirs), as PyTorch's: `d[key]`, `d[key] = m`,
    `del d[key]`, `in`, `len`, iteration over the keys, `keys()`, `values()`, `items()`, `update()`, `pop()`,
    `clear()`, in insertion order. A key that names another attribute (such as `keys`) is a KeyError.

    >>> import dagrad as dg
    >>> heads = dg.nn.ModuleDict({"cls": dg.nn.Linear(4, 3), "box": dg.nn.Linear(4, 2)})
    >>> heads["act"] = dg.nn.ReLU()
    >>> list(heads), [name for name, _ in heads.named_parameters()][:2]
    (['cls', 'box', 'act'], ['cls.weight', 'cls.bias'])
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, _module(module, "ModuleDict"))

    def __delitem__(self, key):
        if key not in self._modules:
            raise KeyError(key)
        delattr(self, key)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def pop(self, key):
        module = self[key]
        del self[key]
        return module

    def clear(self):
        for key in list(self._modules):
            delattr(self, key)

    def update(self, modules):
        """Adds or replaces entries from a mapping or an iterable of (key, module) pairs, all checked first."""
        where = "ModuleDict.update"
        pairs = list(modules.items()) if hasattr(modules, "keys") else _pairs(modules, where)
        for key, module in pairs:
            self._check_child(key, _module(module, where), where)
        for key, module in pairs:
            self.add_module(key, module)


def _module(value, where):
    """value, which must be a Module (a container's entry)."""
    if not isinstance(value, Module):
        raise user_error(TypeError, where, f"expected a dg.nn.Module, got {type(value).__name__}")
    return value


def _pairs(items, where):
    """A list of (key, value) pairs from an iterable, each checked to be a pair (as PyTorch's update)."""
    try:
        items = [tuple(item) for item in items]
    except TypeError:
        raise user_error(TypeError, where, f"expected a mapping or an iterable of (key, module) pairs, got "
                         f"{type(items).__name__}") from None
    for k, item in enumerate(items):
        if len(item) != 2:
            raise user_error(ValueError, where, f"element #{k} has length {len(item)}; 2 is required")
    return items


class Identity(Module):
    """Returns its input unchanged (arguments to the constructor are ignored, as PyTorch's): a placeholder layer.

    >>> import dagrad as dg
    >>> dg.nn.Identity(54, unused="x")(dg.tensor([1.0, 2.0]))
    tensor([1., 2.])
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


def _inplace(text, inplace):
    """A repr's text with PyTorch's inplace note (the flag is accepted for PyTorch's signatures: dagrad's
    activations always return a new tensor)."""
    return ", ".join(([text] if text else []) + (["inplace=True"] if inplace else []))


class ReLU(Module):
    """max(x, 0) elementwise.

    >>> import dagrad as dg
    >>> dg.nn.ReLU()(dg.tensor([-1.0, 2.0]))
    tensor([0., 2.])
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return F.relu(x)

    def extra_repr(self):
        return _inplace("", self.inplace)


class Tanh(Module):
    """tanh elementwise.

    >>> import dagrad as dg
    >>> dg.nn.Tanh()(dg.tensor([0.0]))
    tensor([0.])
    """

    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x)) elementwise.

    >>> import dagrad as dg
    >>> dg.nn.Sigmoid()(dg.tensor([0.0]))
    tensor([0.5])
    """

    def forward(self, x):
        return F.sigmoid(x)


class GELU(Module):
    """x * Phi(x) elementwise, exact (`approximate='none'`) or PyTorch's tanh approximation (`'tanh'`).

    >>> import dagrad as dg
    >>> dg.nn.GELU(approximate="tanh")(dg.tensor([1.0])).numpy().round(4)
    array([0.8412])
    """

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise user_error(ValueError, "GELU", f"approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x * sigmoid(x) elementwise.

    >>> import dagrad as dg
    >>> dg.nn.SiLU()(dg.tensor([0.0]))
    tensor([0.])
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return F.silu(x)

    def extra_repr(self):
        return _inplace("", self.inplace)


class LeakyReLU(Module):
    """x where x > 0, else negative_slope * x.

    >>> import dagrad as dg
    >>> dg.nn.LeakyReLU(0.2)(dg.tensor([-1.0, 1.0]))
    tensor([-0.2,  1. ])
    """

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope = F._real(negative_slope, "negative_slope", "LeakyReLU")
        self.inplace = inplace

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self):
        return _inplace(f"negative_slope={self.negative_slope}", self.inplace)


class ELU(Module):
    """x where x > 0, else alpha * (exp(x) - 1).

    >>> import dagrad as dg
    >>> dg.nn.ELU()(dg.tensor([-1.0, 1.0])).numpy().round(4)
    array([-0.6321,  1.    ])
    """

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = F._real(alpha, "alpha", "ELU")
        self.inplace = inplace

    def forward(self, x):
        return F.elu(x, self.alpha)

    def extra_repr(self):
        return _inplace(f"alpha={self.alpha}", self.inplace)


class Softplus(Module):
    """log(1 + exp(beta x)) / beta elementwise, x itself where beta x > threshold.

    >>> import dagrad as dg
    >>> dg.nn.Softplus(beta=2.0)(dg.tensor([0.0])).numpy().round(4)
    array([0.3466])
    """

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = F._real(beta, "beta", "Softplus")
        self.threshold = F._real(threshold, "threshold", "Softplus")

    def forward(self, x):
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmax(Module):
    """Softmax along `dim` (dim=None: PyTorch's deprecated implicit choice, with its warning).

    >>> import dagrad as dg
    >>> dg.nn.Softmax(dim=-1)(dg.tensor([[0.0, 0.0]]))
    tensor([[0.5, 0.5]])
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim, _stacklevel=5)  # the warning points at the line that called the module

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along `dim`, computed stably (dim=None: PyTorch's deprecated implicit choice, warned).

    >>> import dagrad as dg
    >>> dg.nn.LogSoftmax(dim=1)(dg.tensor([[0.0, 0.0]])).numpy().round(4)
    array([[-0.6931, -0.6931]])
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.log_softmax(x, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Flatten(Module):
    """Merges dims start_dim..end_dim (default: all but the batch dim).

    >>> import dagrad as dg, numpy as np
    >>> dg.nn.Flatten()(dg.tensor(np.zeros((2, 3, 4)))).shape
    (2, 12)
    """

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = F._int(start_dim, "start_dim", "Flatten"), F._int(end_dim, "end_dim", "Flatten")

    def forward(self, x):
        return F.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
