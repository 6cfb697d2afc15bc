"""Optuna samplers backed by agora: no torch, no gpytorch, no botorch.

``GPSampler`` replaces :class:`optuna.samplers.GPSampler` (Gaussian-process BO with LogEI)
and ``PreferentialSampler`` replaces optuna-dashboard's
``optuna_dashboard.preferential.samplers.gp.PreferentialGPSampler`` (preferential BO from
the comparisons people make in optuna-dashboard's preferential mode). Both are one-line
switches::

    import optuna
    import agora.optuna

    study = optuna.create_study(sampler=agora.optuna.GPSampler(seed=0))

    from optuna_dashboard.preferential import create_study
    study = create_study(n_generate=2, sampler=agora.optuna.PreferentialSampler(seed=0))

Both handle float (plain, log, stepped), int (plain, log, stepped) and categorical
parameters, are seeded (the same seed and the same results give the same trials), and fall
back to an independent sampler (Optuna's ``RandomSampler`` by default) for parameters outside
the relative search space, as Optuna's own samplers do. The model fits and acquisition
searches run in Rust without the GIL.

Importing this module needs ``optuna`` (``pip install optuna``).
"""

from __future__ import annotations

import json
import math
import threading
import uuid
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

try:
    import optuna
    from optuna.distributions import (
        BaseDistribution,
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )
    from optuna.samplers import BaseSampler, RandomSampler
    from optuna.search_space import IntersectionSearchSpace
    from optuna.study import Study, StudyDirection
    from optuna.trial import FrozenTrial, TrialState
except ImportError as e:  # pragma: no cover - exercised only without optuna
    raise ImportError(
        "agora.optuna needs optuna: pip install optuna (or pip install 'agora-bo[optuna]')"
    ) from e

from agora import _agora

__all__ = ["GPSampler", "PreferentialSampler", "report_tie"]

_PREFERENCE_KEY = "preference:values"
_TIE_KEY = "agora:ties:"
_SKIP_KEY = "preference:skip_trial:"
_ACQUISITIONS = ("logei", "ei", "pi", "ucb")


class _Encoding:
    """A relative search space as an agora box, and trial params to and from it.

    Floats become real or log-real parameters; stepped floats and ints become integer
    parameters over their grid index; log ints become log-real parameters rounded on the way
    out; categoricals become categorical parameters over their choice indices.
    """

    def __init__(self, search_space: Dict[str, BaseDistribution]):
        self.names = list(search_space)
        self.dists = [search_space[n] for n in self.names]
        params = []
        for name, d in zip(self.names, self.dists):
            if isinstance(d, CategoricalDistribution):
                params.append(_agora.categorical(name, [str(i) for i in range(len(d.choices))]))
            elif isinstance(d, FloatDistribution):
                if d.step is not None:
                    params.append(_agora.integer(name, 0, _grid_size(d.low, d.high, d.step) - 1))
                elif d.log:
                    params.append(_agora.log_real(name, d.low, d.high))
                else:
                    params.append(_agora.real(name, d.low, d.high))
            elif isinstance(d, IntDistribution):
                if d.log:
                    # Each integer owns [v - 1/2, v + 1/2] on the log scale, as in Optuna.
                    params.append(_agora.log_real(name, d.low - 0.5, d.high + 0.5))
                else:
                    params.append(_agora.integer(name, 0, _grid_size(d.low, d.high, d.step) - 1))
            else:  # pragma: no cover - Optuna has no other distributions
                raise TypeError(f"parameter `{name}`: unsupported distribution {d!r}")
        self.space = _agora.Space(params)

    def to_values(self, params: Dict[str, Any]) -> List[Any]:
        """A trial's params as agora user values (parameter order)."""
        out: List[Any] = []
        for name, d in zip(self.names, self.dists):
            v = params[name]
            if isinstance(d, CategoricalDistribution):
                out.append(str(d.to_internal_repr(v)))
            elif isinstance(d, FloatDistribution):
                if d.step is not None:
                    out.append(min(max(int(round((v - d.low) / d.step)), 0), _grid_size(d.low, d.high, d.step) - 1))
                else:
                    out.append(min(max(float(v), d.low), d.high))
            else:  # IntDistribution
                if d.log:
                    out.append(float(v))
                else:
                    out.append(min(max(int(round((v - d.low) / d.step)), 0), _grid_size(d.low, d.high, d.step) - 1))
        return out

    def to_unit(self, params: Dict[str, Any]) -> List[float]:
        return self.space.to_unit(self.to_values(params))

    def to_params(self, unit: Sequence[float]) -> Dict[str, Any]:
        """A unit-cube point as Optuna params (external representation)."""
        values = self.space.to_user(list(unit))
        out: Dict[str, Any] = {}
        for name, d in zip(self.names, self.dists):
            v = values[name]
            if isinstance(d, CategoricalDistribution):
                out[name] = d.to_external_repr(int(v))
            elif isinstance(d, FloatDistribution):
                if d.step is not None:
                    out[name] = float(min(d.low + int(v) * d.step, d.high))
                else:
                    out[name] = float(min(max(v, d.low), d.high))
            else:
                if d.log:
                    out[name] = int(min(max(round(v), d.low), d.high))
                else:
                    out[name] = int(min(d.low + int(v) * d.step, d.high))
        return out


