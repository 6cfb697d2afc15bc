//! The report sections of the tuning (n = 5, n = 50) and traffic experiments: a table per
//! task and its two claims (smaller ρ gives lower unfairness; individual rationality
//! against solo GP-UCB), each judged by [`crate::stats::RULE`].

use super::metrics::{
    CboRun, CboSummary, final_party_sr, per_seed, summarize_with, unfairness_avg,
};
use super::report::pm3;
use super::traffic::WorstCase;
use super::tuning::TUNING_PARTIES;
use crate::stats::{self, Better, median};
use crate::table::Table;
use agora_core::Result;
use std::fmt::Write as _;

/// `ρ` of a collaborative variant label (`rho=0.6`, `n=50 rho=0.9`); `None` for solo.
fn label_rho(label: &str) -> Option<f64> {
    label.split("rho=").nth(1)?.split(' ').next()?.parse().ok()
}

/// The median party's final simple regret of a run.
fn median_party_sr(r: &CboRun, f_star: f64) -> f64 {
    median(&final_party_sr(r, f_star))
}

/// A task's table and its two claims (smaller ρ gives lower unfairness; at the largest ρ
/// the median party's simple regret is below solo GP-UCB's).
pub fn task_markdown(heading: &str, intro: &str, runs: &[CboRun], f_star: f64) -> Result<String> {
    let mut md = format!("\n## {heading}\n\n{intro}\n\n");
    let sums = summarize_with(runs, f_star);
    let mut t = Table::new(&[
        "variant",
        "runs",
        "R_T/n",
        "time-avg unfairness",
        "unfairness at T",
        "worst SR at T",
        "avg SR at T",
        "median party SR at T (median over runs)",
    ]);
    let mut med = std::collections::BTreeMap::new();
    for s in &sums {
        let per_run: Vec<f64> = runs
            .iter()
            .filter(|r| r.variant == s.variant)
            .map(|r| median_party_sr(r, f_star))
            .collect();
        let m = median(&per_run);
        med.insert(s.variant.clone(), m);
        t.row([
            s.variant.clone(),
            s.runs.to_string(),
            pm3(s.r_over_n),
            pm3(s.unfairness_avg),
            pm3(s.unfairness_final),
            pm3(s.worst_sr),
            pm3(s.avg_sr),
            format!("{m:.4}"),
        ]);
    }
    md.push_str(&t.markdown());
    let mut collab: Vec<(f64, &CboSummary)> = sums
        .iter()
        .filter(|s| !s.variant.ends_with(" vary"))
        .filter_map(|s| label_rho(&s.variant).map(|r| (r, s)))
        .collect();
    collab.sort_by(|a, b| b.0.total_cmp(&a.0));
    if let (Some((r_hi, hi)), Some((r_lo, lo))) = (collab.first(), collab.last())
        && r_hi > r_lo
    {
        let unfair = |v: &str| per_seed(runs, v, f_star, |_, m| unfairness_avg(m));
        let j = stats::verdict_by_seed(&unfair(&lo.variant), &unfair(&hi.variant), Better::Lower)?;
        let _ = writeln!(
            md,
            "\n- **Smaller ρ gives lower unfairness**: {} — time-averaged unfairness {} (ρ = {r_hi} minus ρ = {r_lo}: \
             {}).",
            j.verdict.label(),
            collab
                .iter()
                .map(|(r, s)| format!("ρ = {r} {}", pm3(s.unfairness_avg)))
                .collect::<Vec<_>>()
                .join(", "),
            j.describe(3)
        );
    }
    let solo = sums.iter().find(|s| label_rho(&s.variant).is_none());
    if let (Some((r_hi, hi)), Some(solo)) = (collab.first(), solo) {
        let (c, s) = (med[&hi.variant], med[&solo.variant]);
        let sr = |v: &str| per_seed(runs, v, f_star, |r, _| median_party_sr(r, f_star));
        let j = stats::verdict_by_seed(&sr(&hi.variant), &sr(&solo.variant), Better::Lower)?;
        let _ = writeln!(
            md,
            "- **Individual rationality at ρ = {r_hi}: the median party's simple regret is below solo GP-UCB's**: {} — \
             median over runs of the median party's simple regret {c:.4} (collaborative) vs {s:.4} (solo); solo minus \
             collaborative, {}; worst party {} vs {}.",
            j.verdict.label(),
            j.describe(4),
            pm3(hi.worst_sr),
            pm3(solo.worst_sr)
        );
        md.push_str(&super::rationality::claims_markdown(
            runs,
            f_star,
            &hi.variant,
            &solo.variant,
        )?);
    }
    md.push_str(&vary_claims(runs, f_star)?);
    Ok(md)
}

