"""`dagrad demo text`: a character-level Transformer and an LSTM trained on dagrad's own documentation.

Both models read 32 characters and predict each next one. The text is `docs/*.md` as it ships inside the
package (`dagrad.data.load_docs`); every tenth block of 4,096 characters is held out. Prints the held-out
loss and perplexity of each model beside the unigram baseline (character frequencies alone), then text each
model writes from a prompt, and writes into the output folder the loss curves (`loss_curves.png`, with
matplotlib) and the trained weights (`transformer.npz`, `lstm.npz`, for `dg.load` and `load_state_dict`).
The progress bar and the picture are the digits demo's: tqdm and matplotlib from the `[demo]` extra, plain
lines and a note without them.
"""

from __future__ import annotations

import importlib.util
import math
import time
from pathlib import Path

import numpy as np

import dagrad as dg

from . import cuda, nn, optim
from ._core.errors import user_error
from .data import load_docs
from .demo import _progress
from .nn import functional as F
from .nn import init
from .utils.data import DataLoader, TensorDataset

SEED = 0
EPOCHS = (4, 3)  # the Transformer's and the LSTM's: about the same CPU time each
WIDTHS = (64, 128)  # the Transformer's model width, the LSTM's embedding and hidden size
CONTEXT = 32  # characters a model reads: shorter windows gave more steps and a lower loss in the same time
BATCH = 32
BLOCK = 4096  # the text is split into blocks of this many characters; every tenth is held out
DTYPE = np.float32
PROMPT = "The gradient of "
TEMPERATURE = 0.8


def vocabulary(text):
    """The characters of `text` in code-point order, and `text` as indices into them.

    >>> chars, ids = vocabulary("abba")
    >>> decode(chars, ids[::-1]), ids.tolist()
    ('abba', [0, 1, 1, 0])
    """
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    chars = np.unique(codes)
    return chars, np.searchsorted(chars, codes)


def decode(chars, ids):
    """The text that indices into `chars` stand for."""
    return "".join(map(chr, chars[np.asarray(ids)]))


def split(ids, block=BLOCK):
    """Every tenth block of the text held out, the others joined for training."""
    blocks = [ids[k:k + block] for k in range(0, len(ids), block)]
    return (np.concatenate([b for k, b in enumerate(blocks) if k % 10 != 9]),
            np.concatenate([b for k, b in enumerate(blocks) if k % 10 == 9]))


def windows(ids, context, offset=0):
    """Non-overlapping windows of `context + 1` characters from `offset` on: (inputs, next characters).

    >>> x, y = windows(np.arange(10), 3, offset=1)
    >>> x.tolist(), y.tolist()
    ([[1, 2, 3], [5, 6, 7]], [[2, 3, 4], [6, 7, 8]])
    """
    n = (len(ids) - offset) // (context + 1)
    cut = ids[offset:offset + n * (context + 1)].reshape(n, context + 1)
    return cut[:, :-1], cut[:, 1:]


def unigram_loss(train, test, vocab):
    """Cross-entropy (nats per character) of `test` under the training text's character frequencies."""
    counts = np.bincount(train, minlength=vocab) + 1.0  # add-one: a character unseen in training stays finite
    return float(-np.mean(np.log(counts / counts.sum())[test]))


class CharTransformer(nn.Module):
    """A causal Transformer over characters: token and position embeddings, pre-norm encoder layers with a causal
    mask (each position sees itself and the characters before it), a final layer norm and a linear read-out."""

    def __init__(self, vocab, width=WIDTHS[0], heads=4, layers=2, context=CONTEXT):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Embedding(context, width)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(width))
        self.head = nn.Linear(width, vocab)

    def forward(self, ids):
        n = ids.shape[-1]
        # weight[ids], not self.embed(ids): F.embedding needs concrete indices, and this forward is compiled
        x = self.embed.weight[ids] + self.position.weight[:n]
        causal = np.triu(np.ones((n, n), dtype=bool), 1)  # True: not attended (MultiheadAttention's convention)
        return self.head(self.encoder(x, mask=causal, is_causal=True))


class CharLSTM(nn.Module):
    """Embeddings, an LSTM and a linear read-out of its output at each step."""

    def __init__(self, vocab, width=WIDTHS[1], layers=1):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.lstm = nn.LSTM(width, width, layers, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, ids):
        out, _ = self.lstm(self.embed(ids))
        return self.head(out)


def held_out_loss(model, inputs, targets, batch=256):
    """Mean cross-entropy (nats per character) over every held-out window."""
    model.eval()
    total = 0.0
    with dg.no_grad():
        for k in range(0, len(inputs), batch):
            logits = model(inputs[k:k + batch])
            total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets[k:k + batch].reshape(-1),
                                     reduction="sum").item()
    model.train()
    return total / targets.size


