//! The social model's data: agents, points, votes, the whitened Gram factor and the last
//! fit. Fitting lives in `map`, the confidence set in `confidence` and `widths`.

use super::{Coupling, SocialConfig, SocialFit, Vote, bt_loglik};
use crate::Kernel;
use agora_core::{Channel, Error, Result};
use agora_math::linalg::Cholesky;
use faer::Mat;

/// Points, votes, and the fitted social model.
#[derive(Debug, Clone)]
pub struct SocialModel {
    pub(super) cfg: SocialConfig,
    pub(super) n: usize,
    pub(super) kernel: Box<dyn Kernel>,
    pub(super) points: Mat<f64>,
    /// Lower factor of `K + jitter·I`.
    pub(super) c: Mat<f64>,
    /// `c` as dense slices for the hot products `C α` and `Cᵀ g` ([`SocialModel::utilities_of`],
    /// [`SocialModel::backprop`]): column-major and row-major copies, `m × m` each.
    pub(super) c_cols: Vec<f64>,
    pub(super) c_rows: Vec<f64>,
    pub(super) private: Vec<Vote>,
    pub(super) public: Vec<Vote>,
    pub(super) fit: Option<SocialFit>,
    /// Set problems whose best feasible point was not stationary (shared by clones).
    pub(super) short: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// The preconditioner of problems over the set and the fit it belongs to (`[α̂, Â]`),
    /// computed on first use ([`SocialModel::precond`]); shared by clones, which check the key.
    pub(super) precond: PrecondCache,
}

/// What a [`SocialModel`] has learned, as plain data ([`SocialModel::state`]): restored
/// onto a model built with the same settings and kernel ([`SocialModel::restore_state`]),
/// it gives a model that answers every question bit for bit as the original did. The
/// Gram factor and the caches are recomputed, not stored.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SocialModelState {
    /// `L`, the ball radius (the model may have doubled it).
    #[serde(with = "agora_core::snapshot::nonfinite")]
    pub bound: f64,
    /// Fresh MAP starts of the next refit.
    pub starts: usize,
    /// The points, rows.
    pub points: Vec<Vec<f64>>,
    /// Private votes.
    pub private: Vec<Vote>,
    /// Public votes.
    pub public: Vec<Vote>,
    /// The last fit.
    pub fit: Option<SocialFitState>,
    /// Set problems whose best feasible point was not stationary, so far.
    pub short: usize,
}

/// [`SocialFit`] as plain data (NaN and infinities kept).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SocialFitState {
    #[serde(with = "agora_core::snapshot::nonfinite_vec")]
    alpha: Vec<f64>,
    #[serde(with = "agora_core::snapshot::nonfinite_vec")]
    a: Vec<f64>,
    #[serde(with = "agora_core::snapshot::nonfinite")]
    objective: f64,
    #[serde(with = "agora_core::snapshot::nonfinite")]
    mle_u: f64,
    #[serde(with = "agora_core::snapshot::nonfinite")]
    mle_v: f64,
    #[serde(with = "agora_core::snapshot::nonfinite_vec")]
    kkt: Vec<f64>,
    converged: bool,
    modes: Vec<Vec<f64>>,
}

/// The preconditioner's cache: the fit it belongs to and what was computed for it.
pub(super) type PrecondCache = std::sync::Arc<std::sync::Mutex<Option<(Vec<f64>, PrecondSlot)>>>;

/// A computed preconditioner, or none when `H_αα` did not factor.
pub(super) type PrecondSlot = Option<std::sync::Arc<super::map::Precond>>;

