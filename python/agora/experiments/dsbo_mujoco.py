"""DSBO on multi-agent MuJoCo (the paper's MA-Ant and MA-Swimmer): agora's strategies asked
from Python, every evaluation an episode of MaMuJoCo with agora's HOM policy, DSBO's
structure phase answered with surrogate policy Hessians (:mod:`agora.mamujoco`).

Two experiments on each task, every run paired over the same seeds:

- **HDBO comparison** (the paper's Fig. 9): DSS-GP-UCB (``dsbo``) against the baselines agora
  has (TuRBO, LineBO, GP-UCB with one kernel over every dimension, uniform search), all
  optimising the Med HOM.
- **Ablations** (Figs. 3 and 7): DSS-GP-UCB optimising the HOM and its ablated variants
  (Sm; role assignment off; role interaction off).

Writes ``mujoco.json`` (every run's best-return curve) into the output folder; ``agora
report DIR`` (or the next ``agora reproduce dsbo --out DIR``) adds its figures and the
claim-by-claim reading, judged by the paired difference against 2 standard errors, to the
DSBO report in the same folder. Run::

    python -m agora.experiments.dsbo_mujoco --quick --out results/dsbo-mujoco-quick
    python -m agora.experiments.dsbo_mujoco --out results/dsbo-paper   # the full runs
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import agora
from agora import mamujoco

#: The HOM variants of the ablation, as (label, size, ablation).
VARIANTS = [
    ("med", "med", "full"),
    ("sm", "sm", "full"),
    ("ra-off", "med", "no_ra"),
    ("ri-off", "med", "no_ri"),
]

#: The HDBO comparison's methods: (label, registry name, knobs).
METHODS = [
    ("dss-gp-ucb", "dsbo", {}),
    ("turbo", "turbo", {}),
    ("line-bo", "line-bo", {}),
    ("gp-ucb-full", "gp-ucb-full", {}),
    ("uniform", "uniform", {}),
]


def plan(quick: bool) -> dict[str, Any]:
    """What a run does: tasks, budget, seeds, episode length and the runs' list."""
    if quick:
        p = dict(
            tasks=["ma-swimmer-6", "ma-ant-6"],
            evaluations=10,
            seeds=[0, 1],
            horizon=100,
            hessian_states=2,
            dsbo={"t0": 2, "n_init": 2},
            methods=["dss-gp-ucb", "turbo", "uniform"],
            variants=["med", "ra-off"],
        )
    else:
        p = dict(
            tasks=["ma-swimmer-6", "ma-ant-6"],
            evaluations=150,
            seeds=[0, 1, 2, 3, 4],
            horizon=500,
            hessian_states=8,
            dsbo={},
            methods=[m[0] for m in METHODS],
            variants=[v[0] for v in VARIANTS],
        )
    runs = []
    for task in p["tasks"]:
        for seed in p["seeds"]:
            for m in p["methods"]:
                runs.append((task, "med", m, seed))
            for v in p["variants"]:
                if v != "med":
                    runs.append((task, v, "dss-gp-ucb", seed))
    p["runs"] = runs
    return p


def one_run(task: str, variant: str, method: str, seed: int, p: dict[str, Any]) -> dict[str, Any]:
    """One run: the best return after each evaluation, and what it cost."""
    _, size, ablation = next(v for v in VARIANTS if v[0] == variant)
    _, name, knobs = next(m for m in METHODS if m[0] == method)
    t = mamujoco.MaMuJoCoTask(
        task,
        size=size,
        ablation=ablation,
        seed=seed,
        horizon=p["horizon"],
        hessian_states=p["hessian_states"],
    )
    knobs = dict(knobs)
    if name == "dsbo":
        knobs.update(p["dsbo"])
    strategy = agora.Strategy(name, t.space(), seed=seed, **knobs)
    start = time.perf_counter()
    hessians = 0
    best, curve = -math.inf, []
    while len(curve) < p["evaluations"]:
        q = strategy.ask()
        kw = mamujoco.answer(t, q)
        hessians += q.kind == "hessian"
        strategy.tell(**kw)
        for v in kw.get("values", []):
            best = max(best, v)
            curve.append(best)
    return dict(
        task=task,
        variant=variant,
        method=method,
        seed=seed,
        dim=t.dim,
        curve=curve[: p["evaluations"]],
        hessians=hessians,
        seconds=time.perf_counter() - start,
    )


