"""The image rebuilds in seconds (issue 28): the build context is only what the image installs
(.dockerignore), the dependencies are a layer of their own made from pyproject.toml alone, before
the source is copied, and the source layer installs torchbot without its dependencies. The port of
HTTP mode is exposed, and what the image did before stays (Debian's Nix, uid 10001, the volumes,
git's safe.directory). image-check (/work/shared/tools/image-check, as root with podman) builds
and runs it; bench/image_rebuild.sh times a rebuild after a source change."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

from config.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    text = re.sub(r"^\s*#.*\n", "", DOCKERFILE, flags=re.M).replace("\\\n", " ")
    return [(m.group(1).upper(), m.group(2).strip()) for m in re.finditer(r"^([A-Za-z]+)\s+(.*)$", text, re.M)]


def in_context(path: str) -> bool:
    """Whether .dockerignore lets ``path`` into the build context (last matching rule wins, as in
    Docker and Buildah; a rule for a directory covers what is under it)."""
    keep = True
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        rule = line.strip()
        if not rule or rule.startswith("#"):
            continue
        negate = rule.startswith("!")
        pattern = rule.lstrip("!").rstrip("/").removeprefix("**/")
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        hit = (any(fnmatch.fnmatch(p, pattern) for p in prefixes) if not rule.lstrip("!").startswith("**/")
               else any(fnmatch.fnmatch(part, pattern) for part in parts))
        if hit:
            keep = negate
    return keep


def test_the_context_is_only_what_the_image_installs():
    for path in ("pyproject.toml", "README.md", "bot/__init__.py", "release/templates/build-workflow.yml",
                 "config/data/gpus.toml"):
        assert in_context(path), path
    for path in (".venv/bin/python", ".git/HEAD", "tests/test_image.py", "bench/ask.py", "docs/settings.md",
                 "bot/__pycache__/x.pyc", "release/recipes/__pycache__/facts.cpython-311.pyc", ".ruff_cache/x",
                 ".pytest_cache/v", "torchbot.egg-info/PKG-INFO", ".env", "torchbot.toml"):
        assert not in_context(path), path


def test_dependencies_are_a_layer_before_the_source():
    steps = instructions()
    copies = [(i, args) for i, (op, args) in enumerate(steps) if op in ("COPY", "ADD")]
    first_copy, first_args = copies[0]
    assert first_args.split()[:-1] == ["pyproject.toml"], "the first COPY brings pyproject.toml alone"
    runs = [(i, args) for i, (op, args) in enumerate(steps) if op == "RUN"]
    deps = next(i for i, args in runs if "pip install" in args and i > first_copy)
    assert "tomllib" in steps[deps][1] and "--no-deps" not in steps[deps][1]
    source = copies[1][0]
    assert deps < source and len(copies) == 2
    install = next(args for i, args in runs if i > source and "pip install" in args)
    assert "--no-deps" in install and "--no-build-isolation" in install


def test_the_dependency_layer_installs_what_pyproject_declares():
    """It reads the list from pyproject.toml (no second list), plus the build backend the source
    layer uses without build isolation (no PyPI during a source rebuild)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert '["project"]["dependencies"]' in DOCKERFILE and '["build-system"]["requires"]' in DOCKERFILE
    assert project["build-system"]["requires"] and project["project"]["dependencies"]


def test_http_mode_port_is_exposed_and_the_rest_is_kept():
    ops = instructions()
    assert ("EXPOSE", str(Settings.model_fields["port"].default)) in ops
    assert "nix-bin" in DOCKERFILE and "--uid 10001" in DOCKERFILE and "safe.directory '*'" in DOCKERFILE
    assert [args for op, args in ops if op == "USER"] == ["torchbot"]
    assert ("VOLUME", '["/var/lib/torchbot", "/nix"]') in ops
    assert ops[-2:] == [("ENTRYPOINT", '["torchbot"]'), ("CMD", '["serve", "--socket"]')]
