"""agora.client against a running `agora serve`: a renderer shows each option of the open
question with a picture, people's tokens read it back, and refusals are clear."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from agora import client

PNG = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"


@pytest.fixture()
def server(agora_bin: Path, tmp_path: Path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [str(agora_bin), "serve", "--db", str(tmp_path / "s.db"), "--addr", f"127.0.0.1:{port}",
         "--admin-token", "py-admin"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            assert proc.poll() is None, f"agora serve exited with {proc.returncode}"
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("agora serve did not answer /healthz within a minute")
        yield base
    finally:
        proc.terminate()
        proc.wait(10)


def create(base: str) -> dict:
    spec = {
        "name": "chairs",
        "space": {"kind": "box", "params": [{"type": "real", "name": "height", "lo": 40, "hi": 60}]},
        "method": {"name": "pairs"},
        "participants": ["ann"],
    }
    req = urllib.request.Request(
        base + "/api/studies", data=json.dumps(spec).encode(), method="POST",
        headers={"Authorization": "Bearer py-admin", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req) as res:
        return json.loads(res.read())


def test_a_renderer_shows_each_open_option_with_a_picture(server: str) -> None:
    made = create(server)
    q = client.open_query(server, "chairs", made["facilitator_token"])
    assert q is not None and len(q["options"]) == 2
    renderer = made["renderer_token"]
    for i, _ in enumerate(q["options"]):
        assert client.post_media(server, "chairs", renderer, q["query_id"], i, PNG,
                                 content_type="image/png") == "recorded"
    assert client.post_media(server, "chairs", renderer, q["query_id"], 0, PNG,
                             content_type="image/png") == "duplicate"
    client.post_media(server, "chairs", renderer, q["query_id"], 1, text="the taller chair")
    ann = made["participant_tokens"]["ann"]
    seen = client.open_query(server, "chairs", ann)
    assert seen["options"][0]["media"] == {"type": "file", "content_type": "image/png", "bytes": len(PNG)}
    assert seen["options"][1]["media"] == {"type": "text", "text": "the taller chair"}
    req = urllib.request.Request(f"{server}/api/studies/chairs/media/{q['query_id']}/0",
                                 headers={"Authorization": f"Bearer {ann}"})
    with urllib.request.urlopen(req) as res:
        assert res.read() == PNG
        assert res.headers["Content-Type"] == "image/png"
    # Refusals name what is wrong.
    with pytest.raises(client.ApiError) as e:
        client.post_media(server, "chairs", renderer, q["query_id"], 5, text="x")
    assert e.value.status == 400 and e.value.field == "option"
    with pytest.raises(client.ApiError) as e:
        client.post_media(server, "chairs", renderer, q["query_id"], 0, b"GIF89a", content_type="image/png")
    assert e.value.status == 400 and "do not begin as a image/png" in e.value.message
    with pytest.raises(client.ApiError) as e:
        client.post_media(server, "chairs", ann, q["query_id"], 0, text="mine")
    assert e.value.status == 403
    with pytest.raises(client.ApiError) as e:
        client.post_media(server, "chairs", renderer, q["query_id"], 0, PNG, content_type="image/tiff")
    assert e.value.status == 415 and "image/png" in e.value.message
    with pytest.raises(ValueError, match="content_type"):
        client.post_media(server, "chairs", renderer, q["query_id"], 0, PNG)


def test_earlier_data_and_an_option_of_ones_own_over_http(server: str) -> None:
    made = create(server)
    fac, ann = made["facilitator_token"], made["participant_tokens"]["ann"]
    first = client.open_query(server, "chairs", fac)["query_id"]
    rows = [
        {"winner": {"height": 47}, "loser": {"height": 58}},
        {"winner": {"height": 45}, "loser": {"height": 61}},
    ]
    with pytest.raises(client.ApiError) as e:
        client.import_data(server, "chairs", fac, rows)
    assert e.value.status == 400 and e.value.field == "line 2: loser.height"
    assert "[40, 60]" in e.value.message
    with pytest.raises(client.ApiError) as e:
        client.import_data(server, "chairs", ann, rows[:1])
    assert e.value.status == 403
    assert client.open_query(server, "chairs", fac)["query_id"] == first  # nothing stored
    assert client.import_data(server, "chairs", fac, rows[:1]) == "recorded"
    req = urllib.request.Request(f"{server}/api/studies/chairs/events",
                                 headers={"Authorization": f"Bearer {fac}"})
    with urllib.request.urlopen(req) as res:
        events = json.loads(res.read())["events"]
    assert [e["type"] for e in events] == ["asked", "imported", "asked"]  # asked again
    assert events[1]["data"] == [{"type": "comparison", "winner": [0.35], "loser": [0.9]}]  # unit cube
    q = client.open_query(server, "chairs", fac)
    assert client.enqueue(server, "chairs", fac, {"height": 52.5}) == "recorded"
    with pytest.raises(client.ApiError) as e:
        client.enqueue(server, "chairs", fac, {"height": 70})
    assert e.value.status == 400 and "height" in e.value.field
    # Answer the open question; the next one shows the enqueued option.
    req = urllib.request.Request(
        f"{server}/api/studies/chairs/answer", method="POST",
        data=json.dumps({"query_id": q["query_id"], "kind": {"type": "tie", "rater": "ann"}}).encode(),
        headers={"Authorization": f"Bearer {fac}", "Content-Type": "application/json"},
    )
    urllib.request.urlopen(req).read()
    nxt = client.open_query(server, "chairs", fac)
    assert [["height", 52.5]] in [o["params"] for o in nxt["options"]]


def create_group(base: str, name: str, people: list[str]) -> dict:
    spec = {
        "name": name,
        "space": {"kind": "box", "params": [{"type": "real", "name": "height", "lo": 40, "hi": 60}]},
        "method": {"name": "group-pairs"},
        "participants": people,
        "seed": 4,
    }
    req = urllib.request.Request(
        base + "/api/studies", data=json.dumps(spec).encode(), method="POST",
        headers={"Authorization": "Bearer py-admin", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req) as res:
        return json.loads(res.read())


def events_of(base: str, study: str, token: str) -> list[dict]:
    req = urllib.request.Request(f"{base}/api/studies/{study}/events",
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req) as res:
        return json.loads(res.read())["events"]


def test_agents_take_part_in_a_live_meeting(server: str) -> None:
    """Three agents, each with its own token and its own taste, vote in four rounds at once;
    every ballot in the log is the one its agent chose for the options it was shown."""
    import threading

    ideal = {"ann": 45.0, "bob": 50.0, "cy": 58.0}
    made = create_group(server, "agents", list(ideal))
    chose: dict[str, list[tuple[int, int]]] = {p: [] for p in ideal}
    cast: dict[str, int] = {}

    def agent(person: str) -> None:
        def respond(q: dict) -> int:
            heights = [dict(o["params"])["height"] for o in q["options"]]
            pick = min(range(len(heights)), key=lambda i: abs(heights[i] - ideal[person]))
            chose[person].append((q["query_id"], pick))
            return pick

        token = made["participant_tokens"][person]
        cast[person] = client.participate(server, "agents", token, respond, rounds=4, timeout=30)

    threads = [threading.Thread(target=agent, args=(p,)) for p in ideal]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert cast == {p: 4 for p in ideal}
    fac = made["facilitator_token"]
    events = events_of(server, "agents", fac)
    stored = {p: [(e["query_id"], e["ballot"]["choice"]) for e in events
                  if e["type"] == "ballot" and e["participant"] == p] for p in ideal}
    assert stored == chose
    # The choices follow each taste on the options as asked (unit coordinates, recomputed).
    asked = {e["query"]["id"]: [40 + 20 * p["unit"][0] for p in e["query"]["kind"]["points"]]
             for e in events if e["type"] == "asked"}
    for p, picks in chose.items():
        for qid, pick in picks:
            hs = asked[qid]
            assert abs(hs[pick] - ideal[p]) <= min(abs(h - ideal[p]) for h in hs) + 1e-9
    assert client.status(server, "agents", fac)["status"]["answered"] == 4
    assert client.best(server, "agents", fac)["option"]["params"][0][0] == "height"
    with pytest.raises(ValueError, match="participant's token"):
        client.participate(server, "agents", fac, lambda q: 0, rounds=1)


def test_the_facilitator_answers_and_closes_over_http(server: str) -> None:
    made = create(server)  # a pairs study: the facilitator answers for ann
    fac = made["facilitator_token"]
    q = client.open_query(server, "chairs", fac)
    assert client.answer(server, "chairs", fac, q["query_id"], winner="B", rater="ann") == "answered"
    assert client.answer(server, "chairs", fac, q["query_id"], winner=1, rater="ann") == "duplicate"
    nxt = client.wait_query(server, "chairs", fac, after=q["query_id"], timeout=10)
    assert nxt is not None and nxt["query_id"] != q["query_id"]
    assert client.answer(server, "chairs", fac, nxt["query_id"], tie=True, rater="ann") == "answered"
    with pytest.raises(ValueError, match="exactly one"):
        client.answer(server, "chairs", fac, 0, winner="A", tie=True)
    with pytest.raises(TypeError, match="winner"):
        client.answer(server, "chairs", fac, 0, winner=True)
    answered = [e["answer"]["kind"] for e in events_of(server, "chairs", fac) if e["type"] == "answered"]
    assert answered == [{"type": "choice", "winner": 1, "rater": "ann"}, {"type": "tie", "rater": "ann"}]

    group = create_group(server, "close-me", ["ann", "bob", "cy"])
    fac = group["facilitator_token"]
    q = client.open_query(server, "close-me", fac)
    ann = group["participant_tokens"]["ann"]
    assert client.ballot(server, "close-me", ann, q["query_id"], vote="B") == "recorded"
    assert client.ballot(server, "close-me", fac, q["query_id"], vote=None, participant="bob") == "recorded"
    assert client.close(server, "close-me", fac, q["query_id"]) == "answered"
    with pytest.raises(client.ApiError) as e:
        client.ballot(server, "close-me", ann, q["query_id"], vote="A")
    assert e.value.status == 409
    closed = [e for e in events_of(server, "close-me", fac) if e["type"] == "answered"]
    assert closed[0]["answer"]["kind"]["votes"] == [1, None, None]
    assert client.wait_query(server, "close-me", fac, after=client.open_query(server, "close-me", fac)["query_id"],
                             timeout=0.3) is None


def test_an_agent_waits_while_the_others_are_still_voting(server: str) -> None:
    """Its last question still open after `timeout` (the others are slow) keeps the agent in
    the meeting; it votes in the next round too."""
    import threading

    made = create_group(server, "slow", ["ann", "bob", "cy"])
    fac = made["facilitator_token"]
    first = client.open_query(server, "slow", fac)["query_id"]
    done: list[int] = []
    agent = threading.Thread(
        target=lambda: done.append(client.participate(
            server, "slow", made["participant_tokens"]["ann"], lambda q: "A", rounds=2, timeout=0.5)),
        daemon=True,
    )
    agent.start()
    while "ann" not in client.open_query(server, "slow", fac)["voted"]:
        time.sleep(0.05)
    time.sleep(1.5)  # three times the agent's timeout
    for who in ("bob", "cy"):
        client.ballot(server, "slow", fac, first, vote="B", participant=who)
    agent.join(30)
    assert done == [2]


def test_choices_and_retries() -> None:
    class Index:  # an integer of another type, as numpy's argmax returns
        def __index__(self) -> int:
            return 1

    assert client._index("vote", Index()) == 1
    assert client._index("vote", "b") == 1 and client._index("vote", "tie") is None
    with pytest.raises(TypeError, match="vote"):
        client._index("vote", True)
    with pytest.raises(ValueError, match="vote"):
        client._index("vote", "AB")
    # A busy server (503: nothing stored) is asked again; another refusal is not.
    calls = []

    def busy_twice() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise client.ApiError(503, "busy", "retry later")
        return "ok"

    assert client._retrying(busy_twice, 10) == "ok" and len(calls) == 3

    def refused() -> str:
        raise client.ApiError(409, "not_pending", "closed")

    with pytest.raises(client.ApiError):
        client._retrying(refused, 10)


def test_an_agent_rates_pairs_as_the_studys_rater(server: str) -> None:
    """In a `pairs` study the participant answers each comparison itself: an agent with
    ann's token picks the option nearer its taste, five times; the log has its picks, by ann."""
    made = create(server)
    ann = made["participant_tokens"]["ann"]

    def respond(q: dict) -> str:
        a, b = (dict(o["params"])["height"] for o in q["options"])
        return "A" if abs(a - 50) <= abs(b - 50) else "B"

    assert client.participate(server, "chairs", ann, respond, rounds=5, timeout=10) == 5
    events = events_of(server, "chairs", made["facilitator_token"])
    asked = {e["query"]["id"]: [40 + 20 * p["unit"][0] for p in e["query"]["kind"]["points"]]
             for e in events if e["type"] == "asked"}
    answered = [e for e in events if e["type"] == "answered"]
    assert len(answered) == 5 and all(e["by"] == "ann" for e in answered)
    for e in answered:
        hs = asked[e["answer"]["query_id"]]
        want = 0 if abs(hs[0] - 50) <= abs(hs[1] - 50) else 1
        assert e["answer"]["kind"]["winner"] == want