def _load(path: Path, quick: bool) -> list[dict[str, Any]]:
    """The runs saved in ``path`` by a run of the same kind (quick or full)."""
    if not path.exists():
        return []
    doc = json.loads(path.read_text())
    return list(doc["runs"]) if doc.get("quick") == quick else []


def _keys(runs: list[dict[str, Any]]) -> set[tuple[str, str, str, int]]:
    return {(r["task"], r["variant"], r["method"], r["seed"]) for r in runs}


def _save(path: Path, p: dict[str, Any], quick: bool, run: dict[str, Any]) -> int:
    """Add ``run`` to ``path`` (read, merged and replaced under a lock, so that processes
    running other tasks into the same folder keep each other's runs); returns the count."""
    import fcntl

    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        runs = [r for r in _load(path, quick) if _keys([r]) != _keys([run])] + [run]
        doc = {k: v for k, v in p.items() if k != "runs"}
        doc.update(quick=quick, runs=runs)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, indent=1))
        os.replace(tmp, path)
        return len(runs)


def _claim(out: Path, key: tuple[str, str, str, int]) -> bool:
    """Claim a run for this process (a file naming its pid under ``out/claims``), so that
    several processes on one folder each make different runs; a claim whose process is gone
    is taken over."""
    claims = out / "claims"
    claims.mkdir(exist_ok=True)
    path = claims / ("_".join(str(k) for k in key) + ".pid")
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                pid = int(path.read_text() or "0")
                os.kill(pid, 0)
                return pid == os.getpid()
            except (ProcessLookupError, ValueError):
                path.unlink(missing_ok=True)  # its process is gone: take it over
                continue
            except PermissionError:
                return False  # alive, another user's
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m agora.experiments.dsbo_mujoco", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a minute's version: short episodes, few evaluations, two seeds")
    ap.add_argument("--out", default=None, help="output folder (default results/dsbo-mujoco[-quick])")
    ap.add_argument(
        "--task",
        action="append",
        choices=sorted(mamujoco.TASKS),
        help="only this task's runs (repeatable); several processes may share --out (each run is claimed)",
    )
    a = ap.parse_args(argv)
    out = Path(a.out or ("results/dsbo-mujoco-quick" if a.quick else "results/dsbo-mujoco"))
    out.mkdir(parents=True, exist_ok=True)
    p = plan(a.quick)
    path = out / "mujoco.json"
    mine = [k for k in p["runs"] if not a.task or k[0] in a.task]
    start = time.perf_counter()
    for i, key in enumerate(mine):
        if key in _keys(_load(path, a.quick)):
            continue  # resume: a run already saved is kept
        if not _claim(out, key):
            continue  # another live process is making it
        r = one_run(*key, p)
        n = _save(path, p, a.quick, r)
        print(
            f"[{i + 1}/{len(mine)}] {key[0]} {key[1]} {key[2]} seed {key[3]}: best {r['curve'][-1]:.2f} "
            f"(D = {r['dim']}, {r['seconds']:.1f} s; {n} of {len(p['runs'])} runs saved)",
            flush=True,
        )
    print(f"{len(_load(path, a.quick))} runs in {path} ({time.perf_counter() - start:.0f} s this time)")
    agora_bin = os.environ.get("AGORA_BIN", "agora")
    print(f"report: {agora_bin} report {out}  (adds the MuJoCo section to the DSBO report there)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
