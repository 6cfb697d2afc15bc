"""agora.optuna's samplers in real Optuna studies (no torch).

Optuna ships its own parametrized sampler contract (``optuna.testing.pytest_samplers``):
both samplers run it, as Optuna's samplers do. The rest checks what the contract does not:
that the GP sampler learns, is seeded, handles every distribution and ignores failed and
pruned trials; and that the preferential sampler reads optuna-dashboard's stored
preferences (and agora's ties), handles categorical parameters, and learns from a rater.
"""

import math

import pytest

optuna = pytest.importorskip("optuna")

import agora.optuna  # noqa: E402
from optuna.testing.pytest_samplers import (  # noqa: E402
    BasicSamplerTestCase,
    RelativeSamplerTestCase,
    SingleOnlySamplerTestCase,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _gp():
    return agora.optuna.GPSampler(n_startup_trials=0, seed=0)


class TestGPSamplerBasic(BasicSamplerTestCase):
    @pytest.fixture
    def sampler(self):
        return _gp


class TestGPSamplerRelative(RelativeSamplerTestCase):
    @pytest.fixture
    def sampler(self):
        return _gp


class TestGPSamplerSingleOnly(SingleOnlySamplerTestCase):
    @pytest.fixture
    def sampler(self):
        return _gp


def _branin(x1, x2):
    """Branin (minimized), minimum 0.397887."""
    a, b, c = 1.0, 5.1 / (4 * math.pi**2), 5 / math.pi
    r, s, t = 6.0, 10.0, 1 / (8 * math.pi)
    return a * (x2 - b * x1**2 + c * x1 - r) ** 2 + s * (1 - t) * math.cos(x1) + s


def _run_gp(seed, n_trials=30, sampler=None):
    sampler = sampler or agora.optuna.GPSampler(seed=seed)
    study = optuna.create_study(sampler=sampler)
    study.optimize(
        lambda t: _branin(t.suggest_float("x1", -5, 10), t.suggest_float("x2", 0, 15)),
        n_trials=n_trials,
    )
    return study


def test_gp_sampler_learns_branin_better_than_random_search():
    # Paired over 10 seeds: the same 10 random startup trials, then 20 GP or random trials.
    diffs = []
    for seed in range(10):
        gp = _run_gp(seed).best_value
        rnd = _run_gp(seed, sampler=optuna.samplers.RandomSampler(seed=seed)).best_value
        diffs.append(gp - rnd)
    mean = sum(diffs) / len(diffs)
    se = (sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1) / len(diffs)) ** 0.5
    assert mean < -2 * se, (mean, se, diffs)
    assert _run_gp(0).best_value < 0.397887 + 0.05


def test_gp_sampler_same_seed_same_trials_and_other_seed_differs():
    a = [t.params for t in _run_gp(3, n_trials=15).trials]
    b = [t.params for t in _run_gp(3, n_trials=15).trials]
    c = [t.params for t in _run_gp(4, n_trials=15).trials]
    assert a == b
    assert a != c


def test_gp_sampler_mixed_space_values_are_valid_and_it_finds_the_optimum():
    def objective(t):
        x = t.suggest_float("x", -5, 5)
        lr = t.suggest_float("lr", 1e-5, 1e-1, log=True)
        n = t.suggest_int("n", 1, 64, log=True)
        k = t.suggest_int("k", 0, 10, step=2)
        f = t.suggest_float("f", 0.0, 1.0, step=0.25)
        c = t.suggest_categorical("c", ["adam", "sgd", 3])
        assert -5 <= x <= 5 and 1e-5 <= lr <= 1e-1 and 1 <= n <= 64
        assert k in (0, 2, 4, 6, 8, 10) and f in (0.0, 0.25, 0.5, 0.75, 1.0)
        assert c in ("adam", "sgd", 3)
        assert isinstance(n, int) and isinstance(k, int) and isinstance(f, float)
        return (
            (x - 1) ** 2
            + (math.log10(lr) + 3) ** 2
            + (math.log2(n) - 3) ** 2
            + abs(k - 4)
            + f
            + (0 if c == 3 else 1)
        )

    study = optuna.create_study(sampler=agora.optuna.GPSampler(seed=0))
    study.optimize(objective, n_trials=40)
    best = study.best_params
    assert best["c"] == 3 and best["k"] == 4 and best["f"] == 0.0, best
    assert study.best_value < 0.6, study.best_value


def test_gp_sampler_ignores_failed_and_pruned_trials():
    study = optuna.create_study(sampler=agora.optuna.GPSampler(seed=1, n_startup_trials=5))
    for i in range(20):
        t = study.ask()
        x = t.suggest_float("x", -3, 3)
        if i % 4 == 1:
            study.tell(t, state=optuna.trial.TrialState.PRUNED)
        elif i % 4 == 2:
            study.tell(t, float("nan"))  # a FAIL
        else:
            study.tell(t, (x - 0.5) ** 2)
    states = [t.state for t in study.trials]
    assert states.count(optuna.trial.TrialState.FAIL) == 5
    assert abs(study.best_params["x"] - 0.5) < 0.2


def test_gp_sampler_maximize_and_infinite_values():
    study = optuna.create_study(direction="maximize", sampler=agora.optuna.GPSampler(seed=2))
    for i in range(25):
        t = study.ask()
        x = t.suggest_float("x", 0, 1)
        study.tell(t, float("inf") if i == 3 else -((x - 0.3) ** 2))
    finite = [t for t in study.trials if math.isfinite(t.value)]
    assert max(finite, key=lambda t: t.value).params["x"] == pytest.approx(0.3, abs=0.05)


