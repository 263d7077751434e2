"""Errors that point at the user's line of code."""

from __future__ import annotations

import os
import re
import sys
import threading

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
GENERATED_PREFIX = "<dagrad.compile "  # the file name of code dg.compile generates: dagrad's, not the user's


def user_frame():
    """The innermost frame outside the dagrad package and its generated code (the user's code), or None."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith((_PACKAGE_DIR, GENERATED_PREFIX)):
        frame = frame.f_back
    return frame


class _Provenance(threading.local):
    # set while a backward pass builds graph nodes: the forward node they differentiate, and its line
    node = None
    origin = None

    def note(self, node, origin):
        self.node, self.origin = node, origin


_provenance = _Provenance()


def user_line() -> str:
    """'file.py:12' for the user's line that led here. While a reverse sweep builds a static graph's
    gradient nodes, it is the forward node's line (and op), which a reader of a listing wants."""
    origin = _provenance.origin
    return caller_line() if origin is None else origin


def caller_line() -> str:
    """'file.py:12' for the innermost line of the user's code on the stack (what an error names)."""
    frame = user_frame()
    return "<unknown>" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


_WHERE = re.compile(r"^(.*):(\d+)(.*)$", re.S)


def short_location(where):
    """'train.py:12' from '/home/me/train.py:12' (a trailing '(backward of exp)' kept), or None
    when it is not known: what listings, drawings and generated code show."""
    if not where or where == "<unknown>":
        return None
    match = _WHERE.match(where)
    if match is None:
        return where
    path, line, rest = match.groups()
    return f"{os.path.basename(path) or path}:{line}{rest}"


def location(node):
    """'file.py:12' where the user's code made `node` (a recorded Tensor or a static graph's
    Symbol), or None when that is not known (a leaf, a value recorded by no graph)."""
    where = getattr(node, "where", None)  # a Symbol keeps its location as text
    if isinstance(where, str):
        return where
    code = getattr(node, "_code", None)
    return None if code is None else code_line(code, node._line)


def code_line(code, offset):
    """'file.py:12' for the instruction at `offset` in `code` (a line is looked up only when asked for)."""
    line = next((n for start, end, n in code.co_lines() if start <= offset < end and n is not None), None)
    return f"{code.co_filename}:{code.co_firstlineno if line is None else line}"


def printable(text) -> str:
    """`text` (a str, or what str() makes of it) with every character that is not printable written as
    its escape, as repr writes it (`\\n`, `\\r`, `\\x1b`, `\\u2028`, `\\u202e`): a name shown in a
    listing, a drawing, an error or a generated comment then cannot end the line, forge another one,
    reorder the text (bidi controls) or send a terminal escape. The one escaper of the package.

    >>> print(printable("x\\n%9 = evil()\\x1b[31m"))
    x\\n%9 = evil()\\x1b[31m
    """
    text = str.__str__(text if isinstance(text, str) else str(text))  # an exact str, whatever a subclass does
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _describe(value) -> str:
    shape = getattr(value, "shape", None)
    if shape is None:
        return type(value).__name__
    array = type(getattr(value, "_value", value))  # a Tensor's value
    module = array.__module__.partition(".")[0]
    backend = "" if module in ("numpy", "dagrad", "builtins") else f" {module} {array.__name__}"  # Dask's, say
    return f"{tuple(shape)} {getattr(value, 'dtype', None)}{backend}"


def user_error(kind, op, message, *operands):
    """The exception every error caused by a user's input is raised with: `kind(text)`, the text as
    "transpose: axes (0, 5) are out of range (inputs: (2, 3) float64) at file.py:12" (`op`: what the
    user called; the inputs: the `operands`' shapes and dtypes, when given)."""
    inputs = f" (inputs: {', '.join(_describe(v) for v in operands)})" if operands else ""
    text = f"{op}: {message}{inputs} at {caller_line()}"
    if _provenance.origin is not None:  # raised while a static graph's gradient is being built
        text += f" (building the gradient of the node made at {_provenance.origin})"
    text = printable(text)  # a name in it (an op's, a key's, a file's) sends no line break or terminal escape
    try:
        err = kind(text)
    except Exception:  # an exception type whose constructor takes other arguments
        err = ValueError(text)
    err._dagrad_explained = True  # complete as it is: an op's forward that raises it is not rewrapped
    return err


class ShapeError(ValueError, TypeError):
    """Operands whose shapes do not fit together (shapes that do not broadcast, a matmul's inner sizes, a
    reshape's size): a ValueError, as NumPy raises it, and a TypeError, as JAX raises it, so that the
    `except` of either's code catches it."""


def op_error(op_name: str, values, err: Exception, kind=None) -> Exception:
    """Rewraps an exception raised inside an op's forward with the op, shapes and user line: of the
    same class when that class takes a message (LinAlgError stays LinAlgError), else the first
    of IndexError / TypeError / ValueError among its ancestors (NumPy's UFuncTypeError is a TypeError);
    of class `kind` when given."""
    if getattr(err, "_dagrad_explained", False):
        return err.with_traceback(None)
    if kind is not None:
        return user_error(kind, op_name, str(err), *values)
    kind = type(err)
    if not issubclass(kind, (ValueError, TypeError, IndexError)):
        kind = ValueError
    try:
        kind("probe")
    except Exception:
        kind = next(base for base in kind.__mro__ if base in (ValueError, TypeError, IndexError))
    return user_error(kind, op_name, str(err), *values)


_COMING_FROM = "docs/coming-from.md"


def missing_name(module, name, original, hints, section):
    """The AttributeError for `module.name`. `original` names the other library's name ("TensorFlow 1's
    tf.{}"); `hints[name]` says what to use instead (a pair (original, hint) where the original differs),
    otherwise the message points to `section` of docs/coming-from.md. A hint may be a triple (original,
    hint, section) in a table of several libraries' names."""
    if name.startswith("__") and name.endswith("__"):  # Python's own probes (__wrapped__, __path__, ...)
        return AttributeError(f"module {module!r} has no attribute {name!r}")
    hint = hints.get(name)
    if isinstance(hint, tuple):  # (original, hint, section): a table of several libraries' names
        original, hint, section = hint
    original = original.format(name)
    if hint is not None:
        return AttributeError(f"module {module!r} has no attribute {name!r} ({original}): {hint} (see "
                              f"{_COMING_FROM}, '{section}')")
    return AttributeError(f"module {module!r} has no attribute {name!r}: if it is {original}, dagrad has no "
                          f"counterpart of that name; {_COMING_FROM}, '{section}', lists the names dagrad has and "
                          f"what to use instead")
