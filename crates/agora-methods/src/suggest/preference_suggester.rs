//! Preferential BO on comparisons supplied from outside.

use super::unit_point::{require_box, unit_point};
use crate::discrete::maximize_on_box;
use crate::{PairRule, PboConfig};
use agora_acq::BoxMaximizer;
use agora_acq::preference::Eubo;
use agora_core::{Error, Result, Space};
use agora_gp::{Comparison, PrefConfig, PreferenceGp};
use agora_math::rng::{derive_seed, stream};
use faer::Mat;

/// A preference GP fitted to the options that appear in comparisons.
#[derive(Debug, Clone)]
struct Fit {
    gp: PreferenceGp,
    /// The option behind each of the model's rows.
    rows: Vec<usize>,
}

/// Preferential Bayesian optimization on externally supplied comparisons: what
/// optuna-dashboard's preferential mode calls with the options shown and the choices made.
///
/// The caller adds options (unit-cube points; near-duplicates within 1e-4 in every
/// coordinate are one option, as in [`crate::Pbo`]) and records which of two options was
/// preferred. A preference GP ([`PreferenceGp`] with BoTorch's `PairwiseGP` preset
/// [`PrefConfig::botorch`], warm-started from the previous fit, as `Pbo` fits it) learns
/// the latent utility from the options that appear in comparisons. The next option
/// maximizes EUBO (Lin et al. 2022, Eq. 4) against the incumbent — the compared option with
/// the highest posterior mean — on mixed spaces scored at snapped points with exhaustive
/// search over integer and categorical values ([`crate::discrete::maximize_on_box`], as in
/// GP-BO), with `Pbo`'s maximizer settings. Before any informative comparison the
/// suggestion is a uniformly random canonical point.
///
/// A tie ("can't tell"), or a choice between an option and itself, is counted and adds no
/// likelihood term (as in `Pbo`: a tie likelihood would need a threshold the person never
/// states).
///
/// Known limitation, measured (tests/suggest.rs): with a noiseless rater, EUBO against the
/// incumbent on this preset goes to the box's corners and edges and repeats comparisons it
/// already lost; after 20 comparisons on Branin its incumbent is worse than the best of 21
/// random points (paired over 10 seeds). A lost comparison saturates the unclamped probit,
/// so its Laplace curvature is ~0 and the difference to the incumbent keeps a large
/// posterior variance, which EUBO rewards.
///
/// Determinism: the random streams derive from the seed and the numbers of options and
/// answers; the model is fitted deterministically from the previous fit. The same seed and
/// the same calls in the same order give the same suggestions.
///
/// # Example
///
/// ```
/// use agora_core::Space;
/// use agora_methods::PreferenceSuggester;
///
/// let space = Space::reals(&[(0.0, 1.0), (0.0, 1.0)])?;
/// let utility = |x: &[f64]| -((x[0] - 0.3).powi(2) + (x[1] - 0.7).powi(2));
/// let mut s = PreferenceSuggester::new(space, 3)?;
/// let a = s.add_option(&[0.9, 0.1])?;
/// let b = s.add_option(&[0.4, 0.6])?;
/// s.prefer(b, a)?; // the person preferred b
/// for _ in 0..5 {
///     let x = s.suggest()?;
///     let challenger = s.add_option(&x)?;
///     let Some(incumbent) = s.best() else { unreachable!("one comparison was made") };
///     let (ui, uc) = (utility(s.option(incumbent).unwrap()), utility(&x));
///     if uc > ui {
///         s.prefer(challenger, incumbent)?;
///     } else if uc < ui {
///         s.prefer(incumbent, challenger)?;
///     } else {
///         s.tie(incumbent, challenger)?;
///     }
/// }
/// assert_eq!(s.n_comparisons() + s.ties(), 6);
/// let best = s.option(s.best().unwrap()).unwrap();
/// assert!(utility(best) >= utility(&[0.4, 0.6]));
/// # Ok::<(), agora_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PreferenceSuggester {
    space: Space,
    seed: u64,
    model: PrefConfig,
    maximizer: BoxMaximizer,
    merge_tol: f64,
    options: Vec<Vec<f64>>,
    comps: Vec<Comparison>,
    ties: usize,
    fit: Option<Fit>,
    hyper: Option<Vec<f64>>,
}