def test_gp_sampler_bad_arguments_name_the_field():
    with pytest.raises(ValueError, match="acquisition.*logei"):
        agora.optuna.GPSampler(acquisition="magic")
    with pytest.raises(ValueError, match="n_startup_trials"):
        agora.optuna.GPSampler(n_startup_trials=-1)
    with pytest.raises(ValueError, match="seed"):
        agora.optuna.GPSampler(seed=-3)


def test_gp_sampler_reseed_changes_its_seed_and_the_independent_samplers():
    s = agora.optuna.GPSampler(seed=0)
    before = s._seed
    s.reseed_rng()
    assert s._seed != before


def test_gp_sampler_with_two_threads():
    study = optuna.create_study(sampler=agora.optuna.GPSampler(seed=0, n_startup_trials=4))
    study.optimize(lambda t: (t.suggest_float("x", -1, 1)) ** 2, n_trials=16, n_jobs=2)
    assert len(study.trials) == 16
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)


# ---------------------------------------------------------------- preferential sampler

preferential = pytest.importorskip("optuna_dashboard.preferential")


def _pref_loop(sampler, n_trials, utility, params, rng_seed=0, ties=None):
    """The dashboard's flow: keep 2 candidates on screen; the person marks the worse."""
    import random

    rng = random.Random(rng_seed)
    study = preferential.create_study(n_generate=2, sampler=sampler)
    value = {}
    while len(value) < n_trials:
        if study.should_generate():
            t = study.ask()
            value[t.number] = utility(params(t))
            continue
        worse = {w.number for _, w in study.get_preferences(deepcopy=False)}
        a, b = [t for t in study.get_trials(deepcopy=False) if t.number not in worse][:2]
        if ties is not None and abs(value[a.number] - value[b.number]) < ties:
            # "Can't tell" recorded, then the person still picks one to move on.
            agora.optuna.report_tie(study, a, b)
        better, loser = (a, b) if value[a.number] > value[b.number] else (b, a)
        if rng.random() < 0.05:
            better, loser = loser, better
        study.report_preference(better, loser)
    return study, value


def test_preferential_sampler_reads_dashboard_preferences_and_learns():
    def params(t):
        return (t.suggest_float("x", 0, 1), t.suggest_float("y", 0, 1))

    def utility(p):
        return -((p[0] - 0.7) ** 2) - (p[1] - 0.2) ** 2

    study, value = _pref_loop(agora.optuna.PreferentialSampler(seed=0), 25, utility, params)
    assert len(study.get_preferences(deepcopy=False)) >= 20
    (pick,) = study.best_trials  # preferred at least once and never worse
    # A random point on [0,1]^2 is within 0.02 of the ideal (distance 0.14) with probability
    # ~0.06; after 25 comparisons the person's pick is.
    assert value[pick.number] > -0.02, (value[pick.number], max(value.values()))


def test_preferential_sampler_categorical_parameters_and_ties():
    def params(t):
        return (t.suggest_categorical("colour", ["red", "green", "blue"]), t.suggest_int("size", 1, 5))

    def utility(p):
        return {"red": 0.0, "green": 1.0, "blue": 0.3}[p[0]] - 0.2 * abs(p[1] - 4)

    study, value = _pref_loop(
        agora.optuna.PreferentialSampler(seed=1), 20, utility, params, ties=0.25
    )
    trials = study.get_trials(deepcopy=False)
    assert all(t.params["colour"] in ("red", "green", "blue") for t in trials)
    assert all(1 <= t.params["size"] <= 5 and isinstance(t.params["size"], int) for t in trials)
    assert {t.params["colour"] for t in trials} == {"red", "green", "blue"}
    # The person's pick (the unbeaten trial) has the best colour and a size near 4.
    (pick,) = study.best_trials  # preferred at least once and never worse
    assert pick.params["colour"] == "green" and abs(pick.params["size"] - 4) <= 1, pick.params
    ties = [k for k in study._study._storage.get_study_system_attrs(study._study._study_id) if k.startswith("agora:ties:")]
    assert ties, "no tie was recorded"


def test_preferential_sampler_same_seed_same_trials():
    def params(t):
        return (t.suggest_float("x", 0, 1),)

    def utility(p):
        return -abs(p[0] - 0.4)

    a, _ = _pref_loop(agora.optuna.PreferentialSampler(seed=5), 10, utility, params)
    b, _ = _pref_loop(agora.optuna.PreferentialSampler(seed=5), 10, utility, params)
    assert [t.params for t in a.get_trials()] == [t.params for t in b.get_trials()]


def test_preferential_sampler_refuses_torch_objects_and_random_before_preferences():
    with pytest.raises(ValueError, match="kernel"):
        agora.optuna.PreferentialSampler(kernel=object())
    study = preferential.create_study(n_generate=2, sampler=agora.optuna.PreferentialSampler(seed=0))
    t = study.ask()
    assert 0 <= t.suggest_float("x", 0, 1) <= 1  # no preference yet: independent sampling


def test_report_tie_rejects_bad_trials():
    study = optuna.create_study()
    with pytest.raises(ValueError, match="trial"):
        agora.optuna.report_tie(study, -1, 2)
