#!/usr/bin/env python3
"""Reference fixtures for the constrained MAP problem of Social Bayesian Optimization (SBO).

Writes conformance/sbo-map/case_<k>.json (k = 0..5) next to this repository's root and then
re-reads every file and checks it with plain numpy (J recomputed at the recorded solution,
all constraints to 1e-8).  The problem definition is in conformance/sbo-map/README.md.

How to run (from the repository root, /work/main):
    python -m venv .venv && .venv/bin/pip install -r tools/sbo_reference/requirements.txt
    .venv/bin/python tools/sbo_reference/generate.py            # generate + check (~90 s, 1 core)
    .venv/bin/python tools/sbo_reference/generate.py --check    # only re-check existing files
Options: --out DIR (default conformance/sbo-map relative to the repo root), --cases 0,2,...

Versions used for the committed fixtures: Python 3.11.7, numpy 2.4.6, casadi 3.8.2 (PyPI wheel),
IPOPT 3.14.19 with linear solver MUMPS 5.8.2 (bundled in the casadi wheel).
Everything is seeded (numpy default_rng, SEED below); IPOPT is deterministic, so re-running
reproduces the files up to floating-point noise in the last digits of the solutions.
"""
import argparse
import json
import os
import platform
import sys
import tempfile
import time

import numpy as np
import casadi as ca

SEED = 20260611
JITTER = 1e-6
DELTA_A = 0.01
KAPPA = 1.05
BETA = 0.5
BETA_U = 0.5
BETA_V = 0.5
N_MAP_STARTS = 20
N_MLE_STARTS = 10
N_FEAS_STARTS = 12
N_BOUND_STARTS = 32
REL_BEST = 1e-8          # a start "reached the best" if |f - f*| <= REL_BEST * max(1, |f*|)
CHECK_TOL = 1e-8

IPOPT_OPTS = {
    "ipopt.tol": 1e-10,
    "ipopt.constr_viol_tol": 1e-10,
    "ipopt.acceptable_tol": 1e-9,
    "ipopt.acceptable_constr_viol_tol": 1e-10,
    "ipopt.acceptable_iter": 15,
    "ipopt.max_iter": 3000,
    "ipopt.bound_relax_factor": 0.0,
    "ipopt.print_level": 0,
    "ipopt.sb": "yes",
    "print_time": False,
    "error_on_fail": False,
}
OK_STATUSES = ("Solve_Succeeded", "Solved_To_Acceptable_Level")

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


# ----------------------------------------------------------------------------- numpy model
def rbf(X, Y, ls):
    d2 = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2.0 * ls * ls))


def gram(X, ls):
    return rbf(X, X, ls) + JITTER * np.eye(len(X))


def np_logsig(t):
    return -np.logaddexp(0.0, -t)


def vote_arrays(votes, kind):
    sel = [v for v in votes if v["kind"] == kind]
    i = np.array([v["agent"] for v in sel], dtype=int)
    a = np.array([v["a"] for v in sel], dtype=int)
    b = np.array([v["b"] for v in sel], dtype=int)
    s = np.array([1.0 if v["y"] == 1 else -1.0 for v in sel])
    return i, a, b, s


def np_loglik(F, arr):
    i, a, b, s = arr
    if len(i) == 0:
        return 0.0
    return float(np_logsig(s * (F[i, a] - F[i, b])).sum())


def np_logprior(A, kappa, xi):
    return float((kappa - 1.0) * np.log(A).sum() - xi * (A * A).sum())


def np_J(U, A, priv, pub, kappa, xi):
    return np_loglik(U, priv) + np_loglik(A @ U, pub) + np_logprior(A, kappa, xi)


def np_ball(F, K):
    """F_i^T K^{-1} F_i for every row i (via Cholesky)."""
    C = np.linalg.cholesky(K)
    W = np.linalg.solve(C, F.T)          # m x n
    return (W * W).sum(0)


# ----------------------------------------------------------------------------- casadi model
def ca_logsig(t):
    return -ca.log1p(ca.exp(-t))


def ca_loglik(F, arr):
    i, a, b, s = arr
    tot = 0
    for k in range(len(i)):
        tot = tot + ca_logsig(s[k] * (F[int(i[k]), int(a[k])] - F[int(i[k]), int(b[k])]))
    return tot


def ca_logprior(A, kappa, xi):
    return (kappa - 1.0) * ca.sum1(ca.sum2(ca.log(A))) - xi * ca.sum1(ca.sum2(A * A))


def pack(*mats):
    return np.concatenate([np.asarray(M, float).reshape(-1, order="F") for M in mats])


def run_ipopt(nlp, x0, lbx, ubx, lbg, ubg, p=None):
    solver = nlp
    args = dict(x0=x0, lbx=lbx, ubx=ubx, lbg=lbg, ubg=ubg)
    if p is not None:
        args["p"] = p
    res = solver(**args)
    st = solver.stats()
    return np.array(res["x"]).ravel(), float(res["f"]), st["return_status"], int(st.get("iter_count", -1))


