//! A group decides by show of hands: three colleagues vote on pairs of office settings
//! (temperature and fan speed), the majority's choice is learned from, and the group's
//! favourite so far is printed. The colleagues are simulated by a small [`Respondent`]:
//! each votes for the option closer to their own ideal.
//!
//! Run with `cargo run --release -p agora-methods --example group_vote`.

use agora_core::{Answer, AnswerKind, Error, Param, Point, Query, QueryKind, Respondent, Space};
use agora_methods::registry::{self, Setup};

/// Each colleague's ideal (°C, fan speed 0–3); 1 °C feels as far as one fan step.
struct Colleagues {
    space: Space,
    ideals: Vec<[f64; 2]>,
}

impl Respondent for Colleagues {
    fn answer(&mut self, query: &Query) -> agora_core::Result<Answer> {
        let QueryKind::GroupVote { points, .. } = &query.kind else {
            return Err(Error::unsupported_query("colleagues", query));
        };
        let settings = points
            .iter()
            .map(|p| match p {
                Point::Unit(u) => self.space.to_user_reals(u),
                Point::Index(_) => Err(Error::invalid("points", "the settings are a box")),
            })
            .collect::<agora_core::Result<Vec<_>>>()?;
        let far = |x: &[f64], c: &[f64; 2]| (x[0] - c[0]).powi(2) + (x[1] - c[1]).powi(2);
        let second = |c| far(&settings[1], c) < far(&settings[0], c);
        let votes = self
            .ideals
            .iter()
            .map(|c| Some(usize::from(second(c))))
            .collect();
        Ok(Answer {
            query_id: query.id,
            kind: AnswerKind::Votes { votes },
        })
    }
}

fn main() -> agora_core::Result<()> {
    let space = Space::boxed(vec![
        Param::Real {
            name: "temperature".into(),
            lo: 18.0,
            hi: 26.0,
        },
        Param::Real {
            name: "fan".into(),
            lo: 0.0,
            hi: 3.0,
        },
    ])?;
    let names: Vec<String> = ["ada", "ben", "cleo"].map(String::from).to_vec();
    let setup = Setup::new(space.clone(), 7).with_participants(names);
    let mut strategy = registry::build("group-pbo", &[], setup)?;
    let mut group = Colleagues {
        space: space.clone(),
        ideals: vec![[20.5, 2.0], [22.0, 1.0], [24.5, 0.5]],
    };

    for _ in 0..20 {
        let query = strategy.ask()?;
        strategy.tell(&group.answer(&query)?)?;
    }
    if let Some((Point::Unit(u), _)) = strategy.recommend() {
        let x = space.to_user_reals(&u)?;
        println!("the group's choice: {:.1} °C, fan {:.1}", x[0], x[1]);
    }
    Ok(())
}