/// The claims of the varying-c1 runs (labels `… rho=ρ vary`) beside the fixed ones (the
/// appendix's Figs. 5–7): at each ρ < 1, varying c1 lowers `R_T/n`; and with varying c1
/// the smallest ρ is still fairer (time-averaged unfairness) than ρ = 1 (whose factor is 1:
/// its fixed run is its varying run). Empty when the grid has no varying runs.
pub(super) fn vary_claims(runs: &[CboRun], f_star: f64) -> Result<String> {
    let mut md = String::new();
    let labels = super::metrics::labels(runs);
    let mut pairs: Vec<(f64, String, String)> = labels
        .iter()
        .filter(|l| l.ends_with(" vary"))
        .filter_map(|l| {
            let fixed = l.trim_end_matches(" vary").to_string();
            let rho = label_rho(&fixed)?;
            labels.contains(&fixed).then(|| (rho, fixed, l.clone()))
        })
        .collect();
    if pairs.is_empty() {
        return Ok(md);
    }
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0));
    let r = |v: &str| per_seed(runs, v, f_star, |_, m| super::metrics::r_final(m));
    let mut verdicts = Vec::new();
    let mut parts = Vec::new();
    for (_, fixed, vary) in &pairs {
        let j = stats::verdict_by_seed(&r(vary), &r(fixed), Better::Lower)?;
        verdicts.push(j.verdict);
        parts.push(format!("{vary} minus {fixed}: {}", j.describe(2)));
    }
    let _ = writeln!(
        md,
        "- **Varying c1 lowers R_T/n at ρ < 1** (Figs. 5 against 6): {} — {}.",
        stats::Verdict::all(verdicts).label(),
        parts.join("; ")
    );
    // The proposed method's fixed-c1 runs only (not BO-IFU's `ifu rho=…`).
    let top = labels
        .iter()
        .filter(|l| !l.ends_with(" vary") && !l.starts_with("ifu"))
        .filter_map(|l| label_rho(l).map(|r| (r, l)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let (Some((r_top, top)), Some((r_lo, _, lo))) = (top, pairs.last())
        && r_top > *r_lo
    {
        let unfair = |v: &str| per_seed(runs, v, f_star, |_, m| unfairness_avg(m));
        let j = stats::verdict_by_seed(&unfair(lo), &unfair(top), Better::Lower)?;
        let _ = writeln!(
            md,
            "- **With varying c1, smaller ρ still gives lower unfairness** (Fig. 7e–h): {} — time-averaged \
             unfairness, {lo} minus {top}: {}.",
            j.verdict.label(),
            j.describe(3)
        );
    }
    Ok(md)
}

/// The tuning section of the report (n = 5).
pub fn tuning_markdown(runs: &[CboRun], rounds: usize) -> Result<String> {
    task_markdown(
        &format!(
            "Hyper-parameter tuning (digits softmax regression, n = {TUNING_PARTIES}, T0 = 2, T = {rounds}, c1 = 0.01, c2 = 1)"
        ),
        "Each party tunes batch size, L2 and learning rate of a softmax regression on its own shard of the \
         digits data (standing in for the paper's mobile-sensor data, not available); regret is 1 − validation \
         accuracy. The GP is the authors' tuning GP as their scripts leave it (lengthscale 0.693, mean 0, \
         output scale = mean initial accuracy, noise variance 0.01).",
        runs,
        1.0,
    )
}

/// The CNN tuning section (n = 10).
pub fn cnn_markdown(runs: &[CboRun], rounds: usize) -> Result<String> {
    task_markdown(
        &format!(
            "Hyper-parameter tuning of a CNN (n = {}, T0 = 2, T = {rounds}, c1 = {}, c2 = 1)",
            super::tuning::CNN_PARTIES,
            super::tuning::CNN_C1
        ),
        "The paper's CNN-on-FEMNIST task (its data are not available) has a stand-in here, not a \
         reproduction: each party tunes learning rate, learning-rate decay and L2 (the authors' log-box \
         [ln 1e-5, 0]³) of the authors' small CNN (conv 16 3×3, max-pool 3, dense 8, softmax; RMSprop, batch \
         32, 20 epochs) on its own shard of the 8×8 digits images, each shard with its own writer style (a \
         one-pixel shift and a stroke weight; agora_problems::cnn_tuning). About 134 training images per \
         shard make the objective noisy. Regret is 1 − the best validation accuracy over the epochs; the GP is \
         the authors' tuning GP as their scripts leave it.",
        runs,
        1.0,
    )
}

/// The n = 50 section.
pub fn tuning50_markdown(runs: &[CboRun], rounds: usize) -> Result<String> {
    task_markdown(
        &format!("Scaling: tuning with n = 50 parties (ρ ≥ 0.9, T0 = 2, T = {rounds})"),
        &format!(
            "The digits tuning task with 50 parties; party p trains on shard p mod 5 (the authors' party s uses \
             split s % 5) with its own SGD stream. The joint acquisition is 150-dimensional and the GP grows by 50 \
             points a round ({} points at T = {rounds}), so agora uses a smaller search budget here (256 raw \
             batches, 4 starts, 60 Adam steps); the paper's n = 50 case (Fig. 14: CNN, T = 50) has no numbers \
             to compare, only its trends.",
            50 * rounds
        ),
        runs,
        1.0,
    )
}

/// The traffic section: claims plus the exact search's cost.
pub fn traffic_markdown(
    runs: &[CboRun],
    rounds: usize,
    f_star: f64,
    worst: Option<WorstCase>,
) -> Result<String> {
    let mut md = task_markdown(
        &format!(
            "Mobility-demand hotspots (traffic grid, n = 8, T0 = 6, T = {rounds}, c1 = 0.1, c2 = 1)"
        ),
        &format!(
            "The authors' traffic grid (data/traffic-grid: 2,506 valid cells, objective log(1 + demand), optimum \
             ln 96 = {f_star:.4}; the authors' regret uses log1p(96) = 4.5747, which adds 0.0104 per party and \
             round to R_t/n). Each party starts at the best of its 6 random cells and may only move to unvisited \
             cells connected to its current one (then 2, 3, … steps away); cells anyone found to have zero demand \
             count as visited for all (the appendix). The GP is the authors' `tlog44.cfg` (ℓ = (0.6276, 0.6490) \
             in cells, output scale 0.7969, mean 1.4646, noise variance 0.0117) on raw (row, col); observations \
             are the data (no noise). Every round's batch is the exact maximizer of the fair batch UCB over the \
             product of the 8 candidate sets (branch-and-bound, proven equal to exhaustive search in the tests \
             and below). The authors' traffic seeds; solo GP-UCB parties start from the same random cells."
        ),
        runs,
        f_star,
    )?;
    let collab: Vec<&CboRun> = runs
        .iter()
        .filter(|r| !r.search_batches.is_empty())
        .collect();
    let secs: Vec<f64> = collab
        .iter()
        .flat_map(|r| r.round_seconds.iter().copied())
        .collect();
    let prods: Vec<f64> = collab
        .iter()
        .flat_map(|r| r.search_batches.iter().copied())
        .collect();
    let leaves: Vec<f64> = collab
        .iter()
        .flat_map(|r| r.search_leaves.iter().map(|l| *l as f64))
        .collect();
    if !secs.is_empty() {
        let max = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
        let mean = |v: &[f64]| stats::mean_se(v).0;
        let _ = writeln!(
            md,
            "\n**Exact search cost** ({} model-based rounds): {:.2} ms per round on average (GP update, posterior \
             over the candidate pool and branch-and-bound), {:.1} ms at most; candidate products of {:.0} \
             batches on average, {:.0} at most; branch-and-bound scored {:.2}% of all batches.",
            secs.len(),
            1e3 * mean(&secs),
            1e3 * max(&secs),
            mean(&prods),
            max(&prods),
            100.0 * leaves.iter().sum::<f64>() / prods.iter().sum::<f64>().max(1.0)
        );
    }
    if let Some((t_ex, t_bb, scored, total)) = worst {
        let _ = writeln!(
            md,
            "\n**Worst case** (8 parties × 8 candidates = {total:.0} batches, 64 cells around the hotspot, ρ = 0.4): \
             exhaustive search (both cores) {t_ex:.2} s, branch-and-bound {:.2} ms scoring {scored} batches; the \
             same batch.",
            1e3 * t_bb
        );
    }
    md.push_str(
        "\nThe appendix: traffic R_t/n is high for every ρ because each party may only move to connected cells, \
         and the unfairness differences are significant only at ρ ≤ 0.4.\n",
    );
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic runs: on every seed the varying-c1 run at ρ = 0.2 has 0.1 less regret a
    /// round than the fixed one (which shares equally) and nearly equal shares; ρ = 1 gives
    /// party 0 most. Both claims hold, and the varying run is kept out of the fixed-ρ
    /// claim, whose list ends at the fixed ρ = 0.2.
    #[test]
    fn vary_claims_pair_the_fixed_and_varying_runs() {
        let mut runs = Vec::new();
        for seed in 0..4u64 {
            let o = 0.05 * seed as f64;
            let mk = |label: &str, row: Vec<f64>| {
                let mut r = CboRun::new(label, seed);
                r.f = vec![row; 5];
                r.y = r.f.clone();
                r
            };
            runs.push(mk("rho=1", vec![0.9 + o, 0.1, 0.1]));
            runs.push(mk("rho=0.2", vec![0.4 + o; 3]));
            runs.push(mk("rho=0.2 vary", vec![0.55 + o, 0.45 + o, 0.5 + o]));
            runs.push(mk("solo gp-ucb", vec![0.3 + o; 3]));
            // BO-IFU at ρ = 1 is not the proposed method's ρ = 1.
            runs.push(mk("ifu rho=1", vec![0.2 + o; 3]));
        }
        let md = vary_claims(&runs, 1.0).unwrap();
        assert!(
            md.contains("lowers R_T/n at ρ < 1** (Figs. 5 against 6): **holds**"),
            "{md}"
        );
        assert!(
            md.contains("rho=0.2 vary minus rho=0.2: paired difference 0.50 ± 0.00"),
            "{md}"
        );
        assert!(
            md.contains("still gives lower unfairness** (Fig. 7e–h): **holds**"),
            "{md}"
        );
        let task = task_markdown("t", "i", &runs, 1.0).unwrap();
        assert!(
            task.contains("ρ = 0.2 -0.000 ± 0.000 (ρ = 1 minus ρ = 0.2"),
            "{task}"
        );
    }

    #[test]
    fn labels_carry_rho() {
        assert_eq!(label_rho("rho=0.6"), Some(0.6));
        assert_eq!(label_rho("n=50 rho=0.9"), Some(0.9));
        assert_eq!(label_rho("n=50 solo gp-ucb"), None);
    }
}
