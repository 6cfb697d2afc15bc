//! `agora serve --demo`: a Social-BO meeting about an office's thermal comfort, with three
//! simulated colleagues who vote on their own, so a newcomer sees a meeting run at once and
//! can join it as the fourth participant, `you`.
//!
//! The colleagues are the three occupants of the thermal-comfort task (PMV after ISO 7730,
//! `agora_problems::pmv`): each prefers the option with the higher comfort utility. In
//! public they vote by their socially influenced utility `v = A u` (the task's graph), in
//! private by their own `u`, as Social BO assumes. They cast one ballot every `delay`.

use crate::{ApiError, AppState};
use agora_core::{Point, QueryKind, Space};
use agora_problems::social::SocialTask;
use agora_study::live::{Ballot, MethodSpec, StudySpec};
use std::time::Duration;

/// The demo study's name.
pub const DEMO_STUDY: &str = "comfort-demo";

/// The simulated colleagues (thermal-comfort agents 0, 1, 2).
pub const BOTS: [&str; 3] = ["ada", "ben", "cleo"];

/// The demo meeting: temperature and air speed, Social BO with an egalitarian welfare.
pub fn demo_spec() -> StudySpec {
    let task = SocialTask::by_name("thermal").expect("the thermal task exists");
    StudySpec {
        name: DEMO_STUDY.into(),
        description: "Office thermal comfort: which temperature and air speed suit the whole \
                      team? Vote for the option you would rather work in."
            .into(),
        space: Space::reals(&[(15.0, 35.0), (0.3, 1.5)])
            .and_then(|s| match s {
                Space::Box { mut params } => {
                    for (p, (name, _, _)) in params.iter_mut().zip(&task.inputs) {
                        if let agora_core::Param::Real { name: n, .. } = p {
                            *n = name.clone();
                        }
                    }
                    Space::boxed(params)
                }
                s => Ok(s),
            })
            .expect("valid demo space"),
        method: MethodSpec::Social {
            variant: "sbo".into(),
            rho: task.rho.max(0.1),
            q: 0.5,
            init_pairs: 3,
            lengthscale: 0.2,
            candidates: 64,
        },
        seed: 7,
        participants: vec!["you".into(), "ada".into(), "ben".into(), "cleo".into()],
        round_seconds: None,
        media: Vec::new(),
    }
}

/// The simulated colleagues' ballot on the open query, if it is a group vote they are
/// asked in.
fn bot_ballot(task: &SocialTask, bot: usize, kind: &QueryKind) -> Option<Ballot> {
    let QueryKind::GroupVote {
        points, channel, ..
    } = kind
    else {
        return None;
    };
    let u: Vec<Vec<f64>> = points
        .iter()
        .map(|p| match p {
            Point::Unit(x) => Some(x.clone()),
            Point::Index(_) => None,
        })
        .collect::<Option<_>>()?;
    let score = |x: &[f64]| match channel {
        agora_core::Channel::Public => task.public_utilities(x).ok().map(|u| u[bot]),
        agora_core::Channel::Private => task.utilities_at(x).ok().map(|u| u[bot]),
    };
    let (a, b) = (score(&u[0])?, score(&u[1])?);
    let choice = if (a - b).abs() < 1e-9 {
        None
    } else {
        Some(usize::from(b > a))
    };
    Some(Ballot::Vote { choice })
}

/// Let the colleagues vote, one ballot every `delay`, for as long as the server runs.
pub async fn run_bots(state: AppState, delay: Duration) {
    let task = SocialTask::by_name("thermal").expect("the thermal task exists");
    loop {
        tokio::time::sleep(delay).await;
        let open = state
            .inspect(DEMO_STUDY, |s| {
                s.pending().map(|q| {
                    let voted = s
                        .pending_view(&agora_study::live::Actor::Facilitator)
                        .map(|v| v.voted)
                        .unwrap_or_default();
                    (q.clone(), voted)
                })
            })
            .await;
        let Ok(Some((q, voted))) = open else { continue };
        let next = BOTS
            .iter()
            .enumerate()
            .find(|(_, b)| !voted.iter().any(|v| v == *b));
        if let Some((k, bot)) = next
            && let Some(ballot) = bot_ballot(&task, k, &q.kind)
        {
            let _: Result<_, ApiError> = state.cast(DEMO_STUDY, bot, q.id, ballot).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::Channel;

    #[test]
    fn the_demo_is_valid_and_its_colleagues_vote_by_their_comfort() {
        demo_spec().validate().unwrap();
        let task = SocialTask::by_name("thermal").unwrap();
        // (24 °C, 1.5 m/s) against (27 °C, 0.9 m/s). Privately ben (24 °C is his ideal)
        // prefers the first and cleo (who likes it warm) the second; in public each leans
        // toward the others (the task's graph) and the votes of both flip. ada likes
        // 15 °C and prefers the cooler option either way.
        let a = Point::Unit(vec![0.45, 1.0]);
        let b = Point::Unit(vec![0.6, 0.5]);
        let votes = |channel| {
            let q = QueryKind::GroupVote {
                points: vec![a.clone(), b.clone()],
                channel,
                agents: vec![],
            };
            (0..3)
                .map(|k| match bot_ballot(&task, k, &q) {
                    Some(Ballot::Vote { choice }) => choice,
                    other => panic!("{other:?}"),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(votes(Channel::Private), vec![Some(0), Some(0), Some(1)]);
        assert_eq!(votes(Channel::Public), vec![Some(0), Some(1), Some(0)]);
    }
}
