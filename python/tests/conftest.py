"""Shared helpers for the agora Python tests.

The `agora` command line (for the study replay tests) is found through the environment
variable AGORA_BIN (a missing file there is an error: CI sets it to the binary it built),
else $CARGO_TARGET_DIR/release/agora, else target/release/agora under the repository root;
without any, those tests are skipped with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import agora

REPO = Path(__file__).resolve().parents[2]


def _find_agora_bin() -> tuple[Path | None, str]:
    env = os.environ.get("AGORA_BIN")
    if env:
        return Path(env), "AGORA_BIN"
    candidates = []
    target = os.environ.get("CARGO_TARGET_DIR")
    if target:
        candidates.append(Path(target) / "release" / "agora")
    candidates.append(REPO / "target" / "release" / "agora")
    for c in candidates:
        if c.is_file():
            return c, "found"
    return None, "looked in " + ", ".join(str(c) for c in candidates)


@pytest.fixture(scope="session")
def agora_bin() -> Path:
    path, how = _find_agora_bin()
    if how == "AGORA_BIN":
        assert path is not None
        if not (path.is_file() and os.access(path, os.X_OK)):
            pytest.fail(f"AGORA_BIN={path} is not an executable file")
        return path
    if path is None:
        pytest.skip(
            "the agora CLI is not built (cargo build --release -p agora-cli, or set "
            f"AGORA_BIN); {how}"
        )
    return path


class Cli:
    """Runs `agora ARGS... --db FILE` and returns its standard output."""

    def __init__(self, exe: Path, db: Path):
        self.exe = exe
        self.db = db

    def __call__(self, *args: str) -> str:
        env = {k: v for k, v in os.environ.items() if k != "AGORA_DB"}
        r = subprocess.run(
            [str(self.exe), *args, "--db", str(self.db)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        if r.returncode != 0:
            raise AssertionError(
                f"agora {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
            )
        return r.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self(*args))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "studies.db"


@pytest.fixture
def cli(agora_bin: Path, db: Path) -> Cli:
    return Cli(agora_bin, db)


def answer_keywords(answer: agora.Answer) -> dict[str, Any]:
    """The `tell` keywords that say what `answer` says."""
    if answer.kind == "values":
        return {"values": answer.values}
    if answer.kind == "choice":
        return {"winner": answer.winner}
    if answer.kind == "tie":
        return {"tie": True}
    if answer.kind == "votes":
        assert answer.votes is not None
        return {"votes": ["tie" if v is None else v for v in answer.votes]}
    if answer.kind == "matrix":
        return {"matrix": answer.matrix}
    raise AssertionError(f"unexpected answer kind {answer.kind}")


def score(unit: list[float]) -> float:
    """A smooth objective on unit coordinates (or candidate features), larger is better."""
    return -sum((x - 0.3) ** 2 for x in unit)


def keyword_answer(query: agora.Query) -> dict[str, Any]:
    """An answer of the right shape for any query except a Hessian, from `score`."""
    scores = [score(u) for u in query.unit_points]
    best = max(range(len(scores)), key=scores.__getitem__)
    if query.kind == "evaluate":
        return {"values": scores}
    if query.kind == "compare":
        return {"winner": "AB"[best] if len(scores) == 2 else best}
    if query.kind == "group_vote":
        return {"votes": [best] * len(query.asked)}
    if query.kind == "group_rate":
        return {"ratings": [scores[0]] * len(query.asked)}
    if query.kind == "hessian":
        d = len(query.unit_points[0])
        return {"matrix": [[-2.0 if i == j else 0.0 for j in range(d)] for i in range(d)]}
    raise AssertionError(f"unexpected query kind {query.kind}")


def run_at_once(*bodies, timeout: float = 60.0) -> None:
    """Run each body on a thread of its own, all at once; fail if one is still running after
    `timeout` seconds (stuck: a deadlock) or raised."""
    import threading

    errors: list[BaseException] = []

    def guarded(body):
        try:
            body()
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(b,), daemon=True) for b in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    assert errors == []
