"""Per-example gradients with `dg.vmap`, and DP-SGD-style training on the shipped digits.

    python examples/per_example_gradients.py [epochs]

The loss is written for ONE example; `dg.vmap(dg.grad(loss), in_axes=(None, 0, 0))` gives the
gradient of every example of a batch at once (the parameters are shared: in_axes None), and
`dg.compile` turns that into one NumPy function. With per-example gradients a training step can
do what a batch gradient cannot: clip each example's gradient to a norm bound and add Gaussian
noise before averaging (the step of differentially private SGD, Abadi et al. 2016), and report
the spread of the gradient norms. The script checks the batched gradients against a Python loop
of `dg.grad` calls, trains the 64-128-128-10 tanh MLP, and prints the test accuracy.
"""

from __future__ import annotations

import sys

import numpy as np

import dagrad as dg
from dagrad.data import load_digits

SIZES = (64, 128, 128, 10)
BATCH = 64
CLIP = 1.0  # the bound on each example's gradient norm
NOISE = 0.5  # the noise's standard deviation, as a multiple of CLIP
LR = 0.5


def init(seed=0):
    rng = np.random.default_rng(seed)
    return {f"layer{k}": {"w": rng.standard_normal((i, o)) / np.sqrt(i), "b": np.zeros(o)}
            for k, (i, o) in enumerate(zip(SIZES[:-1], SIZES[1:]))}


def predict(params, x):
    h = x
    for k in range(len(SIZES) - 2):
        h = dg.tanh(h @ params[f"layer{k}"]["w"] + params[f"layer{k}"]["b"])
    last = params[f"layer{len(SIZES) - 2}"]
    return h @ last["w"] + last["b"]


def loss(params, x, onehot):
    """The cross-entropy of ONE example: x has shape (64,), onehot (10,)."""
    return -(onehot * dg.log_softmax(predict(params, x), axis=-1)).sum()


per_example_grads = dg.compile(dg.vmap(dg.grad(loss), in_axes=(None, 0, 0)))


def leaves(tree):
    return [leaf for layer in tree.values() for leaf in layer.values()]


def private_step(params, x, onehot, rng):
    """One DP-SGD step: per-example gradients, each clipped to norm CLIP, summed, noised, averaged."""
    grads = per_example_grads(params, x, onehot)  # every leaf: (batch, *parameter shape)
    flat = leaves(grads)
    norms = np.sqrt(sum((g.reshape(len(x), -1) ** 2).sum(axis=1) for g in flat))
    scale = 1.0 / np.maximum(1.0, norms / CLIP)
    for layer in params:
        for name, p in params[layer].items():
            g = grads[layer][name]
            clipped = np.tensordot(scale, g, axes=1)  # the sum over examples of the clipped gradients
            noisy = clipped + rng.normal(0.0, NOISE * CLIP, size=p.shape)
            params[layer][name] = p - LR * noisy / len(x)
    return norms


def main(epochs=8, seed=0):
    images, labels = load_digits()
    x = images.reshape(len(images), -1)
    onehot = np.eye(10)[labels]
    order = np.random.default_rng(seed).permutation(len(x))
    train, test = order[:1500], order[1500:]
    params = init(seed)

    # the batched gradients are the loop's, example by example
    batch = train[:BATCH]
    batched = per_example_grads(params, x[batch], onehot[batch])
    looped = [dg.grad(loss)(params, x[i], onehot[i]) for i in batch]
    worst = max(np.abs(batched[layer][name][k] - looped[k][layer][name]).max()
                for k in range(BATCH) for layer in params for name in ("w", "b"))
    print(f"vmap(grad) vs a loop of {BATCH} grad calls: largest difference {worst:.1e}")

    rng = np.random.default_rng(seed + 1)
    for epoch in range(epochs):
        shuffled = rng.permutation(train)
        norms = np.concatenate([private_step(params, x[b], onehot[b], rng)
                                for b in np.array_split(shuffled, len(shuffled) // BATCH)])
        accuracy = float((predict(params, x[test]).argmax(axis=1) == labels[test]).mean())
        print(f"epoch {epoch + 1}: per-example gradient norms median {np.median(norms):.2f} "
              f"(90th percentile {np.percentile(norms, 90):.2f}), clipped at {CLIP}; test accuracy {accuracy:.3f}")
    return {"max_difference": worst, "accuracy": accuracy, "median_norm": float(np.median(norms))}


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
