"""Every exchange with a GitHub stand-in, checked against GitHub's OpenAPI description.

The stand-ins (``fakes_github.FakeGitHub``, ``fakes_nixpkgs.FakeNixpkgs``) call :func:`record`
with each GitHub API request they receive and the answer they give, before they send it. The
exchange is checked at once (:func:`problems_of`) and what is wrong goes to ``PROBLEMS``.
This module is also a pytest plugin (``tests/conftest.py`` takes its hooks; ``-p
tests.support.github_conformance`` elsewhere): it fails the test during which a problem
appeared, and the session if any is left, and its terminal summary says how many exchanges
were checked over which operations (so the whole suite's GitHub traffic is checked, whichever
test sends it). Under pytest-xdist each worker hands its counts and problems to the controller
(``workeroutput``), which adds them up before its summary.

What is checked, against ``github_openapi/api.github.com.trimmed.json``:

- the request: method + path is an operation of the spec; every query parameter is one the
  operation defines, each value valid for its schema; required ones present; path
  parameters valid; a JSON body valid against the request body schema (none where the
  operation takes none); ``X-GitHub-Api-Version: 2022-11-28``; an ``Accept`` media type the
  operation answers (``application/vnd.github.sha`` only where the spec lists it);
- the answer: a status the operation lists, or one GitHub may give any request (401, 403,
  404, 429, 5xx: then a ``basic-error`` body); a JSON body valid against the response schema
  of its status (required fields present, types, enums, ``null`` only where the spec allows
  it); no body where the spec gives none (204); and the five ``x-ratelimit-*`` headers
  (GitHub's secondary-rate-limit answer excepted, it carries none).

A stand-in told by a test to answer like a broken server (``mode = "garbage"``) records the
exchange with ``off_spec`` set: its request is still checked, its answer is not.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import parse_qs

import pytest

from tests.support import github_spec as gs
from tests.support.conformance_tally import Tally

ANY_OPERATION = {401, 403, 404, 429, 500, 502, 503, 504}  # GitHub may answer these to any request
ANY_WRITE = {400, 409, 422}  # and these to any request with a body (bad JSON, a conflict, validation)
RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "x-ratelimit-used",
                "x-ratelimit-resource")
JSON_MEDIA = ("application/vnd.github+json", "application/json", "application/vnd.github.v3+json", "*/*")
# media types GitHub documents for an operation beyond the ones its OpenAPI entry lists
DOCUMENTED_MEDIA = {"/repos/{owner}/{repo}/contents/{path}": {"application/vnd.github.raw+json",
                                                              "application/vnd.github.raw"}}

TALLY = Tally("github_conformance",
              "GitHub exchanges off GitHub's OpenAPI description (tests/support/github_conformance.py)")
PROBLEMS: list[str] = TALLY.problems
SEEN: Counter = TALLY.seen  # operationId -> exchanges checked this session
_lock = TALLY.lock


@dataclass
class Exchange:
    stand_in: str  # "FakeGitHub", "FakeNixpkgs"
    method: str
    path: str  # the API path (the stand-in's base prefix removed), no query
    query: str  # the raw query string
    headers: dict  # request headers, names in lower case
    body: bytes
    status: int
    response_headers: dict = field(default_factory=dict)  # names in lower case
    response_body: bytes = b""
    off_spec: str = ""  # why a test made this answer deliberately unlike GitHub's


def record(ex: Exchange) -> list[str]:
    """Check one exchange; its problems are kept in ``PROBLEMS`` (and returned)."""
    found = problems_of(ex)
    with _lock:
        op = gs.operation(ex.method, ex.path)
        SEEN[op.id if op else f"{ex.method} {ex.path}"] += 1
        PROBLEMS.extend(found)
    return found


@contextlib.contextmanager
def expect_problems():
    """For a test that makes a stand-in or a request break the spec on purpose: the problems
    found inside the block are handed to it (a list) and not counted against the run."""
    with _lock:
        start = len(PROBLEMS)
    found: list[str] = []
    try:
        yield found
    finally:
        with _lock:
            found.extend(PROBLEMS[start:])
            del PROBLEMS[start:]


def problems_of(ex: Exchange) -> list[str]:
    where = f"{ex.stand_in}: {ex.method} {ex.path}{'?' + ex.query if ex.query else ''} -> {ex.status}"
    op = gs.operation(ex.method, ex.path)
    if op is None:
        return [f"{where}: not an operation of GitHub's API (tests/support/github_openapi)"]
    out = _request_problems(op, ex)
    if not ex.off_spec:
        out += _response_problems(op, ex)
    return [f"{where}: {p}" for p in out]


def _coerce(value: str, schema: dict):
    kind = schema.get("type")
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
    except ValueError:
        return value
    if kind == "boolean":
        return {"true": True, "false": False}.get(value, value)
    return value


def _errors(pointer_or_schema, value) -> list[str]:
    v = gs.validator(pointer_or_schema)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:200]}"
            for e in sorted(v.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))[:5]]


def _param_pointer(op: gs.Operation, name: str, where: str) -> str:
    for i, p in enumerate(op.op.get("parameters", [])):
        if "$ref" in p and gs.resolve(p).get("name") == name and gs.resolve(p).get("in") == where:
            return p["$ref"].removeprefix("#/") + "/schema"
        if p.get("name") == name and p.get("in") == where:
            return gs.pointer("paths", op.template, op.method, "parameters", i, "schema")
    raise KeyError(name)


def _request_problems(op: gs.Operation, ex: Exchange) -> list[str]:
    out = []
    if ex.headers.get("x-github-api-version") != gs.API_VERSION:
        out.append(f"request: no X-GitHub-Api-Version: {gs.API_VERSION} header")
    out += _accept_problems(op, ex.headers.get("accept", ""))
    query = parse_qs(ex.query, keep_blank_values=True)
    defined = op.parameters("query")
    for name, values in query.items():
        if name not in defined:
            out.append(f"request: query parameter {name!r} is not defined by {op.id}")
            continue
        schema = defined[name].get("schema", {})
        if len(values) > 1 and schema.get("type") != "array":
            out.append(f"request: query parameter {name!r} sent {len(values)} times")
        for err in _errors(_param_pointer(op, name, "query"), _coerce(values[-1], schema)):
            out.append(f"request: query parameter {name!r}={values[-1]!r}: {err}")
    for name, p in defined.items():
        if p.get("required") and name not in query:
            out.append(f"request: required query parameter {name!r} missing")
    for name, value in op.params.items():
        schema = op.parameters("path").get(name, {}).get("schema", {})
        for err in _errors(_param_pointer(op, name, "path"), _coerce(value, schema)):
            out.append(f"request: path parameter {name}={value!r}: {err}")
    body_spec = op.op.get("requestBody")
    if body_spec is None:
        if ex.body.strip():
            out.append(f"request: {op.id} takes no body")
        return out
    if not ex.body.strip():
        if body_spec.get("required"):
            out.append("request: the body is required")
        return out
    try:
        body = json.loads(ex.body)
    except ValueError:
        return [*out, "request: the body is not JSON"]
    ptr = gs.pointer("paths", op.template, op.method, "requestBody", "content", "application/json", "schema")
    return out + [f"request body: {e}" for e in _errors(ptr, body)]


def _accept_problems(op: gs.Operation, accept: str) -> list[str]:
    media = [m.split(";")[0].strip() for m in accept.split(",") if m.strip()]
    if not media:
        return ["request: no Accept header (GitHub asks for application/vnd.github+json)"]
    offered = set()
    for r in op.op["responses"].values():
        offered |= set((gs.resolve(r).get("content") or {}).keys())
    offered |= DOCUMENTED_MEDIA.get(op.template, set())
    bad = [m for m in media if m not in JSON_MEDIA and m not in offered]
    return [f"request: Accept {m!r} is not a media type of {op.id}" for m in bad]


def _custom_media(ex: Exchange) -> bool:
    accept = ex.headers.get("accept", "")
    return bool(accept) and not any(m in accept for m in JSON_MEDIA)


def _response_problems(op: gs.Operation, ex: Exchange) -> list[str]:
    out = []
    secondary = ex.status in (403, 429) and b"secondary rate limit" in ex.response_body.lower()
    missing = [h for h in RATE_HEADERS if h not in ex.response_headers]
    if missing and not secondary:
        out.append(f"answer: no {', '.join(missing)} header")
    response = op.response(ex.status)
    if response is None:
        if ex.status not in ANY_OPERATION and not (ex.status in ANY_WRITE and op.method != "get"):
            return [*out, f"answer: status {ex.status} is not one {op.id} gives"]
        schema_ptr = "components/schemas/basic-error"
    elif "content" not in response:
        if ex.response_body.strip():
            out.append(f"answer: status {ex.status} of {op.id} has no body")
        return out
    elif _custom_media(ex):
        return out  # a diff, a sha, a raw file: text as asked
    else:
        ref = op.op["responses"][str(ex.status)].get("$ref")
        base = ref.removeprefix("#/") if ref else gs.pointer("paths", op.template, op.method, "responses",
                                                             ex.status)
        content = response["content"]
        media = "application/json" if "application/json" in content else next(iter(content))
        schema_ptr = base + "/content/" + media.replace("/", "~1") + "/schema"
    ctype = ex.response_headers.get("content-type", "")
    if not ex.response_body.strip() and response is None:
        return out
    if "json" not in ctype:
        out.append(f"answer: Content-Type {ctype!r}, not JSON")
    try:
        body = json.loads(ex.response_body)
    except ValueError:
        return [*out, "answer: the body is not JSON"]
    if response is None and not (isinstance(body, dict) and isinstance(body.get("message"), str)):
        out.append("answer: an error without a message")
    return out + [f"answer: {e}" for e in _body_errors(schema_ptr, ex.response_body)]


@functools.lru_cache(maxsize=512)
def _body_errors(schema_ptr: str, raw: bytes) -> tuple[str, ...]:
    """An answer's body checked against its schema, remembered: the stand-ins give the same
    body many times (a page of jobs polled until it changes, a file read by each process), and
    the same bytes against the same schema have the same problems."""
    return tuple(_errors(schema_ptr, json.loads(raw)))


def summary() -> str:
    n = sum(SEEN.values())
    ops = ", ".join(f"{op} {k}" for op, k in sorted(SEEN.items()))
    unused = sorted({op.get("operationId", "") for path in gs.spec()["paths"].values() for op in path.values()}
                    - set(SEEN))
    return (f"GitHub conformance: {n} exchanges with the stand-ins checked against @octokit/openapi "
            f"{gs.spec()['info']['version']} over {len(SEEN)} operations; {len(PROBLEMS)} problems\n  ({ops})\n"
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
def github_conformance_check():
    """Fail the test during which a GitHub stand-in saw or gave an exchange off GitHub's spec."""
    yield from TALLY.check_test()
