//! Social BO's constrained MAP, MLEs and confidence bounds against IPOPT (casadi 3.8.2,
//! IPOPT 3.14.19) on the recorded cases of conformance/sbo-map (see its README).

// Only the fixture listing is used here.
#[allow(dead_code)]
mod common;

use agora_core::Channel;
use agora_gp::social::{SocialConfig, SocialModel, SocialPrior, Vote};
use agora_gp::{Stationary, StationaryKind};
use serde_json::Value;

fn num(v: &Value) -> f64 {
    v.as_f64().expect("number")
}

fn model(case: &Value, separate: bool) -> SocialModel {
    let n = case["n"].as_u64().unwrap() as usize;
    let d = case["d"].as_u64().unwrap() as usize;
    let mut cfg = SocialConfig::paper(n);
    cfg.bound = num(&case["L"]);
    cfg.jitter = num(&case["jitter"]);
    cfg.prior = SocialPrior {
        delta_a: num(&case["delta_a"]),
        kappa: num(&case["kappa"]),
        xi: num(&case["xi"]),
    };
    cfg.beta = num(&case["beta"]);
    cfg.beta_u = num(&case["beta_u"]);
    cfg.beta_v = num(&case["beta_v"]);
    cfg.separate_lr = separate;
    // The recorded cases are the paper's uniform prior.
    cfg.ridge = 0.0;
    cfg.starts = 8;
    let k = Box::new(Stationary::ard(
        StationaryKind::Rbf,
        d,
        num(&case["lengthscale"]),
    ));
    let mut s = SocialModel::new(n, k, cfg).unwrap();
    for p in case["points"].as_array().unwrap() {
        let x: Vec<f64> = p.as_array().unwrap().iter().map(num).collect();
        s.add_point(&x).unwrap();
    }
    for v in case["votes"].as_array().unwrap() {
        s.add_vote(Vote {
            channel: if v["kind"] == "public" {
                Channel::Public
            } else {
                Channel::Private
            },
            agent: v["agent"].as_u64().unwrap() as usize,
            a: v["a"].as_u64().unwrap() as usize,
            b: v["b"].as_u64().unwrap() as usize,
            a_wins: v["y"].as_u64().unwrap() == 1,
        })
        .unwrap();
    }
    s
}

#[test]
fn map_and_mles_match_ipopt() {
    let mut worst: f64 = 0.0;
    let mut worst_bound: f64 = 0.0;
    for file in common::fixture_files("sbo-map") {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let mut s = model(&case, false);
        let fit = s.refit(0).unwrap().clone();
        let reference = num(&case["map"]["objective"]);
        let rel = (fit.objective - reference) / reference.abs();
        // agora's MAP is at least as good as IPOPT's best of 20 starts, within 1e-6.
        assert!(
            rel > -1e-6,
            "{}: agora {} vs IPOPT {reference}",
            file.display(),
            fit.objective
        );
        assert!(
            fit.kkt[1] < 1e-8,
            "{}: feasibility {:?}",
            file.display(),
            fit.kkt
        );
        worst = worst.max(rel.abs());
        let mle_u = s.mle(Channel::Private).unwrap();
        let mle_v = s.mle(Channel::Public).unwrap();
        for (key, ours) in [("mle_u", mle_u), ("mle_v", mle_v)] {
            let r = num(&case[key]["objective"]);
            assert!(
                (ours - r).abs() <= 1e-6 * (1.0 + r.abs()),
                "{}: {key} agora {ours} vs IPOPT {r}",
                file.display()
            );
        }
        // Confidence bounds over the joint set J ≥ Ĵ − β.
        for b in case["bounds_joint_only"].as_array().unwrap() {
            let x: Vec<f64> = b["x_new"].as_array().unwrap().iter().map(num).collect();
            let agent = b["agent"].as_u64().unwrap() as usize;
            let (lo, hi) = s.bounds_at(&x, agent).unwrap();
            let (rl, rh) = (num(&b["lcb"]["value"]), num(&b["ucb"]["value"]));
            assert!(
                hi >= rh - 1e-4 && lo <= rl + 1e-4,
                "{}: x {x:?} agent {agent}: agora [{lo}, {hi}] vs IPOPT [{rl}, {rh}]",
                file.display()
            );
            let mid = s.map_at(&x).unwrap()[agent];
            assert!(lo <= mid + 1e-6 && mid <= hi + 1e-6);
            worst_bound = worst_bound.max((lo - rl).abs()).max((hi - rh).abs());
        }
        // The printed problem (52b) with the separate likelihood constraints: recorded
        // where IPOPT found the set non-empty (case 0).
        let mut full = model(&case, true);
        full.refit(0).unwrap();
        for b in case["bounds"].as_array().unwrap() {
            if b["ucb"]["value"].is_null() {
                continue;
            }
            let x: Vec<f64> = b["x_new"].as_array().unwrap().iter().map(num).collect();
            let agent = b["agent"].as_u64().unwrap() as usize;
            let (lo, hi) = full.bounds_at(&x, agent).unwrap();
            let (rl, rh) = (num(&b["lcb"]["value"]), num(&b["ucb"]["value"]));
            assert!(
                hi >= rh - 1e-4 && lo <= rl + 1e-4,
                "{} (separate): x {x:?} agent {agent}: agora [{lo}, {hi}] vs IPOPT [{rl}, {rh}]",
                file.display()
            );
            worst_bound = worst_bound.max((lo - rl).abs()).max((hi - rh).abs());
        }
    }
    println!(
        "largest relative MAP objective difference: {worst:.2e}; largest bound difference: {worst_bound:.2e}"
    );
}
