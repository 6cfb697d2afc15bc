//! Time the social model's pieces on the toy: `... --example sbo_prof -- <points> <L>`.
#![allow(clippy::needless_range_loop)]
use agora_core::Channel;
use agora_gp::social::{SocialConfig, SocialModel, Vote};
use agora_gp::{Stationary, StationaryKind};
use std::time::Instant;
fn main() -> agora_core::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    let m: usize = a[1].parse().unwrap();
    let l: f64 = a[2].parse().unwrap();
    let task = agora_problems::social::SocialTask::by_name("toy")?;
    let mut cfg = SocialConfig::paper(2);
    cfg.bound = l;
    if let Some(t) = a.get(3) {
        let t: f64 = t.parse().unwrap();
        cfg.solver.opt_tol = t;
        cfg.solver.f_tol = t * 1e-3;
        cfg.solver.inner.pgtol = t * 1e-1;
        cfg.solver.inner.ftol = t * 1e-5;
    }
    let mut s = SocialModel::new(
        2,
        Box::new(Stationary::ard(StationaryKind::Rbf, 1, 0.1)),
        cfg,
    )?;
    let mut rng = agora_math::rng::stream(1, &[]);
    use rand::RngExt;
    for k in 0..m {
        let x = rng.random::<f64>();
        s.add_point(&[x])?;
        if k > 0 {
            let p = s.points();
            let (xa, xb) = (p[(k, 0)], p[(k - 1, 0)]);
            for (ch, f) in [
                (
                    Channel::Public,
                    task.public_utilities(&[xa])?
                        .iter()
                        .zip(task.public_utilities(&[xb])?)
                        .map(|(a, b)| a - b)
                        .collect::<Vec<_>>(),
                ),
                (
                    Channel::Private,
                    task.utilities_at(&[xa])?
                        .iter()
                        .zip(task.utilities_at(&[xb])?)
                        .map(|(a, b)| a - b)
                        .collect(),
                ),
            ] {
                if ch == Channel::Private && k % 3 != 0 {
                    continue;
                }
                for i in 0..2 {
                    let p = 1.0 / (1.0 + (-f[i]).exp());
                    s.add_vote(Vote {
                        channel: ch,
                        agent: i,
                        a: k,
                        b: k - 1,
                        a_wins: rng.random::<f64>() < p,
                    })?;
                }
            }
        }
    }
    let t = Instant::now();
    let fit = s.refit(0)?.clone();
    println!(
        "refit {:.3}s converged {} kkt {:?} modes {}",
        t.elapsed().as_secs_f64(),
        fit.converged,
        fit.kkt,
        fit.modes.len()
    );
    let t = Instant::now();
    let w = agora_math::welfare::Welfare::Gini { rho: 1.0 };
    let acq = agora_acq::OptimisticImprovement::new(&s, m - 1, &w)?;
    for k in 0..128 {
        acq.screen(&[k as f64 / 128.0])?;
    }
    println!("screen x128 {:.4}s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let v = acq.value(&[0.8])?;
    println!("optimism {v:.3} {:.3}s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let wu = s.difference_widths(m - 1, m - 2)?;
    println!("widths {wu:?} {:.3}s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let wv = s.public_difference_widths(m - 1, m - 2)?;
    println!("public widths {wv:?} {:.3}s", t.elapsed().as_secs_f64());
    Ok(())
}
