"""The inputs of `agora bench pbo-paired`: BoTorch's PBO protocol (RESULTS.md §2) seed by seed.

For each problem and seed this writes what BoTorch's run drew before any model was fitted —
the initial points (`torch.manual_seed(seed); torch.rand(2 (2d + 2), d)`, pairs (2k, 2k + 1))
and the simulated person's coin flips (`numpy.random.default_rng(10000 + seed).random()`,
one per duel, initial pairs first) — and BoTorch's final regret on that seed (recorded runs
in `data/anchor-results/`; seeds without one are run here with the anchor's own `run_seed`,
`--run-missing`). agora's runs are then fed the same points and the same flips, so the
comparison is paired.

Run with the anchors' venv (../shared/anchors/setup.sh):

    ../shared/anchors/.venv/bin/python tools/pbo_paired/make.py [--run-missing] \
        > data/anchor-results/pbo_paired.json
"""

import argparse
import contextlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ANCHORS = os.environ.get("ANCHORS", os.path.join(ROOT, "..", "shared", "anchors"))
RECORDED = os.path.join(ROOT, "data", "anchor-results")
SEEDS = range(40)
N_ITERS = 40


def recorded_finals():
    """BoTorch's recorded final regret per (problem, seed)."""
    out = {"branin": {}, "hartmann6": {}}
    five = json.load(open(os.path.join(RECORDED, "pbo_loop.json")))
    for name, p in five["problems"].items():
        for r in p["runs"]:
            out[name][r["seed"]] = r["regret"][-1]
    h = json.load(open(os.path.join(RECORDED, "botorch_pbo_hartmann6_seeds5_19.json")))
    for s, v in zip(h["seeds"], h["final_regret_per_seed"]):
        out["hartmann6"][s] = v
    more = json.load(open(os.path.join(RECORDED, "botorch_pbo_more_seeds.json")))
    for s, v in zip(range(20, 40), more["botorch_hartmann6_final_regret_seeds_20_39"]):
        out["hartmann6"][s] = v
    for s, v in zip(range(5, 18), more["botorch_branin_final_regret_seeds_5_17"]):
        out["branin"][s] = v
    extra = os.path.join(RECORDED, "botorch_pbo_branin_seeds18_39.json")
    if os.path.exists(extra):
        e = json.load(open(extra))
        for s, v in zip(e["seeds"], e["final_regret_per_seed"]):
            out["branin"][s] = v
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run-missing", action="store_true",
                    help="run BoTorch on seeds without a recorded final regret (writes "
                         "data/anchor-results/botorch_pbo_branin_seeds18_39.json)")
    args = ap.parse_args()
    sys.path.insert(0, ANCHORS)
    import numpy as np
    import torch
    import pbo_loop

    finals = recorded_finals()
    if args.run_missing:
        pbo_loop.wait_quiet = lambda *a, **k: 0.0  # timings are not used here
        torch.set_num_threads(1)
        prob = pbo_loop.Problem("branin")
        missing = [s for s in SEEDS if s not in finals["branin"]]
        got = []
        for s in missing:
            with contextlib.redirect_stdout(sys.stderr):  # run_seed prints its progress
                rec = pbo_loop.run_seed(prob, s, N_ITERS)
            got.append(rec["final_regret"])
            finals["branin"][s] = rec["final_regret"]
            print(f"branin seed {s}: {rec['final_regret']:.4f}", file=sys.stderr, flush=True)
        with open(os.path.join(RECORDED, "botorch_pbo_branin_seeds18_39.json"), "w") as f:
            json.dump({
                "source": "BoTorch 0.18.1 PairwiseGP + EUBO, ../shared/anchors/pbo_loop.py run_seed "
                          "(its protocol, RESULTS.md §2), run by tools/pbo_paired/make.py --run-missing",
                "seeds": missing, "final_regret_per_seed": got}, f, indent=1)

    out = {"source": "tools/pbo_paired/make.py: BoTorch's initial points and the simulated "
                     "person's coin flips per seed (../shared/anchors/pbo_loop.py protocol), "
                     "with BoTorch 0.18.1's final regret on each seed",
           "n_iters": N_ITERS, "problems": {}}
    for name in ("branin", "hartmann6"):
        prob = pbo_loop.Problem(name)
        d = prob.d
        n0 = 2 * d + 2
        seeds = []
        for s in SEEDS:
            torch.manual_seed(s)
            x0 = torch.rand(2 * n0, d, dtype=torch.float64)
            rng = np.random.default_rng(10_000 + s)
            flips = [float(rng.random()) for _ in range(n0 + N_ITERS)]
            seeds.append({"seed": s, "x0": x0.tolist(), "f_x0": prob(x0).tolist(), "flips": flips,
                          "botorch_final_regret": finals[name].get(s)})
        out["problems"][name] = {"d": d, "f_max": prob.f_max, "sigma": prob.sigma,
                                 "lower": prob.lb.tolist(), "upper": prob.ub.tolist(),
                                 "seeds": seeds}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
