"""DSBO on multi-agent MuJoCo from Python (agora.mamujoco): episode returns are
deterministic, the policy's actions from Python are the Rust policy's (the fixture the Rust
test also checks), and agora's strategies (DSBO with its Hessian queries, TuRBO) are
answered by episodes. Needs mujoco, gymnasium and gymnasium-robotics (in
python/requirements-test.txt)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import agora

pytest.importorskip("gymnasium_robotics", reason="pip install mujoco gymnasium gymnasium-robotics")
from agora import mamujoco  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[2] / "conformance" / "mamujoco" / "hom_actions.json"


def theta(dim: int, seed: int = 0) -> list[float]:
    r = random.Random(seed)
    return [r.uniform(-1.0, 1.0) for _ in range(dim)]


@pytest.mark.parametrize("name", ["ma-swimmer-6", "ma-ant-6"])
def test_an_episode_return_is_deterministic(name: str) -> None:
    t = mamujoco.MaMuJoCoTask(name, horizon=60)
    th = theta(t.dim)
    a, _ = t.episode(th, 11)
    b, _ = t.episode(th, 11)
    c, _ = mamujoco.MaMuJoCoTask(name, horizon=60).episode(th, 11)
    assert a == b == c
    d, _ = t.episode(th, 12)
    assert d != a  # another start
    e, _ = t.episode(theta(t.dim, 1), 11)
    assert e != a  # another policy


def test_python_actions_are_the_rust_policys_on_the_same_observation() -> None:
    fixture = json.loads(FIXTURE.read_text())
    assert len(fixture["cases"]) == 4
    for c in fixture["cases"]:
        t = mamujoco.MaMuJoCoTask(c["task"], size=c["size"], ablation=c["ablation"], horizon=10)
        assert (len(t.agents), t.state_dim, t.action_dim, t.dim) == (
            c["agents"], c["state_dim"], c["action_dim"], len(c["theta"])
        )
        # Today's MaMuJoCo gives the recorded observation, and the adapter the recorded states.
        obs, _ = t.env.reset(seed=fixture["reset_seed"])
        assert {a: [float(x) for x in obs[a]] for a in t.agents} == c["observation"]
        states = t.states(obs)
        assert states == c["states"]
        # The binding gives the actions the Rust policy gives (checked in dsbo_policy.rs).
        assert t.policy.act(c["theta"], states) == c["actions"]
        acts = t.actions(c["theta"], obs)
        assert [list(acts[a]) for a in t.agents] == c["actions"]


def test_dsbo_and_turbo_are_answered_by_episodes() -> None:
    t = mamujoco.MaMuJoCoTask("ma-swimmer-6", horizon=30, hessian_states=2)
    s = agora.Strategy("dsbo", t.space(), seed=0, t0=2, n_init=2)
    kinds = []
    curve = []
    while len(curve) < 5:
        q = s.ask()
        kinds.append(q.kind)
        kw = mamujoco.answer(t, q)
        if q.kind == "hessian":
            m = kw["matrix"]
            assert len(m) == t.dim and all(len(r) == t.dim for r in m)
            assert all(abs(m[i][j] - m[j][i]) < 1e-12 for i in range(0, t.dim, 17) for j in range(0, t.dim, 13))
        s.tell(**kw)
        curve.extend(kw.get("values", []))
    assert kinds[:2] == ["hessian", "hessian"] and "evaluate" in kinds
    turbo = agora.Strategy("turbo", t.space(), seed=0, n_init=2)
    best = mamujoco.run(turbo, t, 4)
    assert len(best) == 4 and best == sorted(best)
    # The same seed and answers give the same runs.
    again = mamujoco.run(agora.Strategy("turbo", t.space(), seed=0, n_init=2), t, 4)
    assert again == best


def test_bad_input_is_named() -> None:
    with pytest.raises(KeyError, match="ma-ant-6"):
        mamujoco.MaMuJoCoTask("ma-ant-7")
    t = mamujoco.MaMuJoCoTask("ma-swimmer-6", horizon=5)
    with pytest.raises(ValueError, match="219"):
        t.episode([0.0] * 3, 0)
    with pytest.raises(ValueError, match="ablation"):
        agora.HomPolicy(3, 4, 1, ablation="none")
    with pytest.raises(ValueError, match="horizon"):
        mamujoco.MaMuJoCoTask("ma-swimmer-6", horizon=0)
    p = agora.HomPolicy(3, 4, 1)
    with pytest.raises(ValueError):
        p.act([0.0] * p.dim, [[0.0] * 4] * 2)  # two states for three agents


def test_the_quick_experiment_writes_its_runs(tmp_path: Path) -> None:
    from agora.experiments import dsbo_mujoco

    p = dsbo_mujoco.plan(quick=True)
    p.update(tasks=["ma-swimmer-6"], seeds=[0, 1], evaluations=3, horizon=10)
    runs = [dsbo_mujoco.one_run(*key, p) for key in dsbo_mujoco.plan(True)["runs"] if key[0] == "ma-swimmer-6"]
    assert {r["method"] for r in runs} == {"dss-gp-ucb", "turbo", "uniform"}
    assert all(len(r["curve"]) == 3 and r["curve"] == sorted(r["curve"]) for r in runs)
    assert all(r["hessians"] > 0 for r in runs if r["method"] == "dss-gp-ucb")


def test_runs_saved_by_several_processes_are_merged(tmp_path: Path) -> None:
    from agora.experiments import dsbo_mujoco

    p = dsbo_mujoco.plan(quick=True)
    path = tmp_path / "mujoco.json"
    a = dict(task="ma-ant-6", variant="med", method="turbo", seed=0, dim=441, curve=[1.0], seconds=0.1)
    b = dict(a, task="ma-swimmer-6", dim=219)
    assert dsbo_mujoco._save(path, p, True, a) == 1
    assert dsbo_mujoco._save(path, p, True, b) == 2
    assert dsbo_mujoco._save(path, p, True, dict(a, curve=[2.0])) == 2  # a run again replaces it
    runs = dsbo_mujoco._load(path, True)
    assert sorted(r["task"] for r in runs) == ["ma-ant-6", "ma-swimmer-6"]
    assert dsbo_mujoco._load(path, False) == []  # a full run does not resume quick runs


def test_a_run_is_claimed_by_one_live_process(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from agora.experiments import dsbo_mujoco

    key = ("ma-ant-6", "med", "turbo", 0)
    assert dsbo_mujoco._claim(tmp_path, key)
    assert dsbo_mujoco._claim(tmp_path, key)  # this process holds it
    other = ("ma-ant-6", "med", "turbo", 1)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (tmp_path / "claims" / "ma-ant-6_med_turbo_1.pid").write_text(str(live.pid))
        assert not dsbo_mujoco._claim(tmp_path, other)  # a live process holds it
    finally:
        live.kill()
        live.wait()
    assert dsbo_mujoco._claim(tmp_path, other)  # its process is gone: taken over
    assert (tmp_path / "claims" / "ma-ant-6_med_turbo_1.pid").read_text() == str(os.getpid())