impl PreferenceSuggester {
    /// A suggester over the box `space`, with the model, maximizer and merge tolerance of
    /// [`PboConfig::new`].
    ///
    /// Errors: an invalid or non-box space (`space`, `params[i]...`).
    pub fn new(space: Space, seed: u64) -> Result<PreferenceSuggester> {
        require_box(&space)?;
        let cfg = PboConfig::new(PairRule::WinnerVsEubo);
        Ok(PreferenceSuggester {
            space,
            seed,
            model: cfg.model,
            maximizer: cfg.maximizer,
            merge_tol: cfg.merge_tol,
            options: Vec::new(),
            comps: Vec::new(),
            ties: 0,
            fit: None,
            hyper: None,
        })
    }

    /// The space searched.
    pub fn space(&self) -> &Space {
        &self.space
    }

    /// Add an option, a unit-cube point of the space (integer and categorical coordinates
    /// snapped, continuous ones kept), and return its index; a point within 1e-4 of an
    /// existing option in every coordinate is that option.
    ///
    /// Errors (nothing is added): `x` of the wrong length, `x[j]` not a finite number in
    /// `[0, 1]`.
    pub fn add_option(&mut self, unit_x: &[f64]) -> Result<usize> {
        let x = unit_point(&self.space, "x", unit_x)?;
        let tol = self.merge_tol;
        if let Some(i) = self
            .options
            .iter()
            .position(|p| p.iter().zip(&x).all(|(a, b)| (a - b).abs() <= tol))
        {
            return Ok(i);
        }
        self.options.push(x);
        Ok(self.options.len() - 1)
    }

    /// Number of options.
    pub fn n_options(&self) -> usize {
        self.options.len()
    }

    /// Option `i` (unit cube), if there is one.
    pub fn option(&self, i: usize) -> Option<&[f64]> {
        self.options.get(i).map(Vec::as_slice)
    }

    /// Record that option `winner` was preferred to option `loser` and refit the model (an
    /// option preferred to itself is counted as a tie).
    ///
    /// Errors (nothing is recorded): `winner` or `loser` not an option index; a numerical
    /// failure of the fit.
    pub fn prefer(&mut self, winner: usize, loser: usize) -> Result<()> {
        self.check_option("winner", winner)?;
        self.check_option("loser", loser)?;
        self.record(&[(winner, loser)])
    }

    /// Record several `(winner, loser)` comparisons, all or none, with one refit.
    ///
    /// Errors (nothing is recorded): `comparisons[k].winner` or `comparisons[k].loser` not
    /// an option index; a numerical failure of the fit.
    pub fn prefer_many(&mut self, comparisons: &[(usize, usize)]) -> Result<()> {
        for (k, &(w, l)) in comparisons.iter().enumerate() {
            self.check_option(&format!("comparisons[{k}].winner"), w)?;
            self.check_option(&format!("comparisons[{k}].loser"), l)?;
        }
        self.record(comparisons)
    }

    /// Record a tie ("can't tell") between two options: counted, no information.
    ///
    /// Errors (nothing is recorded): `first` or `second` not an option index.
    pub fn tie(&mut self, first: usize, second: usize) -> Result<()> {
        self.check_option("first", first)?;
        self.check_option("second", second)?;
        self.ties += 1;
        Ok(())
    }

    /// Informative comparisons recorded.
    pub fn n_comparisons(&self) -> usize {
        self.comps.len()
    }

    /// The informative comparisons recorded, as option indices.
    pub fn comparisons(&self) -> &[Comparison] {
        &self.comps
    }

    /// Ties recorded (including choices between an option and itself).
    pub fn ties(&self) -> usize {
        self.ties
    }