def random_A(rng, n):
    D = rng.dirichlet(np.ones(n), size=n)
    return DELTA_A + (1.0 - n * DELTA_A) * D


def random_ball(rng, n, m, L):
    """whitened coordinates: rows of norm r*L with r ~ U(0.2, 0.9)."""
    W = rng.standard_normal((n, m))
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    return W * (L * rng.uniform(0.2, 0.9, size=(n, 1)))


def n_reached(vals, best):
    return int(sum(1 for v in vals if v is not None and abs(v - best) <= REL_BEST * max(1.0, abs(best))))


# ----------------------------------------------------------------------------- case generation
def npdf(x, mu, sd):
    return np.exp(-0.5 * ((x - mu) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))


def toy_u(X):
    x = X[:, 0]
    u1 = 0.3 * npdf(x, 0.35, 0.05) + 1.2 * npdf(x, 0.45, 0.18) + 0.8 * npdf(x, 0.75, 0.10)
    u2 = 0.5 * npdf(x, 0.25, 0.10) + 0.8 * npdf(x, 0.65, 0.15) + 0.4 * npdf(x, 0.85, 0.05)
    return np.vstack([u1, u2]) / 2.0


def bump(X, c, sd):
    return np.exp(-((X - np.asarray(c)) ** 2).sum(1) / (2 * sd * sd))


def u2d(X):
    u0 = 2.0 * bump(X, (0.3, 0.7), 0.15) - 1.0 * bump(X, (0.75, 0.25), 0.20)
    u1 = 1.5 * bump(X, (0.7, 0.7), 0.20) + 0.8 * bump(X, (0.2, 0.2), 0.15) - 0.5
    u2 = 1.8 * bump(X, (0.5, 0.4), 0.25) - 1.2 * bump(X, (0.15, 0.85), 0.12)
    return np.vstack([u0, u1, u2])


CASE_SPECS = [
    dict(family="toy1d", n=2, d=1, m=8, L=3.0, ls=0.2),
    dict(family="toy1d", n=2, d=1, m=16, L=3.0, ls=0.2),
    dict(family="toy1d", n=2, d=1, m=30, L=3.0, ls=0.2),
    dict(family="bumps2d", n=3, d=2, m=10, L=3.0, ls=0.3),
    dict(family="bumps2d", n=3, d=2, m=20, L=1.5, ls=0.3),
    dict(family="bumps2d", n=3, d=2, m=40, L=3.0, ls=0.3),
]
A_TOY = np.array([[0.9, 0.1], [0.6, 0.4]])
A_2D = np.array([[0.8, 0.1, 0.1], [0.6, 0.1, 0.3], [0.4, 0.3, 0.3]])


def make_case(k, rng):
    sp = CASE_SPECS[k]
    n, d, m = sp["n"], sp["d"], sp["m"]
    X = rng.uniform(0.0, 1.0, size=(m, d))
    if sp["family"] == "toy1d":
        Utrue, Atrue = toy_u(X), A_TOY
    else:
        Utrue, Atrue = u2d(X), A_2D
    Vtrue = Atrue @ Utrue
    npairs = m - 1
    n_priv = max(1, int(round(npairs / 3.0)))
    priv_pairs = set(int(t) for t in rng.choice(np.arange(1, m), size=n_priv, replace=False))
    votes = []
    for tau in range(1, m):
        a, b = tau, tau - 1
        for i in range(n):
            p = 1.0 / (1.0 + np.exp(-(Vtrue[i, a] - Vtrue[i, b])))
            votes.append(dict(kind="public", agent=i, a=a, b=b, y=int(rng.uniform() < p)))
        if tau in priv_pairs:
            for i in range(n):
                p = 1.0 / (1.0 + np.exp(-(Utrue[i, a] - Utrue[i, b])))
                votes.append(dict(kind="private", agent=i, a=a, b=b, y=int(rng.uniform() < p)))
    tests = []
    while len(tests) < 2:
        x = rng.uniform(0.0, 1.0, size=d)
        if np.min(np.linalg.norm(X - x, axis=1)) > 1e-2:
            tests.append(x)
    return dict(
        case=k, family=sp["family"], n=n, d=d, m=m, points=X, lengthscale=sp["ls"], jitter=JITTER,
        L=sp["L"], delta_a=DELTA_A, kappa=KAPPA, xi=1.0 / (4.0 * n * n),
        beta=BETA, beta_u=BETA_U, beta_v=BETA_V, votes=votes, x_tests=tests,
        truth=dict(U=Utrue, A=Atrue, V=Vtrue,
                   ball_U=np_ball(Utrue, gram(X, sp["ls"])).tolist()),
        private_pairs=sorted(priv_pairs),
    )


