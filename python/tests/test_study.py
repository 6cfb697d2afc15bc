"""Studies on a store: created and driven from Python, and the same file read and written
by the `agora` command line."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import uuid

import pytest

import agora
from conftest import Cli, run_at_once

BRANIN = agora.problems.make("branin")


def strip_times(export: dict) -> dict:
    """An export without its events' timestamps (the only thing two readers may not share)."""
    doc = json.loads(json.dumps(export))
    for e in doc["events"]:
        e.pop("at_ms", None)
    return doc


def answer_bo(study: agora.Study, n: int) -> list[float]:
    told = []
    for _ in range(n):
        q = study.ask()
        assert q is not None and q.kind == "evaluate"
        values = [BRANIN(p) for p in q.points]
        assert study.tell(values=values) == "answered"
        told += values
    return told


# --- Python only ----------------------------------------------------------------------------------


def test_create_and_drive_a_study(db):
    st = agora.create_study("opt", method="bo", space=BRANIN.space, seed=2, storage=str(db))
    assert st.name == "opt" and st.participants == [] and st.space == BRANIN.space
    spec = st.spec()
    assert spec["method"]["name"] == "bo" and spec["seed"] == 2
    assert st.best() is None
    told = answer_bo(st, 4)
    status = st.status()
    assert status["answered"] == 4
    assert status["study"] == "opt"
    assert status["pending"]["query_id"] == st.ask().id
    best = st.best()
    assert best["value"] == max(told)
    assert agora.study_names(storage=str(db)) == ["opt"]
    assert "opt" in repr(st)


def test_a_bad_spec_stores_nothing(db):
    with pytest.raises(ValueError):
        agora.create_study("bad", method="group-pairs", space=BRANIN.space, participants=["a", "a"], storage=str(db))
    with pytest.raises(KeyError, match="allowed"):
        agora.create_study("bad", method="bo", space=BRANIN.space, storage=str(db), nonsense=1)
    assert not db.exists() or agora.study_names(storage=str(db)) == []


def test_sqlite_url_is_the_same_file(db):
    agora.create_study("one", method="bo", space=BRANIN.space, storage=str(db))
    assert agora.study_names(storage=f"sqlite:///{db}") == ["one"]
    assert agora.load_study("one", storage=f"sqlite:///{db}").name == "one"


def test_a_name_is_taken_once(db):
    agora.create_study("one", method="bo", space=BRANIN.space, storage=str(db))
    with pytest.raises(ValueError, match="exists"):
        agora.create_study("one", method="bo", space=BRANIN.space, storage=str(db))


def test_load_study_resumes_exactly(db):
    st = agora.create_study("r", method="gp-ei", space=BRANIN.space, seed=5, storage=str(db))
    answer_bo(st, 5)
    again = agora.load_study("r", storage=str(db))
    assert again.ask().to_dict() == st.ask().to_dict()
    assert again.status() == st.status()
    assert again.export("csv") == st.export("csv")


def test_another_study_object_sees_the_answers(db):
    a = agora.create_study("sync", method="pairs", space=BRANIN.space, storage=str(db))
    b = agora.load_study("sync", storage=str(db))
    q = a.ask()
    assert b.ask().to_dict() == q.to_dict()
    assert b.tell(winner="B") == "answered"
    # `a` catches up with what `b` stored.
    assert a.status()["answered"] == 1
    assert a.ask().id != q.id
    assert a.ask().to_dict() == b.ask().to_dict()
    assert a.tell(tie=True) == "answered"
    assert b.status()["answered"] == 2


def test_duplicate_answer(db):
    st = agora.create_study("dup", method="bo", space=BRANIN.space, storage=str(db))
    q = st.ask()
    assert st.tell(values=[1.5]) == "answered"
    assert st.tell(query=q.id, values=[1.5]) == "duplicate"
    with pytest.raises(ValueError, match="closed"):
        st.tell(query=q.id, values=[2.5])
    with pytest.raises(ValueError, match="never asked"):
        st.tell(query=99, values=[1.0])
    assert st.status()["answered"] == 1


