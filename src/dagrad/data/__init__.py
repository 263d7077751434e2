"""Small datasets shipped with dagrad (see README.md in this folder for sources and licences)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["load_digits", "load_docs"]

_HERE = Path(__file__).resolve().parent


def load_digits(dtype="float64"):
    """The 8x8 handwritten digits (UCI, 1797 images): images scaled to [0, 1] and labels.

    >>> from dagrad.data import load_digits
    >>> images, labels = load_digits()
    >>> images.shape, labels.shape, images.max(), sorted(set(labels.tolist())) == list(range(10))
    ((1797, 8, 8), (1797,), np.float64(1.0), True)
    """
    with np.load(_HERE / "digits.npz", allow_pickle=False) as data:
        images = data["images"].astype(dtype) / 16.0
        labels = data["labels"].astype(np.int64)
    return images, labels


def load_docs():
    """dagrad's documentation (its `docs/*.md` joined in name order) as one string, the text of `dagrad demo
    text`.

    >>> from dagrad.data import load_docs
    >>> text = load_docs()
    >>> text[:16], len(text) > 100_000
    ('# Architecture: ', True)
    """
    return (_HERE / "docs.txt").read_text(encoding="utf-8")
