//! Studies with people: durability, exact resume, idempotent retries and who may do what.

use agora_core::{Answer, AnswerKind, Channel, Point, QueryKind, Space};
use agora_study::live::{
    Actor, Ballot, BallotRequest, Event, EventKind, LiveStudy, MethodSpec, Outcome, SqliteStore,
    Store, StudyError, StudySpec,
};
use std::sync::Arc;

fn spec(name: &str, method: MethodSpec, participants: &[&str]) -> StudySpec {
    StudySpec {
        name: name.into(),
        description: "test".into(),
        space: Space::reals(&[(15.0, 35.0), (0.3, 1.5)]).unwrap(),
        method,
        seed: 11,
        participants: participants.iter().map(|s| s.to_string()).collect(),
        round_seconds: None,
        media: Vec::new(),
    }
}

fn unit(p: &Point) -> Vec<f64> {
    match p {
        Point::Unit(u) => u.clone(),
        Point::Index(_) => panic!("box space"),
    }
}

/// A simulated rater: prefers points near `ideal`.
fn prefers(ideal: &[f64], a: &[f64], b: &[f64]) -> usize {
    let d = |x: &[f64]| {
        x.iter()
            .zip(ideal)
            .map(|(x, c)| (x - c).powi(2))
            .sum::<f64>()
    };
    usize::from(d(b) < d(a))
}

fn open_file(dir: &std::path::Path, file: &str) -> Arc<dyn Store> {
    Arc::new(SqliteStore::open(&dir.join(file)).unwrap())
}

/// The answer a simulated person gives to the study's open query.
fn simulated_answer(s: &LiveStudy) -> Answer {
    let q = s.pending().unwrap().clone();
    let kind = match &q.kind {
        QueryKind::Compare { points, .. } => AnswerKind::Choice {
            winner: prefers(&[0.3, 0.6], &unit(&points[0]), &unit(&points[1])),
            rater: Some("ann".into()),
        },
        QueryKind::Evaluate { points } => AnswerKind::Values {
            values: points
                .iter()
                .map(|p| -unit(p).iter().map(|x| (x - 0.4).powi(2)).sum::<f64>())
                .collect(),
        },
        k => panic!("unexpected {k:?}"),
    };
    Answer {
        query_id: q.id,
        kind,
    }
}

#[test]
fn a_restarted_study_asks_exactly_what_an_uninterrupted_one_asks() {
    let dir = tempfile::tempdir().unwrap();
    for (k, method) in [
        MethodSpec::from_knobs("pairs", &[]).unwrap(),
        MethodSpec::from_knobs("bo", &[]).unwrap(),
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("s{k}");
        let straight_store = open_file(dir.path(), &format!("straight{k}.db"));
        let mut straight =
            LiveStudy::create(straight_store, spec(&name, method.clone(), &["ann"])).unwrap();
        let path = format!("restarted{k}.db");
        let mut restarted =
            LiveStudy::create(open_file(dir.path(), &path), spec(&name, method, &["ann"])).unwrap();
        for _ in 0..14 {
            let a = simulated_answer(&straight);
            assert_eq!(
                straight.tell(&Actor::Owner, a.clone()).unwrap(),
                Outcome::Answered
            );
            // A new process: a fresh connection and a strategy rebuilt from the log.
            drop(restarted);
            restarted = LiveStudy::open(open_file(dir.path(), &path), &name).unwrap();
            assert_eq!(restarted.tell(&Actor::Owner, a).unwrap(), Outcome::Answered);
            drop(restarted);
            restarted = LiveStudy::open(open_file(dir.path(), &path), &name).unwrap();
            assert_eq!(restarted.pending(), straight.pending(), "{name}");
        }
        assert_eq!(
            restarted.recommendation().map(|r| r.option.point),
            straight.recommendation().map(|r| r.option.point)
        );
        // The model-based method has a belief at its recommendation.
        if k == 0 {
            let r = straight.recommendation().unwrap();
            let (_, sd) = r.belief.expect("a preference GP predicts");
            assert!(sd > 0.0 && sd.is_finite());
        }
    }
}

#[test]
fn answers_to_closed_queries_are_refused_and_retries_are_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_file(dir.path(), "s.db");
    let mut s = LiveStudy::create(
        store.clone(),
        spec("p", MethodSpec::from_knobs("pairs", &[]).unwrap(), &["ann"]),
    )
    .unwrap();
    let a0 = simulated_answer(&s);
    assert_eq!(
        s.tell(&Actor::Owner, a0.clone()).unwrap(),
        Outcome::Answered
    );
    let n = store.events("p", 0).unwrap().len();
    // The same answer again (a retried request): nothing stored.
    assert_eq!(
        s.tell(&Actor::Owner, a0.clone()).unwrap(),
        Outcome::Duplicate
    );
    assert_eq!(store.events("p", 0).unwrap().len(), n);
    // A different answer to the answered query: refused, saying which query is open.
    let mut other = a0.clone();
    other.kind = AnswerKind::Tie { rater: None };
    let e = s.tell(&Actor::Owner, other).unwrap_err();
    assert!(matches!(e, StudyError::NotPending(_)), "{e}");
    assert!(
        e.to_string().contains("query 0 is closed") && e.to_string().contains("open query is 1")
    );
    // A query that does not exist yet.
    let mut future = a0;
    future.query_id = 7;
    assert!(
        s.tell(&Actor::Owner, future)
            .unwrap_err()
            .to_string()
            .contains("query 7 is not open")
    );
    // Bad content names the field; nothing stored.
    let q = s.pending().unwrap().clone();
    let bad = Answer {
        query_id: q.id,
        kind: AnswerKind::Choice {
            winner: 5,
            rater: None,
        },
    };
    let e = s.tell(&Actor::Owner, bad).unwrap_err().to_string();
    assert!(e.contains("winner"), "{e}");
    assert_eq!(store.events("p", 0).unwrap().len(), n);
}

