"""DSBO's multi-agent MuJoCo tasks in Python: agora's HOM policy (:class:`agora.HomPolicy`,
the Rust policy) acting on MaMuJoCo's observation dictionaries, an episode's return for a
parameter vector, the surrogate policy Hessian at the states a policy visits, and a
respondent that answers any agora :class:`~agora.Strategy` (DSBO's Hessian queries and
evaluations; TuRBO's and the other baselines' evaluations) with episodes.

Needs ``pip install mujoco gymnasium gymnasium-robotics`` (MaMuJoCo ships in
gymnasium-robotics as ``mamujoco_v1``; the simulator is inside the ``mujoco`` wheel).

The paper's tasks (DSBO §5 and App. A: "Multiagent Ant with 6 agents, each agent controls an
individual appendage"; "Multiagent Swimmer with 6 segments") map to MaMuJoCo's
many-segment scenarios (:data:`TASKS`):

- ``ma-ant-6``: ``ManySegmentAnt`` ``"6x1"`` (six two-legged segments, one per agent; the
  standard ``Ant`` splits into at most four agents). Each agent sees its own joints' angles
  and velocities and the torso's position and orientation (``agent_obsk=0``, local
  ``qpos, qvel``, global ``qpos``: 13 numbers), so the Med HOM has 441 parameters, under the
  paper's 500 (MaMuJoCo's default observation, with contact forces, would give 1,241).
  Unhealthy states do not end an episode (``terminate_when_unhealthy=False``), so every
  episode has the same length, as in agora's other DSBO tasks.
- ``ma-swimmer-6``: ``ManySegmentSwimmer`` ``"6x1"`` with MaMuJoCo's default observation
  (own joint and its neighbours', 3 or 4 numbers, zero-padded to 4): 219 parameters (the
  paper's MA-Swimmer 4 HOM has 216).

Episodes run ``horizon`` steps (500, the paper's HDBO-comparison length; its MARL runs use
1,000). The team reward is the same for every agent; an episode's return is its sum. The
return for θ is the mean over ``episodes`` episodes started from ``reset(seed=...)`` with
the task's seeds: MuJoCo is deterministic, so the same θ and seed give the same return.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from agora import _agora

__all__ = ["TASKS", "TaskConfig", "MaMuJoCoTask", "answer", "run"]


@dataclass(frozen=True)
class TaskConfig:
    """A MaMuJoCo scenario as DSBO's experiments use it."""

    scenario: str
    agent_conf: str
    agent_obsk: int | None = 1
    local_categories: tuple[tuple[str, ...], ...] | None = None
    global_categories: tuple[str, ...] | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    horizon: int = 500


#: The paper's tasks, by name (see the module's text for the mapping).
TASKS: dict[str, TaskConfig] = {
    "ma-ant-6": TaskConfig(
        "ManySegmentAnt",
        "6x1",
        agent_obsk=0,
        local_categories=(("qpos", "qvel"),),
        global_categories=("qpos",),
        env_kwargs={"terminate_when_unhealthy": False},
    ),
    "ma-swimmer-6": TaskConfig("ManySegmentSwimmer", "6x1"),
}


def _make_env(cfg: TaskConfig) -> Any:
    try:
        from gymnasium_robotics import mamujoco_v1
    except ImportError as e:  # pragma: no cover - the message is the point
        raise ImportError(
            "agora.mamujoco needs MaMuJoCo: pip install mujoco gymnasium gymnasium-robotics"
        ) from e
    kwargs: dict[str, Any] = dict(cfg.env_kwargs)
    kwargs["max_episode_steps"] = cfg.horizon
    if cfg.local_categories is not None:
        kwargs["local_categories"] = [list(c) for c in cfg.local_categories]
    if cfg.global_categories is not None:
        kwargs["global_categories"] = tuple(cfg.global_categories)
    return mamujoco_v1.parallel_env(
        cfg.scenario, cfg.agent_conf, agent_obsk=cfg.agent_obsk, **kwargs
    )


