"""Side-by-side benchmarks of agora's Optuna samplers against the torch-based ones.

Run in one Python process, paired over seeds (the same seed gives both samplers the same
random startup trials), and judged by agora's one rule: the paired difference of final
regret (agora − reference) against 2 standard errors::

    python -m agora.bench gp        # Optuna GPSampler vs agora.optuna.GPSampler, Hartmann6
    python -m agora.bench pref      # optuna-dashboard PreferentialGPSampler vs agora's
    python -m agora.bench overhead  # agora.Strategy from Python vs the same loop in Rust
    python -m agora.bench all --seeds 20 --json out/bench-python.json

``gp`` needs optuna (its GPSampler needs torch); ``pref`` needs optuna-dashboard with
torch, gpytorch, pyro-ppl and botorch. Neither is needed by agora itself. Set
``OMP_NUM_THREADS=1`` for the torch samplers' best time on a small machine (they are
several times slower with torch's default threads here).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from typing import Callable, Dict, List

import agora
from agora import _agora

# Hartmann6, minimized as Optuna users write it: f* = -3.32237 (docs/anchors/RESULTS.md).
_H6_ALPHA = [1.0, 1.2, 3.0, 3.2]
_H6_A = [
    [10, 3, 17, 3.5, 1.7, 8],
    [0.05, 10, 17, 0.1, 8, 14],
    [3, 3.5, 1.7, 10, 17, 8],
    [17, 8, 0.05, 10, 0.1, 14],
]
_H6_P = [
    [1312, 1696, 5569, 124, 8283, 5886],
    [2329, 4135, 8307, 3736, 1004, 9991],
    [2348, 1451, 3522, 2883, 3047, 6650],
    [4047, 8828, 8732, 5743, 1091, 381],
]
H6_MIN = -3.32237


def hartmann6(x: List[float]) -> float:
    """Hartmann6 on [0, 1]^6 (minimum -3.32237)."""
    s = 0.0
    for a, row, p in zip(_H6_ALPHA, _H6_A, _H6_P):
        s += a * math.exp(-sum(r * (xi - pi * 1e-4) ** 2 for r, xi, pi in zip(row, x, p)))
    return -s


def paired(diffs: List[float]) -> Dict[str, float]:
    """Mean and standard error of paired differences, and the verdict by 2 SE."""
    n = len(diffs)
    mean = statistics.fmean(diffs)
    se = statistics.stdev(diffs) / math.sqrt(n) if n > 1 else float("nan")
    if mean > 2 * se:
        verdict = "worse"
    elif mean < -2 * se:
        verdict = "better"
    else:
        verdict = "within 2 SE"
    return {"mean": mean, "se": se, "n": n, "verdict": verdict}


def _gp_run(make_sampler: Callable[[int], object], seed: int, n_trials: int) -> Dict[str, object]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=make_sampler(seed), direction="minimize")
    times = []
    for _ in range(n_trials):
        t0 = time.perf_counter()
        trial = study.ask()
        x = [trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(6)]
        t1 = time.perf_counter()
        study.tell(trial, hartmann6(x))
        times.append(t1 - t0 + (time.perf_counter() - t1))
    return {"regret": study.best_value - H6_MIN, "times": times}


def bench_gp(seeds: int, startup: int = 10, model_trials: int = 50) -> Dict[str, object]:
    """Optuna's GPSampler vs agora.optuna.GPSampler on Hartmann6."""
    import optuna

    import agora.optuna

    n = startup + model_trials
    rows = []
    for seed in range(seeds):
        ref = _gp_run(lambda s: optuna.samplers.GPSampler(seed=s, n_startup_trials=startup), seed, n)
        ours = _gp_run(lambda s: agora.optuna.GPSampler(seed=s, n_startup_trials=startup), seed, n)
        rows.append({"seed": seed, "optuna": ref, "agora": ours})
        print(
            f"gp seed {seed}: regret optuna {ref['regret']:.4g} agora {ours['regret']:.4g}; "
            f"ms/trial {1e3 * statistics.fmean(ref['times'][startup:]):.2f} vs "
            f"{1e3 * statistics.fmean(ours['times'][startup:]):.2f}",
            file=sys.stderr,
        )
    return _summary("gp", rows, startup, "optuna")


def _pref_run(make_sampler, seed: int, n_trials: int, sigma: float) -> Dict[str, object]:
    import numpy as np
    import optuna
    from optuna_dashboard.preferential import create_study

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rng = np.random.RandomState(10_000 + seed)
    study = create_study(n_generate=2, sampler=make_sampler(seed))
    f: Dict[int, float] = {}
    times = []
    while len(f) < n_trials:
        if study.should_generate():
            t0 = time.perf_counter()
            trial = study.ask()
            x = [trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(6)]
            times.append(time.perf_counter() - t0)
            f[trial.number] = hartmann6(x)
            continue
        worse = {w.number for _, w in study.get_preferences(deepcopy=False)}
        a, b = [t for t in study.get_trials(deepcopy=False) if t.number not in worse][:2]
        # A probit rater: each look at a value adds N(0, sigma^2); lower Hartmann6 is better.
        p_a = 0.5 * math.erfc((f[a.number] - f[b.number]) / (2.0 * sigma))
        better, loser = (a, b) if rng.rand() < p_a else (b, a)
        study.report_preference(better, loser)
    worse = {w.number for _, w in study.get_preferences(deepcopy=False)}
    winners = [n for n in f if n not in worse]
    # The person's pick: the unbeaten trial (the last one compared wins ties of bookkeeping).
    pick = min(winners, key=lambda n: -n)
    return {"regret": f[pick] - H6_MIN, "times": times}