def test_group_ballots(db):
    space = agora.Space([agora.real("x", 0, 1)])
    st = agora.create_study("vote", method="group-pairs", space=space, participants=["ann", "bob", "cy"], storage=str(db))
    q = st.ask()
    assert q.kind == "group_vote" and q.asked == ["ann", "bob", "cy"] and q.channel == "public"
    assert st.tell(who="ann", vote="A") == "recorded"
    assert st.tell(who="ann", vote="A") == "duplicate"
    assert st.tell(who="bob", vote=1) == "recorded"
    pending = st.status()["pending"]
    assert pending["voted"] == ["ann", "bob"]
    assert pending["ballots"]["bob"] == {"type": "vote", "choice": 1}
    with pytest.raises(KeyError, match="ann, bob, cy"):
        st.tell(who="zed", vote="A")
    assert st.tell(who="cy", vote="tie") == "answered"
    assert st.ask().id != q.id
    # The whole group's answer: one vote per participant, in ballot order.
    votes = [e for e in st.export("json")["events"] if e["type"] == "answered"]
    assert votes[0]["answer"]["kind"] == {"type": "votes", "votes": [0, 1, None]}
    assert st.tell(votes=["B", "A", None]) == "answered"
    assert st.status()["answered"] == 2


def test_close_counts_missing_votes_as_cant_tell(db):
    space = agora.Space([agora.real("x", 0, 1)])
    st = agora.create_study("close", method="group-pairs", space=space, participants=["ann", "bob"], storage=str(db))
    assert st.tell(who="bob", vote="B") == "recorded"
    assert st.close() == "answered"
    answered = [e for e in st.export("json")["events"] if e["type"] == "answered"]
    assert answered[0]["answer"]["kind"]["votes"] == [None, 1]


def test_social_study_asks_its_participants(db):
    toy = agora.problems.make("group:toy")
    st = agora.create_study("soc", method="social", space=toy.space, participants=["ann", "bob"], storage=str(db))
    q = st.ask()
    assert q.kind == "group_vote"
    # The people of the study, not the method's internal agent numbers.
    assert q.asked == ["ann", "bob"]
    assert st.tell(who="bob", vote="A") == "recorded"
    assert st.tell(who="ann", vote="B") == "answered"


def test_export_csv_has_one_row_per_event(db):
    space = agora.Space([agora.real("x", 0, 1)])
    st = agora.create_study("csv", method="group-pairs", space=space, participants=["ann", "bob"], storage=str(db))
    st.tell(who="ann", vote="A")
    st.tell(who="bob", vote="B")
    st.tell(votes=["A", "A"])
    rows = list(csv.DictReader(io.StringIO(st.export("csv"))))
    events = st.export("json")["events"]
    assert len(rows) == len(events) == st.status()["events"]
    assert [r["event"] for r in rows] == [e["type"] for e in events]
    assert [int(r["seq"]) for r in rows] == list(range(len(rows)))
    assert [r["participant"] for r in rows if r["event"] == "ballot"] == ["ann", "bob"]


def test_tokens(db):
    st = agora.create_study("tok", method="pairs", space=BRANIN.space, participants=["ann"], storage=str(db))
    t = st.tokens()
    assert set(t["participants"]) == {"ann"}
    assert t["facilitator"] and t["facilitator"] != t["participants"]["ann"]


# --- with the command line -----------------------------------------------------------------------


def test_python_study_reads_the_same_from_the_cli(db, cli: Cli):
    space = agora.Space([agora.real("x", 0, 1), agora.categorical("c", ["a", "b"])])
    st = agora.create_study("py", method="group-pairs", space=space, participants=["ann", "bob"], seed=3, storage=str(db))
    st.tell(who="ann", vote="A")
    st.tell(who="bob", vote="tie")
    st.tell(votes=["B", "A"])
    st.tell(who="bob", vote="B")
    assert cli.json("status", "py", "--json") == st.status()
    assert cli.json("best", "py", "--json") == st.best()
    exported = cli.json("export", "py", "--format", "json")
    assert strip_times(exported) == strip_times(st.export("json"))
    assert exported["created_utc"] == st.export("json")["created_utc"]
    assert cli("export", "py", "--format", "csv") == st.export("csv")
    assert "py" in cli("study", "list")


