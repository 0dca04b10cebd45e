"""Small modules and functions: no module of bot/, release/ or config/ over 500 lines and no
function over 100, so each reads as a few named steps. A module or function that grows past
these is split where its parts have names, not by raising the numbers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 100
SOURCES = sorted(p for pkg in ("bot", "release", "config") for p in (ROOT / pkg).rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_over_500_lines(path: Path) -> None:
    lines = path.read_text().count("\n")
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(ROOT)} has {lines} lines; split it by what its parts do"


def long_functions(source: str) -> list[tuple[str, int]]:
    return [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_function_is_over_100_lines(path: Path) -> None:
    assert long_functions(path.read_text()) == [], f"{path.relative_to(ROOT)}: make these a few named steps"


def test_the_function_check_finds_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert long_functions(f"def long():\n{body}\n") == [("long", MAX_FUNCTION_LINES + 1)]
