"""`dagrad demo`: train a small CNN and an MLP on the 8x8 handwritten digits.

Prints the held-out accuracy of each and writes into the output folder the loss curves
(`loss_curves.png`, with matplotlib), the CNN's graph (`cnn_graph.svg`) and the trained
weights (`cnn.npz`, `mlp.npz`, loadable with `dg.load` and `load_state_dict`). tqdm and
matplotlib come with the `[demo]` extra; without them the demo prints plain progress lines
and skips the picture, saying so.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

BATCH = 64
SEED = 0


def split(images, labels, held_out=0.2, seed=SEED):
    """A stratified split: the same share of each digit is held out."""
    rng = np.random.default_rng(seed)
    test = []
    for digit in range(10):
        where = np.flatnonzero(labels == digit)
        test.extend(rng.choice(where, size=round(held_out * len(where)), replace=False).tolist())
    test = np.array(sorted(test))
    train = np.setdiff1d(np.arange(len(labels)), test)
    return (images[train], labels[train]), (images[test], labels[test])


def cnn():
    from . import nn

    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 16 x 4 x 4
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 32 x 2 x 2
        nn.Flatten(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10),
    )


def mlp():
    from . import nn

    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh(),
                         nn.Linear(128, 10))


def _progress(total, description):
    try:
        from tqdm import tqdm
    except ImportError:
        return _PlainProgress(total, description)
    return tqdm(total=total, desc=description, unit="batch", leave=True)


class _PlainProgress:
    """Progress lines for when tqdm is not installed (pip install 'dagrad[demo]' for the bar)."""

    def __init__(self, total, description):
        self.total, self.description, self.done, self.postfix = total, description, 0, ""

    def update(self, n=1):
        self.done += n

    def set_postfix_str(self, text):
        self.postfix = text

    def close(self):
        print(f"{self.description}: {self.done}/{self.total} batches, {self.postfix}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def accuracy(model, images, labels):
    import dagrad as dg

    model.eval()
    with dg.no_grad():
        logits = model(dg.tensor(images))
    model.train()
    return float(np.mean(np.argmax(logits.numpy(), axis=1) == labels))


def train(name, model, data, epochs, lr, seed=SEED):
    """Adam on mini-batches of 64 with a cosine learning-rate schedule; returns the loss of each batch
    and the held-out accuracy after each epoch."""
    import dagrad as dg

    from . import optim
    from .nn import functional as F

    (x_train, y_train), (x_test, y_test) = data
    rng = np.random.default_rng(seed)
    opt = optim.Adam(model.parameters(), lr=lr)
    schedule = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)  # the step size shrinks to 0 at the end
    batches = -(-len(y_train) // BATCH)
    losses, accuracies = [], []
    with _progress(epochs * batches, name) as bar:
        for _ in range(epochs):
            order = rng.permutation(len(y_train))
            for k in range(batches):
                index = order[k * BATCH:(k + 1) * BATCH]
                loss = F.cross_entropy(model(dg.tensor(x_train[index])), y_train[index])
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
                bar.update(1)
                bar.set_postfix_str(f"loss {np.mean(losses[-batches:]):.3f}"
                                    + (f", held-out acc {accuracies[-1]:.3f}" if accuracies else ""))
            schedule.step()
            accuracies.append(accuracy(model, x_test, y_test))
            bar.set_postfix_str(f"loss {np.mean(losses[-batches:]):.3f}, held-out acc {accuracies[-1]:.3f}")
    return losses, accuracies


def plot(curves, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("   (matplotlib is not installed: no loss_curves.png; pip install 'dagrad[demo]')")
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, losses in curves.items():
        smooth = np.convolve(losses, np.ones(10) / 10, mode="valid")
        ax.plot(smooth, label=name)
    ax.set_xlabel("batch")
    ax.set_ylabel("cross-entropy (moving average of 10)")
    ax.set_yscale("log")
    ax.set_title("dagrad demo: digits 8x8")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def run(out="dagrad-demo", epochs=(30, 30), seed=SEED):
    """Trains the CNN and the MLP; returns {name: held-out accuracy}.

    BLAS runs on one thread: for matrices this small, OpenBLAS's threads cost more than they
    save (one epoch of the MLP took 12 times longer with two threads on a 2-core machine).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return _run(out, epochs, seed)
    with threadpool_limits(limits=1, user_api="blas"):
        return _run(out, epochs, seed)


def _run(out, epochs, seed):
    import dagrad as dg

    from .data import load_digits
    from .nn import init

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    images, labels = load_digits()
    data = split(images[:, None, :, :], labels, seed=seed)
    print(f"digits 8x8: {len(data[0][1])} training and {len(data[1][1])} held-out images (UCI, CC BY 4.0)")
    init.manual_seed(seed)
    start = time.perf_counter()
    models = {"CNN": (cnn(), epochs[0], 3e-3), "MLP": (mlp(), epochs[1], 1e-3)}
    results, curves = {}, {}
    for name, (model, n_epochs, lr) in models.items():
        losses, accuracies = train(name, model, data, n_epochs, lr, seed)
        results[name] = accuracies[-1]
        curves[name] = losses
        dg.save(model.state_dict(), out / f"{name.lower()}.npz")
    for name, acc in results.items():
        print(f"{name}: held-out accuracy {acc:.2%}")
    written = [out / "cnn.npz", out / "mlp.npz"]
    if plot(curves, out / "loss_curves.png"):
        written.append(out / "loss_curves.png")
    model = models["CNN"][0]
    sample = dg.tensor(data[1][0][:4])
    from .nn import functional as F

    dg.draw(F.cross_entropy(model(sample), data[1][1][:4]), out / "cnn_graph.svg")
    written.append(out / "cnn_graph.svg")
    print(f"wrote {', '.join(str(p) for p in written)} in {time.perf_counter() - start:.1f} s")
    return results