class MaMuJoCoTask:
    """One of :data:`TASKS` (or a :class:`TaskConfig`) with agora's HOM policy.

    ``size``/``ablation``: the HOM's (``"med"``/``"sm"``; ``"full"``, ``"no_ra"``,
    ``"no_ri"``, ``"ctde"``). ``episodes``: episodes per evaluation. ``seed``: the task's
    seed; episode ``e`` starts from ``reset(seed=seed * 1000 + e)``. ``hessian_states``:
    visited joint states the surrogate Hessian averages over (evenly spaced along one
    episode)."""

    def __init__(
        self,
        task: str | TaskConfig,
        *,
        size: str = "med",
        ablation: str = "full",
        episodes: int = 1,
        seed: int = 0,
        horizon: int | None = None,
        hessian_states: int = 8,
    ) -> None:
        if isinstance(task, str):
            if task not in TASKS:
                raise KeyError(f"unknown task {task!r}; allowed: {', '.join(TASKS)}")
            cfg = TASKS[task]
            self.name = task
        else:
            cfg = task
            self.name = f"{cfg.scenario}-{cfg.agent_conf}"
        if horizon is not None:
            if horizon < 1:
                raise ValueError(f"horizon must be at least 1, got {horizon}")
            cfg = TaskConfig(**{**cfg.__dict__, "horizon": horizon})
        if episodes < 1:
            raise ValueError(f"episodes must be at least 1, got {episodes}")
        if hessian_states < 1:
            raise ValueError(f"hessian_states must be at least 1, got {hessian_states}")
        self.config = cfg
        self.episodes = episodes
        self.seed = seed
        self.hessian_states = hessian_states
        self.env = _make_env(cfg)
        self.agents: list[str] = list(self.env.possible_agents)
        obs, _ = self.env.reset(seed=0)
        self.state_dim = max(len(obs[a]) for a in self.agents)
        shapes = {self.env.action_space(a).shape for a in self.agents}
        if len(shapes) != 1:
            raise ValueError(f"agents with different action shapes: {shapes}")
        (shape,) = shapes
        self.action_dim = int(shape[0])
        self.policy = _agora.HomPolicy(
            len(self.agents), self.state_dim, self.action_dim, size=size, ablation=ablation
        )
        self.dim: int = self.policy.dim
        self.evaluations = 0

    @property
    def horizon(self) -> int:
        return self.config.horizon

    def space(self) -> Any:
        """The θ box, [-1, 1]^dim, as DSBO searches it."""
        return _agora.Space.reals([(-1.0, 1.0)] * self.dim)

    def states(self, obs: dict[str, Any]) -> list[list[float]]:
        """The HOM's local states from an observation dictionary: each agent's observation in
        ``possible_agents`` order, zero-padded to ``state_dim``."""
        out = []
        for a in self.agents:
            s = [float(x) for x in obs[a]]
            out.append(s + [0.0] * (self.state_dim - len(s)))
        return out

    def actions(self, theta: list[float], obs: dict[str, Any]) -> dict[str, Any]:
        """The policy's action dictionary for an observation dictionary."""
        import numpy as np

        acts = self.policy.act(theta, self.states(obs))
        return {a: np.asarray(x, dtype=np.float64) for a, x in zip(self.agents, acts)}

    def episode(self, theta: Any, seed: int, *, record: bool = False) -> tuple[float, list]:
        """One episode from ``reset(seed=seed)``: its return and, with ``record``, the joint
        states visited (one per step)."""
        theta = [float(x) for x in theta]
        if len(theta) != self.dim:
            raise ValueError(f"theta has {len(theta)} entries; this policy takes {self.dim}")
        obs, _ = self.env.reset(seed=seed)
        total, visited = 0.0, []
        for _ in range(self.horizon):
            states = self.states(obs)
            if record:
                visited.append(states)
            acts = self.policy.act(theta, states)
            obs, rewards, terms, truncs, _ = self.env.step(
                {a: x for a, x in zip(self.agents, acts)}
            )
            total += float(rewards[self.agents[0]])
            # `env.agents` empties when the episode ends.
            if any(terms.values()) or any(truncs.values()):
                break
        if not math.isfinite(total):
            raise RuntimeError(f"episode from seed {seed} returned {total}")
        return total, visited

    def value(self, theta: Any) -> float:
        """The return for ``theta``: the mean over the task's episodes."""
        self.evaluations += 1
        rets = [self.episode(theta, self.seed * 1000 + e)[0] for e in range(self.episodes)]
        return sum(rets) / len(rets)

    def hessian(self, theta: Any, *, seed: int = 0) -> list[list[float]]:
        """DSBO's structure-phase answer: the surrogate policy Hessian of ``theta``, averaged
        over ``hessian_states`` joint states visited by the policy in one episode."""
        _, visited = self.episode(theta, self.seed * 1000, record=True)
        k = min(self.hessian_states, len(visited))
        picks = [visited[round(i * (len(visited) - 1) / max(k - 1, 1))] for i in range(k)]
        return self.policy.surrogate_hessian(
            [float(x) for x in theta], picks, seed=seed
        )


def answer(task: MaMuJoCoTask, query: Any) -> dict[str, Any]:
    """The keywords of ``strategy.tell`` answering ``query`` with ``task``: a Hessian query's
    ``matrix``, or the ``values`` of an evaluation (one episode return per point)."""
    if query.kind == "hessian":
        return {"matrix": task.hessian(_theta(task, query.unit_points[0]), seed=query.id)}
    if query.kind == "evaluate":
        return {"values": [task.value(_theta(task, p)) for p in query.unit_points]}
    raise ValueError(f"a MaMuJoCo task answers hessian and evaluate queries, not {query.kind!r}")


def _theta(task: MaMuJoCoTask, unit: list[float]) -> list[float]:
    # The θ box is [-1, 1]^dim and queries carry unit-cube coordinates; the Hessian is taken
    # in θ's own units, as agora's Rust DSBO tasks answer it.
    if len(unit) != task.dim:
        raise ValueError(f"a point of {len(unit)} coordinates; the policy takes {task.dim}")
    return [2.0 * u - 1.0 for u in unit]


def run(strategy: Any, task: MaMuJoCoTask, evaluations: int) -> list[float]:
    """Ask ``strategy`` and answer with ``task`` until ``evaluations`` episode-return
    evaluations were made; returns the best return after each evaluation."""
    best, curve = -math.inf, []
    while len(curve) < evaluations:
        q = strategy.ask()
        kw = answer(task, q)
        strategy.tell(**kw)
        for v in kw.get("values", []):
            best = max(best, v)
            curve.append(best)
    return curve[:evaluations]
