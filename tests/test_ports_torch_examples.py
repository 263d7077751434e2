"""PyTorch's "Learning PyTorch with Examples" runs with `import torch` changed to `import dagrad as torch` and
nothing else, and prints PyTorch's numbers.

The programs are in tests/programs/torch_*.txt: the tutorial's code (its comments and docstrings left out).
Each runs twice, as it is (with PyTorch) and with the import line changed (with dagrad). Only the random
initial values are made alike: dagrad's run draws from `dg.manual_seed(0)`, and PyTorch's `torch.randn` and
`nn.Linear`'s initialisation are made to hand out the same values (drawn again from the same seed). PyTorch
runs with float64 as its default dtype, dagrad's (NumPy's) default, so the programs that name no dtype
compute in float64 in both; those that name `torch.float` compute in float32 in both. Every number the two
runs print (the losses, the result) is compared. DynamicNet's 30000 steps are cut to 3000 for the test's time.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest

import dagrad

torch = pytest.importorskip("torch")

PROGRAMS = Path(__file__).parent / "programs"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def _text(name):
    text = (PROGRAMS / f"torch_{name}.txt").read_text()
    return text.replace("range(30000)", "range(3000)")  # DynamicNet: fewer steps


def _run(source, capsys):
    random.seed(0)  # DynamicNet draws its depth with Python's random
    exec(compile(source, "<torch program>", "exec"), {"__name__": "torch_program"})  # noqa: S102  (a test's text)
    return [float(n) for n in NUMBER.findall(capsys.readouterr().out)]


def _dagrad_draws(n_scalars, dtype, n_linears):
    """The values the program draws from dagrad's default generator after `manual_seed(0)`: scalars from
    `randn((), dtype=dtype)`, then (weight, bias) of `nn.Linear(3, 1)`s."""
    dagrad.manual_seed(0)
    scalars = [dagrad.randn((), dtype=dtype).item() for _ in range(n_scalars)]
    linears = [(layer.weight.numpy(), layer.bias.numpy()) for layer in (dagrad.nn.Linear(3, 1)
                                                                       for _ in range(n_linears))]
    return scalars, linears


@pytest.fixture
def torch_like_dagrad(monkeypatch):
    """PyTorch with float64 as its default dtype, for one test; on one thread (its threads spin against each
    other on a loaded machine, ten times slower on these small tensors)."""
    default, threads = torch.get_default_dtype(), torch.get_num_threads()
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    yield
    torch.set_default_dtype(default)
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name, scalars, dtype, linears, rtol, atol", [
    # dtype = torch.float: float32, whose sums of 2000 terms round differently in the two libraries
    ("polynomial_tensor", 4, "float32", 0, 1e-4, 0),
    ("polynomial_autograd", 4, "float32", 0, 1e-4, 0),
    ("polynomial_custom_function", 0, None, 0, 1e-4, 1e-7),  # a and c stay at float32's rounding noise, 1e-9
    ("polynomial_nn", 0, None, 1, 1e-10, 0),
    # RMSprop at lr 1e-3 hovers about the minimum from step ~1400 on, where the two libraries' float64
    # roundings (1e-16) grow to 1e-3 of the loss; up to there they agree to 1e-9
    ("polynomial_optim", 0, None, 1, 5e-3, 0),
    ("polynomial_module", 4, None, 0, 1e-10, 0),
    ("dynamic_net", 5, None, 0, 1e-10, 0),
])
def test_the_tutorial_runs_with_the_import_line_changed_and_prints_torchs_numbers(
        name, scalars, dtype, linears, rtol, atol, torch_like_dagrad, monkeypatch, capsys):
    program = _text(name)
    assert program.count("\nimport torch\n") == 1 or program.startswith("import torch\n")
    ours_source = re.sub(r"^import torch$", "import dagrad as torch", program, count=1, flags=re.M)
    assert ours_source.count("dagrad") == 1  # the only change

    dagrad.manual_seed(0)
    ours = _run(ours_source, capsys)

    draws, layers = _dagrad_draws(scalars, dtype, linears)
    draws, layers = iter(draws), iter(layers)
    real_randn = torch.randn

    def randn(*size, dtype=None, device=None, requires_grad=False, **kwargs):
        assert real_randn(*size).shape == ()  # the tutorial draws scalars only
        return torch.tensor(next(draws), dtype=dtype or torch.get_default_dtype(), requires_grad=requires_grad)

    def reset_parameters(layer):
        weight, bias = next(layers)
        with torch.no_grad():
            layer.weight.copy_(torch.tensor(weight))
            layer.bias.copy_(torch.tensor(bias))

    monkeypatch.setattr(torch, "randn", randn)
    monkeypatch.setattr(torch.nn.Linear, "reset_parameters", reset_parameters)
    theirs = _run(program, capsys)

    assert len(ours) == len(theirs) > 5
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)
    if name == "polynomial_optim":
        np.testing.assert_allclose(ours[:26], theirs[:26], rtol=1e-9)
    assert next(draws, None) is None and next(layers, None) is None  # every draw was used
