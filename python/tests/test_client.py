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
