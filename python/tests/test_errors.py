"""Bad input raises ValueError, KeyError or TypeError naming the field and what is allowed;
nothing brings the interpreter down."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import agora

SPACE = agora.Space([agora.real("x", -1, 3), agora.integer("n", 1, 4)])
CATS = agora.Space([agora.categorical("c", ["red", "green"])])


def strategy(method: str = "gp-logei") -> agora.Strategy:
    return agora.Strategy(method, SPACE, seed=0)


def study(tmp: Path, **kw) -> agora.Study:
    return agora.create_study("s", method="bo", space=SPACE, storage=str(tmp / "s.db"), **kw)


# (id, call, exception, words the message must contain)
CASES = [
    ("unknown method", lambda t: agora.Strategy("nope", SPACE), KeyError, ["nope", "allowed", "gp-logei", "sbo", "cma-es"]),
    ("unknown knob", lambda t: agora.Strategy("gp-logei", SPACE, zzz=1), KeyError, ["zzz", "allowed", "n_init"]),
    ("knob out of range", lambda t: agora.Strategy("gp-ucb", SPACE, beta=-1.0), ValueError, ["method.beta", ">= 0", "-1"]),
    ("knob of the wrong kind", lambda t: agora.Strategy("gp-ucb", SPACE, beta="big"), ValueError, ["method.beta", "number"]),
    ("knob not JSON-like", lambda t: agora.Strategy("gp-ucb", SPACE, beta=object()), TypeError, ["method.beta"]),
    ("too few participants", lambda t: agora.Strategy("sbo", SPACE, participants=["a"]), ValueError, ["participants", "at least two"]),
    ("space the method cannot search", lambda t: agora.Strategy("hpbo", CATS, anchors=[[0.5, 0.5]]), ValueError, ["space", "real"]),
    ("NaN value", lambda t: strategy().tell(values=[math.nan]), ValueError, ["values[0]", "finite"]),
    ("infinite value", lambda t: strategy().tell(values=[math.inf]), ValueError, ["values[0]", "finite"]),
    ("wrong number of values", lambda t: strategy().tell(values=[1.0, 2.0]), ValueError, ["values", "1 value", "got 2"]),
    ("winner for an evaluation", lambda t: strategy().tell(winner="A"), ValueError, ["values="]),
    ("nothing told", lambda t: strategy().tell(), ValueError, ["nothing to tell", "values="]),
    ("unknown tell keyword", lambda t: strategy().tell(value=[1.0]), TypeError, ["value", "allowed", "values", "winner"]),
    ("values not numbers", lambda t: strategy().tell(values=["a"]), TypeError, ["values[0]", "number"]),
    ("values a string", lambda t: strategy().tell(values="1.0"), TypeError, ["values", "not a string"]),
    ("answer not an Answer", lambda t: strategy().tell({"values": [1.0]}), TypeError, ["agora.Answer", "dict", "values="]),
    ("matrix for an evaluation", lambda t: strategy().tell(matrix=[[1.0]]), ValueError, ["matrix", "not a Hessian"]),
    ("unknown parameter in a point", lambda t: SPACE.to_unit({"x": 0.0, "n": 1, "m": 2}), ValueError, ["point", "`m`", "x, n"]),
    ("missing parameter in a point", lambda t: SPACE.to_unit({"x": 0.0}), ValueError, ["point", "`n`", "x, n"]),
    ("wrong number of values in a point", lambda t: SPACE.to_unit([0.5]), ValueError, ["point", "expected 2", "got 1"]),
    ("point of the wrong type", lambda t: SPACE.to_unit(3.5), TypeError, ["point", "dict", "sequence"]),
    ("point a string", lambda t: SPACE.to_unit("x=1"), TypeError, ["point", "dict"]),
    ("value of the wrong type", lambda t: SPACE.to_unit({"x": None, "n": 1}), TypeError, ["point.x", "NoneType", "number"]),
    ("bool as a value", lambda t: SPACE.to_unit([True, 1]), TypeError, ["point[0]", "bool"]),
    ("value out of bounds", lambda t: SPACE.to_unit({"x": 5.0, "n": 1}), ValueError, ["x", "[-1, 3]", "5"]),
    ("unknown choice", lambda t: CATS.to_unit({"c": "blue"}), ValueError, ["c", "blue", "red, green"]),
    ("NaN in a point", lambda t: SPACE.to_unit({"x": math.nan, "n": 1}), ValueError, ["point.x", "finite"]),
    ("belief at a bad point", lambda t: strategy().belief([{"x": 0.0}]), ValueError, ["points[0]", "`n`"]),
    ("unit point of the wrong length", lambda t: SPACE.to_user([0.5]), ValueError, ["point", "expected 2", "got 1"]),
    ("real bounds reversed", lambda t: agora.real("x", 2, 1), ValueError, ["hi", "greater than lo"]),
    ("real bound NaN", lambda t: agora.real("x", math.nan, 1), ValueError, ["lo", "finite"]),
    ("log-real bound not positive", lambda t: agora.log_real("x", 0, 1), ValueError, ["lo", "lo > 0"]),
    ("repeated choice", lambda t: agora.categorical("c", ["a", "a"]), ValueError, ["choices", "`a` appears twice"]),
    ("no parameters", lambda t: agora.Space([]), ValueError, ["params", "at least one"]),
    ("repeated parameter name", lambda t: agora.Space([agora.real("x", 0, 1), agora.real("x", 0, 2)]), ValueError, ["params[1].name", "`x` appears twice"]),
    ("features out of shape", lambda t: agora.Space.candidates(["a", "b"], [[0.1], [0.2, 0.3]]), ValueError, ["features[1]", "expected 1"]),
    ("unknown candidate", lambda t: agora.Space.candidates(["a", "b"], [[0.1], [0.2]]).to_unit("z"), KeyError, ["z", "a, b"]),
    ("unknown problem", lambda t: agora.problems.make("branen"), KeyError, ["branen", "allowed", "branin", "hartmann6", "group:toy"]),
    ("unknown group", lambda t: agora.problems.make("group:tea"), KeyError, ["group:tea", "allowed", "group:team"]),
    ("unknown rater", lambda t: agora.problems.make("branin", rater="thurstone"), KeyError, ["thurstone", "probit", "bradley_terry"]),
    ("negative noise", lambda t: agora.problems.make("branin", noise=-1.0), ValueError, ["noise", ">= 0"]),
    ("negative sigma", lambda t: agora.problems.make("branin", sigma=-1.0), ValueError, ["sigma", "positive"]),
    ("bad storage URL", lambda t: agora.create_study("s", space=SPACE, storage="postgresql://db/x"), ValueError, ["storage", "postgresql://", "sqlite:///"]),
    ("empty storage", lambda t: agora.create_study("s", space=SPACE, storage=""), ValueError, ["storage", "sqlite:///"]),
    ("storage folder missing", lambda t: agora.create_study("s", space=SPACE, storage=str(t / "no" / "s.db")), ValueError, ["storage", "does not exist"]),
    ("load_study on a missing file", lambda t: agora.load_study("s", storage=str(t / "missing.db")), FileNotFoundError, ["missing.db", "create_study"]),
    ("study_names on a missing file", lambda t: agora.study_names(storage=str(t / "missing.db")), FileNotFoundError, ["missing.db"]),
    ("unknown study", lambda t: (study(t), agora.load_study("other", storage=str(t / "s.db"))), KeyError, ["other", "known", "s"]),
    ("bad study name", lambda t: agora.create_study("Bad Name", space=SPACE, storage=str(t / "s.db")), ValueError, ["name", "a-z"]),
    ("unknown study method", lambda t: agora.create_study("s", method="nope", space=SPACE, storage=str(t / "s.db")), KeyError, ["nope", "allowed", "pairs", "social"]),
    ("unknown export format", lambda t: study(t).export("xml"), ValueError, ["format", "csv, json"]),
    ("Hessian for a study", lambda t: study(t).tell(matrix=[[1.0]]), ValueError, ["matrix", "Hessians"]),
    ("query never asked", lambda t: study(t).tell(query=7, values=[1.0]), ValueError, ["query 7", "never asked"]),
    ("close a non-vote", lambda t: study(t).close(), ValueError, ["query", "group vote"]),
    ("unknown suite", lambda t: agora.reproduce("nope", out=str(t)), KeyError, ["nope", "standard"]),
    ("run with a negative n", lambda t: agora.run(strategy(), agora.problems.make("branin"), -1), ValueError, ["`n`", ">= 0"]),
]


@pytest.mark.parametrize("call, exc, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_names_the_field(tmp_path, call, exc, words):
    with pytest.raises(exc) as info:
        call(tmp_path)
    message = str(info.value)
    for w in words:
        assert w in message, f"{w!r} not in {message!r}"


def test_a_failed_create_leaves_no_file(tmp_path):
    with pytest.raises(ValueError):
        agora.create_study("Bad Name", space=SPACE, storage=str(tmp_path / "s.db"))
    assert not (tmp_path / "s.db").exists()


def test_errors_leave_objects_usable(tmp_path):
    s = strategy()
    for bad in ({"values": [math.nan]}, {"winner": "A"}, {"votes": [0]}, {"matrix": [[1.0]]}):
        with pytest.raises(ValueError):
            s.tell(**bad)
    q = s.ask()
    s.tell(values=[1.0])
    assert s.n_answered == 1 and s.ask().id != q.id
    st = study(tmp_path)
    with pytest.raises(ValueError):
        st.tell(values=[math.nan])
    assert st.tell(values=[2.0]) == "answered"


FUZZ = textwrap.dedent(
    r'''
    import math, random, sys, tempfile
    import numpy as np
    import agora

    rng = random.Random(int(sys.argv[1]))
    tmp = tempfile.mkdtemp()
    METHODS = [m["name"] for m in agora.methods()]
    PROBLEMS = [p["name"] for p in agora.problems()]

    def garbage(depth=0):
        pool = [
            None, True, 0, -1, 1, 2, 7, 2**70, -2**70, 0.5, -0.0, math.nan, math.inf, -math.inf,
            1e308, "", "A", "B", "tie", "x", "x0", "\x00", "ü" * 3, b"bytes", object(), [], {},
            (), np.float64(0.3), np.int64(2), np.array([0.1, 0.2]), np.array([[0.1], [0.2]]),
            np.array([]), np.array(["a"]), np.float32(math.nan), range(3), print, agora,
        ]
        if depth < 2:
            pool += [[garbage(depth + 1) for _ in range(rng.randint(0, 3))],
                     {rng.choice(["x", "x0", "n", "c", 1]): garbage(depth + 1)}]
        return rng.choice(pool)

    def some_space():
        return rng.choice([
            agora.Space([agora.real("x", -1, 3), agora.integer("n", 1, 4)]),
            agora.Space([agora.real("x0", 0, 1), agora.categorical("c", ["a", "b"])]),
            agora.Space.candidates(["a", "b", "c"], [[0.0], [0.5], [1.0]]),
            agora.problems.make("branin").space,
        ])

    strategies = [agora.Strategy("random", some_space())]
    problems = [agora.problems.make("branin"), agora.problems.make("group:toy")]
    studies = []

    def tell_kwargs():
        keys = ["values", "winner", "tie", "who", "vote", "votes", "rating", "ratings", "matrix", "zzz"]
        return {k: garbage() for k in rng.sample(keys, rng.randint(0, 3))}

    calls = [
        lambda: agora.real(garbage(), garbage(), garbage()),
        lambda: agora.log_real("x", garbage(), garbage()),
        lambda: agora.integer("n", garbage(), garbage()),
        lambda: agora.categorical("c", garbage()),
        lambda: agora.Space(garbage()),
        lambda: agora.Space.reals(garbage()),
        lambda: agora.Space.candidates(garbage(), garbage()),
        lambda: agora.Space.from_json(rng.choice([garbage(), '{"kind":"box","params":[]}', '{"kind":"candidates","names":[],"features":[]}', some_space().to_json()[:rng.randint(0, 60)]])),
        lambda: some_space().to_user(garbage()),
        lambda: some_space().to_unit(garbage()),
        lambda: strategies.append(agora.Strategy(rng.choice(METHODS + [garbage()]), some_space(), seed=rng.choice([0, 1, garbage()]), participants=rng.choice([None, ["a", "b"], ["a", "b", "c"], garbage()]), **({str(garbage()): garbage()} if rng.random() < 0.5 else {}))),
        lambda: rng.choice(strategies).ask(),
        lambda: rng.choice(strategies).tell(**tell_kwargs()),
        lambda: rng.choice(strategies).tell(garbage()),
        lambda: rng.choice(strategies).belief(garbage()),
        lambda: rng.choice(strategies).best(),
        lambda: rng.choice(problems).answer(rng.choice(strategies).ask()),
        lambda: rng.choice(problems)(garbage()),
        lambda: rng.choice(problems).regret(garbage()),
        lambda: agora.problems.make(rng.choice(PROBLEMS + [str(garbage())]), noise=garbage(), sigma=rng.choice([None, garbage()]), rater=rng.choice(["probit", garbage()]), seed=rng.choice([0, garbage()])),
        lambda: studies.append(agora.create_study(rng.choice(["s", "t", str(garbage())]), method=rng.choice(["bo", "pairs", "group-pairs", "social", str(garbage())]), space=some_space(), participants=rng.choice([None, ["ann", "bob"], garbage()]), storage=rng.choice([tmp + "/f.db", str(garbage())]))),
        lambda: rng.choice(studies).tell(query=rng.choice([None, 0, 1, garbage()]), **tell_kwargs()) if studies else None,
        lambda: rng.choice(studies).ask() if studies else None,
        lambda: rng.choice(studies).close() if studies else None,
        lambda: rng.choice(studies).export(garbage()) if studies else None,
        lambda: agora.load_study(str(garbage()), storage=tmp + "/f.db"),
        lambda: agora.study_names(storage=str(garbage())),
        lambda: agora.run(rng.choice(strategies), rng.choice(problems + [garbage(), lambda q: garbage()]), rng.choice([0, 1, 2, -1, 1.5, None, "2"])),
    ]

    errors = ok = 0
    for i in range(int(sys.argv[2])):
        try:
            rng.choice(calls)()
            ok += 1
        except Exception:
            errors += 1
        if len(strategies) > 40:
            del strategies[1:20]
    print(f"fuzz: {ok} calls went through, {errors} raised")
    '''
)


@pytest.mark.parametrize("seed", [1, 2])
def test_garbage_never_crashes_the_interpreter(tmp_path, seed):
    script = tmp_path / "fuzz.py"
    script.write_text(FUZZ)
    # The agora package this test imported, wherever it came from (a wheel, or python/).
    here = str(Path(agora.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [here, os.environ.get("PYTHONPATH", "")] if p))
    r = subprocess.run(
        [sys.executable, str(script), str(seed), "1500"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    # A panic surfaces as pyo3's PanicException, which `except Exception` does not catch; a
    # crash as a signal: either way the process fails.
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    assert "fuzz:" in r.stdout
