"""The folder tree is the architecture: imports between torchbot's packages go one way.

Every ``import`` and ``from ... import`` in bot/, release/ and config/ (module level or inside
functions) is parsed with ``ast`` and checked against the allowed directions below. A load by
name (``importlib.import_module``, ``__import__``) of a project module would dodge these rules and
hide cycles: there is none (``dynamic_imports``).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "config", "release")

# layer -> the layers it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "config": set(),
    "release.adapters": {"config"},
    "release.state": {"config"},
    "release.recipes": {"config", "release.adapters"},
    "release.context": {"config", "release.recipes"},
    "release.cli": {"config"},
    "release.pins": {"config", "release.adapters", "release.state", "release.recipes", "release.context", "release.cli",
                     "release.docs"},
    "release.branches": {"config", "release.adapters", "release.recipes", "release.context", "release.pins",
                         "release.docs", "release.cli"},
    "release.docs": {"config", "release.adapters", "release.recipes", "release.context", "release.cli"},
    "release.builds": {"config", "release.adapters", "release.state", "release.context", "release.recipes",
                       "release.cli"},
    "release.publishing": {"config", "release.adapters", "release.state", "release.context", "release.builds",
                           "release.cli"},
    # the timetable: which jobs there are and when they run (the schedule runs them, the dashboard shows them)
    "release.timetable": {"config"},
    # the dashboard: its model is pure (config only, checked below); collect and commands read the rest
    "release.dashboard": {"config", "release.adapters", "release.state", "release.context", "release.recipes",
                          "release.pins", "release.docs", "release.builds", "release.publishing", "release.timetable",
                          "release.cli"},
    "release.schedule": {"config", "release.adapters", "release.state", "release.context", "release.recipes",
                         "release.pins", "release.branches", "release.docs", "release.builds", "release.publishing",
                         "release.timetable", "release.dashboard"},
    "release": {"config"},  # release/__init__.py
    # The answer engine is pure apart from bot.engine.host (checked below): config only.
    "bot.engine": {"config"},
    "bot.frontends": {"bot.engine", "config", "release.context", "release.recipes", "release.pins",
                      "release.branches", "release.docs", "release.builds", "release.publishing",
                      "release.schedule", "release.cli", "release.state", "release.dashboard", "release.timetable"},
    "bot": {"bot.frontends"},  # bot/__init__.py, bot/__main__.py
}
COMMAND_LAYERS = ("commands", "cli")

# Within bot.frontends: front end -> the other front-end modules it may import. The command
# layer imports no front end; Slack and the console build on the chat dispatcher; only the
# console script (cli) may import them all.
FRONTEND_CORE = {"commands", "chat", "pending", "jobs", "incidents", "store"}
FRONTENDS_ALLOWED: dict[str, set[str]] = {
    "commands": set(),
    "incidents": set(),
    "pending": set(),
    "store": set(),
    "web": {"incidents"},
    "jobs": {"incidents"},
    "chat": {"commands", "incidents", "jobs", "pending", "store"},
    "console": FRONTEND_CORE,
    "slack": FRONTEND_CORE,
    "cli": FRONTEND_CORE | {"console", "slack", "web"},
}
# Modules that may import nothing of torchbot: adapters to the machine itself.
IMPORT_NOTHING = ("bot.engine.host",)
# Pure modules: config and themselves only (no git, HTTP, database, Slack).
PURE = {"release.dashboard.model": {"config", "release.dashboard.model", "release.dashboard.decisions"},
        "release.dashboard.decisions": {"config"},
        "release.dashboard.issue": {"config", "release.dashboard.model", "release.dashboard.issue"},
        "release.dashboard.page": {"config", "release.dashboard.model", "release.dashboard.page"},
        "release.dashboard.words": {"config", "release.dashboard.model", "release.dashboard.words"}}


def layer(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "config" or module == "bot" or module == "bot.__main__":
        return parts[0]
    if len(parts) >= 2:
        return ".".join(parts[:2])
    return "release"


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, imported torchbot module) for every import in the file."""
    return list(_imports(path, path.read_text(), ROOT))


