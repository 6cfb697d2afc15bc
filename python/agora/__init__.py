"""agora: Bayesian optimization with people and agents in the loop.

Every agora method is an ask/tell :class:`Strategy` over a :class:`Space`; studies with
people live on a store shared with the ``agora`` command line and web page; simulated
respondents answer the same queries people do. The engines are Rust (``agora._agora``);
``agora.optuna`` holds Optuna samplers backed by them (``pip install optuna`` first).
"""

from agora._agora import (
    Answer,
    Param,
    Query,
    Space,
    Strategy,
    __version__,
    categorical,
    integer,
    log_real,
    methods,
    real,
)

__all__ = [
    "Answer",
    "Param",
    "Query",
    "Space",
    "Strategy",
    "__version__",
    "categorical",
    "integer",
    "log_real",
    "methods",
    "real",
]