def _grid_size(low: float, high: float, step: float) -> int:
    return int(math.floor((high - low) / step + 1e-9)) + 1


def _relative_space(search: IntersectionSearchSpace, study: Study) -> Dict[str, BaseDistribution]:
    space = search.calculate(study)
    # A single-valued parameter has nothing to learn (Optuna's GPSampler drops them too).
    return {n: d for n, d in space.items() if not d.single()}


def _space_key(space: Dict[str, BaseDistribution]) -> str:
    return json.dumps(
        [[n, optuna.distributions.distribution_to_json(d)] for n, d in sorted(space.items())]
    )


class _EngineSampler(BaseSampler):
    """What both samplers share: a seed, a cache of Rust engines by (study, search space),
    and an independent sampler for start-up trials and dynamic parameters, whose hooks they
    forward (as Optuna's own samplers do)."""

    independent_sampler: BaseSampler
    _seed: int
    _cache: Dict[Tuple[int, str], Any]

    def reseed_rng(self) -> None:
        self._seed = _seed_of(None)
        self.independent_sampler.reseed_rng()
        self._cache.clear()

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        return self.independent_sampler.sample_independent(
            study, trial, param_name, param_distribution
        )

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self.independent_sampler.before_trial(study, trial)

    def after_trial(
        self,
        study: Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Optional[Sequence[float]],
    ) -> None:
        self.independent_sampler.after_trial(study, trial, state, values)


class GPSampler(_EngineSampler):
    """Gaussian-process BO for single-objective Optuna studies, in Rust.

    A drop-in for :class:`optuna.samplers.GPSampler`: after ``n_startup_trials`` completed
    trials (drawn by ``independent_sampler``, :class:`optuna.samplers.RandomSampler` seeded
    with ``seed`` by default), each trial maximizes an acquisition (``"logei"`` by default;
    ``"ei"``, ``"pi"``, ``"ucb"``) of a Matérn-5/2 ARD GP with Optuna's priors, fitted to
    the completed trials. Float (incl. log and step), int (incl. log and step) and
    categorical parameters are supported; failed and pruned trials are ignored.
    Parameters outside the intersection search space are sampled by ``independent_sampler``.

    Args:
        seed: Seed of every random choice (``None``: a random seed).
        independent_sampler: Sampler for startup trials and dynamic parameters.
        n_startup_trials: Completed trials before the GP is used.
        deterministic_objective: Accepted for compatibility with Optuna's ``GPSampler``;
            agora's GP fits its noise (bounded below by 1e-6) either way.
        acquisition: ``"logei"``, ``"ei"``, ``"pi"`` or ``"ucb"``.
        beta: UCB's exploration weight (``acquisition="ucb"`` only).
        warn_independent_sampling: Warn when a parameter falls back to independent sampling.
    """

    def __init__(
        self,
        *,
        seed: Optional[int] = None,
        independent_sampler: Optional[BaseSampler] = None,
        n_startup_trials: int = 10,
        deterministic_objective: bool = False,
        acquisition: str = "logei",
        beta: float = 2.0,
        warn_independent_sampling: bool = True,
    ) -> None:
        if acquisition not in _ACQUISITIONS:
            raise ValueError(
                f"invalid `acquisition`: `{acquisition}`; allowed: {', '.join(_ACQUISITIONS)}"
            )
        if not isinstance(n_startup_trials, int) or n_startup_trials < 0:
            raise ValueError(
                f"invalid `n_startup_trials`: must be a whole number >= 0, got {n_startup_trials!r}"
            )
        self._seed = _seed_of(seed)
        self.independent_sampler = independent_sampler or RandomSampler(seed=seed)
        self._n_startup_trials = n_startup_trials
        self._deterministic = deterministic_objective
        self._acquisition = acquisition
        self._beta = float(beta)
        self._warn_independent_sampling = warn_independent_sampling
        self._search_space = IntersectionSearchSpace()
        self._lock = threading.Lock()
        # (study id, space key) -> (encoding, engine, numbers observed, values observed)
        self._cache: Dict[Tuple[int, str], Tuple[_Encoding, Any, List[int], List[float]]] = {}

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> Dict[str, BaseDistribution]:
        self._raise_error_if_multi_objective(study)
        return _relative_space(self._search_space, study)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: Dict[str, BaseDistribution]
    ) -> Dict[str, Any]:
        self._raise_error_if_multi_objective(study)
        if not search_space:
            return {}
        trials = study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,), use_cache=True)
        if len(trials) < self._n_startup_trials:
            return {}
        observed = [
            t for t in sorted(trials, key=lambda t: t.number) if all(n in t.params for n in search_space)
        ]
        if not observed:
            return {}
        sign = -1.0 if study.direction == StudyDirection.MINIMIZE else 1.0
        ys = [sign * t.value for t in observed]
        finite = [y for y in ys if math.isfinite(y)]
        if not finite:
            return {}
        lo, hi = min(finite), max(finite)
        # Infinite values are clipped to the finite range, as Optuna's GPSampler does.
        ys = [min(max(y, lo), hi) if not math.isnan(y) else lo for y in ys]
        key = (study._study_id, _space_key(search_space))
        with self._lock:
            enc, engine, numbers, values = self._engine(key, search_space)
            new = [t.number for t in observed]
            if numbers != new[: len(numbers)] or values != ys[: len(values)]:
                enc, engine = self._fresh(search_space)
                numbers, values = [], []
            for t, y in zip(observed[len(numbers):], ys[len(values):]):
                engine.observe(enc.to_unit(t.params), y)
            self._cache[key] = (enc, engine, new, ys)
            unit = engine.suggest()
        return enc.to_params(unit)

    def _fresh(self, search_space: Dict[str, BaseDistribution]) -> Tuple[_Encoding, Any]:
        enc = _Encoding(search_space)
        engine = _agora.GpSuggester(
            enc.space,
            acquisition=self._acquisition,
            beta=self._beta,
            seed=self._seed,
        )
        return enc, engine

    def _engine(self, key, search_space):
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        enc, engine = self._fresh(search_space)
        return enc, engine, [], []

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        self._raise_error_if_multi_objective(study)
        if self._warn_independent_sampling:
            complete = study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,), use_cache=True)
            if len(complete) >= self._n_startup_trials:
                warnings.warn(
                    f"agora.optuna.GPSampler: parameter `{param_name}` is sampled independently "
                    f"by {type(self.independent_sampler).__name__} (dynamic search space)"
                )
        return super().sample_independent(study, trial, param_name, param_distribution)


