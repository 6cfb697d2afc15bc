//! The additive GP of DSBO's Phase 2 (DSBO paper, §4.4 and Alg. 4 lines 7–9; see
//! `docs/notes/dsbo.md` §2.2 and §8.3): `k = Σ_c s·κ(‖θ_c − θ'_c‖²/ℓ²)` over the maximal
//! cliques `c` of the learned dependency graph, one lengthscale `ℓ` and one noise variance
//! shared by every clique, output scale `s = 1/M` for `M` cliques (so `k(θ, θ) = 1`), on
//! standardized outcomes.
//!
//! - [`AdditiveHyper`]: the candidate `(ℓ, σ²)` pairs, and [`AdditiveFit`]: the pair with the
//!   largest marginal likelihood (ML-II over a grid; one Gram matrix per lengthscale).
//! - [`ScaleGroups`] (an option beyond the paper): one output scale per group of cliques,
//!   fitted with the noise by L-BFGS-B on the marginal likelihood. On DSS-GP-UCB's own data
//!   (PredPrey 3 and Het. PredPrey 3, 10 runs each, groups = the named slices of θ) it
//!   predicts fresh uniform policies as well as the shared scale (+0.005 ± 0.020 and
//!   +0.044 ± 0.009 log density per point) and one-clique perturbations of the incumbent
//!   worse (−0.65 ± 0.19 and −0.35 ± 0.18), so the default stays `1/M` for every clique.
//! - [`AdditivePosterior`]: the posterior of Eq. 1 evaluated clique by clique, so that moving
//!   a point on one block of coordinates recomputes only the cliques that read them.

use crate::{ExactGp, Kernel, StationaryKind, Sum};
use agora_core::{Error, Result};
use agora_math::linalg::Cholesky;
use faer::{Mat, MatRef};
use rayon::prelude::*;

/// Hyperparameters of the additive GP (standardized outcomes; every clique has output
/// scale `1/M`).
#[derive(Debug, Clone, PartialEq)]
pub enum AdditiveHyper {
    /// A fixed shared lengthscale (unit-cube coordinates) and noise variance.
    Fixed {
        /// Lengthscale of every coordinate of every clique.
        lengthscale: f64,
        /// Noise variance.
        noise: f64,
    },
    /// The pair with the largest marginal likelihood over a grid (ML-II).
    Grid {
        /// Candidate lengthscales.
        lengthscales: Vec<f64>,
        /// Candidate noise variances.
        noises: Vec<f64>,
    },
}

impl Default for AdditiveHyper {
    /// Lengthscales 0.1…2.5 and noise variances 1e-6…1 (standardized outcomes). The noise
    /// reaches 1 because a policy's return from one episode can be mostly noise: with the
    /// noise capped at 1e-2 the GP interpolates it and predicts held-out returns far worse
    /// than a constant (issue 20's check; test). Lengthscales above 1 let a clique be
    /// nearly linear over the unit cube.
    fn default() -> Self {
        AdditiveHyper::Grid {
            lengthscales: vec![0.1, 0.15, 0.25, 0.4, 0.6, 1.0, 1.6, 2.5],
            noises: vec![1e-6, 1e-4, 1e-2, 0.1, 0.3, 1.0],
        }
    }
}

impl AdditiveHyper {
    /// The candidate lengthscales and noise variances.
    pub fn grid(&self) -> (Vec<f64>, Vec<f64>) {
        match self {
            AdditiveHyper::Fixed { lengthscale, noise } => (vec![*lengthscale], vec![*noise]),
            AdditiveHyper::Grid {
                lengthscales,
                noises,
            } => (lengthscales.clone(), noises.clone()),
        }
    }

    /// Check the candidates; errors name `hyper`, `hyper.lengthscale` or `hyper.noise`.
    pub fn validate(&self) -> Result<()> {
        let (ls, ns) = self.grid();
        if ls.is_empty() || ns.is_empty() {
            return Err(Error::invalid(
                "hyper",
                "needs at least one lengthscale and noise",
            ));
        }
        if let Some(l) = ls.iter().find(|l| !(l.is_finite() && **l > 0.0)) {
            return Err(Error::invalid(
                "hyper.lengthscale",
                format!("must be a positive finite number, got {l}"),
            ));
        }
        if let Some(n) = ns.iter().find(|n| !(n.is_finite() && **n > 0.0)) {
            return Err(Error::invalid(
                "hyper.noise",
                format!("must be a positive finite number, got {n}"),
            ));
        }
        Ok(())
    }
}

/// The kernel `Σ_c s κ(‖x_c − x'_c‖²/ℓ²)` ([`Sum::additive`]) by its parameters, kept so
/// that block moves can update single cliques.
#[derive(Debug, Clone, PartialEq)]
pub struct AdditiveSpec {
    /// The cliques (indices into the dimensions).
    pub cliques: Vec<Vec<usize>>,
    /// Radial profile (Matérn-5/2 in the paper).
    pub kind: StationaryKind,
    /// Shared lengthscale.
    pub lengthscale: f64,
    /// Output scale of each clique: `1/M` each, or one value per group of cliques when the
    /// scales are fitted by group ([`ScaleGroups`]).
    pub scales: Vec<f64>,
}

impl AdditiveSpec {
    /// Every clique at output scale `1/M` (so `k(θ, θ) = 1`), the paper's kernel.
    pub fn shared(cliques: &[Vec<usize>], kind: StationaryKind, lengthscale: f64) -> Self {
        AdditiveSpec {
            cliques: cliques.to_vec(),
            kind,
            lengthscale,
            scales: vec![1.0 / cliques.len() as f64; cliques.len()],
        }
    }

    /// The kernel.
    pub fn kernel(&self) -> Sum {
        Sum::additive_scaled(self.kind, &self.cliques, self.lengthscale, &self.scales)
    }

    /// The prior variance `k(θ, θ) = Σ_c s_c κ(0)` (computed as `M s κ(0)` when every
    /// scale is the same `s`, as it always was for the shared kernel).
    pub fn prior_variance(&self) -> f64 {
        let k0 = self.kind.value(0.0);
        match self.scales.first() {
            Some(&s) if self.scales.iter().all(|&v| v == s) => self.cliques.len() as f64 * s * k0,
            _ => self.scales.iter().map(|s| s * k0).sum(),
        }
    }
}

/// Cliques in groups that share an output scale, the scales fitted by marginal likelihood
/// ([`AdditiveFit::fit_grams`]). An extension beyond the paper, which does not say how its
/// additive kernel is scaled (`docs/notes/dsbo.md` §8.3, item 3): with one scale `1/M` for
/// every clique, a few hundred cliques are equal functions a priori, while a policy's return
/// may hang mostly on a few parameter groups (a role head, the message network).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleGroups {
    of_clique: Vec<usize>,
    count: usize,
}

impl ScaleGroups {
    /// Group each clique by the groups of its coordinates (`coordinate_group[j]` for
    /// coordinate `j`, e.g. the named slice of θ it lies in): a clique whose coordinates lie
    /// in one group joins it; a clique across groups joins one extra group of such cliques.
    /// Groups are numbered in order of their labels, the mixed group last; empty groups are
    /// dropped.
    ///
    /// Errors: a clique names a coordinate without a group (naming `coordinate_group`).
    pub fn by_coordinate(
        cliques: &[Vec<usize>],
        coordinate_group: &[usize],
    ) -> Result<ScaleGroups> {
        let mut label = Vec::with_capacity(cliques.len());
        for (i, c) in cliques.iter().enumerate() {
            let mut of = None;
            for &j in c {
                let g = *coordinate_group.get(j).ok_or_else(|| {
                    Error::invalid(
                        "coordinate_group",
                        format!(
                            "has {} entries but cliques[{i}] names coordinate {j}",
                            coordinate_group.len()
                        ),
                    )
                })?;
                of = match of {
                    None => Some(Some(g)),
                    Some(Some(h)) if h == g => Some(Some(g)),
                    _ => Some(None),
                };
            }
            // An empty clique (rejected by the surrogate's checks) counts as mixed.
            label.push(of.flatten());
        }
        let mut used: Vec<usize> = label.iter().flatten().copied().collect();
        used.sort_unstable();
        used.dedup();
        let mixed = used.len();
        let of_clique: Vec<usize> = label
            .iter()
            .map(|l| match l {
                Some(g) => used.binary_search(g).unwrap_or(mixed),
                None => mixed,
            })
            .collect();
        let count = mixed + usize::from(label.iter().any(Option::is_none));
        Ok(ScaleGroups { of_clique, count })
    }