#[test]
fn a_crash_between_answer_and_next_query_is_repaired_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_file(dir.path(), "s.db");
    let mut s = LiveStudy::create(
        store.clone(),
        spec("c", MethodSpec::from_knobs("pairs", &[]).unwrap(), &["ann"]),
    )
    .unwrap();
    for _ in 0..3 {
        let a = simulated_answer(&s);
        s.tell(&Actor::Owner, a).unwrap();
    }
    let expected = s.pending().unwrap().clone();
    let a = simulated_answer(&s);
    s.tell(&Actor::Owner, a.clone()).unwrap();
    let next = s.pending().unwrap().clone();
    // Another store holding only the events up to the answer (the process died before
    // storing the next query).
    let events = store.events("c", 0).unwrap();
    let cut = events.len() - 1;
    assert!(matches!(events[cut].kind, EventKind::Asked { .. }));
    assert!(matches!(events[cut - 1].kind, EventKind::Answered { .. }));
    let store2 = open_file(dir.path(), "t.db");
    store2.create(s.stored()).unwrap();
    let kinds: Vec<EventKind> = events[..cut].iter().map(|e| e.kind.clone()).collect();
    store2.append("c", 0, &kinds).unwrap();
    let reopened = LiveStudy::open(store2, "c").unwrap();
    assert_eq!(reopened.pending(), Some(&next));
    assert_ne!(next, expected);
}

#[test]
fn two_processes_on_one_file_see_each_others_answers() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = LiveStudy::create(
        open_file(dir.path(), "s.db"),
        spec(
            "g",
            MethodSpec::from_knobs("group-pairs", &[]).unwrap(),
            &["ann", "bob", "cy"],
        ),
    )
    .unwrap();
    let mut cli = LiveStudy::open(open_file(dir.path(), "s.db"), "g").unwrap();
    let q = server.pending().unwrap().clone();
    assert_eq!(
        server
            .ballot(
                &Actor::Participant("ann".into()),
                q.id,
                "ann",
                Ballot::Vote { choice: Some(0) }
            )
            .unwrap(),
        Outcome::Recorded
    );
    // The CLI process records bob's and cy's hands; it catches up with ann's first.
    cli.ballot(&Actor::Owner, q.id, "bob", Ballot::Vote { choice: Some(1) })
        .unwrap();
    assert_eq!(
        cli.ballot(&Actor::Owner, q.id, "cy", Ballot::Vote { choice: Some(0) })
            .unwrap(),
        Outcome::Answered
    );
    // The server process syncs before its next operation.
    server.sync().unwrap();
    assert_eq!(server.pending(), cli.pending());
    assert_ne!(server.pending().unwrap().id, q.id);
    let e = server
        .ballot(
            &Actor::Participant("bob".into()),
            q.id,
            "bob",
            Ballot::Vote { choice: Some(0) },
        )
        .unwrap_err();
    assert!(e.to_string().contains("already answered"), "{e}");
    // bob's earlier ballot, retried: idempotent.
    assert_eq!(
        server
            .ballot(
                &Actor::Participant("bob".into()),
                q.id,
                "bob",
                Ballot::Vote { choice: Some(1) }
            )
            .unwrap(),
        Outcome::Duplicate
    );
}

/// Social BO with three people voting publicly and privately; private ballots are written
/// only by their owner and read only by the facilitator; a restart mid-round keeps the
/// ballots and the next query equals the uninterrupted run's.
#[test]
fn social_bo_rounds_with_private_ballots_survive_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let people = ["ann", "bob", "cy"];
    let ideals = [[0.3, 0.5], [0.5, 0.5], [0.7, 0.2]];
    let method = MethodSpec::from_knobs(
        "social",
        &[
            ("rho".into(), "0.5".into()),
            ("candidates".into(), "24".into()),
            ("init_pairs".into(), "3".into()),
        ],
    )
    .unwrap();
    let mut straight = LiveStudy::create(
        open_file(dir.path(), "a.db"),
        spec("m", method.clone(), &people),
    )
    .unwrap();
    let mut restarted =
        LiveStudy::create(open_file(dir.path(), "b.db"), spec("m", method, &people)).unwrap();
    let mut private_rounds = 0;
    for round in 0..6 {
        let q = straight.pending().unwrap().clone();
        let QueryKind::GroupVote {
            points,
            channel,
            agents,
        } = &q.kind
        else {
            panic!("social BO asks group votes, got {q:?}")
        };
        assert_eq!(agents.len(), 3);
        let (a, b) = (unit(&points[0]), unit(&points[1]));
        for (k, who) in people.iter().enumerate() {
            let vote = Ballot::Vote {
                choice: Some(prefers(&ideals[k], &a, &b)),
            };
            let me = Actor::Participant(who.to_string());
            if *channel == Channel::Private {
                // Nobody else, not even the facilitator, may cast it.
                let e = restarted
                    .ballot(&Actor::Facilitator, q.id, who, vote.clone())
                    .unwrap_err();
                assert!(matches!(e, StudyError::Forbidden(_)), "{e}");
                let e = restarted
                    .ballot(&Actor::Participant("zed".into()), q.id, who, vote.clone())
                    .unwrap_err();
                assert!(matches!(e, StudyError::Forbidden(_)), "{e}");
            }
            straight.ballot(&me, q.id, who, vote.clone()).unwrap();
            restarted.ballot(&me, q.id, who, vote).unwrap();
            if k == 1 {
                // Restart mid-round: the ballots cast are kept.
                drop(restarted);
                restarted = LiveStudy::open(open_file(dir.path(), "b.db"), "m").unwrap();
                let v = restarted.pending_view(&Actor::Facilitator).unwrap();
                assert_eq!(
                    v.voted,
                    vec!["ann".to_string(), "bob".to_string()],
                    "round {round}"
                );
                if *channel == Channel::Private {
                    let seen = restarted
                        .pending_view(&Actor::Participant("ann".into()))
                        .unwrap();
                    assert_eq!(seen.ballots.keys().collect::<Vec<_>>(), vec!["ann"]);
                    assert_eq!(v.ballots.len(), 2);
                }
            }
        }
        if *channel == Channel::Private {
            private_rounds += 1;
        }
        drop(restarted);
        restarted = LiveStudy::open(open_file(dir.path(), "b.db"), "m").unwrap();
        assert_eq!(restarted.pending(), straight.pending(), "round {round}");
    }
    assert!(
        private_rounds >= 1,
        "Social BO asks privately while the graph is unknown"
    );
    let st = straight.status(&Actor::Facilitator);
    assert_eq!(st.public_rounds + st.private_rounds, 6);
    assert!(st.recommendation.is_some());
    // A participant's copy of the log hides the others' private ballots.
    let mine = straight.events(&Actor::Participant("ann".into())).unwrap();
    let all = straight.events(&Actor::Facilitator).unwrap();
    assert!(mine.len() < all.len());
    assert!(mine.iter().all(|e| match &e.kind {
        EventKind::Ballot {
            participant,
            query_id,
            ..
        } => {
            participant == "ann" || {
                let asked = all.iter().find_map(|x| match &x.kind {
                    EventKind::Asked { query, .. } if query.id == *query_id => Some(query.clone()),
                    _ => None,
                });
                matches!(
                    asked.map(|q| q.kind),
                    Some(QueryKind::GroupVote {
                        channel: Channel::Public,
                        ..
                    })
                )
            }
        }
        _ => true,
    }));
    let csv = straight.export_csv(&Actor::Facilitator).unwrap();
    assert!(csv.lines().count() == all.len() + 1);
    assert!(csv.contains(",private,") && csv.contains("x0="), "{csv}");
    // The facilitator's figure draws Social BO's belief about the welfare over the 2-D box.
    let svg = agora_study::live::plot::plot_svg(&straight).unwrap();
    assert!(
        svg.contains("model belief: mean welfare") && !svg.contains("No belief panel"),
        "{svg}"
    );
}