class PreferentialSampler(_EngineSampler):
    """Preferential BO for optuna-dashboard's preferential mode, in Rust.

    A drop-in for ``optuna_dashboard.preferential.samplers.gp.PreferentialGPSampler``: it
    reads the preferences the dashboard (or ``study.report_preference``) stores — each a
    pair (better trial, worse trial) — fits agora's preference GP (Laplace, probit,
    Matérn-3/2 ARD with a bounded output scale) to the trials they name, and proposes the
    next trial by EUBO against the trial the person will compare it with (of the trials the
    dashboard shows — never reported worse, not skipped — the one with the highest
    posterior mean), searched within half a lengthscale of that trial (a trust region).
    Categorical and integer parameters are searched on their grid; ties stored with
    :func:`report_tie` are counted and carry no preference. Trials marked skipped keep the
    comparisons they were in (as optuna-dashboard's sampler does). Before the first
    preference, trials come from ``independent_sampler``. The design and its measurements
    are in the module docs of the Rust engine,
    ``crates/agora-methods/src/suggest/preference_suggester.rs``.

    Args:
        kernel: Must be ``None`` (agora's preference GP has its own Matérn-3/2 ARD kernel;
            accepted so that code written for optuna-dashboard's sampler runs unchanged).
        noise_prior: Must be ``None`` (as ``kernel``).
        independent_sampler: Sampler before the first preference and for parameters outside
            the relative search space (``RandomSampler(seed=seed)`` by default).
        seed: Seed of every random choice (``None``: a random seed).
    """

    def __init__(
        self,
        *,
        kernel: Any = None,
        noise_prior: Any = None,
        independent_sampler: Optional[BaseSampler] = None,
        seed: Optional[int] = None,
    ) -> None:
        if kernel is not None or noise_prior is not None:
            raise ValueError(
                "invalid `kernel`/`noise_prior`: agora's preference GP uses its own kernel "
                "and noise model; leave both as None"
            )
        self.kernel = None
        self.noise_prior = None
        self.independent_sampler = independent_sampler or RandomSampler(seed=seed)
        self._seed = _seed_of(seed)
        self._search_space = IntersectionSearchSpace()
        self._lock = threading.Lock()
        self._cache: Dict[Tuple[int, str], Tuple[_Encoding, Any, Dict[int, int], list]] = {}

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> Dict[str, BaseDistribution]:
        return _relative_space(self._search_space, study)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: Dict[str, BaseDistribution]
    ) -> Dict[str, Any]:
        if not search_space:
            return {}
        events = _preference_events(study)
        if not any(kind == "prefer" for kind, _, _ in events):
            return {}
        trials = {t.number: t for t in study.get_trials(deepcopy=False)}
        usable = [
            e for e in events
            if e[1] in trials and e[2] in trials
            and all(n in trials[e[1]].params for n in search_space)
            and all(n in trials[e[2]].params for n in search_space)
        ]
        if not any(kind == "prefer" for kind, _, _ in usable):
            return {}
        key = (study._study_id, _space_key(search_space))
        with self._lock:
            hit = self._cache.get(key)
            if hit is None or hit[3] != usable[: len(hit[3])]:
                enc = _Encoding(search_space)
                engine = _agora.PreferenceSuggester(enc.space, seed=self._seed)
                index: Dict[int, int] = {}
                done: list = []
            else:
                enc, engine, index, done = hit
            for kind, a, b in usable[len(done):]:
                for n in (a, b):
                    if n not in index:
                        index[n] = engine.add_option(enc.to_unit(trials[n].params))
                if kind == "prefer":
                    engine.prefer(index[a], index[b])
                else:
                    engine.tie(index[a], index[b])
            self._cache[key] = (enc, engine, index, list(usable))
            shown = [n for n in _shown_with(study, trial, trials) if n in index]
            reference = None
            if shown:
                # The person compares the new trial with these: EUBO against the strongest.
                belief = engine.belief([enc.to_unit(trials[n].params) for n in shown])
                reference = index[shown[max(range(len(shown)), key=lambda i: belief[i][0])]]
            unit = engine.suggest(reference=reference)
        return enc.to_params(unit)


