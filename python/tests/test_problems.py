"""agora.problems: test functions answered by an oracle, Social BO groups, suites."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

import agora

PROBLEMS = agora.problems()
FUNCTIONS = [p for p in PROBLEMS if p["kind"] == "function"]
GROUPS = [p for p in PROBLEMS if p["kind"] == "group"]

# Hartmann6's maximizer (crates/agora-problems/src/functions.rs).
HARTMANN6_ARGMAX = [
    0.20168951100670543,
    0.15001069182345797,
    0.47687397422189703,
    0.2753324304940561,
    0.31165161660011326,
    0.6573005340656204,
]


def test_list():
    names = [p["name"] for p in PROBLEMS]
    assert {"branin", "hartmann6", "group:toy", "group:thermal"} <= set(names)
    assert len(names) == len(set(names))
    for p in FUNCTIONS:
        assert isinstance(p["optimum"], float) and p["dim"] >= 1
    for p in GROUPS:
        assert p["name"].startswith("group:") and p["agents"] >= 2 and "optimum" not in p


@pytest.mark.parametrize("entry", FUNCTIONS, ids=lambda p: p["name"])
def test_make_every_function(entry):
    f = agora.problems.make(entry["name"])
    assert f.name == entry["name"]
    assert f.space.dim == entry["dim"] and f.space.kind == "box"
    assert f.optimum == entry["optimum"]
    assert f.agents == 0
    centre = f.space.to_user([0.5] * f.space.dim)
    assert f(centre) <= f.optimum + 1e-9
    assert f.regret(centre) == pytest.approx(f.optimum - f(centre))


@pytest.mark.parametrize("entry", GROUPS, ids=lambda p: p["name"])
def test_make_every_group(entry):
    g = agora.problems.make(entry["name"])
    assert g.agents == entry["agents"] and g.space.dim == entry["dim"]
    assert g.optimum is None
    participants = [f"p{i}" for i in range(g.agents)]
    s = agora.Strategy("sbo-gp", g.space, seed=0, participants=participants)
    q = s.ask()
    a = g.answer(q)
    assert a.kind == "values" and len(a.values) == g.agents
    s.tell(a)
    s = agora.Strategy("sbo", g.space, seed=0, participants=participants)
    a = g.answer(s.ask())
    assert a.kind == "votes" and len(a.votes) == g.agents
    assert all(v in (None, 0, 1) for v in a.votes)
    point = 0 if g.space.kind == "candidates" else g.space.to_user([0.5] * g.space.dim)
    with pytest.raises(ValueError, match="single objective"):
        g(point)
    assert math.isfinite(g.regret(point)) and g.regret(point) >= -1e-9


def test_sized_functions():
    assert agora.problems.make("ackley7").space.dim == 7
    assert agora.problems.make("rosenbrock2").space.dim == 2


def test_hartmann6_optimum():
    h = agora.problems.make("hartmann6")
    assert h.optimum == pytest.approx(3.32237, abs=1e-5)
    assert h(HARTMANN6_ARGMAX) == pytest.approx(h.optimum, abs=1e-9)
    assert h.regret(HARTMANN6_ARGMAX) == pytest.approx(0.0, abs=1e-9)
    assert h.regret([0.5] * 6) > 0.5


@pytest.mark.parametrize("x", [(-math.pi, 12.275), (math.pi, 2.275), (3 * math.pi, 2.475)])
def test_branin_maximizers(x):
    b = agora.problems.make("branin")
    assert b.regret(list(x)) == pytest.approx(0.0, abs=1e-6)
    assert b({"x0": x[0], "x1": x[1]}) == pytest.approx(-5 / (4 * math.pi), abs=1e-6)


def values_of(problem: agora.Problem, method: str, n: int, seed: int = 0) -> list[list[float]]:
    s = agora.Strategy(method, problem.space, seed=seed)
    out = []
    for _ in range(n):
        a = problem.answer(s.ask())
        out.append(a.values)
        s.tell(a)
    return out


def test_noisy_answers_are_seeded():
    a = values_of(agora.problems.make("branin", noise=1.0, seed=3), "random", 6)
    b = values_of(agora.problems.make("branin", noise=1.0, seed=3), "random", 6)
    c = values_of(agora.problems.make("branin", noise=1.0, seed=4), "random", 6)
    assert a == b
    assert a != c


def test_noise_has_the_sd_asked_for():
    f = agora.problems.make("branin", noise=2.0, seed=1)
    s = agora.Strategy("random", f.space, seed=0)
    q = s.ask()
    point = q.points[0]
    errors = [f.answer(q).values[0] - f(point) for _ in range(400)]
    assert np.mean(errors) == pytest.approx(0.0, abs=0.4)
    assert np.std(errors) == pytest.approx(2.0, rel=0.15)


def test_noiseless_values_are_the_function():
    f = agora.problems.make("hartmann6")
    s = agora.Strategy("sobol", f.space, seed=0)
    for _ in range(5):
        q = s.ask()
        a = f.answer(q)
        assert a.values == [f(q.points[0])]
        s.tell(a)


@pytest.mark.parametrize("rater", ["probit", "bradley_terry"])
def test_a_noiseless_rater_picks_the_better_point(rater):
    f = agora.problems.make("branin", rater=rater)
    s = agora.Strategy("pbo", f.space, seed=0)
    for _ in range(12):
        q = s.ask()
        a = f.answer(q)
        values = [f(p) for p in q.points]
        assert a.kind == "choice"
        assert a.winner == int(np.argmax(values)), (values, a.winner)
        s.tell(a)


def test_a_noisy_rater_sometimes_errs_and_is_seeded():
    def wrong_picks(seed: int) -> list[bool]:
        f = agora.problems.make("branin", sigma=30.0, seed=seed)
        s = agora.Strategy("pbo", f.space, seed=0)
        out = []
        for _ in range(30):
            q = s.ask()
            a = f.answer(q)
            out.append(a.winner != int(np.argmax([f(p) for p in q.points])))
            s.tell(a)
        return out

    picks = wrong_picks(5)
    assert any(picks) and not all(picks)
    assert picks == wrong_picks(5)


def test_hessian_answers():
    f = agora.problems.make("branin")
    s = agora.Strategy("dsbo", f.space, seed=0)
    q = s.ask()
    assert q.kind == "hessian"
    m = f.answer(q).matrix
    assert np.allclose(m, np.transpose(m))
    # Against central differences of the function itself.
    x = np.array([q.points[0]["x0"], q.points[0]["x1"]])
    h = 1e-3
    fd = np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            ei, ej = np.eye(2)[i] * h, np.eye(2)[j] * h
            fd[i, j] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)) / (4 * h * h)
    assert np.allclose(m, fd, atol=1e-3)
    # Branin's second derivative along x1 is -2 everywhere.
    assert m[1][1] == pytest.approx(-2.0, abs=1e-6)


def test_group_answers_are_seeded():
    def run(seed: int) -> list:
        g = agora.problems.make("group:thermal", seed=seed)
        s = agora.Strategy("sbo", g.space, seed=0, participants=["a", "b", "c"])
        out = []
        for _ in range(6):
            a = g.answer(s.ask())
            out.append(a.votes)
            s.tell(a)
        return out

    assert run(1) == run(1)
    assert run(1) != run(2) or run(1) != run(3)


def test_answer_names_a_kind_it_cannot_answer():
    toy = agora.problems.make("group:toy")
    s = agora.Strategy("pbo", toy.space, seed=0)
    with pytest.raises(ValueError, match="compare"):
        toy.answer(s.ask())
    branin = agora.problems.make("branin")
    g = agora.Strategy("group-pbo", branin.space, participants=["a", "b"])
    with pytest.raises(ValueError, match="group_vote"):
        branin.answer(g.ask())


# --- suites ---------------------------------------------------------------------------------------


def test_suites():
    suites = agora.suites()
    assert "standard" in suites
    assert {"preference", "sbo", "dsbo"} <= set(suites)


@pytest.mark.skipif(os.environ.get("AGORA_SLOW") != "1", reason="slow (runs a whole suite); set AGORA_SLOW=1")
def test_reproduce_quick(tmp_path):
    report = agora.reproduce("standard", quick=True, out=str(tmp_path))
    assert report == str(tmp_path / "standard" / "report.md")
    assert (tmp_path / "standard" / "report.md").read_text().strip()
