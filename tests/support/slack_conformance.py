"""Every exchange with the Slack stand-in, checked against Slack's documented Web API methods.

``fakes_slack.FakeSlack`` calls :func:`record` with each Web API call and each response_url post
it receives, and the answer it gives, before it sends it. What is wrong goes to ``PROBLEMS``. Like
``github_conformance`` this module is a pytest plugin (``tests/conftest.py`` takes its hooks): a
test during which a problem appeared fails, and so does the session if any is left; the terminal
summary says how many exchanges were checked over which methods. Under pytest-xdist each worker
hands its counts and problems to the controller (``workeroutput``), which adds them up before its
summary, as the GitHub check does.

What is checked, against ``METHODS`` (the arguments of each method as Slack's method pages at
https://api.slack.com/methods list them, and as slack_sdk's ``WebClient`` sends them):

- the request: the method is one Slack documents; every argument is one it documents (so
  ``client_msg_id``, which Slack keeps for its own clients, is a problem); required ones
  present; ``blocks`` parse and validate with slack_sdk's Block Kit models within Slack's limits
  (:func:`blocks_problem`: 50 blocks in a message, 100 in a view, 3,000 characters per section
  text, no empty text); a message with ``blocks`` carries a ``text`` fallback; ``plain_text``
  fields and file titles carry no HTML entities (Slack shows plain text as it is);
- a response_url post: only the fields Slack documents for it;
- the answer: JSON with a boolean ``ok``; an ``error`` string when not ok; ``chat.update`` and
  ``chat.postMessage`` answer their ``message``; reads paginated with ``response_metadata``.

A test that breaks the rules on purpose wraps it in :func:`expect_problems`.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

import pytest

from tests.support.conformance_tally import Tally

# method -> (required arguments, optional arguments); ``token`` is accepted everywhere, and ``team_id``
# (slack_sdk's WebClient adds it when it knows the workspace; Slack documents it for org-wide apps)
ANY_METHOD = {"token", "team_id"}
_MSG = {"text", "blocks", "attachments", "as_user", "icon_emoji", "icon_url", "link_names", "metadata",
        "mrkdwn", "parse", "reply_broadcast", "thread_ts", "unfurl_links", "unfurl_media", "username",
        "markdown_text"}
METHODS: dict[str, tuple[set[str], set[str]]] = {
    "auth.test": (set(), set()),
    "apps.connections.open": (set(), set()),
    "chat.postMessage": ({"channel"}, _MSG),
    "chat.update": ({"channel", "ts"}, {"text", "blocks", "attachments", "as_user", "file_ids", "link_names",
                                        "metadata", "parse", "reply_broadcast", "markdown_text"}),
    "chat.postEphemeral": ({"channel", "user"}, _MSG - {"metadata", "mrkdwn", "reply_broadcast", "unfurl_links",
                                                        "unfurl_media"}),
    "conversations.history": ({"channel"}, {"cursor", "include_all_metadata", "inclusive", "latest", "limit",
                                            "oldest"}),
    "conversations.replies": ({"channel", "ts"}, {"cursor", "include_all_metadata", "inclusive", "latest", "limit",
                                                  "oldest"}),
    "conversations.join": ({"channel"}, set()),
    "conversations.open": (set(), {"channel", "prevent_creation", "return_im", "users"}),
    "views.publish": ({"user_id", "view"}, {"hash"}),
    "files.getUploadURLExternal": ({"filename", "length"}, {"alt_txt", "snippet_type"}),
    "files.completeUploadExternal": ({"files"}, {"channel_id", "channels", "initial_comment", "thread_ts", "blocks"}),
    "usergroups.users.list": ({"usergroup"}, {"include_disabled", "team_id"}),
}
RESPONSE_URL_FIELDS = {"text", "blocks", "attachments", "response_type", "replace_original", "delete_original",
                       "thread_ts", "mrkdwn", "unfurl_links", "unfurl_media"}
MESSAGE_BLOCKS, VIEW_BLOCKS = 50, 100
TEXT_LIMITS = {"section": 3000, "header": 150, "context": 2000}

TALLY = Tally("slack_conformance",
              "Slack exchanges off Slack's documented methods (tests/support/slack_conformance.py)")
PROBLEMS: list[str] = TALLY.problems
SEEN: Counter = TALLY.seen
_lock = TALLY.lock


def blocks_problem(blocks: Any, max_blocks: int = MESSAGE_BLOCKS) -> str | None:
    """Why Slack would answer ``invalid_blocks`` (slack_sdk's Block Kit models and Slack's limits), or None."""
    from slack_sdk.errors import SlackObjectFormationError
    from slack_sdk.models.blocks import Block

    if not isinstance(blocks, list):
        return "[ERROR] blocks must be an array [json-pointer:/blocks]"
    if len(blocks) > max_blocks:
        return f"[ERROR] no more than {max_blocks} items allowed [json-pointer:/blocks]"
    for i, b in enumerate(blocks):
        where = f"[json-pointer:/blocks/{i}]"
        if not isinstance(b, dict) or not b.get("type"):
            return f"[ERROR] missing required field: type {where}"
        try:
            model = Block.parse(b)
        except (SlackObjectFormationError, TypeError, KeyError, ValueError) as err:
            return f"[ERROR] {err} {where}"
        if model is None:
            return f"[ERROR] unsupported type: {b['type']} {where}"
        try:
            model.validate_json()
        except SlackObjectFormationError as err:
            return f"[ERROR] {err} {where}"
        texts = [b.get("text"), *list(b.get("elements") or []), *list(b.get("fields") or [])]
        limit = TEXT_LIMITS.get(b["type"], 3000)
        for t in texts:
            if isinstance(t, dict) and t.get("type") in ("mrkdwn", "plain_text"):
                if not isinstance(t.get("text"), str) or not t["text"].strip():
                    return f"[ERROR] must be more than 0 characters {where}"
                if len(t["text"]) > limit:
                    return f"[ERROR] must be less than {limit + 1} characters {where}"
        acc = b.get("accessory") or {}
        if acc.get("type") == "button" and (len(acc.get("value", "")) > 2000 or len(acc["text"]["text"]) > 75):
            return f"[ERROR] button too long {where}/accessory"
    return None


ENTITIES = ("&lt;", "&gt;", "&amp;")


def escaped_plain_text(value: Any, where: str = "") -> list[str]:
    """``plain_text`` fields (and file titles) that carry HTML entities: Slack shows plain text as
    it is, so a user would read ``&lt;`` (only mrkdwn is escaped)."""
    out = []
    if isinstance(value, dict):
        if value.get("type") == "plain_text" and any(e in str(value.get("text", "")) for e in ENTITIES):
            out.append(f"plain_text escaped as if it were mrkdwn at {where or '/'}: {str(value['text'])[:60]!r}")
        for k, v in value.items():
            out += escaped_plain_text(v, f"{where}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += escaped_plain_text(v, f"{where}/{i}")
    return out


def request_problems(method: str, params: dict[str, Any]) -> list[str]:
    """What in a Web API call Slack's documentation does not allow."""
    spec = METHODS.get(method)
    if spec is None:
        return [f"{method} is not a Web API method torchbot's stand-in knows from Slack's docs"]
    required, optional = spec
    known = required | optional | ANY_METHOD
    out = [f"argument {k!r} is not documented for {method}" for k in params if k not in known]
    out += [f"required argument {k!r} missing" for k in sorted(required) if params.get(k) in (None, "")]
    if "blocks" in params and params["blocks"] not in (None, ""):
        problem = blocks_problem(params["blocks"])
        if problem:
            out.append(f"invalid_blocks: {problem}")
        if method in ("chat.postMessage", "chat.update", "chat.postEphemeral") and not params.get("text"):
            out.append("blocks without a text fallback")
    out += escaped_plain_text(params.get("blocks"), "/blocks") + escaped_plain_text(params.get("view"), "/view")
    if method == "files.completeUploadExternal" and isinstance(params.get("files"), list):
        out += [f"file title escaped as if it were mrkdwn: {f.get('title', '')[:60]!r}" for f in params["files"]
                if isinstance(f, dict) and any(e in str(f.get("title", "")) for e in ENTITIES)]
    if method == "views.publish" and isinstance(params.get("view"), dict):
        problem = blocks_problem(params["view"].get("blocks"), VIEW_BLOCKS)
        if problem:
            out.append(f"invalid_blocks: {problem}")
    return out