#[test]
fn a_facilitator_closes_a_round_with_missing_votes_as_cant_tell() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = LiveStudy::create(
        open_file(dir.path(), "s.db"),
        spec(
            "g",
            MethodSpec::from_knobs("group-pairs", &[]).unwrap(),
            &["ann", "bob", "cy"],
        ),
    )
    .unwrap();
    let q = s.pending().unwrap().clone();
    s.ballot(
        &Actor::Participant("ann".into()),
        q.id,
        "ann",
        Ballot::Vote { choice: Some(1) },
    )
    .unwrap();
    let e = s
        .close(&Actor::Participant("ann".into()), q.id)
        .unwrap_err();
    assert!(matches!(e, StudyError::Forbidden(_)));
    assert_eq!(
        s.close(&Actor::Facilitator, q.id).unwrap(),
        Outcome::Answered
    );
    assert_eq!(
        s.close(&Actor::Facilitator, q.id).unwrap(),
        Outcome::Duplicate
    );
    let ev = s.events(&Actor::Facilitator).unwrap();
    let answered = ev.iter().rev().find_map(|e| match &e.kind {
        EventKind::Answered { answer, by } => Some((answer.clone(), by.clone())),
        _ => None,
    });
    let (a, by) = answered.unwrap();
    assert_eq!(by.as_deref(), Some("facilitator"));
    assert_eq!(
        a.kind,
        AnswerKind::Votes {
            votes: vec![Some(1), None, None]
        }
    );
    // Unknown participants and bad choices are named.
    let q = s.pending().unwrap().clone();
    let e = s
        .ballot(&Actor::Owner, q.id, "zed", Ballot::Vote { choice: Some(0) })
        .unwrap_err();
    assert!(
        e.to_string().contains("participant") && e.to_string().contains("ann"),
        "{e}"
    );
    let e = s
        .ballot(&Actor::Owner, q.id, "bob", Ballot::Vote { choice: Some(2) })
        .unwrap_err();
    assert!(e.to_string().contains("choice"), "{e}");
    let e = s
        .ballot(&Actor::Owner, q.id, "bob", Ballot::Rating { value: 1.0 })
        .unwrap_err();
    assert!(e.to_string().contains("vote"), "{e}");
}

