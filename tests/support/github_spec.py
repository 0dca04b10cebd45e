"""GitHub's OpenAPI description, trimmed to the operations torchbot uses
(``github_openapi/api.github.com.trimmed.json``, made by ``github_openapi/regenerate.py`` from
``@octokit/openapi``), loaded for the stand-ins and the conformance check.

- :func:`operation` finds the operation of a request (method + API path);
- :func:`example` is the spec's example answer of an operation (a fresh deep copy), what the
  stand-ins start every answer from before setting what a test needs;
- :func:`validator` is a ``jsonschema`` validator for a schema of the spec: OpenAPI 3.0's
  ``nullable`` is turned into JSON Schema (a ``null`` type or enum member), ``$ref``s resolve
  in the trimmed file, draft 4 semantics (OpenAPI 3.0's schema dialect); ``format`` is not
  checked (as GitHub's own clients do not).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import referencing
import referencing.jsonschema

SPEC_FILE = Path(__file__).resolve().parent / "github_openapi" / "api.github.com.trimmed.json"
BASE = "urn:github-openapi"
API_VERSION = "2022-11-28"
# path parameters whose value may hold slashes (a file path, a git ref such as heads/main)
MULTI_SEGMENT = {"path", "ref@git"}


def _jsonschema(node):
    """OpenAPI 3.0 schema objects as JSON Schema: ``nullable``, absolute ``$ref``s."""
    if isinstance(node, list):
        return [_jsonschema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _jsonschema(v) for k, v in node.items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        out["$ref"] = BASE + ref
    if out.pop("nullable", False) is True:
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        if "type" not in out:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


@functools.cache
def spec() -> dict:
    return json.loads(SPEC_FILE.read_text())


@functools.cache
def _schema_doc() -> dict:
    return _jsonschema(spec())


@functools.cache
def _registry() -> referencing.Registry:
    resource = referencing.Resource(contents=_schema_doc(), specification=referencing.jsonschema.DRAFT4)
    return referencing.Registry().with_resource(BASE, resource)


def resolve(node: dict) -> dict:
    """A ``$ref`` object of the (raw) spec followed to what it names."""
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        target = spec()
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def _converted(pointer: str):
    node = _schema_doc()
    for part in pointer.strip("/").split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


@functools.cache
def validator(pointer: str) -> jsonschema.protocols.Validator:
    """A validator of the schema at ``pointer`` (a tuple path like ``paths/<p>/get/...``
    joined by ``/``, with the API path's slashes as ``~1``)."""
    parts = [p.replace("~1", "/") for p in pointer.strip("/").split("/")]
    node = _schema_doc()
    for part in parts:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return jsonschema.Draft4Validator(node, registry=_registry())


def pointer(*parts) -> str:
    return "/".join(str(p).replace("/", "~1") for p in parts)


@dataclass(frozen=True)
class Operation:
    method: str  # lower case
    template: str  # /repos/{owner}/{repo}/...
    op: dict
    params: dict  # path parameter name -> value (strings, as sent)

    @property
    def id(self) -> str:
        return self.op.get("operationId", f"{self.method} {self.template}")

    def parameters(self, where: str) -> dict[str, dict]:
        """name -> resolved parameter object, for ``in: where``."""
        found = {}
        for param in self.op.get("parameters", []):
            p = resolve(param)
            if p.get("in") == where:
                found[p["name"]] = p
        return found

    def response(self, status: int | str) -> dict | None:
        r = self.op["responses"].get(str(status))
        return resolve(r) if r is not None else None


@functools.cache
def _templates() -> list[tuple[re.Pattern, str]]:
    out = []
    for template in spec()["paths"]:
        def group(m: re.Match, template=template) -> str:
            name = m.group(1)
            multi = name == "path" or (name == "ref" and "/git/" in template)
            return f"(?P<{name}>{'.+' if multi else '[^/]+'})"

        out.append((re.compile("^" + re.sub(r"\{(\w+)\}", group, template) + "$"), template))
    # literal segments first: /commits/{ref}/status before /commits/{ref}
    return sorted(out, key=lambda t: (-t[1].count("/"), t[1].count("{")))


def operation(method: str, path: str) -> Operation | None:
    """The operation of ``method path`` (an API path, no query), or None."""
    for rx, template in _templates():
        m = rx.match(path)
        if m and method.lower() in spec()["paths"][template]:
            return Operation(method.lower(), template, spec()["paths"][template][method.lower()], m.groupdict())
    return None


def template_of(path: str) -> str | None:
    for rx, template in _templates():
        if rx.match(path):
            return template
    return None


def example(method: str, template: str, status: int = 200, name: str | None = None):
    """The spec's example answer of an operation (``name``: which, when it has several;
    default the first), as a fresh copy to edit."""
    op = spec()["paths"][template][method.lower()]
    content = resolve(op["responses"][str(status)])["content"]["application/json"]
    examples = content["examples"]
    chosen = examples[name] if name else next(iter(examples.values()))
    return copy.deepcopy(resolve(chosen)["value"])