def _preference_events(study: Study) -> List[Tuple[str, int, int]]:
    """The preferences (and agora's ties) stored on ``study``, in the order stored.

    optuna-dashboard stores each report as the study system attribute
    ``"preference:values<uuid>"``: a list of ``[better, worse]`` trial numbers (an undone
    report is an empty list). Ties reported with :func:`report_tie` are
    ``"agora:ties:<uuid>"`` lists of ``[a, b]``.
    """
    attrs = study._storage.get_study_system_attrs(study._study_id)
    events: List[Tuple[str, int, int]] = []
    for k, v in attrs.items():
        if k.startswith(_PREFERENCE_KEY):
            kind = "prefer"
        elif k.startswith(_TIE_KEY):
            kind = "tie"
        else:
            continue
        for pair in v or []:
            a, b = pair
            events.append((kind, int(a), int(b)))
    return events


def _shown_with(study: Study, trial: FrozenTrial, trials: Dict[int, FrozenTrial]) -> List[int]:
    """Numbers of the trials optuna-dashboard shows beside the new ``trial``: COMPLETE or
    RUNNING, never reported worse, not skipped (``PreferentialStudy.should_generate``'s
    rule; a skip is the study system attribute ``"preference:skip_trial:<trial_id>"``)."""
    attrs = study._storage.get_study_system_attrs(study._study_id)
    worse = {
        int(pair[1]) for k, v in attrs.items() if k.startswith(_PREFERENCE_KEY) for pair in v or []
    }
    skipped = {k[len(_SKIP_KEY):] for k in attrs if k.startswith(_SKIP_KEY)}
    return [
        n
        for n, t in trials.items()
        if n != trial.number
        and t.state in (TrialState.COMPLETE, TrialState.RUNNING)
        and n not in worse
        and str(t._trial_id) not in skipped
    ]


def report_tie(study: Any, a: Any, b: Any) -> None:
    """Record that a person could not tell trials ``a`` and ``b`` apart.

    ``study`` is an optuna-dashboard ``PreferentialStudy`` or an ``optuna.Study``; ``a`` and
    ``b`` are trials or trial numbers. :class:`PreferentialSampler` counts ties; they carry
    no preference. optuna-dashboard itself has no tie button, so this is the programmatic
    way (e.g. a "can't tell" answer from a survey).
    """
    inner = getattr(study, "_study", study)
    numbers = [getattr(t, "number", t) for t in (a, b)]
    for n in numbers:
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"invalid `trial`: give a trial or a trial number, got {n!r}")
    inner._storage.set_study_system_attr(inner._study_id, _TIE_KEY + uuid.uuid4().hex, [numbers])


def _seed_of(seed: Optional[int]) -> int:
    if seed is None:
        import secrets

        return secrets.randbits(63)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"invalid `seed`: must be a whole number >= 0 or None, got {seed!r}")
    return seed