def pending_matches(view: dict, q: agora.Query) -> None:
    """`agora ask --json`'s view of the open query is `q`."""
    assert view["query_id"] == q.id
    assert view["kind"] == q.kind
    assert [o["point"] for o in view["options"]] == q.to_dict()["kind"]["points"]
    for o, p in zip(view["options"], q.points):
        assert [name for name, _ in o["params"]] == list(p)


def test_cli_study_continues_in_python(db, cli: Cli):
    cli(
        "study", "create", "cli",
        "--param", "x0:real:-5:10", "--param", "x1:real:0:15",
        "--method", "bo", "--seed", "4",
    )
    for _ in range(3):
        view = cli.json("ask", "cli", "--json")
        # The params are rounded for display; the exact point is its unit coordinates.
        value = BRANIN(BRANIN.space.to_user(view["options"][0]["point"]["unit"]))
        cli("tell", "cli", "--query", str(view["query_id"]), "--values", repr(value))
    st = agora.load_study("cli", storage=str(db))
    assert st.status()["answered"] == 3
    q = st.ask()
    pending_matches(cli.json("ask", "cli", "--json"), q)
    # The Python answer continues the study the CLI made...
    assert st.tell(values=[BRANIN(q.points[0])]) == "answered"
    q2 = st.ask()
    assert q2.id != q.id
    pending_matches(cli.json("ask", "cli", "--json"), q2)
    # ... and the CLI's next answer continues it again.
    cli("tell", "cli", "--values", "-10.5")
    assert st.status()["answered"] == 5
    assert cli.json("status", "cli", "--json") == st.status()
    assert cli("export", "cli", "--format", "csv") == st.export("csv")


def test_workers_get_their_own_queries_and_answer_in_any_order(db, cli: Cli):
    st = agora.create_study("fleet", method="gp-logei", space=BRANIN.space, seed=1, storage=str(db))
    answer_bo(st, 10)  # the Sobol design, one at a time
    qs = {w: st.ask(worker=w) for w in ("w1", "w2", "w3")}
    assert st.ask(worker="w2").id == qs["w2"].id  # asking again: the worker's own query
    view = cli.json("ask", "fleet", "--worker", "w4", "--json")  # a worker in another process
    assert view["worker"] == "w4"
    ids = [q.id for q in qs.values()] + [view["query_id"]]
    points = [q.unit_points[0] for q in qs.values()] + [view["options"][0]["point"]["unit"]]
    assert len(set(ids)) == 4
    assert all(points[i] != points[j] for i in range(4) for j in range(i))
    assert {w["worker"] for w in st.status()["workers"]} == {"w1", "w2", "w3", "w4"}
    # Answers in any order, by query id; a retry is a duplicate.
    for q in (qs["w3"], qs["w1"]):
        assert st.tell(query=q.id, values=[BRANIN(q.points[0])]) == "answered"
    assert st.tell(query=qs["w1"].id, values=[BRANIN(qs["w1"].points[0])]) == "duplicate"
    cli("tell", "fleet", "--worker", "w4", "--values", "-12.5")
    with pytest.raises(ValueError, match="values"):
        st.tell(query=qs["w2"].id, values=[float("nan")])
    with pytest.raises(ValueError, match="worker"):
        st.ask(worker="")
    again = agora.load_study("fleet", storage=str(db))  # replays the log: exact resume
    assert again.status()["answered"] == 13
    assert [w["query_id"] for w in again.status()["workers"]] == [qs["w2"].id]
    assert again.ask(worker="w2").id == qs["w2"].id


