"""Side-by-side benchmarks of agora's Optuna samplers against the torch-based ones.

Run in one Python process, paired over seeds (the same seed gives both samplers the same
random startup trials), and judged by agora's one rule: the paired difference of final
regret (agora − reference) against 2 standard errors::

    python -m agora.bench gp        # Optuna GPSampler vs agora.optuna.GPSampler, Hartmann6
    python -m agora.bench pref      # optuna-dashboard PreferentialGPSampler vs agora's, on
                                    # Branin and Hartmann6 with a probit rater
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


# The preferential tasks: (objective on [0, 1]^d, d, f*, range of f over the box). The
# rater's noise is 5% of the range, sigma = 0.05 * (f_max - f*): informative but not perfect
# (a gap of 25% of the range is told right 99.98% of the time, 10% 92%, 5% 76%, 1% 56%).
BRANIN_MIN = 0.397887  # 5 / (4 pi)
BRANIN_MAX = 308.129  # at (-5, 0); L-BFGS-B from 50 random starts finds nothing larger


def branin01(u: List[float]) -> float:
    """Branin on [0, 1]^2 (x1 = -5 + 15 u1, x2 = 15 u2; minimum 0.397887)."""
    x1, x2 = -5.0 + 15.0 * u[0], 15.0 * u[1]
    b, c, t = 5.1 / (4.0 * math.pi**2), 5.0 / math.pi, 1.0 / (8.0 * math.pi)
    return (x2 - b * x1**2 + c * x1 - 6.0) ** 2 + 10.0 * (1.0 - t) * math.cos(x1) + 10.0


# Hartmann6's maximum over the box is 0 to 1e-7 (it is a negated sum of Gaussian bumps;
# L-BFGS-B from 100 random starts reaches -1.3e-7).
PREF_TASKS = {
    "branin": (branin01, 2, BRANIN_MIN, BRANIN_MAX - BRANIN_MIN),
    "hartmann6": (hartmann6, 6, H6_MIN, -H6_MIN),
}


def _pref_run(make_sampler, task: str, seed: int, n_trials: int) -> Dict[str, object]:
    """optuna-dashboard's protocol with ``n_generate=2``, simulated.

    The first two trials are the same uniform points for every sampler (enqueued from the
    seed). Then the person compares the two trials on screen: the new one and the one that
    has never lost. A probit rater sees each trial's value plus N(0, sigma^2), sigma = 5% of
    the function's range, and prefers the lower. After ``n_trials`` trials (the last one
    compared too), the person's pick is the one trial that never lost; its regret is the
    result. ``best_seen`` (the best trial proposed, whether or not the person recognized
    it) is kept as a diagnostic.
    """
    import numpy as np
    import optuna
    from optuna_dashboard.preferential import create_study

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    fn, dim, fmin, frange = PREF_TASKS[task]
    sigma = 0.05 * frange
    start = np.random.RandomState(20_000 + seed).rand(2, dim)
    rng = np.random.RandomState(10_000 + seed)
    study = create_study(n_generate=2, sampler=make_sampler(seed))
    for row in start:
        study.enqueue_trial({f"x{i}": float(v) for i, v in enumerate(row)})
    f: Dict[int, float] = {}
    times = []
    while True:
        if len(f) < n_trials and study.should_generate():
            t0 = time.perf_counter()
            trial = study.ask()
            x = [trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(dim)]
            times.append(time.perf_counter() - t0)
            f[trial.number] = fn(x)
            continue
        worse = {w.number for _, w in study.get_preferences(deepcopy=False)}
        active = [t for t in study.get_trials(deepcopy=False) if t.number not in worse]
        if len(active) < 2:
            break
        a, b = active[:2]
        p_a = 0.5 * math.erfc((f[a.number] - f[b.number]) / (2.0 * sigma))
        better, loser = (a, b) if rng.rand() < p_a else (b, a)
        study.report_preference(better, loser)
    (pick,) = [t.number for t in active]
    return {"regret": f[pick] - fmin, "best_seen": min(f.values()) - fmin, "times": times}


def bench_pref(seeds: int, n_trials: int = 30) -> List[Dict[str, object]]:
    """optuna-dashboard's PreferentialGPSampler vs agora.optuna.PreferentialSampler, on
    Branin and Hartmann6."""
    from optuna_dashboard.preferential.samplers.gp import PreferentialGPSampler

    import agora.optuna

    out = []
    for task in PREF_TASKS:
        rows = []
        for seed in range(seeds):
            ref = _pref_run(lambda s: PreferentialGPSampler(seed=s), task, seed, n_trials)
            ours = _pref_run(
                lambda s: agora.optuna.PreferentialSampler(seed=s), task, seed, n_trials
            )
            rows.append({"seed": seed, "optuna_dashboard": ref, "agora": ours})
            print(
                f"pref {task} seed {seed}: regret dashboard {ref['regret']:.4g} agora "
                f"{ours['regret']:.4g} (best seen {ref['best_seen']:.4g}, "
                f"{ours['best_seen']:.4g}); "
                f"ms/trial {1e3 * statistics.fmean(ref['times'][2:]):.1f} vs "
                f"{1e3 * statistics.fmean(ours['times'][2:]):.2f}",
                file=sys.stderr,
            )
        out.append(_summary(f"pref {task}", rows, 2, "optuna_dashboard"))
    return out


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
        for one in r if isinstance(r, list) else [r]:
            _print(one)
            results.append(one)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