    /// The group of each clique, `0..len()`.
    pub fn of_clique(&self) -> &[usize] {
        &self.of_clique
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there is no group (no clique).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The cliques of each group.
    fn members(&self, cliques: &[Vec<usize>]) -> Vec<Vec<Vec<usize>>> {
        let mut out = vec![Vec::new(); self.count];
        for (c, &g) in cliques.iter().zip(&self.of_clique) {
            out[g].push(c.clone());
        }
        out
    }

    /// Check that these groups are for `m` cliques; errors name `groups`.
    pub fn validate(&self, m: usize) -> Result<()> {
        if self.of_clique.len() != m {
            return Err(Error::dim("groups (cliques)", m, self.of_clique.len()));
        }
        Ok(())
    }
}

/// The fitted additive GP: its kernel, noise variance and the outcome standardization
/// `(y − shift)/scale` they refer to (prior mean 0 in standardized units).
#[derive(Debug, Clone, PartialEq)]
pub struct AdditiveFit {
    /// The kernel.
    pub spec: AdditiveSpec,
    /// Noise variance (standardized units).
    pub noise: f64,
    /// Outcome shift.
    pub shift: f64,
    /// Outcome scale.
    pub scale: f64,
    /// Whether the fit's optimizer (output scales by group) stopped cleanly; a grid fit
    /// always does.
    pub converged: bool,
}

impl AdditiveFit {
    /// The `(ℓ, σ²)` pair of `hyper` with the largest marginal likelihood of the
    /// standardized `y` under `k = Σ_c (1/M) κ` over `cliques` (the first pair on ties;
    /// pairs whose Cholesky fails are skipped). With a single pair, that pair.
    ///
    /// Errors: every pair failed (the last failure).
    pub fn fit(
        cliques: &[Vec<usize>],
        kind: StationaryKind,
        hyper: &AdditiveHyper,
        x: &Mat<f64>,
        y: &[f64],
    ) -> Result<AdditiveFit> {
        AdditiveFit::fit_with(cliques, kind, hyper, None, x, y)
    }

    /// [`AdditiveFit::fit`], with output scales fitted by `groups` when given (the grouped
    /// fit of [`AdditiveFit::fit_grams`]).
    ///
    /// Errors: as [`AdditiveFit::fit`]; `groups` not for these cliques (naming `groups`).
    pub fn fit_with(
        cliques: &[Vec<usize>],
        kind: StationaryKind,
        hyper: &AdditiveHyper,
        groups: Option<&ScaleGroups>,
        x: &Mat<f64>,
        y: &[f64],
    ) -> Result<AdditiveFit> {
        if let Some(g) = groups {
            g.validate(cliques.len())?;
        }
        let mut grams = AdditiveGrams::with_groups(cliques, kind, hyper, groups);
        if groups.is_none()
            && let Some(only) = AdditiveFit::single(&grams, hyper, y)
        {
            return Ok(only);
        }
        grams.update(x)?;
        AdditiveFit::fit_grams(&grams, hyper, y)
    }

    /// [`AdditiveFit::fit`] on Grams kept by `grams` (which must hold this `x`, and every
    /// lengthscale of `hyper`): the same fit, without building a Gram.
    ///
    /// Errors: `grams` misses a lengthscale of `hyper` or holds another number of points
    /// than `y` (naming `grams`); every pair failed (the last failure).
    pub fn fit_grams(
        grams: &AdditiveGrams,
        hyper: &AdditiveHyper,
        y: &[f64],
    ) -> Result<AdditiveFit> {
        if let Some(groups) = grams.groups() {
            if grams.len() != y.len() {
                return Err(Error::dim("grams (points)", y.len(), grams.len()));
            }
            return AdditiveFit::fit_grouped(grams, groups, hyper, y);
        }
        if let Some(only) = AdditiveFit::single(grams, hyper, y) {
            return Ok(only);
        }
        if grams.len() != y.len() {
            return Err(Error::dim("grams (points)", y.len(), grams.len()));
        }
        let (shift, scale) = crate::exact::standardization(y);
        let ys: Vec<f64> = y.iter().map(|v| (v - shift) / scale).collect();
        let (ls, ns) = hyper.grid();
        let mut best: Option<(f64, AdditiveFit)> = None;
        let mut last_err = None;
        for &l in &ls {
            let spec = grams.spec(l);
            let gram = grams.gram(l).ok_or_else(|| {
                Error::invalid("grams", format!("holds no Gram for lengthscale {l}"))
            })?;
            for &noise in &ns {
                let candidate = AdditiveFit {
                    spec: spec.clone(),
                    noise,
                    shift,
                    scale,
                    converged: true,
                };
                match log_marginal_likelihood(gram, noise, &ys) {
                    Ok(lml) => {
                        if lml.is_finite() && best.as_ref().is_none_or(|b| lml > b.0) {
                            best = Some((lml, candidate));
                        }
                    }
                    Err(e) => last_err = Some(e),
                }
            }
        }
        best.map(|b| b.1).ok_or_else(|| {
            last_err.unwrap_or_else(|| Error::Numerical("no additive hyperparameters fit".into()))
        })
    }

    /// The fit with output scales by group: for every grid lengthscale, the grid's best
    /// noise at scales `1/M` (the shared fit), then L-BFGS-B on the log marginal likelihood
    /// over the log scale of each group and the log noise (noise within the grid's range;
    /// a group's scale between `10⁻³/M` and `4/M_g` for `M_g` cliques in it), from that
    /// start, at the three lengthscales whose shared fits are best; the largest likelihood
    /// wins. An optimizer that stops on an error keeps the best point it saw, which is never
    /// worse than its start; [`AdditiveFit::converged`] says so.
    fn fit_grouped(
        grams: &AdditiveGrams,
        groups: &ScaleGroups,
        hyper: &AdditiveHyper,
        y: &[f64],
    ) -> Result<AdditiveFit> {
        let (shift, scale) = crate::exact::standardization(y);
        let ys: Vec<f64> = y.iter().map(|v| (v - shift) / scale).collect();
        let (ls, ns) = hyper.grid();
        let m = groups.of_clique().len() as f64;
        let g = groups.len();
        let mut count = vec![0usize; g];
        for &c in groups.of_clique() {
            count[c] += 1;
        }
        let shared = vec![1.0 / m; g];
        let mut starts: Vec<(f64, f64, f64)> = Vec::new(); // (lml, ℓ, noise)
        let mut last_err = None;
        for &l in &ls {
            let parts = grams.group_grams(l).ok_or_else(|| {
                Error::invalid("grams", format!("holds no Gram for lengthscale {l}"))
            })?;
            let k = compose(parts, &shared);
            let mut best: Option<(f64, f64)> = None;
            for &noise in &ns {
                match log_marginal_likelihood(&k, noise, &ys) {
                    Ok(v) if v.is_finite() && best.is_none_or(|b| v > b.0) => {
                        best = Some((v, noise))
                    }
                    Ok(_) => {}
                    Err(e) => last_err = Some(e),
                }
            }
            if let Some((v, noise)) = best {
                starts.push((v, l, noise));
            }
        }
        // The three best lengthscales of the shared fit (stable sort: ties keep grid order).
        starts.sort_by(|a, b| b.0.total_cmp(&a.0));
        starts.truncate(3);
        let (n_lo, n_hi) = ns
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        let mut bounds: Vec<(f64, f64)> = count
            .iter()
            .map(|&c| ((1e-3 / m).ln(), (4.0 / c.max(1) as f64).ln()))
            .collect();
        bounds.push((n_lo.ln(), n_hi.ln()));
        let mut best: Option<(f64, AdditiveFit)> = None;
        for &(_, l, noise) in &starts {
            let parts = grams.group_grams(l).unwrap_or(&[]);
            let objective = |p: &[f64], grad: &mut [f64]| -> Result<f64> {
                let (v, gr) = grouped_lml_and_gradient(parts, p, &ys)?;
                for (o, gi) in grad.iter_mut().zip(&gr) {
                    *o = -gi;
                }
                Ok(-v)
            };
            let mut x0: Vec<f64> = shared.iter().map(|s| s.ln()).collect();
            x0.push(noise.ln());
            let found = match agora_math::optim::minimize(
                &objective,
                &x0,
                &bounds,
                agora_math::optim::LbfgsbOptions {
                    max_iter: 200,
                    ..Default::default()
                },
            ) {
                Ok(f) => f,
                Err(e) => {
                    last_err = Some(e);
                    continue;
                }
            };
            let lml = -found.f;
            if !lml.is_finite() || best.as_ref().is_some_and(|b| lml <= b.0) {
                continue;
            }
            let group_scale: Vec<f64> = found.x[..g].iter().map(|v| v.exp()).collect();
            let spec = AdditiveSpec {
                scales: groups.of_clique().iter().map(|&c| group_scale[c]).collect(),
                ..grams.spec(l)
            };
            best = Some((
                lml,
                AdditiveFit {
                    spec,
                    noise: found.x[g].exp(),
                    shift,
                    scale,
                    converged: found.clean_exit,
                },
            ));
        }
        best.map(|b| b.1).ok_or_else(|| {
            last_err.unwrap_or_else(|| Error::Numerical("no additive hyperparameters fit".into()))
        })
    }