@functools.cache  # each check walks every file: one parse per file's text (and tree) serves them all
def _imports(path: Path, text: str, root: Path) -> tuple[tuple[int, str], ...]:
    tree = ast.parse(text, str(path))
    me = module_name(path)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import
                base = me.split(".")[: -node.level or None] if path.name != "__init__.py" else me.split(".")
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            # `from release.builds import run` imports the module release.builds.run
            out += [(node.lineno, f"{mod}.{a.name}") for a in node.names if is_module(f"{mod}.{a.name}")]
    return tuple((line, m) for line, m in out if m.split(".")[0] in PACKAGES)


def is_module(name: str) -> bool:
    return ROOT.joinpath(*name.split(".")).with_suffix(".py").exists()


def sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def is_command_layer(module: str) -> bool:
    """Command layers and front ends: commands.py / cli.py modules, the schedule (it drives the
    other concerns through their command layers, as a chat front end does) and the bot's front ends."""
    return (module.rsplit(".", 1)[-1] in COMMAND_LAYERS or module in ("bot", "bot.__main__")
            or module.startswith(("bot.frontends", "release.schedule")))


def violations() -> list[str]:
    found = []
    for path in sources():
        me = module_name(path)
        mine = layer(me)
        assert mine in ALLOWED, f"{me}: layer {mine} has no import rule; add it to ALLOWED"
        for line, target in imports_of(path):
            theirs = layer(target)
            where = f"{path.relative_to(ROOT)}:{line} imports {target}"
            if theirs != mine and theirs not in ALLOWED[mine]:
                found.append(f"{where}: {mine} may not import {theirs}")
            if not is_command_layer(me) and is_command_layer(target) and target != "release.cli":
                found.append(f"{where}: adapters and domain modules never import a command layer or the bot")
            if me in PURE and not any(target == p or target.startswith(p + ".") for p in PURE[me]):
                found.append(f"{where}: {me} is pure (model and config only)")
            if me in IMPORT_NOTHING:
                found.append(f"{where}: {me} imports nothing of torchbot")
            found += frontend_violations(me, target, where)
    return found


def frontend_part(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) >= 3 and parts[:2] == ["bot", "frontends"] else None


def frontend_violations(me: str, target: str, where: str) -> list[str]:
    mine, theirs = frontend_part(me), frontend_part(target)
    if mine is None or theirs is None or mine == theirs:
        return []
    assert mine in FRONTENDS_ALLOWED, f"{me}: front end {mine} has no import rule; add it to FRONTENDS_ALLOWED"
    if theirs not in FRONTENDS_ALLOWED[mine]:
        return [f"{where}: bot.frontends.{mine} may not import bot.frontends.{theirs}"]
    return []


def module_graph() -> dict[str, set[str]]:
    """Module -> the torchbot modules it imports, at module level or inside functions."""
    known = {module_name(p) for p in sources()}
    graph: dict[str, set[str]] = {}
    for path in sources():
        me = module_name(path)
        for _, target in imports_of(path):
            # `from pkg import name` imports pkg (its __init__) and, when name is a module, pkg.name
            if target in known and target != me and not me.startswith(target + "."):
                graph.setdefault(me, set()).add(target)
    return graph


