//! DSBO's role-based HOM policy (`agora_problems::hom`) for Python: the same policy the
//! Rust experiments roll out, acting on local states a Python environment gives (e.g.
//! MaMuJoCo's observation dictionaries, through `agora.mamujoco`), and its surrogate policy
//! Hessian for DSBO's structure phase.

use crate::errors::{invalid, py_err};
use agora_problems::hom::{
    Ablation, HessianOptions, HessianReduction, HomConfig, HomPolicy as CoreHom, HomSize,
};
use pyo3::prelude::*;

/// The role-based HOM policy of DSBO (role assignment, role interaction, message passing)
/// for `agents` agents with local states of length `state_dim` and actions of length
/// `action_dim` in (-1, 1).
///
/// `size`: `"med"` (3 layers x 4 neurons, the paper's default) or `"sm"` (1 x 2);
/// `ablation`: `"full"`, `"no_ra"` (role assignment off), `"no_ri"` (role interaction off)
/// or `"ctde"` (one MLP shared by all agents); `rounds`: message-passing rounds;
/// `max_role_heads`: the cap on learned role heads. The parameter vector θ has `dim`
/// entries; DSBO searches the box [-1, 1]^dim.
#[pyclass(module = "agora", name = "HomPolicy", frozen)]
pub struct HomPolicy {
    policy: CoreHom,
}

fn ablation_of(name: &str) -> PyResult<Ablation> {
    Ok(match name {
        "full" => Ablation::Full,
        "no_ra" => Ablation::NoRoleAssignment,
        "no_ri" => Ablation::NoRoleInteraction,
        "ctde" => Ablation::Ctde,
        other => {
            return Err(invalid(
                "ablation",
                format!("unknown ablation {other:?}; allowed: full, no_ra, no_ri, ctde"),
            ));
        }
    })
}

fn size_of(name: &str) -> PyResult<HomSize> {
    Ok(match name {
        "med" => HomSize::Med,
        "sm" => HomSize::Sm,
        other => {
            return Err(invalid(
                "size",
                format!("unknown size {other:?}; allowed: med, sm"),
            ));
        }
    })
}

#[pymethods]
impl HomPolicy {
    #[new]
    #[pyo3(signature = (agents, state_dim, action_dim, *, size = "med", ablation = "full", rounds = 2, max_role_heads = 4))]
    fn new(
        agents: usize,
        state_dim: usize,
        action_dim: usize,
        size: &str,
        ablation: &str,
        rounds: usize,
        max_role_heads: usize,
    ) -> PyResult<HomPolicy> {
        let config = HomConfig {
            num_agents: agents,
            state_dim,
            action_dim,
            size: size_of(size)?,
            ablation: ablation_of(ablation)?,
            rounds,
            max_role_heads,
        };
        Ok(HomPolicy {
            policy: CoreHom::new(config).map_err(py_err)?,
        })
    }

    /// Length of θ.
    #[getter]
    fn dim(&self) -> usize {
        self.policy.num_params()
    }

    /// Number of agents.
    #[getter]
    fn agents(&self) -> usize {
        self.policy.config().num_agents
    }

    /// Length of each agent's local state.
    #[getter]
    fn state_dim(&self) -> usize {
        self.policy.config().state_dim
    }

    /// Length of each agent's action.
    #[getter]
    fn action_dim(&self) -> usize {
        self.policy.config().action_dim
    }

    /// The named slices of θ: `[(name, start, end), ...]` (e.g. `theta_g_v`, the edge net).
    fn slices(&self) -> Vec<(String, usize, usize)> {
        self.policy
            .slices()
            .iter()
            .map(|s| (s.name.clone(), s.range.start, s.range.end))
            .collect()
    }

    /// One action per agent (lists of `action_dim` numbers in (-1, 1)) for one local state
    /// per agent (`states[agent]`, `state_dim` numbers each), under parameters `theta`.
    fn act(&self, theta: Vec<f64>, states: Vec<Vec<f64>>) -> PyResult<Vec<Vec<f64>>> {
        self.policy.act(&theta, &states).map_err(py_err)
    }

    /// The surrogate policy Hessian (DSBO §4.5): the relaxed policy's exact Hessian with
    /// respect to θ at every visited joint state (`visited[t][agent]`), combined over the
    /// actions (`reduction`: `"abs_projection"`, the default, `"projection"` or `"abs_sum"`)
    /// and averaged over the states; a `dim` x `dim` list of rows. Releases the GIL.
    #[pyo3(signature = (theta, visited, *, seed = 0, reduction = "abs_projection"))]
    fn surrogate_hessian(
        &self,
        py: Python<'_>,
        theta: Vec<f64>,
        visited: Vec<Vec<Vec<f64>>>,
        seed: u64,
        reduction: &str,
    ) -> PyResult<Vec<Vec<f64>>> {
        let reduction = match reduction {
            "abs_projection" => HessianReduction::AbsProjection,
            "projection" => HessianReduction::Projection,
            "abs_sum" => HessianReduction::AbsSum,
            other => {
                return Err(invalid(
                    "reduction",
                    format!(
                        "unknown reduction {other:?}; allowed: abs_projection, projection, abs_sum"
                    ),
                ));
            }
        };
        let options = HessianOptions {
            reduction,
            seed,
            ..HessianOptions::default()
        };
        let h = py
            .detach(|| self.policy.surrogate_hessian(&theta, &visited, &options))
            .map_err(py_err)?;
        Ok(h.rows())
    }

    fn __repr__(&self) -> String {
        let c = self.policy.config();
        format!(
            "HomPolicy(agents={}, state_dim={}, action_dim={}, dim={})",
            c.num_agents,
            c.state_dim,
            c.action_dim,
            self.policy.num_params()
        )
    }
}