# ----------------------------------------------------------------------------- solvers
def solve_case(c, rng, log):
    n, m, L = c["n"], c["m"], c["L"]
    X, ls, kappa, xi = c["points"], c["lengthscale"], c["kappa"], c["xi"]
    K = gram(X, ls)
    C = np.linalg.cholesky(K)
    priv = vote_arrays(c["votes"], "private")
    pub = vote_arrays(c["votes"], "public")
    has_priv = len(priv[0]) > 0
    nm, nn = n * m, n * n
    inf = np.inf
    A_lo, A_hi = DELTA_A, 1.0 - DELTA_A

    def unpackUA(x):
        al = x[:nm].reshape((n, m), order="F")
        A = x[nm:nm + nn].reshape((n, n), order="F")
        return al @ C.T, A

    # ---- symbolic pieces shared by MAP / feasibility
    xs = ca.SX.sym("x", nm + nn)
    al = ca.reshape(xs[:nm], n, m)
    As = ca.reshape(xs[nm:nm + nn], n, n)
    Us = ca.mtimes(al, C.T)
    Vs = ca.mtimes(As, Us)
    lu_s = ca_loglik(Us, priv)
    lv_s = ca_loglik(Vs, pub)
    J_s = lu_s + lv_s + ca_logprior(As, kappa, xi)
    ball_s = ca.sum2(al * al)                       # n x 1
    rows_s = ca.sum2(As)                            # n x 1
    lbx_UA = pack(np.full((n, m), -L), np.full((n, n), A_lo))
    ubx_UA = pack(np.full((n, m), L), np.full((n, n), A_hi))

    def starts_UA(count):
        out = []
        for s in range(count):
            if s == 0:
                A0, a0 = np.full((n, n), 1.0 / n), np.zeros((n, m))
            elif s < 3:
                A0, a0 = random_A(rng, n), np.zeros((n, m))
            elif s < 5:
                A0, a0 = np.full((n, n), 1.0 / n), random_ball(rng, n, m, L)
            else:
                A0, a0 = random_A(rng, n), random_ball(rng, n, m, L)
            out.append(pack(a0, A0))
        return out

    # ---- MAP
    t0 = time.time()
    nlp = ca.nlpsol("map", "ipopt", {"x": xs, "f": -J_s, "g": ca.vertcat(ball_s, rows_s)}, IPOPT_OPTS)
    lbg = np.concatenate([np.full(n, -inf), np.ones(n)])
    ubg = np.concatenate([np.full(n, L * L), np.ones(n)])
    runs = []
    for x0 in starts_UA(N_MAP_STARTS):
        x, f, st, it = run_ipopt(nlp, x0, lbx_UA, ubx_UA, lbg, ubg)
        U, A = unpackUA(x)
        runs.append(dict(x=x, obj=-f, status=st, iters=it, U=U, A=A,
                         viol=map_violation(U, A, K, L)))
    good = [r for r in runs if r["status"] in OK_STATUSES and r["viol"] <= CHECK_TOL]
    best = max(good, key=lambda r: r["obj"])
    Jhat = best["obj"]
    # distinct solutions that reach the best objective (e.g. an agent-swap symmetry of the data)
    equiv = []
    for r in good:
        if abs(r["obj"] - Jhat) <= REL_BEST * max(1.0, abs(Jhat)) and r is not best:
            if max(np.max(np.abs(r["A"] - best["A"])), np.max(np.abs(r["U"] - best["U"]))) > 1e-5 and \
                    all(max(np.max(np.abs(r["A"] - e["A"])), np.max(np.abs(r["U"] - e["U"]))) > 1e-5 for e in equiv):
                equiv.append(dict(objective=r["obj"], U=r["U"], A=r["A"]))
    Ub, Ab = best["U"], best["A"]
    mapres = dict(
        objective=Jhat, U=Ub, A=Ab, V=Ab @ Ub, status=best["status"], iterations=best["iters"],
        constr_viol=best["viol"],
        terms=dict(loglik_private=np_loglik(Ub, priv), loglik_public=np_loglik(Ab @ Ub, pub),
                   log_prior=np_logprior(Ab, kappa, xi)),
        start_objectives=[r["obj"] for r in runs], start_statuses=[r["status"] for r in runs],
        start_A=[r["A"] for r in runs], other_optimal_solutions=equiv,
        n_best=n_reached([r["obj"] for r in good], Jhat), n_starts=len(runs),
    )
    log(f"  MAP  J={Jhat:.10f} n_best={mapres['n_best']}/{len(runs)} "
        f"spread=[{min(r['obj'] for r in runs):.6f},{max(r['obj'] for r in runs):.6f}] "
        f"({time.time() - t0:.1f}s)")

    # ---- MLEs (convex)
    def mle(arr, name):
        if len(arr[0]) == 0:
            return dict(objective=0.0, F=np.zeros((n, m)), status="no_votes", start_objectives=[],
                        n_best=0, constr_viol=0.0)
        xa = ca.SX.sym("a", nm)
        ala = ca.reshape(xa, n, m)
        F = ca.mtimes(ala, C.T)
        s = ca.nlpsol(name, "ipopt", {"x": xa, "f": -ca_loglik(F, arr), "g": ca.sum2(ala * ala)}, IPOPT_OPTS)
        rr = []
        for k in range(N_MLE_STARTS):
            a0 = np.zeros((n, m)) if k == 0 else random_ball(rng, n, m, L)
            x, f, st, it = run_ipopt(s, pack(a0), np.full(nm, -L), np.full(nm, L), np.full(n, -inf), np.full(n, L * L))
            Fv = x.reshape((n, m), order="F") @ C.T
            viol = max(0.0, float(np.max(np_ball(Fv, K) - L * L)))
            rr.append(dict(obj=-f, status=st, F=Fv, viol=viol, iters=it))
        gd = [r for r in rr if r["status"] in OK_STATUSES and r["viol"] <= CHECK_TOL]
        b = max(gd, key=lambda r: r["obj"])
        return dict(objective=b["obj"], F=b["F"], status=b["status"], iterations=b["iters"],
                    constr_viol=b["viol"], start_objectives=[r["obj"] for r in rr],
                    start_statuses=[r["status"] for r in rr],
                    n_best=n_reached([r["obj"] for r in gd], b["obj"]), n_starts=len(rr),
                    ball=np_ball(b["F"], K))

    t0 = time.time()
    mle_u = mle(priv, "mle_u")
    mle_v = mle(pub, "mle_v")
    lhat_u, lhat_v = mle_u["objective"], mle_v["objective"]
    log(f"  MLE  l_u={lhat_u:.10f} (n_best {mle_u['n_best']})  l_v={lhat_v:.10f} (n_best {mle_v['n_best']}); "
        f"at MAP: l_u={mapres['terms']['loglik_private']:.6f} l_v={mapres['terms']['loglik_public']:.6f} "
        f"({time.time() - t0:.1f}s)")

    # ---- max of l_u(U) + l_v(AU) (no prior): if it is below lhat_u + lhat_v - beta_u - beta_v,
    #      no (U, A) can satisfy both MLE constraints (evidence for an empty confidence set)
    t0 = time.time()
    ssum = ca.nlpsol("sum", "ipopt", {"x": xs, "f": -(lu_s + lv_s), "g": ca.vertcat(ball_s, rows_s)}, IPOPT_OPTS)
    sum_runs = []
    for x0 in [r["x"] for r in runs[:3]] + starts_UA(N_FEAS_STARTS - 3):
        x, f, st, it = run_ipopt(ssum, x0, lbx_UA, ubx_UA, lbg, ubg)
        U, A = unpackUA(x)
        sum_runs.append(dict(obj=-f, status=st, viol=map_violation(U, A, K, L)))
    gds = [r for r in sum_runs if r["status"] in OK_STATUSES and r["viol"] <= CHECK_TOL]
    sum_best = max(r["obj"] for r in gds)
    sumres = dict(objective=sum_best, start_objectives=[r["obj"] for r in sum_runs],
                  n_best=n_reached([r["obj"] for r in gds], sum_best), n_starts=len(sum_runs),
                  threshold=lhat_u + lhat_v - c["beta_u"] - c["beta_v"],
                  gap=sum_best - (lhat_u + lhat_v))
    log(f"  SUM  max l_u+l_v(AU)={sum_best:.6f}  lhat_u+lhat_v={lhat_u + lhat_v:.6f}  gap={sumres['gap']:.6f} "
        f"({time.time() - t0:.1f}s)")

    # ---- feasibility of the confidence set: J >= Jhat - beta (hard), then
    #      max t  s.t.  l_u(U) >= lhat_u - beta_u + t,  l_v(AU) >= lhat_v - beta_v + t
    lowJ, lowU, lowV = Jhat - c["beta"], lhat_u - c["beta_u"], lhat_v - c["beta_v"]
    t0 = time.time()
    tsym = ca.SX.sym("t")
    xf = ca.vertcat(xs, tsym)
    sl_ex = ([lu_s - lowU] if has_priv else []) + [lv_s - lowV]
    gf = ca.vertcat(ball_s, rows_s, J_s - lowJ, *[e - tsym for e in sl_ex])
    nsl = len(sl_ex)
    sf = ca.nlpsol("feas", "ipopt", {"x": xf, "f": -tsym, "g": gf}, IPOPT_OPTS)
    lbg_f = np.concatenate([np.full(n, -inf), np.ones(n), np.zeros(1 + nsl)])
    ubg_f = np.concatenate([np.full(n, L * L), np.ones(n), np.full(1 + nsl, inf)])
    feas_runs = []
    fstarts = [r["x"] for r in sorted(runs, key=lambda r: -r["obj"])[:3]] + starts_UA(N_FEAS_STARTS - 3)
    for x0 in fstarts:
        x, f, st, it = run_ipopt(sf, np.append(x0, -1.0), np.append(lbx_UA, -1e3), np.append(ubx_UA, 1e3), lbg_f, ubg_f)
        U, A = unpackUA(x[:-1])
        sl = slacks(U, A, priv, pub, kappa, xi, lowJ, lowU, lowV, has_priv)
        margin = min(v for k_, v in sl.items() if k_ != "J")
        viol = max(map_violation(U, A, K, L), max(0.0, -sl["J"]))
        feas_runs.append(dict(x=x[:-1], margin=margin, status=st, U=U, A=A, slacks=sl, viol=viol))
    fgood = [r for r in feas_runs if r["status"] in OK_STATUSES and r["viol"] <= CHECK_TOL]
    fbest = max(fgood, key=lambda r: r["margin"])
    feasible = fbest["margin"] >= -CHECK_TOL
    beta_uv_min = c["beta_u"] - fbest["margin"]
    beta_uv_relaxed = float(np.ceil(2.0 * (max(beta_uv_min, 0.0) + 0.5)) / 2.0)
    feasres = dict(nonempty=bool(feasible), max_min_slack=fbest["margin"], beta_uv_min=beta_uv_min,
                   slacks=fbest["slacks"], U=fbest["U"], A=fbest["A"], status=fbest["status"],
                   start_margins=[r["margin"] for r in feas_runs], start_statuses=[r["status"] for r in feas_runs],
                   n_best=n_reached([r["margin"] for r in fgood], fbest["margin"]), n_starts=len(feas_runs),
                   loglik_sum_max=sumres)
    log(f"  FEAS margin={fbest['margin']:.6f} slacks={ {k: round(v, 6) for k, v in fbest['slacks'].items()} } "
        f"nonempty={feasible} beta_uv_min={beta_uv_min:.6f} n_best={feasres['n_best']} ({time.time() - t0:.1f}s)")

    # candidate feasible starting points for the bound problems: feasibility solutions and MAP optima
    cand = [(r["U"], r["A"]) for r in sorted(feas_runs, key=lambda r: -r["margin"])] + \
           [(r["U"], r["A"]) for r in sorted(runs, key=lambda r: -r["obj"])]

    def solve_bounds(variant, with_mle, bu, bv, seeds):
        """seeds: {test-point index: [(U, z, A, label), ...]} solutions of narrower sets, used as extra starts."""
        lU, lV = lhat_u - bu, lhat_v - bv
        nonempty = feasible if (with_mle and bu == c["beta_u"] and bv == c["beta_v"]) else None

        def sl_of(U, A):
            s = slacks(U, A, priv, pub, kappa, xi, lowJ, lU, lV, has_priv)
            return s if with_mle else dict(J=s["J"])

        feas_cand = [(U, A) for U, A in cand if min(sl_of(U, A).values()) >= 0]
        if nonempty is None:
            nonempty = len(feas_cand) > 0 or (with_mle and fbest["margin"] + (bu - c["beta_u"]) >= 0)
        out = []
        new_seeds = {}
        for ti, xn in enumerate(c["x_tests"]):
            Xe = np.vstack([X, xn[None, :]])
            Ke = gram(Xe, ls)
            Ce = np.linalg.cholesky(Ke)
            m1 = m + 1
            nb = n * m1
            xb = ca.SX.sym("xb", nb + nn)
            be = ca.reshape(xb[:nb], n, m1)
            Ab_s = ca.reshape(xb[nb:], n, n)
            W = ca.mtimes(be, Ce.T)
            Ue, ze = W[:, :m], W[:, m]
            lu_e = ca_loglik(Ue, priv)
            lv_e = ca_loglik(ca.mtimes(Ab_s, Ue), pub)
            J_e = lu_e + lv_e + ca_logprior(Ab_s, kappa, xi)
            gl = [J_e - lowJ] + ((([lu_e - lU] if has_priv else []) + [lv_e - lV]) if with_mle else [])
            g = ca.vertcat(ca.sum2(be * be), ca.sum2(Ab_s), *gl)
            wsym = ca.SX.sym("w", n)
            sb = ca.nlpsol("bnd", "ipopt", {"x": xb, "f": -ca.dot(wsym, ze), "g": g, "p": wsym}, IPOPT_OPTS)
            lbx_b = pack(np.full((n, m1), -L), np.full((n, n), A_lo))
            ubx_b = pack(np.full((n, m1), L), np.full((n, n), A_hi))
            lbg_b = np.concatenate([np.full(n, -inf), np.ones(n), np.zeros(len(gl))])
            ubg_b = np.concatenate([np.full(n, L * L), np.ones(n), np.full(len(gl), inf)])

            def unpack_b(x):
                Wn = x[:nb].reshape((n, m1), order="F") @ Ce.T
                return Wn[:, :m], Wn[:, m], x[nb:].reshape((n, n), order="F")

            for agent in (0, 1):
                entry = dict(x_new=xn, agent=agent)
                for kind, sign in (("ucb", 1.0), ("lcb", -1.0)):
                    if not nonempty:
                        entry[kind] = dict(value=None, status="confidence_set_empty", U=None, z=None, A=None)
                        continue
                    w = np.zeros(n)
                    w[agent] = sign
                    # starts: known feasible (U, A) with z at its kriging value (whitened last coordinate 0)
                    # or pushed along the objective by a fraction of the remaining ball radius; + random starts
                    base = feas_cand or [(fbest["U"], fbest["A"])]
                    starts, labels = [], []
                    for k in range(N_BOUND_STARTS):
                        if k < N_BOUND_STARTS - 4:
                            U0, A0 = base[k % len(base)]
                            b_m = np.linalg.solve(Ce[:m, :m], U0.T).T
                            rem = np.sqrt(np.maximum(L * L - (b_m * b_m).sum(1), 0.0))
                            last = sign * [0.0, 0.5, 0.9, -0.5][k % 4] * rem
                            labels.append(f"feasible#{k % len(base)}+push{[0.0, 0.5, 0.9, -0.5][k % 4]}")
                        else:
                            b_m = random_ball(rng, n, m, L)
                            A0 = random_A(rng, n)
                            last = np.zeros(n)
                            labels.append("random")
                        starts.append(pack(np.hstack([b_m, last[:, None]]), A0))
                    for (U0, z0, A0, lab) in seeds.get(ti, []):
                        Wn = np.hstack([U0, z0[:, None]])
                        starts.append(pack(np.linalg.solve(Ce, Wn.T).T, A0))
                        labels.append("seed:" + lab)
                    rr = []
                    for x0 in starts:
                        x, f, st, it = run_ipopt(sb, x0, lbx_b, ubx_b, lbg_b, ubg_b, p=w)
                        U, z, A = unpack_b(x)
                        sl = sl_of(U, A)
                        viol = max(bound_violation(U, z, A, Ke, L), max(0.0, -min(sl.values())))
                        rr.append(dict(val=float(z[agent]), status=st, U=U, z=z, A=A, viol=viol, slacks=sl, iters=it))
                    gd = [r for r in rr if r["status"] in OK_STATUSES and r["viol"] <= CHECK_TOL]
                    if not gd:
                        entry[kind] = dict(value=None, status="no_start_converged", U=None, z=None, A=None,
                                           start_values=[r["val"] for r in rr],
                                           start_statuses=[r["status"] for r in rr])
                        continue
                    b = max(gd, key=lambda r: sign * r["val"])
                    ib = next(i for i, r in enumerate(rr) if r is b)
                    new_seeds.setdefault(ti, []).append((b["U"], b["z"], b["A"], f"{variant}/{kind}/agent{agent}"))
                    entry[kind] = dict(value=b["val"], U=b["U"], z=b["z"], A=b["A"], status=b["status"],
                                       iterations=b["iters"], constr_viol=b["viol"], slacks=b["slacks"],
                                       start_values=[r["val"] if r["status"] in OK_STATUSES and r["viol"] <= CHECK_TOL
                                                     else None for r in rr],
                                       start_statuses=[r["status"] for r in rr], start_kinds=labels,
                                       best_start=labels[ib],
                                       n_best=n_reached([r["val"] for r in gd], b["val"]), n_starts=len(rr))
                out.append(entry)
                log(f"  {variant:13s} x_new={np.round(xn, 4).tolist()} agent {agent}: "
                    f"lcb={fmt(entry['lcb'].get('value'))} ucb={fmt(entry['ucb'].get('value'))} "
                    f"(n_best {entry['lcb'].get('n_best')}/{entry['ucb'].get('n_best')} of "
                    f"{entry['ucb'].get('n_starts')}; best from {entry['lcb'].get('best_start')} / "
                    f"{entry['ucb'].get('best_start')})")
        for ti, lst in new_seeds.items():
            seeds.setdefault(ti, []).extend(lst)
        return out

    t0 = time.time()
    # nested sets: bounds (beta_u = beta_v = 0.5) within relaxed (larger beta_u, beta_v) within joint_only;
    # solutions of a narrower set seed the wider one, so the recorded bounds are nested
    seeds = {}
    bounds = solve_bounds("bounds", True, c["beta_u"], c["beta_v"], seeds)
    bounds_relaxed = solve_bounds(f"relaxed({beta_uv_relaxed})", True, beta_uv_relaxed, beta_uv_relaxed, seeds)
    bounds_joint = solve_bounds("joint_only", False, c["beta_u"], c["beta_v"], seeds)
    log(f"  bounds done ({time.time() - t0:.1f}s)")
    extra = dict(bounds_joint_only=bounds_joint,
                 bounds_relaxed=dict(beta_u=beta_uv_relaxed, beta_v=beta_uv_relaxed, bounds=bounds_relaxed))
    return mapres, mle_u, mle_v, feasres, bounds, extra