def bench_pref(seeds: int, n_trials: int = 30, sigma: float = 0.05) -> Dict[str, object]:
    """optuna-dashboard's PreferentialGPSampler vs agora.optuna.PreferentialSampler."""
    from optuna_dashboard.preferential.samplers.gp import PreferentialGPSampler

    import agora.optuna

    rows = []
    for seed in range(seeds):
        ref = _pref_run(lambda s: PreferentialGPSampler(seed=s), seed, n_trials, sigma)
        ours = _pref_run(lambda s: agora.optuna.PreferentialSampler(seed=s), seed, n_trials, sigma)
        rows.append({"seed": seed, "optuna_dashboard": ref, "agora": ours})
        print(
            f"pref seed {seed}: regret dashboard {ref['regret']:.4g} agora {ours['regret']:.4g}; "
            f"ms/trial {1e3 * statistics.fmean(ref['times'][2:]):.1f} vs "
            f"{1e3 * statistics.fmean(ours['times'][2:]):.2f}",
            file=sys.stderr,
        )
    return _summary("pref", rows, 2, "optuna_dashboard")


def _summary(name: str, rows, skip: int, ref: str) -> Dict[str, object]:
    ref_t = [statistics.fmean(r[ref]["times"][skip:]) for r in rows]
    our_t = [statistics.fmean(r["agora"]["times"][skip:]) for r in rows]
    diffs = [r["agora"]["regret"] - r[ref]["regret"] for r in rows]
    out = {
        "bench": name,
        "seeds": len(rows),
        "ms_per_trial": {ref: 1e3 * statistics.median(ref_t), "agora": 1e3 * statistics.median(our_t)},
        "time_ratio": statistics.median(ref_t) / statistics.median(our_t),
        "regret_mean": {
            ref: statistics.fmean(r[ref]["regret"] for r in rows),
            "agora": statistics.fmean(r["agora"]["regret"] for r in rows),
        },
        "regret_paired_difference": paired(diffs),
        "rows": [
            {"seed": r["seed"], ref: r[ref]["regret"], "agora": r["agora"]["regret"]} for r in rows
        ],
    }
    return out


def bench_overhead(seeds: int, n: int = 60, window=(45, 55)) -> Dict[str, object]:
    """agora.Strategy("gp-logei") driven from Python vs the same loop in Rust (Hartmann6)."""
    py, rs = [], []
    for seed in range(seeds):
        h = agora.problems.make("hartmann6")
        s = agora.Strategy("gp-logei", h.space, seed=seed)
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            q = s.ask()
            s.tell(h.answer(q))
            times.append(time.perf_counter() - t0)
        rust = _agora._time_loop("gp-logei", "hartmann6", seed, n)
        py.append(sum(times[window[0]:window[1]]))
        rs.append(sum(rust[window[0]:window[1]]))
    ratio = sum(py) / sum(rs)
    return {
        "bench": "overhead",
        "seeds": seeds,
        "window": list(window),
        "python_ms_per_step": 1e3 * sum(py) / (seeds * (window[1] - window[0])),
        "rust_ms_per_step": 1e3 * sum(rs) / (seeds * (window[1] - window[0])),
        "python_over_rust": ratio,
    }


def _print(r: Dict[str, object]) -> None:
    if r["bench"] == "overhead":
        print(
            f"overhead: GP-LogEI ask+tell at n = {r['window'][0]}..{r['window'][1]}: Python "
            f"{r['python_ms_per_step']:.3f} ms, Rust {r['rust_ms_per_step']:.3f} ms per step; "
            f"Python / Rust = {r['python_over_rust']:.4f} ({r['seeds']} seeds)"
        )
        return
    ref = [k for k in r["ms_per_trial"] if k != "agora"][0]
    d = r["regret_paired_difference"]
    print(
        f"{r['bench']}: ms per trial {ref} {r['ms_per_trial'][ref]:.2f}, agora "
        f"{r['ms_per_trial']['agora']:.3f} -> {r['time_ratio']:.1f}x; final regret {ref} "
        f"{r['regret_mean'][ref]:.4f}, agora {r['regret_mean']['agora']:.4f}; paired "
        f"difference (agora - {ref}) {d['mean']:+.4f} +- {d['se']:.4f} over {d['n']} seeds: "
        f"{d['verdict']}"
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m agora.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("which", choices=["gp", "pref", "overhead", "all"])
    p.add_argument("--seeds", type=int, default=20, help="paired seeds (default 20)")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args(argv)
    if a.seeds < 2:
        p.error("--seeds must be at least 2 (a paired difference needs a standard error)")
    results = []
    for which in (["overhead", "gp", "pref"] if a.which == "all" else [a.which]):
        r = {"gp": bench_gp, "pref": bench_pref, "overhead": bench_overhead}[which](a.seeds)
        _print(r)
        results.append(r)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