def answer_problems(method: str, status: int, answer: Any) -> list[str]:
    if status != 200 and status not in (429, 500, 502, 503):
        return [f"status {status} is not one Slack's Web API gives"]
    if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
        return ["the answer has no boolean 'ok'"]
    if not answer["ok"]:
        return [] if isinstance(answer.get("error"), str) else ["an error answer without 'error'"]
    out = []
    if method in ("chat.postMessage", "chat.update") and not isinstance(answer.get("message"), dict):
        out.append(f"{method} answered without 'message'")
    if method in ("conversations.history", "conversations.replies"):
        if not isinstance(answer.get("has_more"), bool):
            out.append("a read without 'has_more'")
        if answer.get("has_more") and not (answer.get("response_metadata") or {}).get("next_cursor"):
            out.append("has_more without response_metadata.next_cursor")
    return out


def response_url_problems(body: Any) -> list[str]:
    if not isinstance(body, dict):
        return ["a response_url post that is not a JSON object"]
    out = [f"field {k!r} is not documented for a response_url post" for k in body if k not in RESPONSE_URL_FIELDS]
    if body.get("blocks"):
        problem = blocks_problem(body["blocks"])
        if problem:
            out.append(f"invalid_blocks: {problem}")
        if not body.get("text"):
            out.append("blocks without a text fallback")
    return out