def test_a_pairs_study_takes_no_workers(db):
    space = agora.Space([agora.real("x", 0, 1)])
    st = agora.create_study("p", method="pairs", space=space, participants=["ann"], storage=str(db))
    with pytest.raises(ValueError, match="worker"):
        st.ask(worker="w1")


def test_cli_ballots_reach_python(db, cli: Cli):
    cli(
        "study", "create", "grp", "--param", "t:real:15:35",
        "--method", "group-pairs", "--participants", "ann,bob",
    )
    st = agora.load_study("grp", storage=str(db))
    assert st.participants == ["ann", "bob"]
    cli("tell", "grp", "--as", "ann", "--vote", "A")
    assert st.status()["pending"]["voted"] == ["ann"]
    assert st.tell(who="ann", vote="A") == "duplicate"
    assert st.tell(who="bob", vote="B") == "answered"
    view = cli.json("ask", "grp", "--json")
    pending_matches(view, st.ask())
    assert view["voted"] == []


def _postgres_url() -> str:
    url = os.environ.get("AGORA_TEST_POSTGRES")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("CI is set but AGORA_TEST_POSTGRES is not: .ci/run starts PostgreSQL")
        pytest.skip("skipped: set AGORA_TEST_POSTGRES (eval \"$(bash tools/postgres start)\")")
    return url