def fmt(v):
    return "None" if v is None else f"{v:.6f}"




def map_violation(U, A, K, L):
    v = [0.0]
    v.append(float(np.max(np_ball(U, K) - L * L)))
    v.append(float(np.max(DELTA_A - A)))
    v.append(float(np.max(A - (1.0 - DELTA_A))))
    v.append(float(np.max(np.abs(A.sum(1) - 1.0))))
    return max(v)


def bound_violation(U, z, A, Ke, L):
    W = np.hstack([U, z[:, None]])
    return max(map_violation(U, A, Ke[:-1, :-1], L), float(np.max(np_ball(W, Ke) - L * L)))


def slacks(U, A, priv, pub, kappa, xi, lowJ, lowU, lowV, has_priv):
    out = dict(J=np_J(U, A, priv, pub, kappa, xi) - lowJ)
    if has_priv:
        out["l_u"] = np_loglik(U, priv) - lowU
    out["l_v"] = np_loglik(A @ U, pub) - lowV
    return out


# ----------------------------------------------------------------------------- io
def tolist(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, dict):
        return {k: tolist(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [tolist(v) for v in o]
    return o


def ipopt_version():
    """Run a 1-variable solve with print_level 5 and read the banner from the C stdout."""
    x = ca.SX.sym("x")
    s = ca.nlpsol("v", "ipopt", {"x": x, "f": (x - 1) ** 2}, {"ipopt.print_level": 5, "print_time": False})
    sys.stdout.flush()
    fd = os.dup(1)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            s(x0=0)
        finally:
            sys.stdout.flush()
            os.dup2(fd, 1)
            os.close(fd)
        tmp.seek(0)
        txt = tmp.read().decode(errors="replace")
    for line in txt.splitlines():
        if line.startswith("This is Ipopt version"):
            # "This is Ipopt version 3.14.19, running with linear solver MUMPS 5.8.2."
            ver = line.split("version")[1].split(",")[0].strip()
            lin = line.split("linear solver")[1].strip().rstrip(".")
            return ver, lin
    return "unknown", "unknown"


def versions():
    iv, lin = ipopt_version()
    return dict(python=platform.python_version(), numpy=np.__version__, casadi=ca.__version__,
                ipopt=iv, linear_solver=lin, generator="tools/sbo_reference/generate.py", seed=SEED)


def generate(out, cases):
    os.makedirs(out, exist_ok=True)
    vers = versions()
    print("versions:", vers, flush=True)
    for k in range(len(CASE_SPECS)):
        # one independent, seeded stream per case (so --cases subsets reproduce the same files)
        rng = np.random.default_rng([SEED, k])
        c = make_case(k, rng)
        if k not in cases:
            continue
        t0 = time.time()
        print(f"case {k}: {c['family']} n={c['n']} d={c['d']} m={c['m']} L={c['L']} "
              f"votes={len(c['votes'])} (private {sum(v['kind'] == 'private' for v in c['votes'])})", flush=True)
        mapres, mle_u, mle_v, feas, bounds, extra = solve_case(c, rng, lambda s: print(s, flush=True))
        mle_u["U"] = mle_u.pop("F")
        mle_v["V"] = mle_v.pop("F")
        doc = dict(
            case=k, family=c["family"], n=c["n"], d=c["d"], m=c["m"], points=c["points"],
            lengthscale=c["lengthscale"], jitter=c["jitter"], L=c["L"], delta_a=c["delta_a"],
            kappa=c["kappa"], xi=c["xi"], beta=c["beta"], beta_u=c["beta_u"], beta_v=c["beta_v"],
            votes=c["votes"], map=mapres, mle_u=mle_u, mle_v=mle_v, confidence_set=feas, bounds=bounds,
            bounds_joint_only=extra["bounds_joint_only"], bounds_relaxed=extra["bounds_relaxed"],
            truth=dict(c["truth"], private_pairs=c["private_pairs"]),
            versions=vers, seconds=round(time.time() - t0, 1),
        )
        with open(os.path.join(out, f"case_{k}.json"), "w") as fh:
            json.dump(tolist(doc), fh, indent=1)
        print(f"case {k} written ({time.time() - t0:.1f}s)", flush=True)


# ----------------------------------------------------------------------------- check
def check(out):
    ok = True
    files = sorted(f for f in os.listdir(out) if f.startswith("case_") and f.endswith(".json"))
    for fn in files:
        c = json.load(open(os.path.join(out, fn)))
        X = np.array(c["points"], float)
        n, m, L = c["n"], c["m"], c["L"]
        K = gram(X, c["lengthscale"])
        priv, pub = vote_arrays(c["votes"], "private"), vote_arrays(c["votes"], "public")
        has_priv = len(priv[0]) > 0
        errs = []
        mp = c["map"]
        U, A = np.array(mp["U"]), np.array(mp["A"])
        J = np_J(U, A, priv, pub, c["kappa"], c["xi"])
        errs.append(("map.J", abs(J - mp["objective"]) / max(1, abs(J))))
        errs.append(("map.V", float(np.max(np.abs(A @ U - np.array(mp["V"]))))))
        errs.append(("map.viol", map_violation(U, A, K, L)))
        Uu = np.array(c["mle_u"]["U"])
        errs.append(("mle_u.obj", abs(np_loglik(Uu, priv) - c["mle_u"]["objective"])))
        errs.append(("mle_u.viol", max(0.0, float(np.max(np_ball(Uu, K) - L * L)))))
        Vv = np.array(c["mle_v"]["V"])
        errs.append(("mle_v.obj", abs(np_loglik(Vv, pub) - c["mle_v"]["objective"])))
        errs.append(("mle_v.viol", max(0.0, float(np.max(np_ball(Vv, K) - L * L)))))
        # the MAP point satisfies the MLE inequalities trivially; l_u(U_map) <= lhat_u etc.
        errs.append(("mle_u>=map", max(0.0, mp["terms"]["loglik_private"] - c["mle_u"]["objective"])))
        errs.append(("mle_v>=map", max(0.0, mp["terms"]["loglik_public"] - c["mle_v"]["objective"])))
        lowJ = mp["objective"] - c["beta"]
        cs = c["confidence_set"]
        Uc, Ac = np.array(cs["U"]), np.array(cs["A"])
        slc = slacks(Uc, Ac, priv, pub, c["kappa"], c["xi"], lowJ,
                     c["mle_u"]["objective"] - c["beta_u"], c["mle_v"]["objective"] - c["beta_v"], has_priv)
        errs.append(("confset.J", max(0.0, -slc["J"])))
        errs.append(("confset.margin", abs(min(v for k, v in slc.items() if k != "J") - cs["max_min_slack"])))
        errs.append(("confset.viol", map_violation(Uc, Ac, K, L)))
        variants = [("bounds", c["bounds"], True, c["beta_u"], c["beta_v"]),
                    ("joint_only", c["bounds_joint_only"], False, c["beta_u"], c["beta_v"]),
                    ("relaxed", c["bounds_relaxed"]["bounds"], True, c["bounds_relaxed"]["beta_u"],
                     c["bounds_relaxed"]["beta_v"])]
        nvals = 0
        for name, blist, with_mle, bu, bv in variants:
            lowU = c["mle_u"]["objective"] - bu
            lowV = c["mle_v"]["objective"] - bv
            for bd in blist:
                xn = np.array(bd["x_new"], float)
                Ke = gram(np.vstack([X, xn[None, :]]), c["lengthscale"])
                for kind in ("ucb", "lcb"):
                    e = bd[kind]
                    if e["value"] is None:
                        continue
                    nvals += 1
                    Ub, zb, Ab = np.array(e["U"]), np.array(e["z"]), np.array(e["A"])
                    errs.append((f"{name}.{kind}.value", abs(zb[bd["agent"]] - e["value"])))
                    errs.append((f"{name}.{kind}.viol", bound_violation(Ub, zb, Ab, Ke, L)))
                    sl = slacks(Ub, Ab, priv, pub, c["kappa"], c["xi"], lowJ, lowU, lowV, has_priv)
                    if not with_mle:
                        sl = dict(J=sl["J"])
                    errs.append((f"{name}.{kind}.slack", max(0.0, -min(sl.values()))))
                if bd["ucb"]["value"] is not None and bd["lcb"]["value"] is not None:
                    errs.append((f"{name}.ucb>=lcb", max(0.0, bd["lcb"]["value"] - bd["ucb"]["value"])))
        for e in mp.get("other_optimal_solutions", []):
            Je = np_J(np.array(e["U"]), np.array(e["A"]), priv, pub, c["kappa"], c["xi"])
            errs.append(("map.other_optimal.J", abs(Je - mp["objective"]) / max(1, abs(Je))))
            errs.append(("map.other_optimal.viol", map_violation(np.array(e["U"]), np.array(e["A"]), K, L)))
        # nesting: bounds (beta_uv = 0.5) within relaxed within joint_only
        order = [c["bounds"], c["bounds_relaxed"]["bounds"], c["bounds_joint_only"]]
        for narrow, wide in zip(order[:-1], order[1:]):
            for bn, bw in zip(narrow, wide):
                if bn["ucb"]["value"] is not None and bw["ucb"]["value"] is not None:
                    errs.append(("nested.ucb", max(0.0, bn["ucb"]["value"] - bw["ucb"]["value"])))
                if bn["lcb"]["value"] is not None and bw["lcb"]["value"] is not None:
                    errs.append(("nested.lcb", max(0.0, bw["lcb"]["value"] - bn["lcb"]["value"])))
        worst = max(errs, key=lambda t: t[1])
        good = worst[1] <= CHECK_TOL
        ok &= good
        print(f"{fn}: {'OK ' if good else 'FAIL'} worst {worst[0]} = {worst[1]:.2e}  "
              f"({len(errs)} checks, {nvals} bound values)")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "conformance", "sbo-map"))
    ap.add_argument("--cases", default=",".join(str(i) for i in range(len(CASE_SPECS))))
    ap.add_argument("--check", action="store_true", help="only check existing files")
    a = ap.parse_args()
    if not a.check:
        generate(a.out, [int(s) for s in a.cases.split(",")])
    sys.exit(0 if check(a.out) else 1)


if __name__ == "__main__":
    main()