def train(name, model, train_ids, held_out, epochs, steps, lr, seed=SEED, compiled=False):
    """AdamW on batches of windows from a DataLoader, the gradient norm clipped to 1 and the rate annealed to 0 on
    a cosine; each epoch cuts the text at another offset, so the windows differ. `steps`, when given, replaces
    `epochs`. `compiled`: the forward and backward pass as one `dg.compile`d function. Returns the training loss
    of each step and the held-out loss after each epoch (and after the last step)."""
    rng = np.random.default_rng(seed)
    per_epoch = (len(train_ids) - CONTEXT) // (CONTEXT + 1) // BATCH  # whatever the offset
    total = steps or epochs * per_epoch
    opt = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    schedule = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)

    def loss_and_gradients(x, y):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        return loss

    step = dg.compile(loss_and_gradients) if compiled else loss_and_gradients
    losses, held = [], []
    with _progress(total, name) as bar:
        while len(losses) < total:
            x, y = windows(train_ids, CONTEXT, offset=int(rng.integers(CONTEXT + 1)))
            for xb, yb in DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True, drop_last=True,
                                     generator=rng):
                loss = step(xb, yb)
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # eagerly: it writes .grad in place
                opt.step()
                schedule.step()
                losses.append(loss.item())
                bar.update(1)
                bar.set_postfix_str(f"loss {np.mean(losses[-50:]):.3f}"
                                    + (f", held-out {held[-1]:.3f}" if held else ""))
                if len(losses) == total:
                    break
            held.append(held_out_loss(model, *held_out))
            bar.set_postfix_str(f"loss {np.mean(losses[-50:]):.3f}, held-out {held[-1]:.3f}")
    return losses, held


def encode_prompt(chars, prompt):
    """`prompt` as indices into `chars`; an empty prompt or a character the text does not have is an error."""
    why = _prompt_problem(chars, prompt)
    if why:
        raise user_error(ValueError, "dagrad demo text", why)
    index = {chr(c): i for i, c in enumerate(chars)}
    return [index[c] for c in prompt]


def _prompt_problem(chars, prompt):
    if not prompt:
        return "the prompt is empty"
    unknown = sorted(set(prompt) - set(map(chr, chars)))
    if unknown:
        return (f"the prompt has characters that dagrad's docs never use: {''.join(unknown)!r} (they use "
                f"{decode(chars, np.arange(len(chars)))!r})")
    return None


def generate(model, chars, prompt, length=300, temperature=TEMPERATURE, seed=SEED):
    """`prompt` continued by `length` characters, each drawn from the model's softmax at `temperature` given the
    last CONTEXT characters."""
    rng = np.random.default_rng(seed)
    ids = encode_prompt(chars, prompt)
    model.eval()
    with dg.no_grad():
        for _ in range(length):
            logits = model(np.array([ids[-CONTEXT:]])).numpy()[0, -1].astype(np.float64) / temperature
            p = np.exp(logits - logits.max())
            ids.append(int(rng.choice(len(p), p=p / p.sum())))
    model.train()
    return decode(chars, ids)


def plot(curves, held, baseline, path):
    """The training losses (a moving average) and held-out losses of each model, and the baseline, as a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("   (matplotlib is not installed: no loss_curves.png; pip install 'dagrad[demo]')")
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, losses in curves.items():
        k = min(20, len(losses))
        line, = ax.plot(np.arange(k, len(losses) + 1), np.convolve(losses, np.ones(k) / k, mode="valid"),
                        label=f"{name}, training (moving average of {k})")
        steps = np.linspace(0, len(losses), len(held[name]) + 1)[1:]
        ax.plot(steps, held[name], "o--", color=line.get_color(), label=f"{name}, held out")
    ax.axhline(baseline, color="gray", linestyle=":", label="unigram baseline, held out")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy, nats per character")
    ax.set_title("dagrad demo text: the next character of dagrad's docs")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _integer(n, least):
    return isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= least


def problem(epochs=EPOCHS, steps=None, device="cpu", prompt=PROMPT, temperature=TEMPERATURE, seed=SEED):
    """None when `run` can take these arguments, else (exception class, message) saying why not (the command
    line prints the message, `run` raises it)."""
    if not (isinstance(epochs, (tuple, list)) and len(epochs) == 2 and all(_integer(n, 1) for n in epochs)):
        return ValueError, f"epochs must be two integers of at least 1 (the Transformer's, the LSTM's), got {epochs}"
    if steps is not None and not _integer(steps, 1):
        return ValueError, f"steps must be an integer of at least 1, got {steps!r}"
    if not _integer(seed, 0):
        return ValueError, f"the seed must be an integer of at least 0, got {seed!r}"
    if isinstance(temperature, bool) or not (isinstance(temperature, (int, float, np.number))
                                             and 0 < temperature < math.inf):
        return ValueError, f"the temperature must be positive, got {temperature!r}"
    why = _device_problem(device)
    if why:
        return why
    why = _prompt_problem(vocabulary(load_docs())[0], prompt)
    return why and (ValueError, why)


def _device_problem(device):
    """None for "cpu"; else (exception class, message) saying why `device` cannot be used. "cuda" needs CuPy and a
    GPU, and even with both dagrad's nn layers do not run on CuPy yet (docs/backends.md)."""
    kind = str(device).split(":")[0]
    if kind == "cpu":
        return None
    if kind != "cuda":
        return ValueError, f"--device must be cpu or cuda, got {device!r}"
    if importlib.util.find_spec("cupy") is None:
        return ImportError, f"--device cuda needs CuPy: {cuda.EXTRA} (CUDA 12)"
    if not cuda.is_available():
        return RuntimeError, "--device cuda: CuPy sees no CUDA GPU (or no driver)"
    return NotImplementedError, ("--device cuda: CuPy and a GPU are present, but dagrad's nn layers cannot run on "
                                 "the GPU yet (there is no Module.to('cuda'); docs/backends.md says what runs on "
                                 "CuPy); use --device cpu")


