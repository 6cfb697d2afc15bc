//! The mobility-demand hotspot experiment of collaborative BO on the authors' traffic grid
//! (n = 8 parties moving along the grid; docs/notes/collaborative-fair-bo.md §4), and the
//! cost of its exact batch search.

use super::metrics::{CboRun, drive_parties};
use super::solo::SideBySide;
use agora_core::Result;
use agora_methods::{Graph, GraphCbo, GraphCboConfig, GraphScoring, GraphSearch};
use agora_problems::traffic::TrafficGrid;
use std::time::Instant;

/// The authors' traffic seeds (note §2).
pub const TRAFFIC_SEEDS: [u64; 10] = [911, 71, 44, 2525, 6023, 556, 3399, 4863, 5269, 9973];
/// Rounds per traffic run, random rounds included.
pub const TRAFFIC_T: usize = 60;

/// The grid's cells as a [`Graph`] of `(row, col)` coordinates and neighbours.
fn graph_of(g: &TrafficGrid) -> Graph {
    Graph {
        coords: g.coords.iter().map(|c| c.to_vec()).collect(),
        neighbors: g.neighbors.clone(),
    }
}

/// The traffic grid as a [`Graph`], its cell values and the optimum.
pub fn traffic_graph() -> Result<(Graph, Vec<f64>, f64)> {
    let g = TrafficGrid::load()?;
    let f_star = g.optimum_value();
    Ok((graph_of(&g), g.values, f_star))
}

/// One traffic run: the proposed method at `Some(ρ)` (n = 8, T0 = 6, c1 = 0.1, c2 = 1,
/// exact branch-and-bound search) or solo GP-UCB per party (`None`: each party alone with
/// its own GP and the same candidate rule; its random cells are the same as the
/// collaborative run's, as each party's stream depends on the seed and party only).
/// Observations are the data's values (no noise): the grid answers.
pub fn run_traffic(rho: Option<f64>, seed: u64, rounds: usize) -> Result<CboRun> {
    run_traffic_with(rho, false, seed, rounds, GraphSearch::BranchAndBound)
}

/// [`run_traffic`] with a chosen exact search; with `vary` (and `Some(ρ)`), c1 scaled once
/// by the weights' factor and the label ending in ` vary`.
pub fn run_traffic_with(
    rho: Option<f64>,
    vary: bool,
    seed: u64,
    rounds: usize,
    search: GraphSearch,
) -> Result<CboRun> {
    let mut grid = TrafficGrid::load()?;
    let graph = graph_of(&grid);
    let base = GraphCboConfig {
        search,
        vary_c1: vary && rho.is_some(),
        ..GraphCboConfig::traffic(rho.unwrap_or(1.0))
    };
    let n_init = base.n_init;
    match rho {
        Some(r) => {
            let mut s = GraphCbo::new(graph, base, seed)?;
            let run = CboRun::new(format!("rho={r}{}", if vary { " vary" } else { "" }), seed);
            drive_parties(&mut s, &mut grid, rounds, n_init, None, run, |s, run| {
                let st = s.last_search().unwrap_or_default();
                run.search_batches.push(st.batches);
                run.search_leaves.push(st.leaves);
            })
        }
        None => {
            // Party i of the solo runs uses party i's random stream of the collaborative
            // run: a one-party instance seeded so that its party 0 stream equals it.
            let solo = (0..base.parties)
                .map(|i| {
                    let c = GraphCboConfig {
                        parties: 1,
                        scoring: GraphScoring::SoloUcb,
                        ..base.clone()
                    };
                    let mut s = GraphCbo::new(graph.clone(), c, seed)?;
                    s.set_stream_party(i);
                    Ok(s)
                })
                .collect::<Result<Vec<_>>>()?;
            let mut s = SideBySide::new(solo)?;
            let run = CboRun::new("solo gp-ucb", seed);
            drive_parties(&mut s, &mut grid, rounds, n_init, None, run, |_, _| {})
        }
    }
}

/// `(exhaustive seconds, branch-and-bound seconds, batches scored, product size)`.
pub type WorstCase = (f64, f64, u64, f64);