def record(method: str, params: dict[str, Any] | None, status: int, answer: Any) -> list[str]:
    """Check one exchange (``method`` is ``response_url`` for a post to one); problems go to ``PROBLEMS``."""
    if method == "response_url":
        found = response_url_problems(params)
    else:
        found = request_problems(method, params or {}) + answer_problems(method, status, answer)
    found = [f"FakeSlack: {method} -> {status}: {p}" for p in found]
    with _lock:
        SEEN[method] += 1
        PROBLEMS.extend(found)
    return found


@contextlib.contextmanager
def expect_problems():
    """For a test that breaks Slack's rules on purpose: the problems found inside are handed to it."""
    with _lock:
        start = len(PROBLEMS)
    found: list[str] = []
    try:
        yield found
    finally:
        with _lock:
            found.extend(PROBLEMS[start:])
            del PROBLEMS[start:]


def summary() -> str:
    n = sum(SEEN.values())
    methods = ", ".join(f"{m} {k}" for m, k in sorted(SEEN.items()))
    unused = sorted(set(METHODS) - set(SEEN))
    return (f"Slack conformance: {n} exchanges with the Slack stand-in checked against Slack's method docs "
            f"over {len(SEEN)} methods; {len(PROBLEMS)} problems\n  ({methods})\n"
            f"  not exercised by these tests: {', '.join(unused) or 'none'}")


# -- the pytest plugin ------------------------------------------------------------------------



def pytest_sessionfinish(session, exitstatus):
    TALLY.session_finished(session)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: only called when it runs the tests
def pytest_testnodedown(node, error):
    """The controller of a parallel run adds up each worker's exchanges and problems."""
    TALLY.worker_down(node)


def pytest_terminal_summary(terminalreporter):
    TALLY.write_summary(terminalreporter, summary)


@pytest.fixture(autouse=True)
def slack_conformance_check():
    """Fail the test during which the Slack stand-in saw an exchange off Slack's documented methods."""
    yield from TALLY.check_test()