def layer_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sources():
        mine = layer(module_name(path))
        for _, target in imports_of(path):
            if layer(target) != mine:
                graph.setdefault(mine, set()).add(layer(target))
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def dynamic_imports(text: str, where: str) -> list[str]:
    """Each ``import_module(...)``/``__import__(...)`` in ``text`` that loads a project module, or a
    module whose name is not written out (it could be one)."""
    found = []
    for node in ast.walk(ast.parse(text, where)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name not in ("import_module", "__import__"):
            continue
        arg = node.args[0] if node.args else None
        target = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
        if target is None or target.split(".")[0] in PACKAGES:
            found.append(f"{where}:{node.lineno} loads {target or 'a module named at run time'} by name")
    return found


def test_no_project_module_is_loaded_by_name():
    assert [v for path in sources() for v in dynamic_imports(path.read_text(), str(path.relative_to(ROOT)))] == []


def test_the_checker_catches_a_load_by_name():
    text = ("import importlib\nm = importlib.import_module('release.dashboard.commands')\n"
            "def f(n):\n    return __import__(n)\nj = importlib.import_module('json')\n")
    assert dynamic_imports(text, "probe.py") == ["probe.py:2 loads release.dashboard.commands by name",
                                                  "probe.py:4 loads a module named at run time by name"]


def test_the_dashboard_and_the_schedule_do_not_import_each_other_both_ways():
    """The cycle the loads by name once hid: the schedule runs the dashboard's jobs, the dashboard reads
    the timetable (``release.timetable``), never the schedule; the bump stage writes the release record
    and imports neither."""
    graph = layer_graph()
    assert "release.schedule" not in graph.get("release.dashboard", set())
    assert not {"release.dashboard", "release.schedule"} & graph.get("release.pins", set())


def test_every_import_goes_in_an_allowed_direction():
    assert violations() == []


def test_the_packages_have_no_import_cycle():
    assert find_cycle(layer_graph()) is None


def test_no_module_import_cycle_even_through_function_level_imports():
    assert find_cycle(module_graph()) is None


def test_release_and_config_never_import_the_bot():
    offenders = [
        f"{path.relative_to(ROOT)}:{line} {target}"
        for path in sources()
        if not module_name(path).startswith("bot")
        for line, target in imports_of(path)
        if target.startswith("bot")
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "pkg",
    sorted({p.parent for name in ("release", "bot") for p in (ROOT / name).rglob("__init__.py")}),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_each_package_says_what_it_holds_and_may_import(pkg):
    doc = ast.get_docstring(ast.parse((pkg / "__init__.py").read_text()))
    assert doc and "import" in doc.lower(), (
        f"{pkg.relative_to(ROOT)}/__init__.py needs a docstring with its import rule"
    )


@pytest.fixture
def tree(tmp_path, monkeypatch) -> Path:
    """A copy of the packages' sources in a temporary tree, checked instead of the real one: a
    probe module written there never lands in the source tree (nor is seen by a test running
    beside it)."""
    import shutil
    import sys

    for pkg in PACKAGES:
        for src in (ROOT / pkg).rglob("*.py"):
            dest = tmp_path / src.relative_to(ROOT)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    return tmp_path


def test_the_checker_catches_a_violation(tree):
    """The rules are not vacuous: an adapter importing a command layer, and a cycle, are found."""
    fake = tree / "release" / "adapters" / "_violation_probe.py"
    fake.write_text("from release.pins.commands import plan_bump\n")
    try:
        assert any("_violation_probe" in v and "may not import release.pins" in v for v in violations())
        assert any("_violation_probe" in v and "command layer" in v for v in violations())
    finally:
        fake.unlink()
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_checker_catches_a_cycle_closed_by_an_import_inside_a_function(tree):
    """Two modules of one package, one importing the other at the top and the other importing
    it back inside a function (what release/recipes/reader.py and repos.py once did)."""
    a = tree / "release" / "recipes" / "_cycle_probe_a.py"
    b = tree / "release" / "recipes" / "_cycle_probe_b.py"
    a.write_text("from release.recipes._cycle_probe_b import g\n")
    b.write_text("def g():\n    from release.recipes import _cycle_probe_a\n    return _cycle_probe_a\n")
    try:
        cycle = find_cycle(module_graph())
    finally:
        a.unlink()
        b.unlink()
    assert cycle is not None and {"release.recipes._cycle_probe_a", "release.recipes._cycle_probe_b"} <= set(cycle)


def test_the_checker_catches_a_front_end_or_engine_violation(tree):
    """The engine importing a front end (even inside a function) and the command layer importing
    Slack are found; Slack building on the chat dispatcher is not."""
    probe = tree / "bot" / "engine" / "_violation_probe.py"
    probe.write_text("def f():\n    from bot.frontends.chat import Chat\n")
    try:
        assert any("_violation_probe" in v and "may not import bot.frontends" in v for v in violations())
    finally:
        probe.unlink()
    assert frontend_violations("bot.frontends.commands", "bot.frontends.slack.blocks", "probe")
    assert frontend_violations("bot.frontends.slack.app", "bot.frontends.chat", "probe") == []