#[test]
fn a_round_with_a_time_limit_closes_itself_and_replays_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_file(dir.path(), "s.db");
    // Out of range limits are refused, naming the field and the range.
    for bad in [0, 604_801] {
        let mut sp = spec(
            "g",
            MethodSpec::from_knobs("group-pairs", &[]).unwrap(),
            &["ann"],
        );
        sp.round_seconds = Some(bad);
        let e = LiveStudy::create(store.clone(), sp)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("round_seconds") && e.contains("604800"), "{e}");
    }
    assert!(
        store.list().unwrap().is_empty(),
        "a refused spec stores nothing"
    );
    let mut sp = spec(
        "g",
        MethodSpec::from_knobs("group-pairs", &[]).unwrap(),
        &["ann", "bob", "cy"],
    );
    sp.round_seconds = Some(60);
    let mut s = LiveStudy::create(store.clone(), sp).unwrap();
    let asked_ms = |s: &LiveStudy, id: u64| {
        s.events(&Actor::Facilitator)
            .unwrap()
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::Asked { query, .. } if query.id == id => Some(e.at_ms),
                _ => None,
            })
            .unwrap()
    };
    let q = s.pending().unwrap().clone();
    let deadline = asked_ms(&s, q.id) + 60_000;
    let view = s.pending_view(&Actor::Facilitator).unwrap();
    assert_eq!(view.deadline_ms, Some(deadline));
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(json["deadline_ms"], deadline);
    s.ballot(
        &Actor::Participant("bob".into()),
        q.id,
        "bob",
        Ballot::Vote { choice: Some(0) },
    )
    .unwrap();
    // Not yet due: nothing happens; due: closed with the missing votes as can't tell.
    assert_eq!(s.close_expired(deadline - 1).unwrap(), None);
    assert_eq!(s.pending().unwrap().id, q.id);
    assert_eq!(s.close_expired(deadline).unwrap(), Some(Outcome::Answered));
    let ev = s.events(&Actor::Facilitator).unwrap();
    let (a, by) = ev
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::Answered { answer, by } => Some((answer.clone(), by.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(by.as_deref(), Some("deadline"));
    assert_eq!(a.query_id, q.id);
    assert_eq!(
        a.kind,
        AnswerKind::Votes {
            votes: vec![None, Some(0), None]
        }
    );
    // The next round has its own limit, from when it was asked; a vote on the closed one
    // is refused and says why.
    let next = s.pending().unwrap().clone();
    assert_ne!(next.id, q.id);
    assert_eq!(s.deadline_ms(), Some(asked_ms(&s, next.id) + 60_000));
    let e = s
        .ballot(&Actor::Owner, q.id, "ann", Ballot::Vote { choice: Some(1) })
        .unwrap_err();
    assert!(e.to_string().contains("time ran out"), "{e}");
    // Reopened (from the snapshot, and by replaying the whole log), the study is the same.
    let status = |s: &LiveStudy| serde_json::to_string(&s.status(&Actor::Facilitator)).unwrap();
    let reopened = LiveStudy::open(store.clone(), "g").unwrap();
    assert_eq!(status(&reopened), status(&s));
    let copy = open_file(dir.path(), "copy.db");
    copy.create(s.stored()).unwrap();
    let events: Vec<EventKind> = ev.into_iter().map(|e| e.kind).collect();
    copy.append("g", 0, &events).unwrap();
    let replayed = LiveStudy::open(copy, "g").unwrap();
    assert_eq!(replayed.restored_from(), None);
    assert_eq!(replayed.pending(), s.pending());
    assert_eq!(replayed.recommendation(), s.recommendation());
    // A ballot that arrives after the limit closes the round first and is refused.
    let mut sp = spec(
        "h",
        MethodSpec::from_knobs("group-pairs", &[]).unwrap(),
        &["ann", "bob"],
    );
    sp.round_seconds = Some(1);
    let mut h = LiveStudy::create(store.clone(), sp).unwrap();
    let q = h.pending().unwrap().clone();
    std::thread::sleep(std::time::Duration::from_millis(
        (h.deadline_ms().unwrap() - agora_study::live::store::now_ms() + 20).max(0) as u64,
    ));
    let e = h
        .ballot(&Actor::Owner, q.id, "ann", Ballot::Vote { choice: Some(0) })
        .unwrap_err();
    assert!(e.to_string().contains("time ran out"), "{e}");
    assert_ne!(h.pending().unwrap().id, q.id, "the next round is open");
}

/// Over three parameters the belief is drawn on a 2-D slice through the recommendation,
/// named in the figure and the belief's data; the slice's values are the model's belief at
/// those full points.
#[test]
fn a_three_parameter_study_draws_a_slice_through_the_recommendation() {
    let dir = tempfile::tempdir().unwrap();
    let mut sp = spec("s3", MethodSpec::from_knobs("bo", &[]).unwrap(), &["ann"]);
    sp.space = Space::reals(&[(0.0, 1.0), (0.0, 1.0), (10.0, 20.0)]).unwrap();
    let mut s = LiveStudy::create(open_file(dir.path(), "s.db"), sp).unwrap();
    for _ in 0..8 {
        let a = simulated_answer(&s);
        s.tell(&Actor::Owner, a).unwrap();
    }
    let svg = agora_study::live::plot::plot_svg(&s).unwrap();
    assert!(svg.contains("slice at the recommendation: x2 = "), "{svg}");
    assert!(!svg.contains("No belief panel"));
    let view = agora_study::live::plot::belief_view(&s, true).unwrap();
    let grid = view.grid.unwrap();
    assert_eq!(grid.axes, ["x0", "x1"]);
    let rec = unit(&s.recommendation().unwrap().option.point);
    let n = grid.n;
    let (i, j) = (3, 7);
    let c = |k: usize| (k as f64 + 0.5) / n as f64;
    let at = s.strategy().belief(&[vec![c(i), c(j), rec[2]]]).unwrap()[0];
    assert_eq!((grid.mean[i + n * j], grid.sd[i + n * j]), at);
}

/// A group-pairs study with `raters = "learned"` and one member voting by coin: the status
/// shows the coin's weight far below the others', and the study reopens (from its
/// snapshot, and by replaying its whole log) to the same status.
#[test]
fn a_group_study_learns_that_a_coin_voter_deserves_little_weight() {
    // The coin: SplitMix64's output bit for each round.
    let coin = |i: u64| {
        let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) & 1) as usize
    };
    let dir = tempfile::tempdir().unwrap();
    let store = open_file(dir.path(), "s.db");
    let method =
        MethodSpec::from_knobs("group-pairs", &[("raters".into(), "learned".into())]).unwrap();
    let mut sp = spec("g", method, &["ann", "bob", "cy", "coin"]);
    sp.space = Space::reals(&[(0.0, 1.0)]).unwrap();
    let mut s = LiveStudy::create(store.clone(), sp).unwrap();
    for _ in 0..16 {
        let q = s.pending().unwrap().clone();
        let QueryKind::GroupVote { points, .. } = &q.kind else {
            panic!("{q:?}")
        };
        let x: Vec<f64> = points.iter().map(|p| unit(p)[0]).collect();
        let honest = usize::from((x[1] - 0.3).abs() < (x[0] - 0.3).abs());
        for (who, v) in [("ann", honest), ("bob", honest), ("cy", honest)]
            .into_iter()
            .chain([("coin", coin(q.id))])
        {
            s.ballot(&Actor::Owner, q.id, who, Ballot::Vote { choice: Some(v) })
                .unwrap();
        }
    }
    let st = s.status(&Actor::Facilitator);
    let w = |who: &str| st.raters.iter().find(|r| r.rater == who).unwrap().weight;
    assert!(w("coin") < 0.1, "{:?}", st.raters);
    for who in ["ann", "bob", "cy"] {
        assert!(w(who) > 0.5, "{:?}", st.raters);
    }
    let json = |s: &LiveStudy| serde_json::to_string(&s.status(&Actor::Facilitator)).unwrap();
    let reopened = LiveStudy::open(store.clone(), "g").unwrap();
    assert!(
        reopened.restored_from().is_some(),
        "opened from its snapshot"
    );
    assert_eq!(json(&reopened), json(&s));
    let copy = open_file(dir.path(), "copy.db");
    copy.create(s.stored()).unwrap();
    let events: Vec<EventKind> = s
        .events(&Actor::Facilitator)
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    copy.append("g", 0, &events).unwrap();
    let replayed = LiveStudy::open(copy, "g").unwrap();
    assert_eq!(replayed.restored_from(), None);
    assert_eq!(json(&replayed), json(&s));
}