impl SocialModel {
    /// A model of `n` agents with `kernel` on points in `[0, 1]^d`.
    pub fn new(n: usize, kernel: Box<dyn Kernel>, cfg: SocialConfig) -> Result<SocialModel> {
        if n == 0 {
            return Err(Error::invalid(
                "agents",
                "needs at least one agent (n >= 1)",
            ));
        }
        cfg.prior.check(n)?;
        if let Coupling::Known(g) = &cfg.coupling
            && g.n() != n
        {
            return Err(Error::dim("graph", n, g.n()));
        }
        for (name, v) in [
            ("bound", cfg.bound),
            ("beta", cfg.beta),
            ("beta_u", cfg.beta_u),
            ("beta_v", cfg.beta_v),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::invalid(
                    name,
                    format!("must be finite and > 0, got {v}"),
                ));
            }
        }
        let kernel = anchored(kernel, &cfg)?;
        Ok(SocialModel {
            cfg,
            n,
            kernel,
            points: Mat::zeros(0, 0),
            c: Mat::zeros(0, 0),
            c_cols: Vec::new(),
            c_rows: Vec::new(),
            private: Vec::new(),
            public: Vec::new(),
            fit: None,
            short: Default::default(),
            precond: Default::default(),
        })
    }

    /// Agents.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Points voted on so far.
    pub fn m(&self) -> usize {
        self.points.nrows()
    }

    /// Settings.
    pub fn config(&self) -> &SocialConfig {
        &self.cfg
    }

    /// Fresh MAP starts besides the warm start (0: the warm start only, when there is one).
    pub fn set_starts(&mut self, starts: usize) {
        self.cfg.starts = starts;
    }

    /// Change the ball radius `L` (refit needed).
    pub fn set_bound(&mut self, l: f64) -> Result<()> {
        if !(l.is_finite() && l > 0.0) {
            return Err(Error::invalid(
                "bound",
                format!("must be finite and > 0, got {l}"),
            ));
        }
        self.cfg.bound = l;
        Ok(())
    }

    /// Replace the kernel (conditioned on the anchor, if any; refactors the Gram; refit
    /// needed).
    pub fn set_kernel(&mut self, kernel: Box<dyn Kernel>) -> Result<()> {
        self.kernel = anchored(kernel, &self.cfg)?;
        self.refactor()
    }

    /// The kernel.
    pub fn kernel(&self) -> &dyn Kernel {
        self.kernel.as_ref()
    }

    /// The points (rows).
    pub fn points(&self) -> &Mat<f64> {
        &self.points
    }

    /// Private and public votes.
    pub fn votes(&self) -> (&[Vote], &[Vote]) {
        (&self.private, &self.public)
    }

    /// The last fit.
    pub fn fit(&self) -> Option<&SocialFit> {
        self.fit.as_ref()
    }

    /// What the model has learned ([`SocialModelState`]).
    pub fn state(&self) -> SocialModelState {
        SocialModelState {
            bound: self.cfg.bound,
            starts: self.cfg.starts,
            points: (0..self.m())
                .map(|i| {
                    (0..self.points.ncols())
                        .map(|j| self.points[(i, j)])
                        .collect()
                })
                .collect(),
            private: self.private.clone(),
            public: self.public.clone(),
            fit: self.fit.as_ref().map(|f| SocialFitState {
                alpha: f.alpha.clone(),
                a: f.a.clone(),
                objective: f.objective,
                mle_u: f.mle_u,
                mle_v: f.mle_v,
                kkt: f.kkt.to_vec(),
                converged: f.converged,
                modes: f.modes.clone(),
            }),
            short: self.short.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Install a [`SocialModel::state`] on this model, which must have been built with the
    /// same agents, settings and kernel (the kernel is not part of the state) and hold no
    /// points yet. Errors name the part of the state that does not fit (dimensions, vote
    /// indices, the fit's sizes); the model is unchanged then.
    pub fn restore_state(&mut self, st: &SocialModelState) -> Result<()> {
        if self.m() != 0 {
            return Err(Error::State(
                "restore a social model's state onto a fresh model".into(),
            ));
        }
        let mut next = self.clone();
        next.set_bound(st.bound)?;
        next.cfg.starts = st.starts;
        let m = st.points.len();
        let d = st.points.first().map_or(0, Vec::len);
        for (i, p) in st.points.iter().enumerate() {
            if p.len() != d {
                return Err(Error::dim(format!("points[{i}]"), d, p.len()));
            }
            agora_core::check_finite_slice("points", p)?;
        }
        next.points = Mat::from_fn(m, d, |i, j| st.points[i][j]);
        next.refactor()?;
        for v in st.private.iter().chain(&st.public) {
            next.add_vote(*v)?;
        }
        let n = self.n;
        if let Some(f) = &st.fit {
            let n_a = match &next.cfg.coupling {
                Coupling::Learned => n * n,
                _ => f.a.len(),
            };
            if f.alpha.len() != n * m || f.a.len() != n_a || f.kkt.len() != 3 {
                return Err(Error::invalid(
                    "snapshot.model.fit",
                    format!(
                        "sizes alpha {}, A {}, kkt {} do not fit {n} agents and {m} points",
                        f.alpha.len(),
                        f.a.len(),
                        f.kkt.len()
                    ),
                ));
            }
            next.fit = Some(SocialFit {
                alpha: f.alpha.clone(),
                a: f.a.clone(),
                objective: f.objective,
                mle_u: f.mle_u,
                mle_v: f.mle_v,
                kkt: [f.kkt[0], f.kkt[1], f.kkt[2]],
                converged: f.converged,
                modes: f.modes.clone(),
            });
        }
        next.short = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(st.short));
        next.precond = Default::default();
        *self = next;
        Ok(())
    }

    pub(super) fn refactor(&mut self) -> Result<()> {
        let m = self.m();
        if m == 0 {
            self.c = Mat::zeros(0, 0);
            self.c_cols.clear();
            self.c_rows.clear();
            return Ok(());
        }
        let mut k = self.kernel.gram(self.points.as_ref());
        for i in 0..m {
            k[(i, i)] += self.cfg.jitter;
        }
        let ch = Cholesky::new(k.as_ref())?;
        self.c = ch.l().to_owned();
        // Explicit zeros above the diagonal: the blocked products add them.
        let lower = |r: usize, k: usize| if k <= r { self.c[(r, k)] } else { 0.0 };
        self.c_cols = (0..m * m).map(|q| lower(q % m, q / m)).collect();
        self.c_rows = (0..m * m).map(|q| lower(q / m, q % m)).collect();
        Ok(())
    }

    /// Add a point; returns its index. The whitened coordinates of the last fit are carried
    /// over (utilities at old points kept, the new point's at its interpolated value).
    pub fn add_point(&mut self, x: &[f64]) -> Result<usize> {
        let d = if self.m() == 0 {
            x.len()
        } else {
            self.points.ncols()
        };
        if x.len() != d {
            return Err(Error::dim("point", d, x.len()));
        }
        agora_core::check_finite_slice("point", x)?;
        let old_u = self.fit.as_ref().map(|f| self.utilities_of(&f.alpha));
        let m = self.m();
        let mut p = Mat::zeros(m + 1, d);
        for i in 0..m {
            for j in 0..d {
                p[(i, j)] = self.points[(i, j)];
            }
        }
        for j in 0..d {
            p[(m, j)] = x[j];
        }
        self.points = p;
        self.refactor()?;
        if let (Some(u_old), Some(fit)) = (old_u, self.fit.as_mut()) {
            // u at the new point: the minimum-norm interpolant C_old α at x.
            let n = self.n;
            let (cx, _) = ext_row(&self.c, m);
            let mut u = vec![0.0; n * (m + 1)];
            for i in 0..n {
                for k in 0..m {
                    u[i * (m + 1) + k] = u_old[i * m + k];
                }
                let ai = &fit.alpha[i * m..(i + 1) * m];
                u[i * (m + 1) + m] = cx.iter().zip(ai).map(|(a, b)| a * b).sum();
            }
            fit.alpha = whiten(&self.c, &u, n);
            // Keep the old coordinates within the ball after refactoring.
            for i in 0..n {
                let s = fit.alpha[i * (m + 1)..(i + 1) * (m + 1)]
                    .iter()
                    .map(|v| v * v)
                    .sum::<f64>()
                    .sqrt();
                if s > self.cfg.bound {
                    for v in &mut fit.alpha[i * (m + 1)..(i + 1) * (m + 1)] {
                        *v *= self.cfg.bound / s;
                    }
                }
            }
        }
        Ok(m)
    }

    /// Record a vote on two existing points; errors name an unknown agent or point.
    pub fn add_vote(&mut self, v: Vote) -> Result<()> {
        if v.agent >= self.n {
            return Err(Error::invalid(
                "agent",
                format!("{} is not an agent of this group (0..{})", v.agent, self.n),
            ));
        }
        for (name, p) in [("a", v.a), ("b", v.b)] {
            if p >= self.m() {
                return Err(Error::invalid(
                    name,
                    format!("{p} is not a point voted on (0..{})", self.m()),
                ));
            }
        }
        match v.channel {
            Channel::Private => self.private.push(v),
            Channel::Public => self.public.push(v),
        }
        Ok(())
    }

    /// Choose an RBF lengthscale from `grid` by `folds`-fold cross-validation of the votes'
    /// log-likelihood (held-out votes scored under the MAP fitted to the rest; the paper's
    /// leave-one-out on held-out votes, coarsened to folds), and install it. Returns the
    /// choice, or `None` (nothing changed) with fewer than `2·folds` votes.
    pub fn choose_lengthscale(
        &mut self,
        grid: &[f64],
        folds: usize,
        seed: u64,
    ) -> Result<Option<f64>> {
        let all: Vec<Vote> = self.private.iter().chain(&self.public).copied().collect();
        let folds = folds.max(2);
        if all.len() < 2 * folds || grid.is_empty() {
            return Ok(None);
        }
        if let Some(bad) = grid.iter().find(|l| !(l.is_finite() && **l > 0.0)) {
            return Err(Error::invalid(
                "lengthscale_grid",
                format!("lengthscales must be finite and > 0, got {bad}"),
            ));
        }
        let d = self.points.ncols();
        let mut best = (f64::NEG_INFINITY, grid[0]);
        for &l in grid {
            let mut score = 0.0;
            for fold in 0..folds {
                let mut m = self.clone();
                m.set_kernel(Box::new(crate::Stationary::ard(
                    crate::StationaryKind::Rbf,
                    d,
                    l,
                )))?;
                m.clear_votes();
                let mut held = Vec::new();
                for (k, v) in all.iter().enumerate() {
                    if k % folds == fold {
                        held.push(*v);
                    } else {
                        m.add_vote(*v)?;
                    }
                }
                m.refit(seed)?;
                score += m.log_likelihood_of(&held)?;
            }
            if score > best.0 {
                best = (score, l);
            }
        }
        self.set_kernel(Box::new(crate::Stationary::ard(
            crate::StationaryKind::Rbf,
            d,
            best.1,
        )))?;
        Ok(Some(best.1))
    }

    /// Drop every vote (points stay; refit needed).
    pub fn clear_votes(&mut self) {
        self.private.clear();
        self.public.clear();
        self.fit = None;
    }

    /// Log-likelihood of `votes` under the MAP: private votes on `Û`, public ones on
    /// `Â Û` (public votes are skipped for the independent model, whose `u` does not
    /// explain them).
    pub fn log_likelihood_of(&self, votes: &[Vote]) -> Result<f64> {
        let fit = self
            .fit
            .as_ref()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let (n, m) = (self.n, self.m());
        let u = self.utilities_of(&fit.alpha);
        let private: Vec<Vote> = votes
            .iter()
            .filter(|v| v.channel == Channel::Private)
            .copied()
            .collect();
        let public: Vec<Vote> = votes
            .iter()
            .filter(|v| v.channel == Channel::Public)
            .copied()
            .collect();
        let mut ll = bt_loglik(&private, &u, m, None);
        if !public.is_empty() && !fit.a.is_empty() {
            let mut v = vec![0.0; n * m];
            for i in 0..n {
                for j in 0..n {
                    for k in 0..m {
                        v[i * m + k] += fit.a[i * n + j] * u[j * m + k];
                    }
                }
            }
            ll += bt_loglik(&public, &v, m, None);
        }
        Ok(ll)
    }

    /// `U = C α` per agent (agent-major `n × m`).
    pub fn utilities_of(&self, alpha: &[f64]) -> Vec<f64> {
        let (n, m) = (self.n, self.m());
        let mut u = vec![0.0; n * m];
        // Blocks of BLOCK rows accumulate in registers over the columns; every `U[r]` still
        // sums `C[r, k] α[k]` over k = 0..=r in order, the rounding of a row-by-row dot
        // product (the block's zeros above the diagonal come after and add nothing).
        for (ui, ai) in u.chunks_exact_mut(m).zip(alpha.chunks_exact(m)) {
            let mut rb = 0;
            while rb + BLOCK <= m {
                let mut acc = [0.0; BLOCK];
                for (k, &ak) in ai[..rb + BLOCK].iter().enumerate() {
                    let col = &self.c_cols[k * m + rb..k * m + rb + BLOCK];
                    for (s, c) in acc.iter_mut().zip(col) {
                        *s += c * ak;
                    }
                }
                ui[rb..rb + BLOCK].copy_from_slice(&acc);
                rb += BLOCK;
            }
            for r in rb..m {
                let mut s = 0.0;
                for (k, &ak) in ai[..=r].iter().enumerate() {
                    s += self.c_cols[k * m + r] * ak;
                }
                ui[r] = s;
            }
        }
        u
    }

    /// `g_α = Cᵀ g_U` per agent, added into `out`.
    pub(super) fn backprop(&self, gu: &[f64], out: &mut [f64]) {
        let m = self.m();
        // Blocks of BLOCK columns accumulate in registers over the rows; every entry still
        // sums `C[r, k] g[r]` over r = k..m in order, the rounding of a column dot product
        // (the block's zeros above the diagonal come first and add nothing).
        for (gi, oi) in gu.chunks_exact(m).zip(out.chunks_exact_mut(m)).take(self.n) {
            let mut kb = 0;
            while kb + BLOCK <= m {
                let mut acc = [0.0; BLOCK];
                for (r, &g) in gi.iter().enumerate().skip(kb) {
                    let row = &self.c_rows[r * m + kb..r * m + kb + BLOCK];
                    for (s, c) in acc.iter_mut().zip(row) {
                        *s += c * g;
                    }
                }
                for (o, s) in oi[kb..kb + BLOCK].iter_mut().zip(&acc) {
                    *o += s;
                }
                kb += BLOCK;
            }
            for k in kb..m {
                let mut s = 0.0;
                for (r, &g) in gi.iter().enumerate().skip(k) {
                    s += self.c_rows[r * m + k] * g;
                }
                oi[k] += s;
            }
        }
    }

    /// MAP utilities at the points (agent-major `n × m`).
    pub fn map_utilities(&self) -> Option<Vec<f64>> {
        self.fit.as_ref().map(|f| self.utilities_of(&f.alpha))
    }
}

