"""Static graphs (define, then run): placeholders, variables, a Session, symbolic gradients."""

from .graph import (
    Graph,
    Symbol,
    Variable,
    assign,
    constant,
    get_default_graph,
    global_variables,
    global_variables_initializer,
    group,
    placeholder,
    reset_default_graph,
    trainable_variables,
    variables_initializer,
)
from .session import InteractiveSession, Session, evaluate, get_default_session, gradients, run_node

__all__ = [
    "Graph", "Symbol", "Variable", "constant", "get_default_graph", "placeholder", "reset_default_graph",
    "Session", "assign", "gradients", "group", "global_variables", "global_variables_initializer",
    "trainable_variables", "InteractiveSession", "get_default_session", "evaluate", "run_node",
    "variables_initializer",
]