#[test]
fn a_rating_study_collects_one_rating_per_person_and_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let people = ["ann", "bob", "cy"];
    let method = MethodSpec::from_knobs("social-ratings", &[("init".into(), "2".into())]).unwrap();
    let mut s =
        LiveStudy::create(open_file(dir.path(), "r.db"), spec("r", method, &people)).unwrap();
    for _ in 0..6 {
        let q = s.pending().unwrap().clone();
        let QueryKind::GroupRate { point, .. } = &q.kind else {
            panic!("social-ratings asks ratings, got {q:?}")
        };
        let x = unit(point);
        let e = s
            .ballot(&Actor::Owner, q.id, "ann", Ballot::Vote { choice: Some(0) })
            .unwrap_err();
        assert!(e.to_string().contains("rating"), "{e}");
        let e = s
            .ballot(
                &Actor::Owner,
                q.id,
                "ann",
                Ballot::Rating { value: f64::NAN },
            )
            .unwrap_err();
        assert!(e.to_string().contains("value"), "{e}");
        for (k, who) in people.iter().enumerate() {
            let value = -(x[0] - 0.3 * k as f64).powi(2);
            s.ballot(
                &Actor::Participant(who.to_string()),
                q.id,
                who,
                Ballot::Rating { value },
            )
            .unwrap();
        }
        // A rating round cannot be closed with ratings missing.
        if let Some(q2) = s.pending().cloned() {
            assert!(s.close(&Actor::Facilitator, q2.id).is_err());
        }
        let reopened = LiveStudy::open(open_file(dir.path(), "r.db"), "r").unwrap();
        assert_eq!(reopened.pending(), s.pending());
    }
    let r = s.recommendation().unwrap();
    assert!(r.value_meaning.contains("welfare"));
}

/// A store that counts its appends (each is one transaction).
struct Counting {
    inner: SqliteStore,
    appends: std::sync::atomic::AtomicUsize,
}

impl Store for Counting {
    fn create(&self, study: &agora_study::live::StoredStudy) -> agora_study::live::StoreResult<()> {
        self.inner.create(study)
    }
    fn list(&self) -> agora_study::live::StoreResult<Vec<String>> {
        self.inner.list()
    }
    fn study(&self, name: &str) -> agora_study::live::StoreResult<agora_study::live::StoredStudy> {
        self.inner.study(name)
    }
    fn events(&self, name: &str, from: u64) -> agora_study::live::StoreResult<Vec<Event>> {
        self.inner.events(name, from)
    }
    fn append(
        &self,
        name: &str,
        next: u64,
        kinds: &[EventKind],
    ) -> agora_study::live::StoreResult<Vec<Event>> {
        self.appends
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.append(name, next, kinds)
    }
    fn schema_version(&self) -> agora_study::live::StoreResult<u32> {
        self.inner.schema_version()
    }
}

fn req(who: &str, query_id: u64, choice: usize) -> BallotRequest {
    BallotRequest {
        actor: Actor::Participant(who.into()),
        query_id,
        participant: who.into(),
        ballot: Ballot::Vote {
            choice: Some(choice),
        },
    }
}

/// Group commit: a batch of ballots is checked one by one as single ballots are (a repeat
/// is a duplicate, a bad one is refused alone, a changed vote replaces the earlier one) and
/// stored in one append; the ballot that completes the round ends the batch, and the rest
/// is checked against the next question.
#[test]
fn a_batch_of_ballots_is_one_append_checked_one_by_one() {
    let store = Arc::new(Counting {
        inner: SqliteStore::in_memory().unwrap(),
        appends: Default::default(),
    });
    let mut s = LiveStudy::create(
        store.clone(),
        spec(
            "b",
            MethodSpec::from_knobs("group-pairs", &[]).unwrap(),
            &["ann", "bob", "cy", "dan"],
        ),
    )
    .unwrap();
    let q = s.pending().unwrap().id;
    let seq0 = s.seq();
    let appends = || store.appends.load(std::sync::atomic::Ordering::SeqCst);
    let before = appends();
    let mut eve = req("ann", q, 0);
    eve.participant = "eve".into();
    let batch = [
        req("ann", q, 0),
        req("bob", q, 1),
        req("ann", q, 0),
        eve,
        req("ann", q, 1),
        req("cy", q, 0),
        req("dan", q, 1),
        req("bob", q, 0),
    ];
    let out = s.ballots(&batch).unwrap();
    assert_eq!(
        out.len(),
        7,
        "the batch ends at the ballot that completes the round"
    );
    let ok: Vec<Option<Outcome>> = out.iter().map(|o| o.as_ref().ok().cloned()).collect();
    use Outcome::*;
    assert_eq!(
        ok,
        [
            Some(Recorded),
            Some(Recorded),
            Some(Duplicate),
            None,
            Some(Recorded),
            Some(Recorded),
            Some(Answered)
        ]
    );
    assert!(out[3].as_ref().unwrap_err().to_string().contains("eve"));
    // One append for the ballots and the answer, one for the next question.
    assert_eq!(appends() - before, 2);
    let events = store.events("b", seq0).unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.tag()).collect();
    assert_eq!(
        kinds,
        [
            "ballot", "ballot", "ballot", "ballot", "ballot", "answered", "asked"
        ]
    );
    let EventKind::Answered { answer, .. } = &events[5].kind else {
        panic!("no answer");
    };
    assert_eq!(
        answer.kind,
        AnswerKind::Votes {
            votes: vec![Some(1), Some(1), Some(0), Some(1)]
        },
        "ann's changed vote counts"
    );
    // The rest: bob's late ballot on the closed round is refused, nothing is stored.
    let rest = s.ballots(&batch[7..]).unwrap();
    assert!(matches!(rest[..], [Err(StudyError::NotPending(_))]));
    assert_eq!(appends() - before, 2);
}

/// Another process stored a round's answer and died before storing the next question: a
/// live study that catches up asks and stores it, the one an uninterrupted process asks.
#[test]
fn catching_up_asks_the_question_another_process_did_not_store() {
    let dir = tempfile::tempdir().unwrap();
    let members = ["ann", "bob"];
    let method = MethodSpec::from_knobs("group-pairs", &[]).unwrap();
    let mut straight = LiveStudy::create(
        Arc::new(SqliteStore::in_memory().unwrap()),
        spec("d", method.clone(), &members),
    )
    .unwrap();
    let store = open_file(dir.path(), "s.db");
    let mut live = LiveStudy::create(store.clone(), spec("d", method, &members)).unwrap();
    live.catch_up().unwrap();
    let q = live.pending().unwrap().clone();
    let (ann, bob) = (req("ann", q.id, 0), req("bob", q.id, 1));
    straight.ballots(&[ann.clone(), bob.clone()]).unwrap();
    // The other process: both ballots and the answer, then nothing.
    let mut other = LiveStudy::open(open_file(dir.path(), "s.db"), "d").unwrap();
    other.ballots(&[ann]).unwrap();
    let events = straight.events(&Actor::Owner).unwrap();
    let answered = events
        .iter()
        .find(|e| matches!(e.kind, EventKind::Answered { .. }))
        .unwrap()
        .kind
        .clone();
    let bob_ballot = EventKind::Ballot {
        query_id: q.id,
        participant: "bob".into(),
        ballot: bob.ballot,
    };
    store
        .append("d", other.seq(), &[bob_ballot, answered])
        .unwrap();
    assert!(live.pending().is_some(), "still on the old question");
    live.catch_up().unwrap();
    assert_eq!(live.pending(), straight.pending());
    assert_ne!(live.pending().unwrap().id, q.id);
    assert_eq!(store.events("d", 0).unwrap().len(), straight.seq() as usize);
}

