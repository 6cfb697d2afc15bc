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
from conftest import Cli

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
