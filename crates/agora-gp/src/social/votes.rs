//! Votes and their Bradley–Terry likelihood (Social BO paper, Eq. 2): agent `i` prefers `a`
//! to `b` with probability `σ(f_i(a) − f_i(b))`, `f = u` on the private channel and `f = v`
//! on the public one.

use agora_core::Channel;

/// One agent's vote: `a_wins` is whether agent `agent` preferred point `a` to point `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Vote {
    /// Public or private.
    pub channel: Channel,
    /// Agent index.
    pub agent: usize,
    /// First point (index into the model's points).
    pub a: usize,
    /// Second point.
    pub b: usize,
    /// `a` preferred.
    pub a_wins: bool,
}

/// `(log σ(z), σ(−z))` from one exponential, `e^{−|z|}`: the same values as the two
/// textbook branches (`−ln(1 + e^{−z})` / `z − ln(1 + e^{z})`, and `1 / (1 + e^{z})` /
/// `e^{−z} / (1 + e^{−z})`), which evaluate that same exponential.
fn log_sigmoid_and_complement(z: f64) -> (f64, f64) {
    if z >= 0.0 {
        let e = (-z).exp();
        (-e.ln_1p(), e / (1.0 + e))
    } else {
        let e = z.exp();
        (z - e.ln_1p(), 1.0 / (1.0 + e))
    }
}

fn log_sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        -(-z).exp().ln_1p()
    } else {
        z - z.exp().ln_1p()
    }
}

pub(super) fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// Bradley–Terry log-likelihood of `votes` under utilities `f` (`n × m`, agent-major), with
/// its gradient added into `g` (same layout).
pub(super) fn bt_loglik(votes: &[Vote], f: &[f64], m: usize, g: Option<&mut [f64]>) -> f64 {
    let mut ll = 0.0;
    match g {
        Some(g) => {
            for v in votes {
                let s = if v.a_wins { 1.0 } else { -1.0 };
                let d = f[v.agent * m + v.a] - f[v.agent * m + v.b];
                let (l, p) = log_sigmoid_and_complement(s * d);
                ll += l;
                let gd = s * p;
                g[v.agent * m + v.a] += gd;
                g[v.agent * m + v.b] -= gd;
            }
        }
        None => {
            for v in votes {
                let s = if v.a_wins { 1.0 } else { -1.0 };
                ll += log_sigmoid(s * (f[v.agent * m + v.a] - f[v.agent * m + v.b]));
            }
        }
    }
    ll
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_exponential_gives_the_textbook_values() {
        let sigmoid = |z: f64| {
            if z >= 0.0 {
                1.0 / (1.0 + (-z).exp())
            } else {
                let e = z.exp();
                e / (1.0 + e)
            }
        };
        for k in -400..=400 {
            let z = k as f64 * 0.173;
            let (l, p) = log_sigmoid_and_complement(z);
            assert_eq!(l.to_bits(), log_sigmoid(z).to_bits(), "{z}");
            assert_eq!(p.to_bits(), sigmoid(-z).to_bits(), "{z}");
        }
    }
}