def test_a_python_study_on_postgresql_opens_in_the_cli_and_back(agora_bin):
    url = _postgres_url()
    name = "py-pg-" + uuid.uuid4().hex[:12]
    space = agora.Space([agora.real("x", 0, 1), agora.real("y", 0, 1)])
    st = agora.create_study(name, method="pairs", space=space, participants=["ann"], seed=2, storage=url)
    assert st.tell(winner="A") == "answered"
    env = {k: v for k, v in os.environ.items() if k not in ("AGORA_DB", "AGORA_STORAGE")}

    def cli(*args: str) -> str:
        r = subprocess.run([str(agora_bin), *args, "--storage", url], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout

    assert json.loads(cli("status", name, "--json")) == st.status()
    cli("tell", name, "--winner", "B")
    again = agora.load_study(name, storage=url)
    assert again.status()["answered"] == 2
    assert name in agora.study_names(storage=url)
    assert cli("export", name, "--format", "csv") == again.export("csv")
    # The password never shows in an error.
    bad = url.replace("://", "://nobody:secret-pw@", 1) if "@" not in url else url.split("@")[0].rsplit(":", 1)[0] + ":wrong-secret@" + url.split("@", 1)[1]
    with pytest.raises(Exception) as e:
        agora.load_study(name, storage=bad)
    assert "secret" not in str(e.value)


# --- Start from what you know, media, deadlines and the model, from Python -------------------------

BOX = agora.Space([agora.real("temperature", 18.0, 28.0), agora.integer("fans", 0, 3)])
EARLIER = [
    {"temperature": 20.0, "fans": 1, "value": 3.5},
    {"temperature": 24.0, "fans": 2, "value": 4.25},
    {"temperature": 27.5, "fans": 0, "value": 1.0},
]
# 1x1 images, their first bytes as the formats define them (PNG: the 8-byte signature).
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 24
GIF = b"GIF89a" + b"\0" * 24


def test_imported_evaluations_are_the_cli_import(db, cli: Cli, tmp_path):
    """`import_data` with dicts, with CSV text, and `agora study import FILE` store the same
    observations: the three studies ask the same next question."""
    py = agora.create_study("py", method="bo", space=BOX, seed=2, storage=str(db), strategy="gp-logei")
    text = agora.create_study("text", method="bo", space=BOX, seed=2, storage=str(db), strategy="gp-logei")
    cli("study", "create", "cli", "--param", "temperature:real:18:28", "--param", "fans:int:0:3",
        "--method", "bo", "--set", "strategy=gp-logei", "--seed", "2")
    csv_text = "temperature,fans,value\n" + "".join(
        f"{r['temperature']},{r['fans']},{r['value']}\n" for r in EARLIER
    )
    (tmp_path / "earlier.csv").write_text(csv_text)
    first = py.ask().id
    assert py.import_data(EARLIER) == 3
    assert text.import_data(csv_text) == 3
    cli("study", "import", "cli", str(tmp_path / "earlier.csv"))
    cli_study = agora.load_study("cli", storage=str(db))
    # The open question was withdrawn and asked again; imports are not answers.
    q = py.ask()
    assert q.id != first and py.status()["answered"] == 0
    assert [e["type"] for e in py.export("json")["events"]].count("imported") == 1
    for other in (text, cli_study):
        assert other.ask().to_dict()["kind"] == q.to_dict()["kind"]
    # The imported data are the model's: at the best one the mean is its value.
    (mean, sd), = py.belief([{"temperature": 24.0, "fans": 2}])
    assert abs(mean - 4.25) < 3 * sd + 0.05, (mean, sd)
    assert py.best()["value"] == 4.25


def test_a_bad_import_names_the_row_and_stores_nothing(db):
    st = agora.create_study("bad", method="bo", space=BOX, seed=0, storage=str(db), strategy="gp-logei")
    before = st.export("json")["events"]
    rows = [EARLIER[0], {"temperature": 31.0, "fans": 1, "value": 2.0}]
    with pytest.raises(ValueError, match=r"`line 2: temperature`: must lie in \[18, 28\], got 31"):
        st.import_data(rows)
    with pytest.raises(ValueError, match="fans"):
        st.import_data([{"temperature": 20.0, "fans": "two", "value": 1.0}])
    with pytest.raises(TypeError, match=r"data\[0\]"):
        st.import_data([[20.0, 1, 3.5]])
    for empty in ([], ""):
        with pytest.raises(ValueError, match="`data`: no rows"):
            st.import_data(empty)
    assert st.export("json")["events"] == before
    assert agora.load_study("bad", storage=str(db)).export("json")["events"] == before
    # After an answer there is nothing to stand in for.
    q = st.ask()
    st.tell(values=[1.0] * len(q.points))
    with pytest.raises(ValueError, match="answer"):
        st.import_data(EARLIER)


def test_an_enqueued_option_is_asked_next(db, cli: Cli):
    st = agora.create_study("mine", method="pairs", space=BOX, participants=["ann"], seed=1, storage=str(db))
    open_id = st.ask().id
    st.enqueue({"temperature": 21.0, "fans": 3})
    with pytest.raises(ValueError, match="fans"):
        st.enqueue({"temperature": 21.0, "fans": 9})
    assert st.ask().id == open_id  # the open question stays
    st.tell(winner="A")
    q = st.ask()
    assert {"temperature": 21.0, "fans": 3} in q.points
    # The CLI reads the same log.
    assert cli.json("status", "mine", "--json") == st.status()


def test_candidate_media_from_python(db, tmp_path):
    (tmp_path / "b.gif").write_bytes(GIF)
    (tmp_path / "big.png").write_bytes(PNG + b"\0" * (1 << 20))
    space = agora.Space.candidates(["red", "green", "blue", "grey"], [[0.0], [0.3], [0.6], [1.0]])
    media = [
        {"type": "file", "content_type": "image/png", "data": PNG},
        {"type": "file", "path": tmp_path / "b.gif"},  # a str or any os.PathLike
        {"type": "text", "text": "A calm blue"},
        None,
    ]
    # Candidate sets are for `bo` and Social BO; a group vote shows two options.
    st = agora.create_study("colours", method="social", space=space, participants=["ann", "bob"],
                            storage=str(db), media=media)
    q = st.ask()
    assert len(q.points) == 2
    for i, p in enumerate(q.points):
        want = media[p["index"]]
        got = st.media(i)
        if want is None:
            assert got is None
        elif "path" in want:
            assert got == {"type": "file", "content_type": "image/gif", "data": GIF}
        else:
            assert got == want
    # The spec holds them as the HTTP API takes them: base64.
    import base64

    assert st.spec()["media"] == [
        {"type": "file", "content_type": "image/png", "data": base64.b64encode(PNG).decode()},
        {"type": "file", "content_type": "image/gif", "data": base64.b64encode(GIF).decode()},
        {"type": "text", "text": "A calm blue"},
        None,
    ]
    # Wrong labels, sizes, shapes and lengths are named; nothing is stored.
    bad = [
        ([{"type": "file", "content_type": "image/jpeg", "data": PNG}] + [None] * 3, r"media\[0\]"),
        ([None, {"type": "file", "path": str(tmp_path / "x.bmp")}, None, None], r"media\[1\]\.path.*extensions"),
        ([None, None, {"type": "text", "text": "x" * 2001}, None], r"media\[2\]\.text"),
        ([None, {"type": "file", "path": tmp_path / "big.png"}, None, None], r"media\[1\]\.path.*at most 1048576"),
        ([None, {"type": "file", "path": tmp_path / "b.gif", "content_type": "image/png"}, None, None],
         r"media\[1\]\.path"),
        ([None, {"type": "file", "path": tmp_path / "none.png"}, None, None], r"media\[1\]\.path.*reading"),
        ([None, None, {"type": "url", "url": "javascript:alert(1)"}, None], r"media\[2\]\.url"),
        ([None, None, {"type": "picture"}, None], r"media\[2\]"),
        ([None], "media"),
    ]
    for entries, pattern in bad:
        with pytest.raises((ValueError, TypeError), match=pattern):
            agora.create_study("bad-media", method="social", space=space, participants=["ann", "bob"],
                               storage=str(db), media=entries)
    assert "bad-media" not in agora.study_names(storage=str(db))


def test_renderings_posted_from_python_reach_the_cli(db, cli: Cli, tmp_path):
    st = agora.create_study("render", method="pairs", space=BOX, participants=["ann"], seed=0, storage=str(db))
    q = st.ask()
    assert st.media(0) is None
    assert st.post_media(0, {"type": "file", "content_type": "image/png", "data": PNG}) == "recorded"
    assert st.post_media(0, {"type": "file", "content_type": "image/png", "data": PNG}) == "duplicate"
    assert st.post_media(1, {"type": "url", "url": "https://example.org/b.png"}, query=q.id) == "recorded"
    with pytest.raises(ValueError, match="option"):
        st.post_media(5, {"type": "text", "text": "none such"})
    with pytest.raises(ValueError, match="media"):
        st.post_media(0, None)
    again = agora.load_study("render", storage=str(db))
    assert again.media(0) == {"type": "file", "content_type": "image/png", "data": PNG}
    assert again.media(1) == {"type": "url", "url": "https://example.org/b.png"}
    view = cli.json("ask", "render", "--json")
    assert [o.get("media", {}).get("type") for o in view["options"]] == ["file", "url"]
    # The renderer's token is the one the server takes for posting media.
    import hashlib

    tokens = st.tokens()
    digest = hashlib.sha256(b"agora renderer token\0" + tokens["facilitator"].encode()).hexdigest()
    assert tokens["renderer"] == digest[:32]


def test_a_round_with_a_time_limit_closes_when_due(db):
    import time

    with pytest.raises(ValueError, match="round_seconds"):
        agora.create_study("never", method="group-pairs", space=BOX, participants=["ann", "bob"],
                           storage=str(db), round_seconds=0)
    st = agora.create_study("timed", method="group-pairs", space=BOX, participants=["ann", "bob", "cy"],
                            seed=0, storage=str(db), round_seconds=5)
    q = st.ask()
    deadline = st.status()["pending"]["deadline_ms"]
    st.tell(who="ann", vote="B")
    # Not due yet (unless this machine took the whole 5 s to get here).
    early = time.time() * 1000
    closed_early = st.close_expired()
    assert closed_early is None or early >= deadline - 50
    time.sleep(max(0.0, deadline / 1000 - time.time()) + 0.05)
    assert closed_early == "answered" or st.close_expired() == "answered"
    assert st.ask().id != q.id
    closed = [e for e in st.export("json")["events"] if e["type"] == "answered"]
    assert len(closed) == 1 and closed[0]["answer"]["query_id"] == q.id
    assert closed[0]["by"] == "deadline"
    assert closed[0]["answer"]["kind"]["votes"] == [1, None, None]


def test_the_study_model_is_its_strategys(db):
    """`Study.belief` and `agent_beliefs` are the model of the strategy the study runs: a
    strategy in memory with the same seed, told the same answers, believes the same."""
    st = agora.create_study("bo", method="bo", space=BRANIN.space, seed=5, storage=str(db), strategy="gp-logei")
    s = agora.Strategy("gp-logei", BRANIN.space, seed=5)
    assert st.belief([{"x0": 0.0, "x1": 5.0}]) == s.belief([{"x0": 0.0, "x1": 5.0}])
    for _ in range(12):
        q, p = st.ask(), s.ask()
        assert q.points == p.points
        values = [BRANIN(x) for x in q.points]
        st.tell(values=values)
        s.tell(values=values)
    grid = [{"x0": x0, "x1": x1} for x0 in (-5.0, 0.0, 5.0, 10.0) for x1 in (0.0, 7.5, 15.0)]
    assert st.belief(grid) == s.belief(grid)
    assert st.belief(grid) is not None and st.agent_beliefs(grid) is None

    group = agora.problems.make("group:toy", seed=0)
    people = ["ann", "bob"]
    st = agora.create_study("sbo", method="social", space=group.space, participants=people, seed=0, storage=str(db))
    s = agora.Strategy("sbo", group.space, participants=people, seed=0)
    for i in range(12):  # the model comes with the first private votes
        q, p = st.ask(), s.ask()
        assert q.to_dict() == p.to_dict()
        if q.kind == "group_vote":
            votes = ["A", "B"] if i % 2 else ["B", "B"]
            st.tell(votes=votes)
            s.tell(votes=votes)
        else:
            st.tell(ratings=[0.5, 0.25])
            s.tell(ratings=[0.5, 0.25])
    pts = [group.space.to_user([0.2] * group.space.dim), group.space.to_user([0.7] * group.space.dim)]
    assert st.belief(pts) == s.belief(pts) and st.belief(pts) is not None
    assert st.agent_beliefs(pts) == s.agent_beliefs(pts)
    assert [len(a) for a in st.agent_beliefs(pts)] == [2, 2]


def test_the_figure_is_the_clis(db, cli: Cli, tmp_path):
    import struct

    st = agora.create_study("fig", method="gp-logei", space=BRANIN.space, seed=3, storage=str(db))
    answer_bo(st, 6)
    cli("plot", "fig", "--out", str(tmp_path / "fig.svg"))
    cli("plot", "fig", "--out", str(tmp_path / "fig.png"))
    assert st.plot() == (tmp_path / "fig.svg").read_text()
    png = st.plot("png")
    assert png == (tmp_path / "fig.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (1000, 460)
    with pytest.raises(ValueError, match="svg, png"):
        st.plot("pdf")


def test_threads_sharing_a_study_do_not_deadlock(db):
    """One thread asks the model (the study locked, the GIL released) while another reads
    the study's name and tokens (the GIL held): neither may wait for the other forever."""
    st = agora.create_study("shared", method="gp-logei", space=BRANIN.space, seed=3, storage=str(db))
    answer_bo(st, 6)
    grid = [{"x0": x0, "x1": 7.5} for x0 in (-5.0, 0.0, 5.0, 10.0)] * 25

    def model():
        for _ in range(30):
            st.belief(grid)
            st.plot()

    def reader():
        for _ in range(3000):
            assert st.name == "shared" and st.tokens()["facilitator"]

    run_at_once(model, reader, reader)