    /// The incumbent: the compared option with the highest posterior mean (the first on
    /// ties); None before any informative comparison.
    pub fn best(&self) -> Option<usize> {
        let fit = self.fit.as_ref()?;
        let u = fit.gp.utility();
        let r = (0..u.len()).reduce(|b, r| if u[r] > u[b] { r } else { b })?;
        fit.rows.get(r).copied()
    }

    /// The next option to show: a canonical unit-cube point maximizing EUBO against the
    /// incumbent ([`PreferenceSuggester::best`]); a uniformly random canonical point before
    /// any informative comparison. It is not added as an option: add it when it is shown.
    ///
    /// Errors: a numerical failure of the maximizer that survived every safeguard.
    pub fn suggest(&self) -> Result<Vec<f64>> {
        let tags = [
            self.options.len() as u64,
            (self.comps.len() + self.ties) as u64,
        ];
        let (Some(fit), Some(best)) = (&self.fit, self.best()) else {
            let mut rng = stream(self.seed, &[tags[0], tags[1], 0]);
            return Ok(crate::random_option(&self.space, &mut rng));
        };
        let acq = Eubo {
            gp: &fit.gp,
            fixed: Some(self.options[best].clone()),
        };
        let seed = derive_seed(self.seed, &[tags[0], tags[1], 1]);
        let x = maximize_on_box(&acq, &self.space, &self.maximizer, &[], None, seed)?;
        self.space.canonicalize(&x)
    }

    /// Posterior mean and standard deviation of the latent utility at unit-cube points.
    ///
    /// Errors: no informative comparison yet; `points[i]` of the wrong length or not finite.
    pub fn belief(&self, unit_points: &[Vec<f64>]) -> Result<Vec<(f64, f64)>> {
        let fit = self.fit.as_ref().ok_or_else(|| {
            Error::State("no informative comparison yet: call prefer first".into())
        })?;
        let xs = agora_gp::rows_to_mat("points", unit_points, self.space.dim())?;
        let (m, v) = fit.gp.predict(xs.as_ref())?;
        Ok(m.into_iter().zip(v).map(|(m, v)| (m, v.sqrt())).collect())
    }

    fn check_option(&self, field: &str, i: usize) -> Result<()> {
        let n = self.options.len();
        if i < n {
            Ok(())
        } else {
            Err(Error::invalid(
                field,
                format!("unknown option {i}; options are 0..{n} (add_option returns them)"),
            ))
        }
    }

    /// Record checked comparisons (self-comparisons as ties) and refit once; on a failed
    /// fit nothing changes.
    fn record(&mut self, pairs: &[(usize, usize)]) -> Result<()> {
        let mut comps = self.comps.clone();
        let mut ties = self.ties;
        for &(w, l) in pairs {
            if w == l {
                ties += 1;
            } else {
                comps.push(Comparison::new(w, l));
            }
        }
        if comps.len() > self.comps.len() {
            let fit = self.fitted(&comps)?;
            self.hyper = Some(fit.gp.kernel().params());
            self.fit = Some(fit);
        }
        self.comps = comps;
        self.ties = ties;
        Ok(())
    }

    /// The model fitted to `comps` on the options they reference, warm-started.
    fn fitted(&self, comps: &[Comparison]) -> Result<Fit> {
        let mut rows: Vec<usize> = comps.iter().flat_map(|c| [c.winner, c.loser]).collect();
        rows.sort_unstable();
        rows.dedup();
        let row_of = |i: usize| rows.binary_search(&i).unwrap_or_default();
        let model_comps = comps
            .iter()
            .map(|c| Comparison::new(row_of(c.winner), row_of(c.loser)))
            .collect();
        let x = Mat::from_fn(rows.len(), self.space.dim(), |r, j| {
            self.options[rows[r]][j]
        });
        let (gp, _) = PreferenceGp::fit(x, model_comps, &self.model, self.hyper.as_deref())?;
        Ok(Fit { gp, rows })
    }
}
