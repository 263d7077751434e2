"""`dagrad.utils`: PyTorch's `torch.utils` names that dagrad has: `dagrad.utils.data` (datasets and loaders).

(`dagrad.util`, without the s, is HIPS autograd's module of that name.)
"""

from __future__ import annotations

from . import data

__all__ = ["data"]