/// The exact traffic search on a full `8^8` instance: (exhaustive seconds, branch-and-bound
/// seconds, batches scored by branch-and-bound, product size). Errors if the two disagree.
pub fn traffic_worst_case() -> Result<WorstCase> {
    let (graph, values, _) = traffic_graph()?;
    // The GP on 48 random cells; 64 valid cells nearest the hotspot, 8 per party.
    let cfg = GraphCboConfig::traffic(0.4);
    let mut x = Vec::new();
    let mut y = Vec::new();
    let mut rng = agora_math::rng::stream(7, &[0x88]);
    use rand::RngExt;
    for _ in 0..48 {
        let c = rng.random_range(0..graph.coords.len());
        x.push(graph.coords[c].clone());
        y.push(values[c]);
    }
    let d = 2;
    let xm = faer::Mat::from_fn(x.len(), d, |i, j| x[i][j]);
    let mut k = agora_gp::Stationary::ard(agora_gp::StationaryKind::Rbf, d, 1.0);
    use agora_gp::Kernel as _;
    k.set_params(
        &cfg.gp
            .lengthscales
            .iter()
            .map(|l| l.ln())
            .collect::<Vec<_>>(),
    )?;
    let kern = Box::new(agora_gp::Scale::new(Box::new(k), cfg.gp.outputscale));
    let gp = agora_gp::ExactGp::new(xm, &y, kern, cfg.gp.noise_var, cfg.gp.mean)?;
    let hot = (0..values.len())
        .max_by(|a, b| values[*a].total_cmp(&values[*b]))
        .expect("cells");
    let mut near: Vec<(f64, usize)> = (0..graph.coords.len())
        .map(|c| {
            let dr = graph.coords[c][0] - graph.coords[hot][0];
            let dc = graph.coords[c][1] - graph.coords[hot][1];
            (dr * dr + dc * dc, c)
        })
        .collect();
    near.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let pool: Vec<usize> = near.iter().take(64).map(|p| p.1).collect();
    let xs = faer::Mat::from_fn(64, d, |i, j| graph.coords[pool[i]][j]);
    let (mu, cov) = gp.predict_cov(xs.as_ref())?;
    let cands: Vec<Vec<usize>> = (0..8)
        .map(|p| (0..8).map(|k| (k * 8 + p * 3) % 64).collect())
        .collect();
    let lambda: Vec<f64> = (0..8).map(|i| 10.0 + 1.5 * i as f64).collect();
    let welfare = agora_math::welfare::Welfare::gini(0.4)?;
    let problem = agora_acq::graph::GraphBatch {
        mu: &mu,
        cov: cov.as_ref(),
        candidates: &cands,
        lambda: &lambda,
        welfare,
        alpha: agora_acq::fair::alpha_t(0.1, 1.0, &welfare.weights(8), 2, 30),
        noise_var: cfg.gp.noise_var,
    };
    let t0 = Instant::now();
    let ex = problem.exhaustive()?;
    let t_ex = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let bb = problem.branch_and_bound()?;
    let t_bb = t1.elapsed().as_secs_f64();
    if ex.choice != bb.choice || ex.value != bb.value {
        return Err(agora_core::Error::Numerical(format!(
            "branch-and-bound {:?} ({}) differs from exhaustive {:?} ({})",
            bb.choice, bb.value, ex.choice, ex.value
        )));
    }
    Ok((t_ex, t_bb, bb.leaves, ex.batches))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_searches_agree_and_parties_move_along_the_grid() {
        let (graph, values, f_star) = traffic_graph().unwrap();
        assert!((f_star - 96f64.ln()).abs() < 1e-5);
        let a = run_traffic_with(Some(0.4), false, 44, 16, GraphSearch::BranchAndBound).unwrap();
        let b = run_traffic_with(Some(0.4), false, 44, 16, GraphSearch::Exhaustive).unwrap();
        assert_eq!(a.f, b.f);
        assert_eq!(a.search_leaves.len(), 10);
        assert!(
            a.search_leaves
                .iter()
                .zip(&b.search_leaves)
                .all(|(x, y)| x <= y)
        );
        assert!(values.iter().all(|v| (0.0..=f_star).contains(v)));
        assert_eq!(graph.coords.len(), 2506);
        // Solo GP-UCB party i shares party i's random cells with the collaborative run.
        let solo = run_traffic(None, 44, 6).unwrap();
        assert_eq!(solo.f, a.f[..6].to_vec());
    }
}
