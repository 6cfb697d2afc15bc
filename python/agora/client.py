"""A small client of a running `agora serve`, for scripts beside a meeting: read the open
question, show each option as it looks (a renderer drawing every design the study asks),
and give a study what you know (earlier data; an option of your own).

Only the standard library is used. Every function takes the server's address (for example
``"http://127.0.0.1:8080"``), the study's name and a token: the facilitator's, or, for
:func:`post_media`, the study's renderer token (printed by ``agora study create`` and
returned by ``POST /api/studies``), which may show media and do nothing else.

Errors are :class:`ApiError`, carrying the server's status, code and message (which names
the field at fault and the allowed values).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

__all__ = ["ApiError", "enqueue", "import_data", "open_query", "post_media"]


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


def import_data(base: str, study: str, token: str, rows: list[dict[str, Any]]) -> str:
    """Give the study earlier data before its first answer (the facilitator's token), as
    ``agora study import`` does: evaluations ``{"temperature": 22, "value": 3.5}`` for GP-BO
    studies, comparisons ``{"winner": {...}, "loser": {...}}`` for ``pairs`` and
    ``group-pairs``, the parameters by name in the study's units. A bad row is refused
    (:class:`ApiError` with ``field`` ``"line N: PARAMETER"``, the first row line 1) and
    nothing is stored. Returns ``"recorded"``."""
    body = json.dumps({"rows": list(rows)}).encode("utf-8")
    reply = _request("POST", _study_url(base, study) + "/import", token, body, "application/json")
    return str(reply["outcome"])


def enqueue(base: str, study: str, token: str, option: dict[str, Any]) -> str:
    """Put an option of your own (the parameters by name, in the study's units) into the
    next question after the open one (the facilitator's token), as ``agora study enqueue``
    does. Returns ``"recorded"``."""
    body = json.dumps({"option": dict(option)}).encode("utf-8")
    reply = _request("POST", _study_url(base, study) + "/enqueue", token, body, "application/json")
    return str(reply["outcome"])