/// Snapshots: a Social BO study opened from its latest snapshot (the log's tail replayed)
/// reports and asks exactly what a full replay gives; a snapshot that is damaged, of
/// another build, or of another log is not used (the note says why) and the study opens
/// the same by replaying everything.
#[test]
fn a_social_bo_study_opens_from_its_snapshot_exactly_as_from_its_whole_log() {
    let dir = tempfile::tempdir().unwrap();
    let people = ["ann", "bob", "cy"];
    let ideals = [[0.3, 0.5], [0.5, 0.5], [0.7, 0.2]];
    let method = MethodSpec::from_knobs(
        "social",
        &[
            ("candidates".into(), "24".into()),
            ("init_pairs".into(), "2".into()),
        ],
    )
    .unwrap();
    let path = dir.path().join("s.db");
    let store = || -> Arc<dyn Store> { Arc::new(SqliteStore::open(&path).unwrap()) };
    let vote_round = |s: &mut LiveStudy| {
        let q = s.pending().unwrap().clone();
        let QueryKind::GroupVote { points, .. } = &q.kind else {
            panic!("social BO asks group votes, got {q:?}")
        };
        let (a, b) = (unit(&points[0]), unit(&points[1]));
        for (k, who) in people.iter().enumerate() {
            let vote = Ballot::Vote {
                choice: Some(prefers(&ideals[k], &a, &b)),
            };
            s.ballot(&Actor::Participant(who.to_string()), q.id, who, vote)
                .unwrap();
        }
    };
    let mut s = LiveStudy::create(store(), spec("m", method, &people)).unwrap();
    for _ in 0..8 {
        vote_round(&mut s);
    }
    let view = |s: &LiveStudy| {
        (
            serde_json::to_string(&s.status(&Actor::Facilitator)).unwrap(),
            s.pending().cloned(),
            s.seq(),
        )
    };
    let want = view(&s);
    drop(s);

    let mut from_snapshot = LiveStudy::open(store(), "m").unwrap();
    assert_eq!(from_snapshot.snapshot_note(), None);
    let covered = from_snapshot
        .restored_from()
        .expect("opened from a snapshot");
    assert_eq!(covered, want.2, "the snapshot covers the whole log");
    assert_eq!(view(&from_snapshot), want);

    // The same by full replay, with every way a snapshot can be refused.
    let sql = |stmt: &str| {
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(stmt)
            .unwrap();
    };
    sql("CREATE TABLE keep AS SELECT * FROM snapshots");
    for (damage, reason) in [
        ("UPDATE snapshots SET body = body || ' '", "checksum"),
        ("UPDATE snapshots SET build = 'an older build'", "build"),
        (
            "UPDATE snapshots SET log_hash = log_hash + 1",
            "another log",
        ),
    ] {
        sql(&format!(
            "DELETE FROM snapshots; INSERT INTO snapshots SELECT * FROM keep; {damage}"
        ));
        let replayed = LiveStudy::open(store(), "m").unwrap();
        let note = replayed.snapshot_note().unwrap_or_default().to_string();
        assert!(
            note.contains(reason) && note.contains("whole log was replayed"),
            "{damage}: {note}"
        );
        assert_eq!(replayed.restored_from(), None);
        assert_eq!(view(&replayed), want, "{damage}");
    }
    sql("DELETE FROM snapshots; INSERT INTO snapshots SELECT * FROM keep");

    // Going on from the snapshot asks what going on from a full replay asks.
    let mut replayed = LiveStudy::open(store(), "m").unwrap();
    sql("DELETE FROM snapshots");
    let mut replayed_fresh = LiveStudy::open(store(), "m").unwrap();
    assert_eq!(replayed_fresh.restored_from(), None);
    for _ in 0..2 {
        vote_round(&mut from_snapshot);
        replayed.sync().unwrap();
        replayed_fresh.sync().unwrap();
        assert_eq!(replayed.pending(), from_snapshot.pending());
        assert_eq!(replayed_fresh.pending(), from_snapshot.pending());
    }
}

/// A snapshot that passes every check but holds a wrong state (here: a pairs study's model
/// refitted from another warm start) shows itself when the log's tail is replayed onto it:
/// the study then opens by replaying the whole log, with a note, and asks what a full replay
/// asks.
#[test]
fn a_wrong_snapshot_found_by_its_tail_falls_back_to_the_whole_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.db");
    let store = || -> Arc<dyn Store> { Arc::new(SqliteStore::open(&path).unwrap()) };
    let mut s = LiveStudy::create(
        store(),
        spec("p", MethodSpec::from_knobs("pairs", &[]).unwrap(), &["ann"]),
    )
    .unwrap();
    for _ in 0..9 {
        let a = simulated_answer(&s);
        s.tell(&Actor::Owner, a).unwrap();
    }
    let want = s.pending().cloned();
    drop(s);
    let conn = rusqlite::Connection::open(&path).unwrap();
    // Keep only the older snapshot (one round behind: the last round is its tail) and
    // change its model's warm start, with a checksum that matches.
    conn.execute_batch("DELETE FROM snapshots WHERE seq = (SELECT MAX(seq) FROM snapshots)")
        .unwrap();
    let body: String = conn
        .query_row("SELECT body FROM snapshots", [], |r| r.get(0))
        .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let warm = &mut v["strategy"]["state"]["fit_warm"];
    assert!(warm.is_array(), "a fitted model has a warm start: {warm}");
    *warm = serde_json::json!([0.3, -1.0, -1.0]);
    let body = serde_json::to_string(&v).unwrap();
    let sum = agora_core::snapshot::fnv1a(body.as_bytes()) as i64;
    conn.execute(
        "UPDATE snapshots SET body = ?1, checksum = ?2",
        rusqlite::params![body, sum],
    )
    .unwrap();
    drop(conn);
    let s = LiveStudy::open(store(), "p").unwrap();
    let note = s.snapshot_note().unwrap_or_default().to_string();
    assert!(
        note.contains("tail did not replay") && note.contains("whole log was replayed"),
        "{note}"
    );
    assert_eq!(s.restored_from(), None);
    assert_eq!(s.pending().cloned(), want);
}

