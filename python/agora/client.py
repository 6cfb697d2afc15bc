"""A small client of a running `agora serve`, for scripts and agents beside a meeting: take
part as a participant (an agent voting with its own token, :func:`participate`), answer or
close as the facilitator, show each option as it looks (a renderer drawing every design the
study asks), and give a study what you know (earlier data; an option of your own).

Only the standard library is used. Every function takes the server's address (for example
``"http://127.0.0.1:8080"``), the study's name and a token: a participant's (their own
ballots; the public view), the facilitator's, or, for :func:`post_media`, the study's
renderer token (printed by ``agora study create`` and returned by ``POST /api/studies``),
which may show media and do nothing else.

Errors are :class:`ApiError`, carrying the server's status, code and message (which names
the field at fault and the allowed values).
"""

from __future__ import annotations

import json
import operator
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Union

__all__ = [
    "ApiError",
    "answer",
    "ballot",
    "best",
    "close",
    "enqueue",
    "import_data",
    "open_query",
    "participate",
    "post_media",
    "status",
    "wait_query",
]


class ApiError(Exception):
    """A refusal by the server: HTTP ``status``, machine-readable ``code``, ``message``."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.field = field


def _request(
    method: str, url: str, token: str, body: bytes | None = None, content_type: str | None = None
) -> Any:
    headers = {"Authorization": f"Bearer {token}"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return json.loads(res.read() or b"null")
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            err = json.loads(raw)["error"]
        except (ValueError, KeyError, TypeError):
            raise ApiError(e.code, "http_error", raw.decode("utf-8", "replace")) from None
        raise ApiError(e.code, err.get("code", ""), err.get("message", ""), err.get("field")) from None


def _study_url(base: str, study: str) -> str:
    return f"{base.rstrip('/')}/api/studies/{urllib.parse.quote(study, safe='')}"


def open_query(base: str, study: str, token: str) -> dict[str, Any] | None:
    """The open question as the token's holder may see it (``query_id``, ``kind``,
    ``options`` with each one's ``params`` in the study's units), or None."""
    return _request("GET", _study_url(base, study) + "/query", token)["pending"]


def post_media(
    base: str,
    study: str,
    token: str,
    query_id: int,
    option: int,
    data: bytes | None = None,
    *,
    content_type: str | None = None,
    text: str | None = None,
    url: str | None = None,
) -> str:
    """Show media with option ``option`` (0 for the first) of the open question
    ``query_id`` of a box-space study: a file's ``data`` with its ``content_type`` (the
    server takes image/png, image/jpeg, image/gif, image/webp, image/svg+xml, audio/mpeg,
    audio/wav and audio/ogg, at most 1 MiB, and refuses another type with status 415), a
    ``text`` description, or a ``url`` (http or https). Returns the outcome:
    ``"recorded"``, or ``"duplicate"`` when the same media was shown before."""
    given = [x is not None for x in (data, text, url)]
    if sum(given) != 1:
        raise ValueError("give exactly one of data (with content_type), text or url")
    if data is not None:
        if not content_type:
            raise ValueError("a file's data needs its content_type, e.g. content_type='image/png'")
        body, ctype = bytes(data), content_type
    elif text is not None:
        body, ctype = text.encode("utf-8"), "text/plain; charset=utf-8"
    else:
        assert url is not None
        body, ctype = url.encode("utf-8"), "text/uri-list"
    q = urllib.parse.urlencode({"query_id": int(query_id), "option": int(option)})
    reply = _request("POST", _study_url(base, study) + "/media?" + q, token, body, ctype)
    return str(reply["outcome"])


def _post_json(base: str, study: str, token: str, path: str, body: dict[str, Any]) -> str:
    data = json.dumps(body).encode("utf-8")
    reply = _request("POST", _study_url(base, study) + path, token, data, "application/json")
    return str(reply["outcome"])


def import_data(base: str, study: str, token: str, rows: list[dict[str, Any]]) -> str:
    """Give the study earlier data before its first answer (the facilitator's token), as
    ``agora study import`` does: evaluations ``{"temperature": 22, "value": 3.5}`` for GP-BO
    studies, comparisons ``{"winner": {...}, "loser": {...}}`` for ``pairs`` and
    ``group-pairs``, the parameters by name in the study's units. A bad row is refused
    (:class:`ApiError` with ``field`` ``"line N: PARAMETER"``, the first row line 1) and
    nothing is stored. Returns ``"recorded"``."""
    return _post_json(base, study, token, "/import", {"rows": list(rows)})


def enqueue(base: str, study: str, token: str, option: dict[str, Any]) -> str:
    """Put an option of your own (the parameters by name, in the study's units) into the
    next question after the open one (the facilitator's token), as ``agora study enqueue``
    does. Returns ``"recorded"``."""
    return _post_json(base, study, token, "/enqueue", {"option": dict(option)})


def status(base: str, study: str, token: str) -> dict[str, Any]:
    """The study at a glance as the token's holder may see it (as ``agora status --json``):
    ``you`` (the token's role and participant), ``status`` (answers, the open query, the
    recommendation), ``seq`` and the server's clock ``now_ms``."""
    return dict(_request("GET", _study_url(base, study), token))


def best(base: str, study: str, token: str) -> dict[str, Any] | None:
    """The recommendation so far (``option`` with its ``params``, ``value``), or None."""
    return _request("GET", _study_url(base, study) + "/best", token)["recommendation"]


_Choice = Union[int, str, None]


def _index(field: str, choice: _Choice) -> int | None:
    """An option's index from an index (any integer type, e.g. numpy's), a letter ("A" is
    0), or None / "tie" (can't tell)."""
    allowed = f"{field}: an option's index, a letter (\"A\", \"B\"), or None or \"tie\" for can't tell"
    if choice is None or (isinstance(choice, str) and choice.lower() == "tie"):
        return None
    if isinstance(choice, str):
        if len(choice) == 1 and choice.isalpha():
            return ord(choice.upper()) - ord("A")
        raise ValueError(f"{allowed}, not {choice!r}")
    if isinstance(choice, bool):
        raise TypeError(f"{allowed}, not {choice!r}")
    try:
        return operator.index(choice)
    except TypeError:
        raise TypeError(f"{allowed}, not {choice!r}") from None


def ballot(
    base: str,
    study: str,
    token: str,
    query_id: int,
    *,
    vote: _Choice = None,
    rating: float | None = None,
    participant: str | None = None,
) -> str:
    """Cast a ballot on the open group question ``query_id``: ``vote`` (an option's index,
    its letter "A", "B", ..., or None for can't tell) or, in a rating round, ``rating``. A
    participant's token casts their own (public or private) ballot; the facilitator's casts
    a ``participant``'s public vote. Returns ``"recorded"``, ``"answered"`` (the last ballot
    of the round) or ``"duplicate"`` (the same ballot again)."""
    if rating is not None:
        if vote is not None:
            raise ValueError("give vote or rating, not both")
        b: dict[str, Any] = {"type": "rating", "value": float(rating)}
    else:
        b = {"type": "vote", "choice": _index("vote", vote)}
    body: dict[str, Any] = {"query_id": int(query_id), "ballot": b}
    if participant is not None:
        body["participant"] = participant
    return _post_json(base, study, token, "/ballot", body)


def answer(
    base: str,
    study: str,
    token: str,
    query_id: int,
    *,
    values: list[float] | None = None,
    winner: _Choice = None,
    tie: bool = False,
    rater: str | None = None,
) -> str:
    """Answer the open question ``query_id`` (the facilitator's token): ``values`` (one per
    option of an evaluation), ``winner`` (an option's index or letter) or ``tie=True`` for
    a comparison, by ``rater``. Returns ``"answered"`` or ``"duplicate"``."""
    given = (values is not None) + (winner is not None) + bool(tie)
    if given != 1:
        raise ValueError("give exactly one of values, winner or tie=True")
    if values is not None:
        kind: dict[str, Any] = {"type": "values", "values": [float(v) for v in values]}
    elif tie:
        kind = {"type": "tie", "rater": rater}
    else:
        kind = {"type": "choice", "winner": _index("winner", winner), "rater": rater}
    return _post_json(base, study, token, "/answer", {"query_id": int(query_id), "kind": kind})


def close(base: str, study: str, token: str, query_id: int) -> str:
    """Close the open group vote ``query_id`` now (the facilitator's token): missing votes
    count as can't tell. Returns ``"answered"`` or ``"duplicate"``."""
    return _post_json(base, study, token, "/close", {"query_id": int(query_id)})


def wait_query(
    base: str,
    study: str,
    token: str,
    *,
    after: int | None = None,
    timeout: float = 60.0,
    poll: float = 0.25,
) -> dict[str, Any] | None:
    """Wait until a question other than ``after`` (a query id) is open and return it (as
    :func:`open_query`); None when none came within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        q = open_query(base, study, token)
        if q is not None and q["query_id"] != after:
            return q
        if time.monotonic() >= deadline:
            return None
        time.sleep(poll)


def _retrying(call: Callable[[], Any], patience: float) -> Any:
    """``call()``, sent again while the server is unreachable or answers 503 (nothing was
    stored; a restarted or busy server), for up to ``patience`` seconds."""
    deadline, wait = time.monotonic() + patience, 0.25
    while True:
        try:
            return call()
        except (ApiError, urllib.error.URLError, ConnectionError) as e:
            transient = not isinstance(e, ApiError) or e.status == 503
            if not transient or time.monotonic() + wait > deadline:
                raise
            time.sleep(wait)
            wait = min(2 * wait, 5.0)


def participate(
    base: str,
    study: str,
    token: str,
    respond: Callable[[dict[str, Any]], Any],
    *,
    rounds: int | None = None,
    timeout: float = 60.0,
) -> int:
    """Take part in a study with a participant's token, as a person would on their phone:
    for each question this participant is asked and has not yet answered, call
    ``respond(query)`` (the open question as :func:`open_query` gives it: ``kind``,
    ``channel``, ``options`` with their ``params``) and send what it returns:
    - a group vote or a comparison (``pairs``, an expert's ``boap`` comparisons): an
      option's index (any integer type) or letter, or None / "tie" for can't tell;
    - a rating round: a number;
    - an evaluation: one value per option.
    Waits as long as its last question is still open (the others are still voting); stops
    after ``rounds`` answers, or when no question is open for ``timeout`` seconds. A server
    that is restarting or busy (503) is asked again for up to ``timeout`` seconds. Returns
    the number of answers sent. ``respond`` can be anything: a rule, a model, a language
    model, a person at a terminal."""
    me = _retrying(lambda: status(base, study, token), timeout)["you"].get("participant")
    if me is None:
        raise ValueError("participate needs a participant's token, not the facilitator's")
    cast, last = 0, None
    while rounds is None or cast < rounds:
        q = _retrying(lambda: wait_query(base, study, token, after=last, timeout=timeout), timeout)
        if q is None:
            still = _retrying(lambda: open_query(base, study, token), timeout)
            if still is not None and still["query_id"] == last:
                continue  # the others are still voting on our last question
            break
        last = q["query_id"]
        group = q["kind"] in ("group_vote", "group_rate")
        if group and (me not in q["asked"] or me in q["voted"]):
            continue
        reply = respond(q)
        try:
            if q["kind"] == "group_rate":
                _retrying(lambda: ballot(base, study, token, last, rating=float(reply)), timeout)
            elif q["kind"] == "evaluate":
                values = [float(v) for v in reply]
                _retrying(lambda: answer(base, study, token, last, values=values), timeout)
            else:
                choice = _index("respond's reply", reply)
                if group:
                    _retrying(lambda: ballot(base, study, token, last, vote=choice), timeout)
                elif choice is None:
                    _retrying(lambda: answer(base, study, token, last, tie=True), timeout)
                else:
                    _retrying(lambda: answer(base, study, token, last, winner=choice), timeout)
        except ApiError as e:
            if e.status == 409:  # the round closed meanwhile (a deadline, the facilitator)
                continue
            raise
        cast += 1
    return cast