    /// The only pair of a one-pair `hyper` (no likelihood needed).
    fn single(grams: &AdditiveGrams, hyper: &AdditiveHyper, y: &[f64]) -> Option<AdditiveFit> {
        let (ls, ns) = hyper.grid();
        (ls.len() * ns.len() == 1).then(|| {
            let (shift, scale) = crate::exact::standardization(y);
            AdditiveFit {
                spec: grams.spec(ls[0]),
                noise: ns[0],
                shift,
                scale,
                converged: true,
            }
        })
    }

    /// The GP with these hyperparameters on `(x, y)` (it holds standardized outcomes, so
    /// its predictions are in standardized units).
    pub fn condition(&self, x: Mat<f64>, y: &[f64]) -> Result<ExactGp> {
        let ys: Vec<f64> = y.iter().map(|v| (v - self.shift) / self.scale).collect();
        ExactGp::new(x, &ys, Box::new(self.spec.kernel()), self.noise, 0.0)
    }
}

/// The additive Gram `Σ_c s κ(‖x_c − x'_c‖²/ℓ²)` of every candidate lengthscale on the data
/// seen so far, grown by the new rows when data arrive: `O(M n)` kernel terms per new point
/// and lengthscale instead of `O(M n²)` for a fresh Gram (`M` cliques, `n` points), the
/// dominant cost of DSBO's iterations with hundreds of cliques. The new rows are the
/// kernel's own `cross`, so a kept Gram equals a fresh `spec.kernel().gram(x)` bit for bit.
#[derive(Debug, Clone)]
pub struct AdditiveGrams {
    cliques: Vec<Vec<usize>>,
    kind: StationaryKind,
    lengthscales: Vec<f64>,
    x: Mat<f64>,
    groups: Option<ScaleGroups>,
    /// Per lengthscale: the Gram at output scale `1/M`, or with groups one Gram per group
    /// at output scale 1 (`Σ_{c ∈ g} κ_c`).
    grams: Vec<Vec<Mat<f64>>>,
}

impl AdditiveGrams {
    /// Empty Grams for every lengthscale of `hyper` (output scale `1/M`, as the fit uses).
    pub fn new(cliques: &[Vec<usize>], kind: StationaryKind, hyper: &AdditiveHyper) -> Self {
        AdditiveGrams::with_groups(cliques, kind, hyper, None)
    }

    /// [`AdditiveGrams::new`], or with `groups` one Gram per group of cliques (for output
    /// scales fitted by group).
    pub fn with_groups(
        cliques: &[Vec<usize>],
        kind: StationaryKind,
        hyper: &AdditiveHyper,
        groups: Option<&ScaleGroups>,
    ) -> Self {
        let (lengthscales, _) = hyper.grid();
        let per = groups.map_or(1, ScaleGroups::len);
        AdditiveGrams {
            cliques: cliques.to_vec(),
            kind,
            grams: vec![vec![Mat::zeros(0, 0); per]; lengthscales.len()],
            lengthscales,
            x: Mat::zeros(0, 0),
            groups: groups.cloned(),
        }
    }

    /// The groups of cliques, if the Grams are kept by group.
    pub fn groups(&self) -> Option<&ScaleGroups> {
        self.groups.as_ref()
    }

    /// The kernel's parameters at lengthscale `l`.
    pub fn spec(&self, l: f64) -> AdditiveSpec {
        AdditiveSpec::shared(&self.cliques, self.kind, l)
    }

    /// Points held.
    pub fn len(&self) -> usize {
        self.x.nrows()
    }

    /// Whether no point is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether these are Grams of the kernel over `cliques` with profile `kind`, kept by
    /// `groups` (or whole).
    pub fn is_for(
        &self,
        cliques: &[Vec<usize>],
        kind: StationaryKind,
        groups: Option<&ScaleGroups>,
    ) -> bool {
        self.kind == kind && self.cliques == cliques && self.groups.as_ref() == groups
    }

    /// Whether the held points are exactly `x` (bit for bit).
    pub fn holds(&self, x: &Mat<f64>) -> bool {
        self.x.nrows() == x.nrows()
            && self.x.ncols() == x.ncols()
            && (0..x.nrows()).all(|i| (0..x.ncols()).all(|j| self.x[(i, j)] == x[(i, j)]))
    }

    /// The Gram at lengthscale `l` (one of the grid's) and output scale `1/M`, if held (not
    /// when the Grams are kept by group).
    pub fn gram(&self, l: f64) -> Option<&Mat<f64>> {
        if self.groups.is_some() {
            return None;
        }
        self.group_grams(l).map(|g| &g[0])
    }

    /// The Grams at lengthscale `l`: one per group (output scale 1), or the one Gram at
    /// output scale `1/M`.
    pub fn group_grams(&self, l: f64) -> Option<&[Mat<f64>]> {
        self.lengthscales
            .iter()
            .position(|v| *v == l)
            .map(|i| self.grams[i].as_slice())
    }

    /// The Gram of `spec`'s kernel, if held: the kept one, or with groups `Σ_g s_g G_g`
    /// (equal to `spec.kernel().gram(x)` up to rounding). `None` when `spec` is not over
    /// these cliques, or its scales differ within a group.
    pub fn gram_for(&self, spec: &AdditiveSpec) -> Option<Mat<f64>> {
        if spec.cliques != self.cliques || spec.kind != self.kind {
            return None;
        }
        let Some(groups) = &self.groups else {
            // The kept Gram is at scale 1/M for every clique (no clique list is copied here:
            // this runs at every conditioning).
            let s = 1.0 / self.cliques.len() as f64;
            return spec
                .scales
                .iter()
                .all(|&v| v == s)
                .then(|| self.gram(spec.lengthscale).cloned())
                .flatten();
        };
        let scales = group_scales(groups, &spec.scales)?;
        let grams = self.group_grams(spec.lengthscale)?;
        Some(compose(grams, &scales))
    }