/// Import and enqueue (issue: start from what you know). Earlier evaluations (a `bo`
/// study) and comparisons (`pairs`, `group-pairs`) are imported before the first answer:
/// a file with a bad row is refused, naming its line, and stores nothing; a good one is one
/// `imported` event, the open question is withdrawn and the next asked in the data's light
/// (a GP-BO study skips its random start: its first question is the model's, not the
/// design's). An enqueued option is the question after the open one (evaluated, or one of
/// the pair). The study reopens from its snapshot and by replaying the whole log to the
/// same status, next question and recommendation; importing after an answer, or by a
/// participant, is refused.
#[test]
fn imported_data_and_enqueued_options_replay_exactly() {
    use agora_study::live::import::{read_observations, read_option};
    let dir = tempfile::tempdir().unwrap();
    let store = open_file(dir.path(), "s.db");
    let status = |s: &LiveStudy| serde_json::to_string(&s.status(&Actor::Facilitator)).unwrap();
    let cases = [
        (
            "bo",
            "x0,x1,value\n20,0.6,-1\n25,0.9,-0.2\n30,1.2,-2\n18,0.4,-3\n",
        ),
        // Six comparisons: as many as the random initial pairs (2d + 2), which they replace.
        (
            "pairs",
            "winner.x0,winner.x1,loser.x0,loser.x1\n21,0.7,33,1.4\n23,0.8,16,0.35\n\
             22,0.9,30,0.4\n21,0.6,25,1.2\n24,0.75,17,1.1\n20,0.7,34,0.9\n",
        ),
        (
            "group-pairs",
            "{\"winner\": {\"x0\": 21, \"x1\": 0.7}, \"loser\": {\"x0\": 33, \"x1\": 1.4}}\n\
             {\"winner\": {\"x0\": 23, \"x1\": 0.8}, \"loser\": {\"x0\": 16, \"x1\": 0.35}}\n\
             {\"winner\": {\"x0\": 22, \"x1\": 0.9}, \"loser\": {\"x0\": 30, \"x1\": 0.4}}\n\
             {\"winner\": {\"x0\": 21, \"x1\": 0.6}, \"loser\": {\"x0\": 25, \"x1\": 1.2}}\n\
             {\"winner\": {\"x0\": 24, \"x1\": 0.75}, \"loser\": {\"x0\": 17, \"x1\": 1.1}}\n\
             {\"winner\": {\"x0\": 20, \"x1\": 0.7}, \"loser\": {\"x0\": 34, \"x1\": 0.9}}\n",
        ),
    ];
    for (k, (method, file)) in cases.into_iter().enumerate() {
        let name = format!("imp{k}");
        let m = MethodSpec::from_knobs(method, &[]).unwrap();
        let who: &[&str] = if method == "group-pairs" {
            &["ann", "bob"]
        } else {
            &["ann"]
        };
        let mut s = LiveStudy::create(store.clone(), spec(&name, m, who)).unwrap();
        let first = s.pending().unwrap().clone();
        let sp = s.spec().space.clone();
        // A bad row: refused by the reader, with its line; nothing stored.
        let bad = file.replacen("20,0.6", "20,9.6", 1);
        if bad != file {
            let e = read_observations(&sp, &bad).unwrap_err().to_string();
            assert!(e.contains("line 2: x1"), "{e}");
        }
        // Data of the wrong kind for the method: refused by the strategy, nothing stored.
        let wrong = if method == "bo" {
            cases[1].1
        } else {
            cases[0].1
        };
        let before = s.events(&Actor::Owner).unwrap().len();
        let e = s
            .import(&Actor::Owner, read_observations(&sp, wrong).unwrap())
            .unwrap_err();
        assert!(e.to_string().contains("import[0]"), "{method}: {e}");
        assert_eq!(s.events(&Actor::Owner).unwrap().len(), before);
        assert_eq!(s.pending(), Some(&first));
        let e = s
            .import(
                &Actor::Participant("ann".into()),
                read_observations(&sp, file).unwrap(),
            )
            .unwrap_err();
        assert!(matches!(e, StudyError::Forbidden(_)), "{e}");
        // The good file.
        let data = read_observations(&sp, file).unwrap();
        s.import(&Actor::Owner, data.clone()).unwrap();
        let next = s.pending().unwrap().clone();
        assert_ne!(
            next.kind, first.kind,
            "{method}: asked again in the data's light"
        );
        assert_eq!(s.strategy().n_answered(), 0);
        if method == "bo" {
            // The recommendation is the best imported evaluation (x = 25, 0.9: -0.2).
            let rec = s.recommendation().unwrap();
            assert!((rec.value - (-0.2)).abs() < 1e-12, "{rec:?}");
            // The export shows the imported rows in the study's units.
            let csv = s.export_csv(&Actor::Owner).unwrap();
            assert!(
                csv.contains("x0=20 x1=0.6 -> -1 | x0=25 x1=0.9 -> -0.2"),
                "{csv}"
            );
        }
        // Enqueue an option: it is in the question after the open one.
        let option = read_option(&sp, "{\"x0\": 26.5, \"x1\": 0.45}").unwrap();
        s.enqueue(&Actor::Owner, option.clone()).unwrap();
        assert_eq!(s.pending(), Some(&next), "the open question stays");
        let answer = match &next.kind {
            QueryKind::GroupVote { .. } => {
                for p in ["ann", "bob"] {
                    s.ballot(
                        &Actor::Participant(p.into()),
                        next.id,
                        p,
                        Ballot::Vote { choice: Some(0) },
                    )
                    .unwrap();
                }
                None
            }
            _ => Some(simulated_answer(&s)),
        };
        if let Some(a) = answer {
            s.tell(&Actor::Owner, a).unwrap();
        }
        let after = s.pending().unwrap().clone();
        assert!(
            after.kind.points().contains(&Point::Unit(option.clone())),
            "{method}: {after:?} holds the enqueued option"
        );
        // No import after an answer.
        let e = s.import(&Actor::Owner, data).unwrap_err();
        assert!(e.to_string().contains("before the first answer"), "{e}");
        // Reopened from the snapshot and from the whole log: the same study.
        let reopened = LiveStudy::open(store.clone(), &name).unwrap();
        assert_eq!(status(&reopened), status(&s));
        assert_eq!(reopened.pending(), s.pending());
        let copy = open_file(dir.path(), &format!("copy{k}.db"));
        copy.create(s.stored()).unwrap();
        let events: Vec<EventKind> = s
            .events(&Actor::Owner)
            .unwrap()
            .into_iter()
            .map(|e| e.kind)
            .collect();
        assert!(events.iter().any(|e| e.tag() == "imported"));
        assert!(events.iter().any(|e| e.tag() == "enqueued"));
        copy.append(&name, 0, &events).unwrap();
        let replayed = LiveStudy::open(copy, &name).unwrap();
        assert_eq!(replayed.restored_from(), None);
        assert_eq!(status(&replayed), status(&s));
        assert_eq!(replayed.pending(), s.pending());
        assert_eq!(replayed.recommendation(), s.recommendation());
    }
}

