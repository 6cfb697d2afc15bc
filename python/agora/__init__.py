"""agora: Bayesian optimization with people and agents in the loop.

Every agora method is an ask/tell :class:`Strategy` over a :class:`Space`; studies with
people live on a store shared with the ``agora`` command line and web page
(:func:`create_study`, :func:`load_study`); simulated respondents answer the same queries
people do (``agora.problems.make``). The engines are Rust (``agora._agora``);
``agora.optuna`` holds Optuna samplers backed by them (``pip install optuna`` first).

Example::

    import agora

    space = agora.Space([agora.real("x", -5, 10), agora.real("y", 0, 15)])
    strategy = agora.Strategy("gp-logei", space, seed=0)
    branin = agora.problems.make("branin")
    for _ in range(20):
        query = strategy.ask()
        strategy.tell(branin.answer(query))
    print(strategy.best())
"""

from __future__ import annotations

from typing import Any

from agora import _agora
from agora._agora import (
    Answer,
    HomPolicy,
    Param,
    Problem,
    Query,
    Space,
    Strategy,
    Study,
    __version__,
    categorical,
    create_study,
    integer,
    load_study,
    log_real,
    methods,
    real,
    reproduce,
    study_names,
    suites,
)


class _Problems:
    """The simulated respondents and benchmarks.

    ``agora.problems()`` lists them (dicts with ``name``, ``kind``, ``dim`` and ``optimum``
    or ``agents``); ``agora.problems.make(name, ...)`` builds one.
    """

    def __call__(self) -> list[dict[str, Any]]:
        """Every problem ``make`` knows, as dicts."""
        return _agora.problem_list()

    @staticmethod
    def make(
        name: str,
        *,
        noise: float = 0.0,
        rater: str = "probit",
        sigma: float | None = None,
        seed: int = 0,
    ) -> Problem:
        """A simulated respondent by name.

        A test function (``"hartmann6"``, ``"branin"``, ``"ackley7"``, ...) answers
        evaluations (with Gaussian ``noise`` sd), comparisons (a ``rater``, ``"probit"`` or
        ``"bradley_terry"``, with noise ``sigma``; exact when ``None``) and Hessians.
        ``"group:<task>"`` (``"group:toy"``, ``"group:thermal"``, ...) is a Social BO group
        answering public and private votes and ratings. Seeded by ``seed``.
        """
        return _agora.make_problem(name, noise=noise, rater=rater, sigma=sigma, seed=seed)

    def __repr__(self) -> str:
        return "agora.problems"


problems = _Problems()


def run(strategy: Strategy, respondent: Any, n: int) -> Strategy:
    """Ask ``strategy`` ``n`` queries and tell it what ``respondent`` answers.

    ``respondent`` is an :class:`agora.Problem` or any object with ``answer(query)``
    returning an :class:`agora.Answer`, or a callable taking a :class:`Query` and returning
    a dict of ``tell`` keywords (``{"values": [...]}``, ``{"winner": "A"}``, ...).
    Returns the strategy.
    """
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"invalid `n`: must be a whole number >= 0, got {n!r}")
    answer = getattr(respondent, "answer", None)
    if answer is None and not callable(respondent):
        raise TypeError(
            "`respondent` must have answer(query) (an agora.Problem) or be a callable "
            "returning tell keywords"
        )
    for _ in range(n):
        query = strategy.ask()
        if answer is not None:
            strategy.tell(answer(query))
        else:
            reply = respondent(query)
            if isinstance(reply, Answer):
                strategy.tell(reply)
            elif isinstance(reply, dict):
                strategy.tell(**reply)
            else:
                raise TypeError(
                    "the respondent must return an agora.Answer or a dict of tell keywords, "
                    f"not {type(reply).__name__}"
                )
    return strategy


__all__ = [
    "Answer",
    "HomPolicy",
    "Param",
    "Problem",
    "Query",
    "Space",
    "Strategy",
    "Study",
    "__version__",
    "categorical",
    "create_study",
    "integer",
    "load_study",
    "log_real",
    "methods",
    "problems",
    "real",
    "reproduce",
    "run",
    "study_names",
    "suites",
]
