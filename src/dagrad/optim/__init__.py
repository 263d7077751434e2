"""`dg.optim`: optimisers and learning-rate schedulers with PyTorch's semantics and formulas.

Eager mode: `loss.backward(); opt.step(); opt.zero_grad()`. Static graphs:
`train = opt.minimize(loss)` once, then `sess.run(train, feed_dict)` per step.

>>> import dagrad as dg
>>> w = dg.tensor([3.0], requires_grad=True)
>>> opt = dg.optim.Adam([w], lr=0.1)
>>> for _ in range(100):
...     opt.zero_grad()
...     ((w - 1.0) ** 2).sum().backward()
...     opt.step()
>>> abs(w.item() - 1.0) < 0.05
True
"""

from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