/// Media with options: a box study takes renderings of the open query's options (the
/// facilitator's, never a participant's), shows them in the query, keeps them through a
/// reopen (replay), forgets them when the query is answered, and its answers and next
/// queries are those of the same study without media. A candidate set names its media in
/// its spec, checked when it is created.
#[test]
fn renderings_are_shown_with_the_open_options_and_change_nothing_else() {
    use agora_study::live::media::{Media, MediaView};
    let dir = tempfile::tempdir().unwrap();
    let store = open_file(dir.path(), "m.db");
    let plain = open_file(dir.path(), "plain.db");
    let m = MethodSpec::from_knobs("pairs", &[]).unwrap();
    let mut s = LiveStudy::create(store.clone(), spec("look", m.clone(), &["ann"])).unwrap();
    let mut p = LiveStudy::create(plain, spec("look", m, &["ann"])).unwrap();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    for round in 0..4 {
        let q = s.pending().unwrap().clone();
        assert_eq!(
            Some(&q),
            p.pending(),
            "round {round}: media changed the questions"
        );
        let seq = s.seq();
        let who = Actor::Participant("ann".into());
        let file = Media::file("image/png", &png, "m").unwrap();
        assert!(matches!(
            s.post_media(&who, q.id, 0, file.clone()),
            Err(StudyError::Forbidden(_))
        ));
        assert!(matches!(
            s.post_media(&Actor::Facilitator, q.id + 1, 0, file.clone()),
            Err(StudyError::NotPending(_))
        ));
        let e = s
            .post_media(&Actor::Facilitator, q.id, 2, file.clone())
            .unwrap_err();
        assert!(e.to_string().contains("option"), "{e}");
        let bad = Media::Url {
            url: "javascript:alert(1)".into(),
        };
        assert!(s.post_media(&Actor::Facilitator, q.id, 1, bad).is_err());
        assert_eq!(s.seq(), seq, "a refused post stored something");
        assert_eq!(
            s.post_media(&Actor::Facilitator, q.id, 0, file.clone())
                .unwrap(),
            Outcome::Recorded
        );
        assert_eq!(
            s.post_media(&Actor::Owner, q.id, 0, file.clone()).unwrap(),
            Outcome::Duplicate
        );
        let text = Media::Text {
            text: format!("design {round}: rounded corners"),
        };
        s.post_media(&Actor::Owner, q.id, 1, text.clone()).unwrap();
        let view = s.pending_view(&who).unwrap();
        assert_eq!(
            view.options[0].media,
            Some(MediaView::File {
                content_type: "image/png".into(),
                bytes: png.len()
            })
        );
        assert_eq!(view.options[1].media, Some(MediaView::from(&text)));
        assert_eq!(
            s.option_media(q.id, 0).and_then(Media::bytes),
            Some(png.clone())
        );
        // Reopened: the log's media events give the same view.
        let reopened = LiveStudy::open(store.clone(), "look").unwrap();
        assert_eq!(reopened.pending_view(&who), Some(view));
        let a = simulated_answer(&s);
        s.tell(&Actor::Facilitator, a.clone()).unwrap();
        p.tell(&Actor::Facilitator, a).unwrap();
        assert!(
            s.option_media(q.id, 0).is_none(),
            "media outlived its query"
        );
        let next = s.pending_view(&who).unwrap();
        assert!(next.options.iter().all(|o| o.media.is_none()));
    }
    let events = s.events(&Actor::Participant("ann".into())).unwrap();
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Media { .. }))
            .count(),
        8
    );
    assert!(
        s.export_csv(&Actor::Facilitator)
            .unwrap()
            .contains(",media,")
    );

    // A candidate set: media named in the spec, one per candidate, checked.
    let space = Space::Candidates {
        names: vec!["red".into(), "blue".into(), "green".into()],
        features: vec![vec![0.0], vec![0.5], vec![1.0]],
    };
    let mut c = spec("cands", MethodSpec::from_knobs("bo", &[]).unwrap(), &[]);
    c.space = space;
    c.media = vec![Some(Media::Text {
        text: "warm".into(),
    })];
    let e = LiveStudy::create(store.clone(), c.clone()).err().unwrap();
    assert!(e.to_string().contains("media"), "{e}");
    c.media = vec![
        Some(Media::Text {
            text: "warm".into(),
        }),
        None,
        Some(Media::file("image/png", &png, "m").unwrap()),
    ];
    let mut cs = LiveStudy::create(store.clone(), c).unwrap();
    let q = cs.pending().unwrap().clone();
    let view = cs.pending_view(&Actor::Facilitator).unwrap();
    for (i, o) in view.options.iter().enumerate() {
        let Point::Index(k) = o.point else { panic!() };
        assert_eq!(o.media.is_some(), k != 1, "{o:?}");
        assert_eq!(cs.option_media(q.id, i).is_some(), k != 1);
    }
    // Its media are fixed: no posts.
    let e = cs
        .post_media(
            &Actor::Facilitator,
            q.id,
            0,
            Media::Text { text: "x".into() },
        )
        .unwrap_err();
    assert!(e.to_string().contains("named when it is created"), "{e}");
}
