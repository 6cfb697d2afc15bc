//! The HTTP API: tokens, private ballots, structured errors, size limits, and a fuzz of
//! the JSON bodies.

use agora_core::Space;
use agora_server::{AppState, BODY_LIMIT, router};
use agora_study::live::media::{CONTENT_TYPES, MAX_FILE_BYTES, MAX_TEXT_CHARS};
use agora_study::live::{MethodSpec, SqliteStore, StoredStudy, StudySpec};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

fn state() -> AppState {
    AppState::new(
        Arc::new(SqliteStore::in_memory().unwrap()),
        Some("admin-secret".into()),
    )
}

fn social(state: &AppState) -> StoredStudy {
    state
        .create_study(StudySpec {
            name: "meet".into(),
            description: "x".into(),
            space: Space::reals(&[(15.0, 35.0), (0.3, 1.5)]).unwrap(),
            method: MethodSpec::from_knobs(
                "social",
                &[
                    ("candidates".into(), "16".into()),
                    ("init_pairs".into(), "2".into()),
                ],
            )
            .unwrap(),
            seed: 3,
            participants: vec!["ann".into(), "bob".into(), "cy".into()],
            round_seconds: None,
            media: Vec::new(),
        })
        .unwrap()
}

async fn call(
    state: &AppState,
    method: &str,
    uri: &str,
    token: Option<&str>,
    body: Option<String>,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let req = req
        .header("content-type", "application/json")
        .body(body.map(Body::from).unwrap_or_else(Body::empty))
        .unwrap();
    let res = router(state.clone()).oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 22)
        .await
        .unwrap();
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, v)
}

/// The study `meet`'s open query as its facilitator sees it (`GET .../query`).
async fn pending_of(state: &AppState, st: &StoredStudy) -> Value {
    let (_, q) = call(
        state,
        "GET",
        "/api/studies/meet/query",
        Some(&st.facilitator_token),
        None,
    )
    .await;
    q
}

/// The id of the study `meet`'s open query.
async fn open_query_id(state: &AppState, st: &StoredStudy) -> u64 {
    pending_of(state, st).await["pending"]["query_id"]
        .as_u64()
        .unwrap()
}

fn vote(query_id: u64, choice: Option<usize>) -> String {
    json!({"query_id": query_id, "ballot": {"type": "vote", "choice": choice}}).to_string()
}