    /// Bring the Grams to the points `x`: when the held points are the first rows of `x`
    /// (bit for bit), only the new rows are computed; otherwise every Gram is rebuilt.
    ///
    /// Errors: a non-finite entry of `x` (naming it).
    pub fn update(&mut self, x: &Mat<f64>) -> Result<()> {
        crate::exact::check_finite_rows("x", x.as_ref())?;
        let old = self.x.nrows();
        let prefix = old <= x.nrows()
            && self.x.ncols() == x.ncols()
            && (0..old).all(|i| (0..x.ncols()).all(|j| self.x[(i, j)] == x[(i, j)]));
        let keep = if prefix { old } else { 0 };
        let n = x.nrows();
        if prefix && old == n {
            return Ok(());
        }
        let new_rows = x.as_ref().subrows(keep, n - keep);
        let members = self.groups.as_ref().map(|g| g.members(&self.cliques));
        let kernels: Vec<Vec<Sum>> = self
            .lengthscales
            .iter()
            .map(|&l| match &members {
                None => vec![self.spec(l).kernel()],
                Some(m) => m
                    .iter()
                    .map(|cs| Sum::additive(self.kind, cs, l, 1.0))
                    .collect(),
            })
            .collect();
        let pairs = self
            .grams
            .iter_mut()
            .flatten()
            .zip(kernels.iter().flatten());
        for (g, kernel) in pairs {
            // Row r ≥ keep of the Gram is `cross(x_r, x)`: entry (r, c) of the Gram with
            // c ≤ r is computed from x_r − x_c, the same arithmetic, and the mirror entries
            // square the opposite differences (the same values).
            let cross = kernel.cross(new_rows, x.as_ref());
            let mut grown = Mat::<f64>::zeros(n, n);
            if keep > 0 {
                grown
                    .as_mut()
                    .submatrix_mut(0, 0, keep, keep)
                    .copy_from(g.as_ref());
            }
            for r in 0..n - keep {
                for c in 0..n {
                    let v = cross[(r, c)];
                    grown[(keep + r, c)] = v;
                    grown[(c, keep + r)] = v;
                }
            }
            *g = grown;
        }
        self.x = x.clone();
        Ok(())
    }
}

/// The scale of each group from per-clique `scales` (`None` if they differ within a group).
fn group_scales(groups: &ScaleGroups, scales: &[f64]) -> Option<Vec<f64>> {
    if scales.len() != groups.of_clique().len() {
        return None;
    }
    let mut out = vec![f64::NAN; groups.len()];
    for (&g, &s) in groups.of_clique().iter().zip(scales) {
        if out[g].is_nan() {
            out[g] = s;
        } else if out[g] != s {
            return None;
        }
    }
    Some(out)
}

/// `Σ_g s_g G_g`.
fn compose(grams: &[Mat<f64>], scales: &[f64]) -> Mat<f64> {
    let n = grams.first().map_or(0, Mat::nrows);
    let mut k = Mat::<f64>::zeros(n, n);
    for (g, &s) in grams.iter().zip(scales) {
        for j in 0..n {
            for i in 0..n {
                k[(i, j)] += s * g[(i, j)];
            }
        }
    }
    k
}

/// `log N(ys | 0, Σ_g e^{p_g} G_g + e^{p_G} I)` and its gradient in `p` (the log scale of
/// each group, then the log noise): `∂/∂p_g = ½ e^{p_g} (αᵀ G_g α − tr(K⁻¹ G_g))` and
/// `∂/∂p_G = ½ e^{p_G} (αᵀ α − tr K⁻¹)` with `α = K⁻¹ ys`; `K⁻¹` comes from the factor's
/// solves against the identity (the trace terms need its entries).
fn grouped_lml_and_gradient(grams: &[Mat<f64>], p: &[f64], ys: &[f64]) -> Result<(f64, Vec<f64>)> {
    const LN_2PI: f64 = 1.837_877_066_409_345_5;
    let g = grams.len();
    if p.len() != g + 1 {
        return Err(Error::dim("p", g + 1, p.len()));
    }
    let scales: Vec<f64> = p[..g].iter().map(|v| v.exp()).collect();
    let noise = p[g].exp();
    let mut a = compose(grams, &scales);
    let n = a.nrows();
    for i in 0..n {
        a[(i, i)] += noise;
    }
    let chol = Cholesky::new(a.as_ref())?;
    let alpha = chol.solve_vec(ys);
    let quad: f64 = ys.iter().zip(&alpha).map(|(y, a)| y * a).sum();
    let lml = -0.5 * quad - 0.5 * chol.log_det() - 0.5 * n as f64 * LN_2PI;
    let mut kinv = Mat::<f64>::identity(n, n);
    chol.solve_in_place(kinv.as_mut());
    let mut grad = Vec::with_capacity(g + 1);
    for (gm, s) in grams.iter().zip(&scales) {
        let mut fit = 0.0;
        let mut tr = 0.0;
        for j in 0..n {
            for i in 0..n {
                fit += alpha[i] * gm[(i, j)] * alpha[j];
                tr += kinv[(i, j)] * gm[(i, j)];
            }
        }
        grad.push(0.5 * s * (fit - tr));
    }
    let aa: f64 = alpha.iter().map(|a| a * a).sum();
    let tr: f64 = (0..n).map(|i| kinv[(i, i)]).sum();
    grad.push(0.5 * noise * (aa - tr));
    Ok((lml, grad))
}

/// `log N(ys | 0, K + noise·I)` for a precomputed Gram matrix `K`, exactly as
/// [`ExactGp::log_marginal_likelihood`] computes it for `ExactGp::new(x, ys, k, noise, 0)`
/// (same jittered Cholesky, same sums).
fn log_marginal_likelihood(gram: &Mat<f64>, noise: f64, ys: &[f64]) -> Result<f64> {
    const LN_2PI: f64 = 1.837_877_066_409_345_5;
    agora_core::check_finite("noise", noise)?;
    let mut a = gram.clone();
    for i in 0..a.nrows() {
        a[(i, i)] += noise;
    }
    let chol = Cholesky::new(a.as_ref())?;
    let alpha = chol.solve_vec(ys);
    let quad: f64 = ys.iter().zip(&alpha).map(|(y, a)| y * a).sum();
    Ok(-0.5 * quad - 0.5 * chol.log_det() - 0.5 * ys.len() as f64 * LN_2PI)
}

/// The posterior of an additive GP (DSBO Eq. 1 with `k = Σ_c k_c`) evaluated clique by
/// clique: a point's cross-covariance with the data is `k(X, x) = Σ_c k_c(X, x_c)`, so a
/// move on one block recomputes only the cliques that read the block (`O(|touching| · n)`
/// per candidate instead of `O(M n)`), then one triangular solve gives the variance. It
/// factors the same `K + σ²I` as the [`ExactGp`] it is built from, on the same data, and
/// its moments are in the units of the outcomes that GP holds.
pub struct AdditivePosterior<'g> {
    x: MatRef<'g, f64>,
    spec: &'g AdditiveSpec,
    inv_l2: f64,
    chol: &'g Cholesky,
    alpha: &'g [f64],
    mean: f64,
    prior: f64,
    /// For each clique, the cliques sharing a coordinate with it.
    touch: Vec<Vec<usize>>,
    /// The training inputs by coordinate: `cols[j·n + i] = X_ij` (contiguous per
    /// coordinate, so a clique's squared distances accumulate over whole columns).
    cols: Vec<f64>,
}

/// The cross-covariance of one point with the data, clique by clique, and its sum.
#[derive(Debug, Clone, PartialEq)]
pub struct CliqueColumns {
    parts: Vec<Vec<f64>>,
    total: Vec<f64>,
}

impl CliqueColumns {
    /// `k(X, x) = Σ_c k_c(X, x_c)`.
    pub fn total(&self) -> &[f64] {
        &self.total
    }
}

impl<'g> AdditivePosterior<'g> {
    /// The posterior of `gp`, whose kernel is `spec`'s.
    ///
    /// Errors: the GP's factor does not match its data.
    pub fn new(gp: &'g ExactGp, spec: &'g AdditiveSpec) -> Result<Self> {
        let x = gp.x();
        let h = gp.hyper();
        // The GP's own factor of `K + σ²I` and its `α` (the GP's kernel is `spec`'s).
        let (chol, alpha) = gp.factor();
        if chol.dim() != x.nrows() || alpha.len() != x.nrows() {
            return Err(Error::State(
                "the GP's factor does not match its data".into(),
            ));
        }
        let touch = spec
            .cliques
            .iter()
            .map(|b| {
                (0..spec.cliques.len())
                    .filter(|&p| spec.cliques[p].iter().any(|j| b.contains(j)))
                    .collect()
            })
            .collect();
        Ok(AdditivePosterior {
            x,
            spec,
            inv_l2: 1.0 / (spec.lengthscale * spec.lengthscale),
            chol,
            alpha,
            mean: h.mean,
            prior: spec.prior_variance(),
            touch,
            cols: (0..x.ncols())
                .flat_map(|j| (0..x.nrows()).map(move |i| x[(i, j)]))
                .collect(),
        })
    }