def run(out="dagrad-demo-text", epochs=EPOCHS, steps=None, seed=SEED, device="cpu", prompt=PROMPT,
        temperature=TEMPERATURE, *, widths=WIDTHS):
    """Trains the Transformer and the LSTM, prints their held-out losses and samples, and writes the weights and
    the loss curves into `out`. Returns {name: {"losses": training loss of each step, "held_out": held-out loss
    after each epoch}} for "Transformer" and "LSTM", and {"held_out": [loss]} for "unigram", the baseline.

    `epochs`: the Transformer's and the LSTM's; `steps` replaces both (a quick run). BLAS runs on one thread,
    as in the digits demo.
    """
    why = problem(epochs, steps, device, prompt, temperature, seed)  # before anything is trained or written
    if why:
        raise user_error(why[0], "dagrad demo text", why[1])
    chars, ids = vocabulary(load_docs())
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print("   (threadpoolctl is not installed: BLAS may run these small products on several threads, which can "
              "make the demo ten times slower; pip install 'dagrad[demo]' or set OPENBLAS_NUM_THREADS=1)")
        return _run(out, chars, ids, epochs, steps, seed, prompt, temperature, widths)
    with threadpool_limits(limits=1, user_api="blas"):
        return _run(out, chars, ids, epochs, steps, seed, prompt, temperature, widths)


def _run(out, chars, ids, epochs, steps, seed, prompt, temperature, widths):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    train_ids, test_ids = split(ids)
    held_out = windows(test_ids, CONTEXT)
    baseline = unigram_loss(train_ids, test_ids, len(chars))
    print(f"dagrad's docs: {len(train_ids):,} training and {len(test_ids):,} held-out characters, {len(chars)} "
          f"distinct; the unigram baseline is {baseline:.3f} nats per character (perplexity {math.exp(baseline):.1f})")
    init.manual_seed(seed)
    start = time.perf_counter()
    # (model, epochs, learning rate, compiled): dg.compile makes the Transformer's step 1.6 times faster; the
    # compiled LSTM is slower than the eager one (docs/nn.md)
    models = {"Transformer": (CharTransformer(len(chars), widths[0]).to(DTYPE), epochs[0], 1e-2, True),
              "LSTM": (CharLSTM(len(chars), widths[1]).to(DTYPE), epochs[1], 2e-2, False)}
    results = {}
    for name, (model, n_epochs, lr, compiled) in models.items():
        losses, held = train(name, model, train_ids, held_out, n_epochs, steps, lr, seed, compiled)
        results[name] = {"losses": losses, "held_out": held}
        dg.save(model.state_dict(), out / f"{name.lower()}.npz")
    results["unigram"] = {"held_out": [baseline]}
    for name, result in results.items():
        loss = result["held_out"][-1]
        print(f"{name + ':':13s}held-out loss {loss:.3f} nats per character, perplexity {math.exp(loss):.2f}")
    for name, (model, *_) in models.items():
        print(f"\n{name}, from {prompt!r} at temperature {temperature}:\n"
              f"{generate(model, chars, prompt, temperature=temperature, seed=seed)}")
    written = [out / "transformer.npz", out / "lstm.npz"]
    if plot({n: results[n]["losses"] for n in models}, {n: results[n]["held_out"] for n in models}, baseline,
            out / "loss_curves.png"):
        written.append(out / "loss_curves.png")
    print(f"\nwrote {', '.join(str(p) for p in written)} in {time.perf_counter() - start:.1f} s")
    return results
