"""Regenerate ``api.github.com.trimmed.json``: GitHub's official OpenAPI description
(``@octokit/openapi`` from the npm registry, ``generated/api.github.com.json``) trimmed to
the operations torchbot uses, plus every component they reference (schemas, parameters,
responses, headers, examples), descriptions dropped.

    python tests/support/github_openapi/regenerate.py            # newest version (npm pack)
    python tests/support/github_openapi/regenerate.py 23.0.2     # a given version
    python tests/support/github_openapi/regenerate.py --from path/to/api.github.com.json

Add an operation here (``OPERATIONS``) before torchbot or a stand-in uses it: the
conformance check (tests/support/github_conformance.py) refuses any exchange that is not an
operation of the trimmed file. Needs ``npm`` on PATH (only to fetch the package).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "api.github.com.trimmed.json"
PACKAGE = "@octokit/openapi"
MEMBER = "package/generated/api.github.com.json"

# (method, path) of every GitHub REST operation torchbot (or a helper branch about to land) sends.
OPERATIONS: list[tuple[str, str]] = [
    # GitHub Actions: the github build backend
    ("post", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches"),
    ("get", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs"),
    ("get", "/repos/{owner}/{repo}/actions/runs/{run_id}"),
    ("get", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs"),
    # the repository: does the token still reach it (a 401/404 names the setting to fix)
    ("get", "/repos/{owner}/{repo}"),
    # commits, compare, contents: nixpkgs facts
    ("get", "/repos/{owner}/{repo}/commits"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}"),
    ("get", "/repos/{owner}/{repo}/compare/{basehead}"),
    ("get", "/repos/{owner}/{repo}/contents/{path}"),
    # pull requests: bumps and the release loop
    ("get", "/repos/{owner}/{repo}/pulls"),
    ("post", "/repos/{owner}/{repo}/pulls"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("patch", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("put", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"),
    # git refs
    ("post", "/repos/{owner}/{repo}/git/refs"),
    ("get", "/repos/{owner}/{repo}/git/ref/{ref}"),
    ("patch", "/repos/{owner}/{repo}/git/refs/{ref}"),
    # commit statuses and check runs: build results on a commit
    ("post", "/repos/{owner}/{repo}/statuses/{sha}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/status"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/statuses"),
    ("post", "/repos/{owner}/{repo}/check-runs"),
    ("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    # issues and their comments: the dashboard
    ("get", "/repos/{owner}/{repo}/issues"),
    ("post", "/repos/{owner}/{repo}/issues"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("patch", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    # who torchbot is and who may act: the dashboard issue's creator and the permission of who ticked
    ("get", "/user"),
    ("get", "/repos/{owner}/{repo}/collaborators/{username}/permission"),
]
KEEP_OPERATION = ("operationId", "summary", "parameters", "requestBody", "responses")


def fetch(version: str | None, into: Path) -> Path:
    """``npm pack`` the package (newest, or ``version``) into ``into``; the spec's path."""
    spec = f"{PACKAGE}@{version}" if version else PACKAGE
    name = subprocess.run(["npm", "pack", spec, "--silent"], cwd=into, check=True, capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]
    with tarfile.open(into / name) as tar:
        tar.extract(MEMBER, into, filter="data")
    return into / MEMBER


def _refs(node, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.add(ref)
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def _strip(node, *, in_properties: bool = False):
    """Descriptions and documentation links dropped (not property names, not example data)."""
    if isinstance(node, list):
        return [_strip(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if not in_properties and key in ("description", "externalDocs") and not isinstance(value, dict):
            continue
        out[key] = _strip(value, in_properties=key == "properties" and isinstance(value, dict))
    return out


def trim(full: dict) -> dict:
    paths: dict[str, dict] = {}
    for method, path in OPERATIONS:
        op = full["paths"][path][method]
        kept = {k: op[k] for k in KEEP_OPERATION if k in op}
        paths.setdefault(path, {})[method] = kept
    components: dict[str, dict] = {}
    todo: set[str] = set()
    _refs(paths, todo)
    done: set[str] = set()
    while todo:
        ref = todo.pop()
        if ref in done:
            continue
        done.add(ref)
        _, _, kind, name = ref.split("/", 3)
        value = full["components"][kind][name]
        components.setdefault(kind, {})[name] = value
        _refs(value, todo)
    components = {kind: dict(sorted(items.items())) for kind, items in sorted(components.items())}
    examples = components.pop("examples", {})
    trimmed = _strip({"paths": paths, "components": components})
    if examples:
        trimmed["components"]["examples"] = {k: {"value": v.get("value")} for k, v in examples.items()}
    return {"openapi": full["openapi"],
            "info": {"title": full["info"]["title"], "version": full["info"]["version"],
                     "x-source": f"npm {PACKAGE}@{full['info']['version']} {MEMBER.removeprefix('package/')}",
                     "x-trimmed-by": "tests/support/github_openapi/regenerate.py"},
            **trimmed}


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(argv[1]) if argv[:1] == ["--from"] else fetch(argv[0] if argv else None, Path(tmp))
        full = json.loads(source.read_text())
    trimmed = trim(full)
    OUT.write_text(json.dumps(trimmed, indent=1, sort_keys=False) + "\n")
    n = sum(len(v) for v in trimmed["paths"].values())
    print(f"{OUT.name}: {n} operations from {trimmed['info']['x-source']}, {OUT.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