    /// The cliques (the blocks a maximizer moves).
    pub fn cliques(&self) -> &[Vec<usize>] {
        &self.spec.cliques
    }

    /// `k_p(X_i, z)` for every training row `i`, with `z(j)` the point's coordinate `j`.
    fn part(&self, p: usize, z: impl Fn(usize) -> f64, out: &mut [f64]) {
        self.sq_dist(p, z, out);
        let (scale, kind, inv_l2) = (self.spec.scales[p], self.spec.kind, self.inv_l2);
        for o in out.iter_mut() {
            *o = scale * kind.value(*o * inv_l2);
        }
    }

    /// `Σ_{j ∈ c_p} (X_ij − z(j))²` for every training row `i` (unscaled), summed over
    /// the clique's coordinates in order, column by column.
    fn sq_dist(&self, p: usize, z: impl Fn(usize) -> f64, out: &mut [f64]) {
        out.iter_mut().for_each(|o| *o = 0.0);
        for &j in &self.spec.cliques[p] {
            self.add_sq(j, z(j), out);
        }
    }

    /// `out[i] += (X_ij − zj)²` for every training row `i`.
    #[inline]
    fn add_sq(&self, j: usize, zj: f64, out: &mut [f64]) {
        let n = out.len();
        for (o, xij) in out.iter_mut().zip(&self.cols[j * n..(j + 1) * n]) {
            let d = xij - zj;
            *o += d * d;
        }
    }

    /// Posterior mean and latent variance from cross-covariance columns `k` (n × m).
    fn moments_from_columns(&self, mut k: Mat<f64>) -> (Vec<f64>, Vec<f64>) {
        let m = k.ncols();
        let mu: Vec<f64> = (0..m)
            .map(|c| {
                self.mean
                    + (0..k.nrows())
                        .map(|i| k[(i, c)] * self.alpha[i])
                        .sum::<f64>()
            })
            .collect();
        self.chol.solve_lower_in_place(k.as_mut());
        let var = (0..m)
            .map(|c| {
                let q: f64 = (0..k.nrows()).map(|i| k[(i, c)] * k[(i, c)]).sum();
                (self.prior - q).max(0.0)
            })
            .collect();
        (mu, var)
    }

    /// Posterior mean and latent variance at every row of `xs`.
    pub fn predict(&self, xs: &Mat<f64>) -> (Vec<f64>, Vec<f64>) {
        let n = self.x.nrows();
        let (mut mu, mut var) = (
            Vec::with_capacity(xs.nrows()),
            Vec::with_capacity(xs.nrows()),
        );
        // Chunks bound the n × m cross-covariance buffers; within a chunk the points'
        // columns (each a sum over every clique) are computed in parallel.
        for start in (0..xs.nrows()).step_by(256) {
            let m = 256.min(xs.nrows() - start);
            let cols: Vec<Vec<f64>> = (0..m)
                .into_par_iter()
                .map(|c| {
                    let mut col = vec![0.0; n];
                    let mut sum = vec![0.0; n];
                    for p in 0..self.spec.cliques.len() {
                        self.part(p, |j| xs[(start + c, j)], &mut col);
                        for (t, v) in sum.iter_mut().zip(&col) {
                            *t += v;
                        }
                    }
                    sum
                })
                .collect();
            let k = Mat::<f64>::from_fn(n, m, |i, c| cols[c][i]);
            let (a, b) = self.moments_from_columns(k);
            mu.extend(a);
            var.extend(b);
        }
        (mu, var)
    }

    /// The cross-covariance columns of point `x`.
    pub fn columns(&self, x: &[f64]) -> CliqueColumns {
        let n = self.x.nrows();
        let parts: Vec<Vec<f64>> = (0..self.spec.cliques.len())
            .map(|p| {
                let mut col = vec![0.0; n];
                self.part(p, |j| x[j], &mut col);
                col
            })
            .collect();
        let mut total = vec![0.0; n];
        for col in &parts {
            for (t, v) in total.iter_mut().zip(col) {
                *t += v;
            }
        }
        CliqueColumns { parts, total }
    }

    /// Mean and variance at every row of `cand`, each equal to the point of `st` outside
    /// clique `b`'s coordinates.
    pub fn predict_moves(
        &self,
        st: &CliqueColumns,
        b: usize,
        cand: &Mat<f64>,
    ) -> (Vec<f64>, Vec<f64>) {
        let n = self.x.nrows();
        // The cross-covariance of the untouched cliques is shared by every candidate.
        let mut rest = st.total.clone();
        for &p in &self.touch[b] {
            for (r, v) in rest.iter_mut().zip(&st.parts[p]) {
                *r -= v;
            }
        }
        let mut k = Mat::<f64>::zeros(n, cand.nrows());
        let mut col = vec![0.0; n];
        for c in 0..cand.nrows() {
            for (i, r) in rest.iter().enumerate() {
                k[(i, c)] = *r;
            }
            for &p in &self.touch[b] {
                self.part(p, |j| cand[(c, j)], &mut col);
                for (i, v) in col.iter().enumerate() {
                    k[(i, c)] += v;
                }
            }
        }
        self.moments_from_columns(k)
    }

    /// An acquisition `a(μ, σ²)` of the posterior moments and its gradient in `x`, at any
    /// point, in one pass over the cliques: `O(Σ_c |c| n + n²)` with one exponential per
    /// clique and training row. `on_moments(μ, σ²)` returns `(a, ∂a/∂μ, ∂a/∂σ²)`. With
    /// `k = k(X, x)` and `u = (K + σ²I)⁻¹ k`, `∇μ = Σ_i α_i ∇k_i` and `∇σ² = −2 Σ_i u_i ∇k_i`,
    /// where `∂k_i/∂x_j = Σ_{c ∋ j} s κ_c'(r²_ic) · 2 (x_j − X_ij)/ℓ²`. The moments are the
    /// ones [`AdditivePosterior::predict`] gives at `x`, bit for bit.
    pub fn value_and_gradient(
        &self,
        x: &[f64],
        on_moments: impl Fn(f64, f64) -> (f64, f64, f64),
    ) -> (f64, Vec<f64>) {
        let n = self.x.nrows();
        let (kind, inv_l2) = (self.spec.kind, self.inv_l2);
        let cliques = &self.spec.cliques;
        // s κ'(r²) per clique and row, and k = Σ_c s κ(r²_c), summed clique by clique in
        // order (as `predict` sums them).
        let mut dk = vec![0.0; cliques.len() * n];
        let mut total = vec![0.0; n];
        let mut r2 = vec![0.0; n];
        for (p, d) in dk
            .chunks_exact_mut(n.max(1))
            .enumerate()
            .take(cliques.len())
        {
            self.sq_dist(p, |j| x[j], &mut r2);
            let scale = self.spec.scales[p];
            for i in 0..n {
                let (v, dv) = kind.value_and_deriv(r2[i] * inv_l2);
                total[i] += scale * v;
                d[i] = scale * dv;
            }
        }
        let k = Mat::<f64>::from_fn(n, 1, |i, _| total[i]);
        let (mu, var) = self.moments_from_columns(k.clone());
        let (a, a_mu, a_var) = on_moments(mu[0], var[0]);
        // z = a_μ α − 2 a_σ² u, so that ∇a = Σ_i z_i ∇k_i.
        let mut u = k;
        if a_var != 0.0 {
            self.chol.solve_lower_in_place(u.as_mut());
            self.chol.solve_upper_in_place(u.as_mut());
        }
        let z: Vec<f64> = (0..n)
            .map(|i| {
                let mut zi = a_mu * self.alpha[i];
                if a_var != 0.0 {
                    zi -= 2.0 * a_var * u[(i, 0)];
                }
                zi
            })
            .collect();
        let mut g = vec![0.0; x.len()];
        let mut w = vec![0.0; n];
        for (p, clique) in cliques.iter().enumerate() {
            for ((wi, zi), di) in w.iter_mut().zip(&z).zip(&dk[p * n..(p + 1) * n]) {
                *wi = 2.0 * inv_l2 * di * zi;
            }
            for &j in clique {
                let xj = x[j];
                g[j] += self.cols[j * n..(j + 1) * n]
                    .iter()
                    .zip(&w)
                    .map(|(xij, wi)| wi * (xj - xij))
                    .sum::<f64>();
            }
        }
        (a, g)
    }