/// Cast every participant's vote on the open query with their own token.
async fn vote_round(state: &AppState, st: &StoredStudy) -> Value {
    let s = pending_of(state, st).await;
    let q = s["pending"]["query_id"].as_u64().unwrap();
    for t in &st.participant_tokens {
        let (code, v) = call(
            state,
            "POST",
            "/api/studies/meet/ballot",
            Some(t),
            Some(vote(q, Some(0))),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{v}");
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_votes_cannot_be_forged_or_read_without_the_right_token() {
    let state = state();
    let st = social(&state);
    let (fac, ann, bob) = (
        st.facilitator_token.clone(),
        st.participant_tokens[0].clone(),
        st.participant_tokens[1].clone(),
    );
    // Public rounds until Social BO asks a private ballot.
    let mut q = Value::Null;
    for _ in 0..12 {
        let (_, s) = call(&state, "GET", "/api/studies/meet/query", Some(&fac), None).await;
        if s["pending"]["channel"] == "private" {
            q = s["pending"].clone();
            break;
        }
        vote_round(&state, &st).await;
    }
    assert_eq!(q["channel"], "private", "no private round in 12: {q}");
    let id = q["query_id"].as_u64().unwrap();
    // ann votes privately with her own token.
    let (code, v) = call(
        &state,
        "POST",
        "/api/studies/meet/ballot",
        Some(&ann),
        Some(vote(id, Some(1))),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["outcome"], "recorded");
    // bob cannot cast (forge) ann's private vote, nor can the facilitator.
    let forged =
        json!({"query_id": id, "participant": "ann", "ballot": {"type": "vote", "choice": 0}})
            .to_string();
    for t in [&bob, &fac] {
        let (code, v) = call(
            &state,
            "POST",
            "/api/studies/meet/ballot",
            Some(t),
            Some(forged.clone()),
        )
        .await;
        assert_eq!(code, StatusCode::FORBIDDEN, "{v}");
        assert_eq!(v["error"]["code"], "forbidden");
    }
    // No token, or a made-up one: 401.
    let (code, v) = call(
        &state,
        "POST",
        "/api/studies/meet/ballot",
        None,
        Some(forged.clone()),
    )
    .await;
    assert_eq!(code, StatusCode::UNAUTHORIZED, "{v}");
    let (code, _) = call(
        &state,
        "GET",
        "/api/studies/meet/query",
        Some("0123456789abcdef0123456789abcdef"),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    // bob sees that ann voted, not how; the facilitator sees how.
    let (_, s) = call(&state, "GET", "/api/studies/meet/query", Some(&bob), None).await;
    assert_eq!(s["pending"]["voted"], json!(["ann"]));
    assert_eq!(s["pending"]["ballots"], json!({}));
    let (_, s) = call(&state, "GET", "/api/studies/meet/query", Some(&fac), None).await;
    assert_eq!(s["pending"]["ballots"]["ann"]["choice"], 1);
    // The log: bob's copy has no private ballot of ann's; the facilitator's has it.
    let (_, e) = call(&state, "GET", "/api/studies/meet/events", Some(&bob), None).await;
    let private_of_ann = |e: &Value| {
        e["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["type"] == "ballot" && x["participant"] == "ann" && x["query_id"] == id)
    };
    assert!(!private_of_ann(&e));
    let (_, e) = call(&state, "GET", "/api/studies/meet/events", Some(&fac), None).await;
    assert!(private_of_ann(&e));
    // A participant cannot export the CSV with others' private ballots either.
    let (code, csv) = call(
        &state,
        "GET",
        "/api/studies/meet/events?format=csv",
        Some(&bob),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    assert!(
        !csv.as_str()
            .unwrap()
            .contains(&format!(",{id},ann,private,"))
    );
    // The plot: an SVG for either role.
    for t in [&bob, &fac] {
        let (code, svg) = call(&state, "GET", "/api/studies/meet/plot.svg", Some(t), None).await;
        assert_eq!(code, StatusCode::OK);
        assert!(svg.as_str().unwrap().contains("<svg"), "{svg}");
    }
    // Only the facilitator closes rounds.
    let close = json!({"query_id": id}).to_string();
    let (code, _) = call(
        &state,
        "POST",
        "/api/studies/meet/close",
        Some(&bob),
        Some(close.clone()),
    )
    .await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    let (code, v) = call(
        &state,
        "POST",
        "/api/studies/meet/close",
        Some(&fac),
        Some(close),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{v}");
    // Voting on the closed round: 409 with the open query named.
    let (code, v) = call(
        &state,
        "POST",
        "/api/studies/meet/ballot",
        Some(&bob),
        Some(vote(id, Some(0))),
    )
    .await;
    assert_eq!(code, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["error"]["code"], "not_pending");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("open query"),
        "{v}"
    );
}

/// The token of a page link `/?study=NAME&token=TOKEN`.
fn link_token(link: &Value) -> String {
    let l = link.as_str().unwrap();
    l.split("&token=").nth(1).unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_studies_index_needs_the_admin_token_and_follows_each_study() {
    let state = state();
    // Only the admin token lists studies: none, a study's own token or a wrong one is 401.
    let (s, _) = call(&state, "GET", "/api/studies", Some("admin-secret"), None).await;
    assert_eq!(s, StatusCode::OK);
    let st = social(&state);
    for t in [
        None,
        Some(st.facilitator_token.as_str()),
        Some("admin-secreT"),
    ] {
        let (s, v) = call(&state, "GET", "/api/studies", t, None).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{t:?}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("admin token"),
            "{v}"
        );
    }
    let list = |state: AppState| async move {
        let (s, v) = call(&state, "GET", "/api/studies?token=admin-secret", None, None).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        v["studies"].as_array().unwrap().clone()
    };
    let rows = list(state.clone()).await;
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["name"], "meet");
    assert_eq!(row["method"], "social");
    assert_eq!(row["answered"], 0);
    // Creating a study asks its first question.
    assert_eq!(row["state"], "question 0 open: 0 of 3 voted");
    // The links carry the study's own tokens, in the participants' order.
    assert_eq!(
        link_token(&row["links"]["facilitator"]),
        st.facilitator_token
    );
    for (p, t) in ["ann", "bob", "cy"].iter().zip(&st.participant_tokens) {
        assert_eq!(&link_token(&row["links"]["participants"][p]), t);
    }
    // A question asked and two of three votes in: the index says so, as the status does.
    let qid = open_query_id(&state, &st).await;
    for t in &st.participant_tokens[..2] {
        let (s, v) = call(
            &state,
            "POST",
            "/api/studies/meet/ballot",
            Some(t),
            Some(vote(qid, Some(0))),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    let row = list(state.clone()).await[0].clone();
    assert_eq!(row["state"], format!("question {qid} open: 2 of 3 voted"));
    assert_eq!(row["open"][0]["voted"], json!(["ann", "bob"]));
    vote_round(&state, &st).await;
    // The server asks the next question after acknowledging the last ballot: wait until
    // it is stored, then the index and the status agree.
    let mut tries = 0;
    let (row, status) = loop {
        let (_, status) = call(
            &state,
            "GET",
            "/api/studies/meet",
            Some(&st.facilitator_token),
            None,
        )
        .await;
        let row = list(state.clone()).await[0].clone();
        if row["events"] == status["seq"] || tries == 100 {
            break (row, status);
        }
        tries += 1;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(row["answered"], status["status"]["answered"]);
    assert_eq!(row["events"], status["seq"]);
    assert!(row["answered"].as_u64().unwrap() >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_belief_shows_each_persons_utility_to_the_facilitator_only() {
    let state = state();
    let st = social(&state);
    let fac = st.facilitator_token.clone();
    let ann = st.participant_tokens[0].clone();
    let mut rounds = 0;
    let view = loop {
        let (code, v) = call(&state, "GET", "/api/studies/meet/belief", Some(&fac), None).await;
        assert_eq!(code, StatusCode::OK, "{v}");
        // The pair on the table (asked once the last round is stored) and a recommendation.
        let has = |l: &str| {
            v["options"]
                .as_array()
                .unwrap()
                .iter()
                .any(|o| o["label"] == l)
        };
        if has("A") && has("recommended") {
            break v;
        }
        assert!(rounds < 300, "no belief with a pair on the table: {v}");
        if rounds % 50 == 49 {
            vote_round(&state, &st).await;
        }
        rounds += 1;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(view["what"], "welfare");
    // The open pair and the recommendation, each with every person's estimate.
    let labels: Vec<&str> = view["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["A", "B", "recommended"]);
    for o in view["options"].as_array().unwrap() {
        let people = o["people"].as_object().unwrap();
        assert_eq!(people.keys().collect::<Vec<_>>(), ["ann", "bob", "cy"]);
        assert!(o["sd"].as_f64().unwrap() >= 0.0);
    }
    // The same model as the recommendation's belief, read through another path.
    let (_, best) = call(&state, "GET", "/api/studies/meet/best", Some(&fac), None).await;
    let rec = view["options"].as_array().unwrap().last().unwrap();
    assert_eq!(rec["mean"], best["recommendation"]["belief"][0], "{best}");
    assert_eq!(rec["sd"], best["recommendation"]["belief"][1], "{best}");
    // The 2-D grid: 40 × 40 cells over both parameters.
    assert_eq!(view["grid"]["axes"], json!(["x0", "x1"]));
    assert_eq!(view["grid"]["mean"].as_array().unwrap().len(), 1600);
    // A participant sees the welfare, never the others' estimated utilities.
    let (code, v) = call(&state, "GET", "/api/studies/meet/belief", Some(&ann), None).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert!(
        v["options"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o.get("people").is_none()),
        "{v}"
    );
    let (code, _) = call(&state, "GET", "/api/studies/meet/belief", None, None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_with_a_time_limit_closes_itself_on_the_server() {
    let store: Arc<dyn agora_study::live::Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let state = AppState::new(store.clone(), Some("admin-secret".into()));
    // Created over HTTP with a limit of 3 s (room for a busy machine between the steps
    // that must see it not yet due); a limit out of range is refused by name.
    let spec = |name: &str, secs: u64| {
        json!({
            "name": name,
            "space": {"kind": "box", "params": [{"type": "real", "name": "t", "lo": 15, "hi": 35}]},
            "method": {"name": "group-pairs"},
            "participants": ["ann", "bob", "cy"],
            "round_seconds": secs,
        })
        .to_string()
    };
    let (code, v) = call(
        &state,
        "POST",
        "/api/studies",
        Some("admin-secret"),
        Some(spec("bad", 0)),
    )
    .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("round_seconds"),
        "{v}"
    );
    let (code, v) = call(
        &state,
        "POST",
        "/api/studies",
        Some("admin-secret"),
        Some(spec("timed", 3)),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let fac = v["facilitator_token"].as_str().unwrap().to_string();
    let ann = v["participant_tokens"]["ann"].as_str().unwrap().to_string();
    let (_, q) = call(&state, "GET", "/api/studies/timed/query", Some(&fac), None).await;
    let qid = q["pending"]["query_id"].as_u64().unwrap();
    let deadline = q["pending"]["deadline_ms"].as_i64().unwrap();
    let (code, v) = call(
        &state,
        "POST",
        "/api/studies/timed/ballot",
        Some(&ann),
        Some(vote(qid, Some(1))),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{v}");
    // The same kind of study made outside the server (the CLI): found by the scan.
    let mut cli = agora_study::live::LiveStudy::create(
        store.clone(),
        serde_json::from_str(&spec("from-cli", 3)).unwrap(),
    )
    .unwrap();
    let cli_q = cli.pending().unwrap().id;
    assert_eq!(
        state.close_expired_rounds(false).await.unwrap(),
        0,
        "not due yet"
    );
    let wait = deadline.max(cli.deadline_ms().unwrap()) - agora_study::live::store::now_ms();
    tokio::time::sleep(std::time::Duration::from_millis(wait.max(0) as u64 + 50)).await;
    // Without the scan only the study the server holds is closed; with it, both.
    assert_eq!(state.close_expired_rounds(false).await.unwrap(), 1);
    assert_eq!(state.close_expired_rounds(true).await.unwrap(), 1);
    assert_eq!(
        state.close_expired_rounds(true).await.unwrap(),
        0,
        "nothing left due"
    );
    let (_, ev) = call(&state, "GET", "/api/studies/timed/events", Some(&fac), None).await;
    let closed = ev["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "answered")
        .unwrap()
        .clone();
    assert_eq!(closed["by"], "deadline");
    assert_eq!(closed["answer"]["query_id"], qid);
    assert_eq!(
        closed["answer"]["kind"]["votes"],
        json!([1, null, null]),
        "{closed}"
    );
    // A late ballot is refused (409) and says the time ran out; the next round is open.
    let (code, v) = call(
        &state,
        "POST",
        "/api/studies/timed/ballot",
        Some(&ann),
        Some(vote(qid, Some(0))),
    )
    .await;
    assert_eq!(code, StatusCode::CONFLICT, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("time ran out"),
        "{v}"
    );
    let (_, q) = call(&state, "GET", "/api/studies/timed/query", Some(&fac), None).await;
    assert_ne!(q["pending"]["query_id"].as_u64().unwrap(), qid);
    cli.sync().unwrap();
    assert_ne!(
        cli.pending().unwrap().id,
        cli_q,
        "the CLI's study moved on too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_structured_and_name_the_field() {
    let state = state();
    let st = social(&state);
    let ann = st.participant_tokens[0].clone();
    let cases: Vec<(&str, &str, Option<String>, StatusCode, &str)> = vec![
        ("POST", "/api/studies/meet/ballot", Some("{not json".into()), StatusCode::BAD_REQUEST, "body"),
        ("POST", "/api/studies/meet/ballot", Some(json!({"query_id": 0, "ballot": {"type": "vote", "choice": 5}}).to_string()), StatusCode::BAD_REQUEST, "choice"),
        ("POST", "/api/studies/meet/ballot", Some(json!({"query_id": 0, "ballot": {"type": "rating", "value": 1.0}}).to_string()), StatusCode::BAD_REQUEST, "ballot"),
        ("POST", "/api/studies/meet/ballot", Some(json!({"query_id": 0, "participant": "zed", "ballot": {"type": "vote", "choice": 0}}).to_string()), StatusCode::BAD_REQUEST, "participant"),
        ("POST", "/api/studies/meet/ballot", Some(json!({"query_id": 0, "extra": 1, "ballot": {"type": "vote", "choice": 0}}).to_string()), StatusCode::BAD_REQUEST, "body"),
        ("GET", "/api/studies/nope/query", None, StatusCode::NOT_FOUND, ""),
        ("GET", "/api/studies/Bad%20Name/query", None, StatusCode::NOT_FOUND, ""),
        ("GET", "/api/studies/meet/events?format=xml", None, StatusCode::BAD_REQUEST, "format"),
        ("GET", "/api/nothing", None, StatusCode::NOT_FOUND, ""),
    ];
    for (m, uri, body, want, field) in cases {
        let (code, v) = call(&state, m, uri, Some(&ann), body).await;
        assert_eq!(code, want, "{m} {uri}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|s| !s.is_empty()),
            "{v}"
        );
        if !field.is_empty() {
            assert_eq!(v["error"]["field"], field, "{m} {uri}: {v}");
        }
    }
    // An unknown study's 404 does not list the studies that exist.
    let (_, v) = call(&state, "GET", "/api/studies/nope/query", Some(&ann), None).await;
    assert!(
        !v["error"]["message"].as_str().unwrap().contains("meet"),
        "{v}"
    );
    // Bodies over the limit: 413, structured.
    let big = format!(
        "{{\"query_id\": 0, \"pad\": \"{}\"}}",
        "x".repeat(BODY_LIMIT + 10)
    );
    let (code, v) = call(
        &state,
        "POST",
        "/api/studies/meet/ballot",
        Some(&ann),
        Some(big),
    )
    .await;
    assert_eq!(code, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
    assert_eq!(v["error"]["code"], "payload_too_large");
    // Creating needs the admin token.
    let spec = json!({"name": "s2", "space": {"kind": "box", "params": [{"type": "real", "name": "x", "lo": 0.0, "hi": 1.0}]}, "method": {"name": "pairs"}, "participants": ["ann"]}).to_string();
    let (code, _) = call(
        &state,
        "POST",
        "/api/studies",
        Some(&ann),
        Some(spec.clone()),
    )
    .await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    let (code, v) = call(
        &state,
        "POST",
        "/api/studies",
        Some("admin-secret"),
        Some(spec.clone()),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let t = v["participant_tokens"]["ann"].as_str().unwrap().to_string();
    let (code, s) = call(&state, "GET", "/api/studies/s2", Some(&t), None).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(s["you"]["participant"], "ann");
    assert_eq!(s["status"]["pending"]["kind"], "compare");
    let (code, v) = call(
        &state,
        "POST",
        "/api/studies",
        Some("admin-secret"),
        Some(spec),
    )
    .await;
    assert_eq!(code, StatusCode::CONFLICT, "{v}");
    // The OpenAPI description parses and lists the endpoints; its `servers` entry is the
    // address the client reached, and it allows no negative query id.
    let (code, o) = call(&state, "GET", "/api/openapi.json", None, None).await;
    assert_eq!(code, StatusCode::OK);
    let req = Request::builder()
        .uri("/api/openapi.json")
        .header("host", "127.0.0.1:9931")
        .body(Body::empty())
        .unwrap();
    let res = router(state.clone()).oneshot(req).await.unwrap();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 22)
        .await
        .unwrap();
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(doc["servers"][0]["url"], "http://127.0.0.1:9931");
    assert_eq!(
        doc["components"]["schemas"]["BallotBody"]["properties"]["query_id"]["minimum"], 0,
        "{}",
        doc["components"]["schemas"]
    );
    for p in [
        "/api/studies/{name}",
        "/api/studies/{name}/ballot",
        "/api/studies/{name}/answer",
    ] {
        assert!(o["paths"].get(p).is_some(), "openapi lacks {p}");
    }
}

/// The document is made from the router's own routes: every operation it lists reaches its
/// handler (not the fallback's 404 nor a 405), and answers with a status the document
/// lists for it; its enums and bounds come from the Rust types.
#[tokio::test]
async fn the_api_document_lists_every_route_with_the_statuses_it_answers() {
    let state = state();
    let st = social(&state);
    let (_, doc) = call(&state, "GET", "/api/openapi.json", None, None).await;
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    let mut operations = 0;
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            let uri = path.replace("{name}", "meet");
            if uri.ends_with("/stream") {
                continue; // endless; covered by the live-update tests
            }
            let body = (method == "post").then(|| "{}".to_string());
            let (code, v) = call(
                &state,
                &method.to_uppercase(),
                &uri,
                Some(&st.facilitator_token),
                body,
            )
            .await;
            assert_ne!(code, StatusCode::METHOD_NOT_ALLOWED, "{method} {uri}");
            assert_ne!(v["error"]["code"], "not_found", "{method} {uri}: {v}");
            assert!(
                op["responses"].get(code.as_str()).is_some(),
                "{method} {uri} answered {code}, which the document does not list: {v}"
            );
            operations += 1;
        }
    }
    // 18 operations, the endless stream left out.
    assert_eq!(operations, 17, "{:?}", paths.keys().collect::<Vec<_>>());
    let s = &doc["components"]["schemas"];
    assert_eq!(
        s["StudySpec"]["properties"]["round_seconds"]["maximum"],
        604_800
    );
    assert_eq!(
        s["StudySpec"]["properties"]["name"]["pattern"],
        "^[a-z0-9_-]{1,64}$"
    );
    let codes = s["ErrorCode"]["enum"].as_array().unwrap();
    for c in ["invalid_input", "not_pending", "busy", "unavailable"] {
        assert!(codes.contains(&json!(c)), "{codes:?}");
    }
    assert_eq!(
        s["PendingView"]["properties"]["kind"]["enum"],
        json!(["compare", "evaluate", "group_vote", "group_rate"])
    );
    // The media limits the server enforces, as the document states them.
    let media = s["Media"]["oneOf"].as_array().unwrap();
    let field = |kind: &str, name: &str| -> Value {
        let v = media.iter().find(|v| v["properties"].get(name).is_some());
        v.unwrap_or_else(|| panic!("no {kind} media with `{name}`: {media:?}"))["properties"][name]
            .clone()
    };
    assert_eq!(field("text", "text")["maxLength"], MAX_TEXT_CHARS);
    assert_eq!(field("url", "url")["maxLength"], MAX_TEXT_CHARS);
    assert_eq!(
        field("file", "data")["maxLength"],
        MAX_FILE_BYTES.div_ceil(3) * 4,
        "the base64 length of the largest file"
    );
    let types = field("file", "content_type")["description"].to_string();
    for t in CONTENT_TYPES {
        assert!(types.contains(&format!("`{t}`")), "{t} not in {types}");
    }
    // Rust's doc links mean nothing to an API reader; none is left in the text.
    let text = doc.to_string();
    assert!(
        !text.contains("[`"),
        "a Rust doc link in the document: {}",
        {
            let i = text.find("[`").unwrap();
            &text[i.saturating_sub(80)..(i + 80).min(text.len())]
        }
    );
}

/// JSON bodies a client might send, well-formed or not.
fn body_strategy() -> impl Strategy<Value = String> {
    let choice = prop_oneof![
        Just(json!(null)),
        (0u64..4).prop_map(|c| json!(c)),
        Just(json!(-1)),
        Just(json!("A")),
        Just(json!(1e300))
    ];
    let ballot = prop_oneof![
        choice
            .clone()
            .prop_map(|c| json!({"type": "vote", "choice": c})),
        prop_oneof![
            Just(json!(0.5)),
            Just(json!("NaN")),
            Just(json!(null)),
            Just(json!(1e308))
        ]
        .prop_map(|v| json!({"type": "rating", "value": v})),
        Just(json!({"type": "bogus"})),
        Just(json!([])),
    ];
    let who = prop_oneof![
        Just(json!(null)),
        Just(json!("ann")),
        Just(json!("bob")),
        Just(json!("zed")),
        Just(json!("")),
        Just(json!("\u{0}"))
    ];
    let qid = prop_oneof![
        (0u64..6).prop_map(|q| json!(q)),
        Just(json!(-3)),
        Just(json!("0")),
        Just(json!(u64::MAX))
    ];
    let structured = (qid.clone(), who, ballot).prop_map(|(q, w, b)| {
        let mut o = json!({"query_id": q, "ballot": b});
        if !w.is_null() {
            o["participant"] = w;
        }
        o.to_string()
    });
    let answer = (qid, choice).prop_map(|(q, c)| {
        json!({"query_id": q, "kind": {"type": "choice", "winner": c, "rater": null}}).to_string()
    });
    prop_oneof![
        4 => structured,
        2 => answer,
        1 => ".{0,40}",
        1 => prop::collection::vec(any::<u8>(), 0..40).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, failure_persistence: None, ..ProptestConfig::default() })]

    /// 10,000 bodies against the ballot, answer and close endpoints: every response is
    /// JSON with a status below 500, and errors carry a non-empty message.
    #[test]
    fn fuzzed_bodies_get_clear_errors_never_a_panic(
        body in body_strategy(),
        endpoint in prop_oneof![Just("ballot"), Just("answer"), Just("close")],
        as_facilitator in any::<bool>(),
    ) {
        thread_local! {
            static RT: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            static S: (AppState, StoredStudy) = {
                let s = state();
                let group = s.create_study(StudySpec {
                    name: "meet".into(),
                    description: String::new(),
                    space: Space::reals(&[(0.0, 1.0)]).unwrap(),
                    method: MethodSpec::from_knobs("group-pairs", &[]).unwrap(),
                    seed: 1,
                    participants: vec!["ann".into(), "bob".into()],
                    round_seconds: None,
                    media: Vec::new(),
                }).unwrap();
                (s, group)
            };
        }
        let (code, v) = S.with(|(s, st)| {
            let token = if as_facilitator { st.facilitator_token.clone() } else { st.participant_tokens[0].clone() };
            RT.with(|rt| rt.block_on(call(s, "POST", &format!("/api/studies/meet/{endpoint}"), Some(&token), Some(body.clone()))))
        });
        prop_assert!(code.as_u16() < 500, "{} on {}: {}", code, body, v);
        if !code.is_success() {
            prop_assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{}", v);
        }
    }
}

/// Raw-body request (media), with a content type.
async fn call_raw(
    state: &AppState,
    method: &str,
    uri: &str,
    token: &str,
    ctype: &str,
    body: Vec<u8>,
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", ctype)
        .body(Body::from(body))
        .unwrap();
    let res = router(state.clone()).oneshot(req).await.unwrap();
    let (status, headers) = (res.status(), res.headers().clone());
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 22)
        .await
        .unwrap();
    (status, headers, bytes.to_vec())
}

/// Renderings posted for the open query's options: by the facilitator or the renderer
/// token (which may do nothing else), never a participant; types, sizes and first bytes
/// checked; every token of the study reads the file back with its type, under a policy
/// that runs no script; the query shows each option's media.
#[tokio::test]
async fn renderings_are_posted_checked_and_served_to_every_token() {
    let state = state();
    let st = social(&state);
    let qid = open_query_id(&state, &st).await;
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4" fill="red"/></svg>"#.to_vec();
    let url = |o: usize| format!("/api/studies/meet/media?query_id={qid}&option={o}");
    let renderer = st.renderer_token();
    // The renderer's token posts media and nothing else.
    let (code, _, body) = call_raw(
        &state,
        "POST",
        &url(0),
        &renderer,
        "image/svg+xml",
        svg.clone(),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let (code, _) = call(&state, "GET", "/api/studies/meet", Some(&renderer), None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    let ann = &st.participant_tokens[0];
    let (code, _, _) = call_raw(&state, "POST", &url(1), ann, "text/plain", b"mine".to_vec()).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    // Types, sizes and contents.
    let f = &st.facilitator_token;
    let (code, _, body) = call_raw(
        &state,
        "POST",
        &url(1),
        f,
        "application/pdf",
        b"%PDF-1.4".to_vec(),
    )
    .await;
    assert_eq!(code, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(String::from_utf8_lossy(&body).contains("image/png"));
    let (code, _, body) = call_raw(&state, "POST", &url(1), f, "image/png", svg.clone()).await;
    assert_eq!(
        code,
        StatusCode::BAD_REQUEST,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let big = [b"\x89PNG\r\n\x1a\n".to_vec(), vec![0; 1 << 20]].concat();
    let (code, _, _) = call_raw(&state, "POST", &url(1), f, "image/png", big).await;
    assert_eq!(code, StatusCode::PAYLOAD_TOO_LARGE);
    let (code, _, _) = call_raw(&state, "POST", &url(7), f, "text/plain", b"x".to_vec()).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    let stale = format!("/api/studies/meet/media?query_id={}&option=0", qid + 5);
    let (code, _, _) = call_raw(&state, "POST", &stale, f, "text/plain", b"x".to_vec()).await;
    assert_eq!(code, StatusCode::CONFLICT);
    let (code, _, _) = call_raw(
        &state,
        "POST",
        &url(1),
        f,
        "text/uri-list",
        b"https://example.org/b.png".to_vec(),
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    // Every token of the study sees the media in the query and reads the file back.
    let (_, q) = call(&state, "GET", "/api/studies/meet/query", Some(ann), None).await;
    let options = &q["pending"]["options"];
    assert_eq!(
        options[0]["media"],
        json!({"type": "file", "content_type": "image/svg+xml", "bytes": svg.len()})
    );
    assert_eq!(
        options[1]["media"],
        json!({"type": "url", "url": "https://example.org/b.png"})
    );
    let (code, headers, bytes) = call_raw(
        &state,
        "GET",
        &format!("/api/studies/meet/media/{qid}/0"),
        ann,
        "",
        vec![],
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(bytes, svg);
    assert_eq!(headers["content-type"], "image/svg+xml");
    assert!(
        headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("sandbox")
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let (code, _, _) = call_raw(
        &state,
        "GET",
        &format!("/api/studies/meet/media/{qid}/1"),
        ann,
        "",
        vec![],
    )
    .await;
    assert_eq!(code, StatusCode::NOT_FOUND, "a link has no file");
    let (code, _, _) = call_raw(
        &state,
        "GET",
        &format!("/api/studies/meet/media/{qid}/0"),
        "nope",
        "",
        vec![],
    )
    .await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
}

/// Earlier data and an option of the facilitator's own, over HTTP: the study learns them as
/// from `agora study import` / `enqueue` (a twin study given the same file asks the same
/// question); a bad row is named and stores nothing; participants may not.
#[tokio::test]
async fn the_facilitator_imports_and_enqueues_over_http() {
    let state = state();
    let spec = json!({
        "name": "imp",
        "space": {"kind": "box", "params": [
            {"type": "real", "name": "temperature", "lo": 18.0, "hi": 28.0},
            {"type": "integer", "name": "fans", "lo": 0, "hi": 3}
        ]},
        "method": {"name": "pairs"},
        "participants": ["ann"],
        "seed": 1,
    });
    let (code, v) = call(
        &state,
        "POST",
        "/api/studies",
        Some("admin-secret"),
        Some(spec.to_string()),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let fac = v["facilitator_token"].as_str().unwrap().to_string();
    let ann = v["participant_tokens"]["ann"].as_str().unwrap().to_string();
    let events = |state: AppState, token: String| async move {
        let (_, e) = call(&state, "GET", "/api/studies/imp/events", Some(&token), None).await;
        e["events"].as_array().unwrap().len()
    };
    let before = events(state.clone(), fac.clone()).await;
    let post = |path: &'static str, token: String, body: Value| {
        let state = state.clone();
        async move { call(&state, "POST", path, Some(&token), Some(body.to_string())).await }
    };
    let good = json!({"rows": [
        {"winner": {"temperature": 21.0, "fans": 1}, "loser": {"temperature": 27.0, "fans": 3}},
        {"winner": {"temperature": 22.5, "fans": 2}, "loser": {"temperature": 19.0, "fans": 0}},
    ]});
    let (code, v) = post("/api/studies/imp/import", ann.clone(), good.clone()).await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{v}");
    let bad = json!({"rows": [
        {"winner": {"temperature": 21.0, "fans": 1}, "loser": {"temperature": 27.0, "fans": 3}},
        {"winner": {"temperature": 22.5, "fans": 2}, "loser": {"temperature": 31.0, "fans": 0}},
    ]});
    let (code, v) = post("/api/studies/imp/import", fac.clone(), bad).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["error"]["field"], "line 2: loser.temperature", "{v}");
    let (code, v) = post("/api/studies/imp/import", fac.clone(), json!({"rows": []})).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["error"]["field"], "rows", "{v}");
    assert_eq!(events(state.clone(), fac.clone()).await, before);

    let (code, v) = post("/api/studies/imp/import", fac.clone(), good).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["outcome"], "recorded");
    // The twin: the same spec on its own store, given the same rows as a CSV file.
    let mut twin = agora_study::live::LiveStudy::create(
        Arc::new(SqliteStore::in_memory().unwrap()),
        serde_json::from_value(spec).unwrap(),
    )
    .unwrap();
    let csv = "winner.temperature,winner.fans,loser.temperature,loser.fans\n\
               21,1,27,3\n22.5,2,19,0\n";
    let rows = agora_study::live::import::read_observations(&twin.spec().space, csv).unwrap();
    twin.import(&agora_study::live::Actor::Owner, rows).unwrap();
    let (_, q) = call(&state, "GET", "/api/studies/imp/query", Some(&fac), None).await;
    let twin_view = serde_json::to_value(
        twin.pending_view(&agora_study::live::Actor::Facilitator)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(q["pending"]["options"], twin_view["options"]);
    assert_eq!(q["pending"]["query_id"], twin_view["query_id"]);

    // An option of one's own goes into the question after the open one.
    let (code, v) = post(
        "/api/studies/imp/enqueue",
        fac.clone(),
        json!({"option": {"temperature": 20.0, "fans": 9}}),
    )
    .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert!(
        v["error"]["field"].as_str().unwrap().contains("fans"),
        "{v}"
    );
    let (code, v) = post(
        "/api/studies/imp/enqueue",
        ann.clone(),
        json!({"option": {"temperature": 20.0, "fans": 3}}),
    )
    .await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{v}");
    let (code, v) = post(
        "/api/studies/imp/enqueue",
        fac.clone(),
        json!({"option": {"temperature": 20.0, "fans": 3}}),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{v}");
    let qid = q["pending"]["query_id"].as_u64().unwrap();
    let (code, v) = post(
        "/api/studies/imp/answer",
        fac.clone(),
        json!({"query_id": qid, "kind": {"type": "choice", "winner": 0, "rater": "ann"}}),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{v}");
    let (_, q) = call(&state, "GET", "/api/studies/imp/query", Some(&fac), None).await;
    let shown: Vec<Value> = q["pending"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["params"].clone())
        .collect();
    assert!(
        shown.contains(&json!([["temperature", 20.0], ["fans", 3]])),
        "{shown:?}"
    );
    // No import once an answer is in.
    let (code, v) = post(
        "/api/studies/imp/import",
        fac.clone(),
        json!({"rows": [{"winner": {"temperature": 21.0, "fans": 1}, "loser": {"temperature": 27.0, "fans": 3}}]}),
    )
    .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
}

/// A candidate set's pictures travel in its definition: `POST /api/studies` takes one far
/// over the 64 KiB of other requests (here three files of 200 KiB), and refuses one over
/// 16 MiB with 413; without the admin's token it is refused before the body is read.
#[tokio::test]
async fn a_candidate_set_with_its_pictures_is_created_over_http() {
    use agora_server::SPEC_BODY_LIMIT;
    use agora_study::live::media::Media;
    let state = state();
    let png = |fill: u8| {
        let mut b = b"\x89PNG\r\n\x1a\n".to_vec();
        b.resize(200 * 1024, fill);
        serde_json::to_value(Media::file("image/png", &b, "png").unwrap()).unwrap()
    };
    let spec = |media: Vec<Value>| {
        json!({
            "name": "rooms",
            "space": {"kind": "candidates", "names": ["a", "b", "c"],
                      "features": [[0.0], [0.5], [1.0]]},
            "method": {"name": "social"},
            "participants": ["ann", "bob"],
            "media": media,
        })
        .to_string()
    };
    let files: Vec<Value> = (0..3).map(|i| png(i as u8)).collect();
    let body = spec(files.clone());
    assert!(body.len() > 3 * BODY_LIMIT);
    let (code, v) = call(&state, "POST", "/api/studies", None, Some(body.clone())).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED, "{v}");
    let (code, v) = call(
        &state,
        "POST",
        "/api/studies",
        Some("admin-secret"),
        Some(body),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let fac = v["facilitator_token"].as_str().unwrap().to_string();
    let (_, q) = call(&state, "GET", "/api/studies/rooms/query", Some(&fac), None).await;
    let qid = q["pending"]["query_id"].as_u64().unwrap();
    let first = q["pending"]["options"][0]["point"]["index"]
        .as_u64()
        .unwrap();
    let (code, _, bytes) = call_raw(
        &state,
        "GET",
        &format!("/api/studies/rooms/media/{qid}/0"),
        &fac,
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(bytes.len(), 200 * 1024);
    assert!(
        bytes[8..].iter().all(|&b| b == first as u8),
        "candidate {first}'s file"
    );
    // Over the limit: 413, and nothing made.
    let huge = spec(vec![
        json!({"type": "text", "text": "x".repeat(SPEC_BODY_LIMIT)}),
    ]);
    let (code, v) = call(
        &state,
        "POST",
        "/api/studies",
        Some("admin-secret"),
        Some(huge.replace("\"rooms\"", "\"huge\"")),
    )
    .await;
    assert_eq!(code, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
    assert_eq!(v["error"]["code"], "payload_too_large");
    let (code, v) = call(&state, "GET", "/api/studies", Some("admin-secret"), None).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    let names: Vec<&str> = v["studies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["rooms"], "nothing made of the refused definition");
}

/// A body that breaks off is a bad request (400 `bad_body`), not one over the limit; one
/// over the limit is 413. Nothing is made either way.
#[tokio::test]
async fn a_broken_body_is_told_from_one_too_large() {
    let state = state();
    let send = |chunks: Vec<Result<Vec<u8>, std::io::Error>>| {
        let state = state.clone();
        async move {
            let req = Request::builder()
                .method("POST")
                .uri("/api/studies")
                .header("authorization", "Bearer admin-secret")
                .header("content-type", "application/json")
                .body(Body::from_stream(futures_util::stream::iter(chunks)))
                .unwrap();
            let res = router(state).oneshot(req).await.unwrap();
            let status = res.status();
            let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
                .await
                .unwrap();
            (status, serde_json::from_slice::<Value>(&bytes).unwrap())
        }
    };
    let broken = vec![
        Ok(b"{\"name\": \"x\", ".to_vec()),
        Err(std::io::Error::other("connection reset")),
    ];
    let (code, v) = send(broken).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["error"]["code"], "bad_body", "{v}");
    let chunk = vec![b' '; 1 << 20];
    let (code, v) = send((0..17).map(|_| Ok(chunk.clone())).collect()).await;
    assert_eq!(code, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
    let (_, v) = call(&state, "GET", "/api/studies", Some("admin-secret"), None).await;
    assert_eq!(v["studies"], json!([]));
}