/// `kernel` conditioned to vanish at the config's anchor, if it has one.
fn anchored(kernel: Box<dyn Kernel>, cfg: &SocialConfig) -> Result<Box<dyn Kernel>> {
    Ok(match &cfg.anchor {
        Some(x0) => Box::new(crate::Anchored::new(kernel, x0)?),
        None => kernel,
    })
}

/// Rows (or columns) per register block of [`SocialModel::utilities_of`] and
/// [`SocialModel::backprop`].
const BLOCK: usize = 8;

/// `(c, s)` for the last row `m` of a factor already holding `m + 1` rows: `c` = row `m`
/// restricted to the first `m` columns.
pub(super) fn ext_row(c: &Mat<f64>, m: usize) -> (Vec<f64>, f64) {
    ((0..m).map(|k| c[(m, k)]).collect(), c[(m, m)])
}

/// `α = C⁻¹ U` per agent.
pub(super) fn whiten(c: &Mat<f64>, u: &[f64], n: usize) -> Vec<f64> {
    let m = c.nrows();
    let mut a = vec![0.0; n * m];
    for i in 0..n {
        for r in 0..m {
            let mut s = u[i * m + r];
            for k in 0..r {
                s -= c[(r, k)] * a[i * m + k];
            }
            a[i * m + r] = s / c[(r, r)];
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Stationary, StationaryKind};

    #[test]
    fn the_blocked_products_round_as_the_textbook_loops() {
        // 21 points: two full blocks of 8 and a tail of 5.
        let k = Box::new(Stationary::ard(StationaryKind::Rbf, 2, 0.3));
        let mut s = SocialModel::new(3, k, SocialConfig::paper(3)).unwrap();
        let mut rng = agora_math::rng::stream(3, &[]);
        use rand::RngExt;
        for _ in 0..21 {
            s.add_point(&[rng.random::<f64>(), rng.random::<f64>()])
                .unwrap();
        }
        let (n, m) = (3, 21);
        let alpha: Vec<f64> = (0..n * m).map(|_| rng.random::<f64>() - 0.5).collect();
        let u = s.utilities_of(&alpha);
        let mut gu_out: Vec<f64> = (0..n * m).map(|_| rng.random::<f64>()).collect();
        let start = gu_out.clone();
        s.backprop(&alpha, &mut gu_out);
        for i in 0..n {
            for r in 0..m {
                let mut t = 0.0;
                for k in 0..=r {
                    t += s.c[(r, k)] * alpha[i * m + k];
                }
                assert_eq!(u[i * m + r].to_bits(), t.to_bits(), "U[{i}][{r}]");
            }
            for k in 0..m {
                let mut t = 0.0;
                for r in k..m {
                    t += s.c[(r, k)] * alpha[i * m + r];
                }
                let want = start[i * m + k] + t;
                assert_eq!(gu_out[i * m + k].to_bits(), want.to_bits(), "g[{i}][{k}]");
            }
        }
    }
}