    /// Gradient in `x` of `μ(x) + w σ(x)` (posterior mean plus `w` times the latent
    /// standard deviation; `w = √β` gives GP-UCB) ([`AdditivePosterior::value_and_gradient`]).
    /// Where `σ = 0` only the mean's gradient is taken.
    pub fn ucb_gradient(&self, x: &[f64], w: f64) -> Vec<f64> {
        self.value_and_gradient(x, |m, v| {
            let sd = v.sqrt();
            let dsd = if sd > 0.0 { 0.5 / sd } else { 0.0 };
            (m + w * sd, 1.0, w * dsd)
        })
        .1
    }

    /// Update `st` after its point moved to `x` on clique `b`'s coordinates.
    pub fn commit(&self, st: &mut CliqueColumns, x: &[f64], b: usize) {
        for &p in &self.touch[b] {
            let mut col = std::mem::take(&mut st.parts[p]);
            self.part(p, |j| x[j], &mut col);
            st.parts[p] = col;
        }
        // Re-summed rather than updated, so rounding never accumulates.
        st.total.iter_mut().for_each(|t| *t = 0.0);
        for col in &st.parts {
            for (t, v) in st.total.iter_mut().zip(col) {
                *t += v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_math::rng::stream;
    use rand::RngExt;

    /// Data from `v(x) = sin(6 x₀ + 3 x₁) + cos(4 x₂) + x₃ x₄` on `[0, 1]⁵`.
    fn data(n: usize, seed: u64) -> (Mat<f64>, Vec<f64>) {
        let mut rng = stream(seed, &[]);
        let x = Mat::from_fn(n, 5, |_, _| rng.random::<f64>());
        let y = (0..n)
            .map(|i| {
                (6.0 * x[(i, 0)] + 3.0 * x[(i, 1)]).sin()
                    + (4.0 * x[(i, 2)]).cos()
                    + x[(i, 3)] * x[(i, 4)]
            })
            .collect();
        (x, y)
    }

    #[test]
    fn the_grid_fit_picks_the_exact_gp_with_the_largest_marginal_likelihood() {
        let cliques = vec![vec![0, 1], vec![2], vec![3, 4]];
        let (x, y) = data(20, 1);
        let hyper = AdditiveHyper::default();
        let fit = AdditiveFit::fit(&cliques, StationaryKind::Matern52, &hyper, &x, &y).unwrap();
        // Brute force: an ExactGp per pair, its own log marginal likelihood.
        let (shift, scale) = crate::exact::standardization(&y);
        let ys: Vec<f64> = y.iter().map(|v| (v - shift) / scale).collect();
        let (ls, ns) = hyper.grid();
        let mut best = (f64::NEG_INFINITY, 0.0, 0.0);
        for &l in &ls {
            for &noise in &ns {
                let k = Sum::additive(StationaryKind::Matern52, &cliques, l, 1.0 / 3.0);
                let gp = ExactGp::new(x.clone(), &ys, Box::new(k), noise, 0.0).unwrap();
                let lml = gp.log_marginal_likelihood();
                if lml > best.0 {
                    best = (lml, l, noise);
                }
            }
        }
        assert_eq!((fit.spec.lengthscale, fit.noise), (best.1, best.2));
        assert_eq!((fit.shift, fit.scale), (shift, scale));
        let gp = fit.condition(x, &y).unwrap();
        assert_eq!(gp.log_marginal_likelihood(), best.0);
        assert!(
            AdditiveHyper::Grid {
                lengthscales: vec![],
                noises: vec![1.0]
            }
            .validate()
            .is_err()
        );
        let e = AdditiveHyper::Fixed {
            lengthscale: 0.5,
            noise: -1.0,
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("hyper.noise"), "{e}");
    }

    #[test]
    fn clique_wise_moments_equal_the_exact_gp_posterior() {
        let cliques = vec![vec![0, 1], vec![1, 2], vec![3], vec![3, 4]];
        let (x, y) = data(25, 2);
        let fit = AdditiveFit::fit(
            &cliques,
            StationaryKind::Matern52,
            &AdditiveHyper::default(),
            &x,
            &y,
        )
        .unwrap();
        let gp = fit.condition(x, &y).unwrap();
        let post = AdditivePosterior::new(&gp, &fit.spec).unwrap();
        let mut rng = stream(3, &[]);
        let xs = Mat::from_fn(7, 5, |_, _| rng.random::<f64>());
        let (m0, v0) = gp.predict(xs.as_ref()).unwrap();
        let (m1, v1) = post.predict(&xs);
        for i in 0..7 {
            assert!((m0[i] - m1[i]).abs() < 1e-9 && (v0[i] - v1[i]).abs() < 1e-9);
        }
        // Moves on each clique from cached columns, then committed columns equal fresh ones.
        let mut p: Vec<f64> = (0..5).map(|j| xs[(0, j)]).collect();
        let mut st = post.columns(&p);
        for (b, clique) in cliques.iter().enumerate() {
            let mut cand = Mat::from_fn(3, 5, |_, j| p[j]);
            for r in 0..3 {
                for &j in clique {
                    cand[(r, j)] = rng.random::<f64>();
                }
            }
            let (mm, vm) = post.predict_moves(&st, b, &cand);
            let (mr, vr) = gp.predict(cand.as_ref()).unwrap();
            for r in 0..3 {
                assert!((mm[r] - mr[r]).abs() < 1e-9 && (vm[r] - vr[r]).abs() < 1e-9);
            }
            p = (0..5).map(|j| cand[(0, j)]).collect();
            post.commit(&mut st, &p, b);
            let fresh = post.columns(&p);
            for (a, r) in st.total().iter().zip(fresh.total()) {
                assert!((a - r).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn kept_grams_equal_fresh_grams_and_rebuild_when_the_data_change() {
        let cliques = vec![vec![0, 1], vec![1, 2], vec![3], vec![3, 4]];
        let hyper = AdditiveHyper::default();
        let (x, y) = data(30, 4);
        let mut grams = AdditiveGrams::new(&cliques, StationaryKind::Matern52, &hyper);
        let fresh = |x: &Mat<f64>, l: f64| grams_spec(&cliques, l).kernel().gram(x.as_ref());
        // Grown one and several rows at a time.
        for n in [1, 2, 7, 8, 19, 30] {
            let head = x.as_ref().subrows(0, n).to_owned();
            grams.update(&head).unwrap();
            assert!(grams.holds(&head) && grams.len() == n);
            for l in hyper.grid().0 {
                assert!(
                    grams.gram(l).unwrap() == &fresh(&head, l),
                    "n = {n}, l = {l}"
                );
            }
        }
        // Fits on kept Grams are the fresh fits.
        let kept = AdditiveFit::fit_grams(&grams, &hyper, &y).unwrap();
        let direct = AdditiveFit::fit(&cliques, StationaryKind::Matern52, &hyper, &x, &y).unwrap();
        assert_eq!(kept, direct);
        // A changed earlier row rebuilds every Gram.
        let mut moved = x.clone();
        moved[(3, 2)] = 0.5;
        grams.update(&moved).unwrap();
        for l in hyper.grid().0 {
            assert!(grams.gram(l).unwrap() == &fresh(&moved, l));
        }
        assert!(grams.gram(0.123).is_none());
        let e = grams
            .update(&Mat::from_fn(2, 5, |_, _| f64::NAN))
            .unwrap_err();
        assert!(e.to_string().contains("x[0][0]"), "{e}");
        let short = AdditiveFit::fit_grams(&grams, &hyper, &y[..5]).unwrap_err();
        assert!(short.to_string().contains("grams"), "{short}");
    }

    /// Mean log predictive density of `fit` conditioned on `(xtr, ytr)` at `(xte, yte)`
    /// (observation noise included, in the units of `y`).
    fn held_out_lpd(
        fit: &AdditiveFit,
        xtr: &Mat<f64>,
        ytr: &[f64],
        xte: &Mat<f64>,
        yte: &[f64],
    ) -> f64 {
        let gp = fit.condition(xtr.clone(), ytr).unwrap();
        let (mu, var) = gp.predict(xte.as_ref()).unwrap();
        yte.iter()
            .zip(mu.iter().zip(&var))
            .map(|(y, (m, v))| {
                let (m, s2) = (
                    m * fit.scale + fit.shift,
                    (v + fit.noise) * fit.scale.powi(2),
                );
                -0.5 * ((2.0 * std::f64::consts::PI * s2).ln() + (y - m).powi(2) / s2)
            })
            .sum::<f64>()
            / yte.len() as f64
    }

    fn grams_spec(cliques: &[Vec<usize>], l: f64) -> AdditiveSpec {
        AdditiveSpec::shared(cliques, StationaryKind::Matern52, l)
    }

    /// The issue-20 check: clustered inputs (policies near a few incumbents) and a
    /// step-like return seen through one noisy episode. With noise capped at 1e-2 the
    /// additive GP interpolates the noise and scores far below a constant on held-out
    /// points; the default grid (noise up to 1) does not.
    #[test]
    fn the_default_grid_does_not_interpolate_noisy_clustered_returns() {
        let (d, cliques) = (6, vec![vec![0, 1], vec![2, 3], vec![4, 5]]);
        let mut rng = stream(21, &[]);
        let centers: Vec<Vec<f64>> = (0..4)
            .map(|_| (0..d).map(|_| rng.random::<f64>()).collect())
            .collect();
        let mut draw = |n: usize| {
            let x = Mat::from_fn(n, d, |i, j| {
                let z: f64 =
                    rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng);
                (centers[i % 4][j] + 0.03 * z).clamp(0.0, 1.0)
            });
            let y: Vec<f64> = (0..n)
                .map(|i| {
                    let z: f64 =
                        rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng);
                    f64::from(x[(i, 0)] > 0.5) + z
                })
                .collect();
            (x, y)
        };
        let (xtr, ytr) = draw(80);
        let (xte, yte) = draw(40);
        let lpd = |hyper: &AdditiveHyper| {
            let fit =
                AdditiveFit::fit(&cliques, StationaryKind::Matern52, hyper, &xtr, &ytr).unwrap();
            let lpd = held_out_lpd(&fit, &xtr, &ytr, &xte, &yte);
            (lpd, fit.noise)
        };
        let capped = AdditiveHyper::Grid {
            lengthscales: vec![0.1, 0.15, 0.25, 0.4, 0.6, 1.0],
            noises: vec![1e-6, 1e-4, 1e-2],
        };
        let (old, _) = lpd(&capped);
        let (new, noise) = lpd(&AdditiveHyper::default());
        // A constant: the training mean and variance.
        let (shift, scale) = crate::exact::standardization(&ytr);
        let constant = yte
            .iter()
            .map(|y| {
                -0.5 * ((2.0 * std::f64::consts::PI * scale * scale).ln()
                    + ((y - shift) / scale).powi(2))
            })
            .sum::<f64>()
            / yte.len() as f64;
        eprintln!("lpd capped {old:.3}, default {new:.3} (noise {noise}), constant {constant:.3}");
        assert!(noise >= 0.1, "noise {noise}");
        assert!(new > old + 1.0, "default {new} vs capped {old}");
        assert!(new > constant - 0.1, "default {new} vs constant {constant}");
    }

    #[test]
    fn the_ucb_gradient_matches_finite_differences() {
        let cliques = vec![vec![0, 1], vec![1, 2], vec![3], vec![3, 4]];
        let (x, y) = data(25, 6);
        let hyper = AdditiveHyper::Fixed {
            lengthscale: 0.4,
            noise: 1e-4,
        };
        let fit = AdditiveFit::fit(&cliques, StationaryKind::Matern52, &hyper, &x, &y).unwrap();
        let gp = fit.condition(x, &y).unwrap();
        let post = AdditivePosterior::new(&gp, &fit.spec).unwrap();
        let ucb = |p: &[f64], w: f64| {
            let (m, v) = post.predict(&Mat::from_fn(1, 5, |_, j| p[j]));
            m[0] + w * v[0].sqrt()
        };
        let mut rng = stream(9, &[]);
        for w in [0.0, 1.5] {
            for _ in 0..4 {
                let p: Vec<f64> = (0..5).map(|_| 0.1 + 0.8 * rng.random::<f64>()).collect();
                let g = post.ucb_gradient(&p, w);
                // The fused pass gives `predict`'s moments bit for bit.
                let (m, v) = post.predict(&Mat::from_fn(1, 5, |_, j| p[j]));
                let (a, _) = post.value_and_gradient(&p, |mu, var| {
                    assert_eq!((mu, var), (m[0], v[0]));
                    (mu + w * var.sqrt(), 1.0, 0.0)
                });
                assert_eq!(a, ucb(&p, w));
                for j in 0..5 {
                    let h = 1e-6;
                    let (mut a, mut b) = (p.clone(), p.clone());
                    a[j] += h;
                    b[j] -= h;
                    let fd = (ucb(&a, w) - ucb(&b, w)) / (2.0 * h);
                    assert!(
                        (g[j] - fd).abs() < 1e-5 * (1.0 + fd.abs()),
                        "w {w} j {j}: {} vs {fd}",
                        g[j]
                    );
                }
            }
        }
    }

    #[test]
    fn cliques_are_grouped_by_their_coordinates_groups() {
        // Coordinates 0–2 in group 5, 3–4 in group 2, 5 in group 9 (no clique of its own).
        let of = [5, 5, 5, 2, 2, 9];
        let cliques = vec![
            vec![0, 1],
            vec![3],
            vec![2, 3],
            vec![4],
            vec![1, 5],
            vec![2],
        ];
        let g = ScaleGroups::by_coordinate(&cliques, &of).unwrap();
        // Labels 2 → 0, 5 → 1; cliques across groups → 2; group 9 holds no clique alone.
        assert_eq!(g.of_clique(), &[1, 0, 2, 0, 2, 1]);
        assert_eq!(g.len(), 3);
        let single = ScaleGroups::by_coordinate(&cliques[..2], &of).unwrap();
        assert_eq!((single.of_clique(), single.len()), (&[1, 0][..], 2));
        let e = ScaleGroups::by_coordinate(&[vec![0, 7]], &of).unwrap_err();
        assert!(e.to_string().contains("coordinate_group"), "{e}");
        assert!(g.validate(5).unwrap_err().to_string().contains("groups"));
    }

    /// Two groups of cliques: `f = Σ_{c ∈ A} sin(…) + 0.03 Σ_{c ∈ B} sin(…)` plus noise, on
    /// `[0, 1]⁶` (A reads coordinates 0–2, B 3–5).
    fn two_groups(n: usize, seed: u64) -> (Mat<f64>, Vec<f64>) {
        let mut rng = stream(seed, &[7]);
        let x = Mat::from_fn(n, 6, |_, _| rng.random::<f64>());
        let y = (0..n)
            .map(|i| {
                let r = |j: usize| x[(i, j)];
                let z: f64 =
                    rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng);
                (5.0 * r(0) + 2.0 * r(1)).sin()
                    + (4.0 * r(2)).cos()
                    + 0.03 * ((5.0 * r(3)).sin() + (3.0 * r(4) * r(5)).cos())
                    + 0.05 * z
            })
            .collect();
        (x, y)
    }

    fn two_group_cliques() -> (Vec<Vec<usize>>, ScaleGroups) {
        let cliques = vec![vec![0, 1], vec![2], vec![3], vec![4, 5]];
        let groups = ScaleGroups::by_coordinate(&cliques, &[0, 0, 0, 1, 1, 1]).unwrap();
        (cliques, groups)
    }

    #[test]
    fn the_grouped_likelihood_gradient_matches_finite_differences() {
        let (cliques, groups) = two_group_cliques();
        let (x, y) = two_groups(30, 1);
        let hyper = AdditiveHyper::default();
        let mut grams =
            AdditiveGrams::with_groups(&cliques, StationaryKind::Matern52, &hyper, Some(&groups));
        grams.update(&x).unwrap();
        let (shift, scale) = crate::exact::standardization(&y);
        let ys: Vec<f64> = y.iter().map(|v| (v - shift) / scale).collect();
        let parts = grams.group_grams(0.4).unwrap();
        // The likelihood equals the exact GP's on the per-clique kernel.
        let p = [(0.3f64).ln(), (0.02f64).ln(), (0.05f64).ln()];
        let (v, g) = grouped_lml_and_gradient(parts, &p, &ys).unwrap();
        let spec = AdditiveSpec {
            scales: vec![0.3, 0.3, 0.02, 0.02],
            ..AdditiveSpec::shared(&cliques, StationaryKind::Matern52, 0.4)
        };
        let gp = ExactGp::new(x.clone(), &ys, Box::new(spec.kernel()), 0.05, 0.0).unwrap();
        assert!((v - gp.log_marginal_likelihood()).abs() < 1e-9);
        for k in 0..3 {
            let h = 1e-5;
            let (mut a, mut b) = (p, p);
            a[k] += h;
            b[k] -= h;
            let fd = (grouped_lml_and_gradient(parts, &a, &ys).unwrap().0
                - grouped_lml_and_gradient(parts, &b, &ys).unwrap().0)
                / (2.0 * h);
            assert!(
                (g[k] - fd).abs() < 1e-5 * (1.0 + fd.abs()),
                "{k}: {} vs {fd}",
                g[k]
            );
        }
        // Composed Grams equal the per-clique kernel's Gram.
        let composed = grams.gram_for(&spec).unwrap();
        let fresh = spec.kernel().gram(x.as_ref());
        for i in 0..30 {
            for j in 0..30 {
                assert!((composed[(i, j)] - fresh[(i, j)]).abs() < 1e-14);
            }
        }
        // A spec whose scales differ within a group has no kept Gram.
        let split = AdditiveSpec {
            scales: vec![0.3, 0.2, 0.02, 0.02],
            ..spec.clone()
        };
        assert!(grams.gram_for(&split).is_none());
    }

    /// The grouped fit finds the maximum a brute-force search over the two scales and the
    /// noise finds (at the lengthscale it selected), and it is at least the shared fit's.
    #[test]
    fn the_grouped_fit_reaches_the_brute_force_maximum() {
        let (cliques, groups) = two_group_cliques();
        let (x, y) = two_groups(40, 2);
        let hyper = AdditiveHyper::default();
        let kind = StationaryKind::Matern52;
        let fit = AdditiveFit::fit_with(&cliques, kind, &hyper, Some(&groups), &x, &y).unwrap();
        assert!(fit.converged);
        let shared = AdditiveFit::fit(&cliques, kind, &hyper, &x, &y).unwrap();
        let lml = |f: &AdditiveFit| {
            f.condition(x.clone(), &y)
                .unwrap()
                .log_marginal_likelihood()
        };
        let best = lml(&fit);
        assert!(best >= lml(&shared) - 1e-9, "{best} vs {}", lml(&shared));
        let (shift, scale) = crate::exact::standardization(&y);
        let ys: Vec<f64> = y.iter().map(|v| (v - shift) / scale).collect();
        let mut grams = AdditiveGrams::with_groups(&cliques, kind, &hyper, Some(&groups));
        grams.update(&x).unwrap();
        let parts = grams.group_grams(fit.spec.lengthscale).unwrap();
        let mut brute = f64::NEG_INFINITY;
        let (m, lo_n) = (4.0f64, 1e-6f64);
        for a in 0..=40 {
            for b in 0..=40 {
                for c in 0..=30 {
                    let p = [
                        (1e-3 / m).ln()
                            + f64::from(a) / 40.0 * ((4.0f64 / 2.0).ln() - (1e-3 / m).ln()),
                        (1e-3 / m).ln()
                            + f64::from(b) / 40.0 * ((4.0f64 / 2.0).ln() - (1e-3 / m).ln()),
                        lo_n.ln() + f64::from(c) / 30.0 * (0.0 - lo_n.ln()),
                    ];
                    if let Ok((v, _)) = grouped_lml_and_gradient(parts, &p, &ys) {
                        brute = brute.max(v);
                    }
                }
            }
        }
        eprintln!(
            "grouped {best:.4}, brute force {brute:.4}, shared {:.4}",
            lml(&shared)
        );
        assert!(
            best >= brute - 1e-6,
            "grouped {best} below brute force {brute}"
        );
        // The unimportant group gets the much smaller scale.
        assert!(
            fit.spec.scales[0] > 10.0 * fit.spec.scales[2],
            "{:?}",
            fit.spec.scales
        );
    }

    /// Held-out fit, paired over 10 data sets: where one group of cliques carries almost
    /// none of the signal, scales by group predict fresh points better than one shared
    /// scale.
    #[test]
    fn grouped_scales_predict_held_out_points_better_when_groups_differ() {
        let (cliques, groups) = two_group_cliques();
        let hyper = AdditiveHyper::default();
        let kind = StationaryKind::Matern52;
        let lpd = held_out_lpd;
        let diffs: Vec<f64> = (0..10)
            .map(|seed| {
                let (x, y) = two_groups(70, 100 + seed);
                let xtr = x.as_ref().subrows(0, 40).to_owned();
                let xte = x.as_ref().subrows(40, 30).to_owned();
                let (ytr, yte) = (&y[..40], &y[40..]);
                let g = AdditiveFit::fit_with(&cliques, kind, &hyper, Some(&groups), &xtr, ytr)
                    .unwrap();
                let s = AdditiveFit::fit(&cliques, kind, &hyper, &xtr, ytr).unwrap();
                lpd(&g, &xtr, ytr, &xte, yte) - lpd(&s, &xtr, ytr, &xte, yte)
            })
            .collect();
        let mean = diffs.iter().sum::<f64>() / 10.0;
        let sd = (diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / 9.0).sqrt();
        let se = sd / 10f64.sqrt();
        eprintln!("held-out log density, grouped − shared: {mean:.3} ± {se:.3} per point");
        assert!(mean > 2.0 * se, "{mean} ± {se}");
    }

    #[test]
    fn moments_and_gradients_hold_with_unequal_scales() {
        let cliques = vec![vec![0, 1], vec![1, 2], vec![3], vec![3, 4]];
        let (x, y) = data(25, 12);
        let spec = AdditiveSpec {
            scales: vec![0.5, 0.1, 0.3, 0.02],
            ..AdditiveSpec::shared(&cliques, StationaryKind::Matern52, 0.5)
        };
        let gp = ExactGp::new(x, &y, Box::new(spec.kernel()), 1e-3, 0.0).unwrap();
        let post = AdditivePosterior::new(&gp, &spec).unwrap();
        let mut rng = stream(13, &[]);
        let xs = Mat::from_fn(6, 5, |_, _| rng.random::<f64>());
        let (m0, v0) = gp.predict(xs.as_ref()).unwrap();
        let (m1, v1) = post.predict(&xs);
        for i in 0..6 {
            assert!((m0[i] - m1[i]).abs() < 1e-9 && (v0[i] - v1[i]).abs() < 1e-9);
        }
        let ucb = |p: &[f64]| {
            let (m, v) = post.predict(&Mat::from_fn(1, 5, |_, j| p[j]));
            m[0] + 1.5 * v[0].sqrt()
        };
        let p: Vec<f64> = (0..5).map(|j| xs[(0, j)]).collect();
        let g = post.ucb_gradient(&p, 1.5);
        for j in 0..5 {
            let (mut a, mut b) = (p.clone(), p.clone());
            a[j] += 1e-6;
            b[j] -= 1e-6;
            let fd = (ucb(&a) - ucb(&b)) / 2e-6;
            assert!(
                (g[j] - fd).abs() < 1e-5 * (1.0 + fd.abs()),
                "{j}: {} vs {fd}",
                g[j]
            );
        }
    }
}
