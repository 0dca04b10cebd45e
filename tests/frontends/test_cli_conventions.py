"""The CLI's conventions (git, gh and flox as the models), walked over the whole argparse tree:
help on every option and positional, examples on every command that changes something, the
exit codes in every help and the same for the same mistake in every command, a bare group
printing its help, `--version`, a mistake showing its own command's usage, shell completion,
and `--dry-run --diff` that shows the diff and changes nothing (real git repos, a real HTTP
nixpkgs stand-in)."""

from __future__ import annotations

import argparse
import io
import re
import shlex
import shutil
import subprocess
import sys
from contextlib import redirect_stdout
from importlib.metadata import version
from pathlib import Path

import pytest

from bot.frontends.cli.main import build_parser, main, walk
from tests.support import ci
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import NEW, PIN_A, build_repo, git, refs, served, small_catalog_branches

ROOT = Path(__file__).resolve().parents[2]
WRITERS = [("release", "bump-pins"), ("release", "branch", "create"), ("release", "docs"), ("release", "build"),
           ("release", "workflow"), ("release", "publish"), ("release", "init"), ("schedule", "run")]
PATHS = [path for path, _ in walk(build_parser())]


def run(*args: str, env: dict | None = None, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60, check=False, input=stdin, env=env)


def test_the_tree_has_every_command():
    assert {("ask",), ("release",), ("release", "bump-pins"), ("release", "branch", "create"), ("schedule", "run"),
            ("completion",)} <= set(PATHS)
    assert ("__complete",) not in PATHS


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "torchbot")
def test_every_option_and_positional_has_help_and_every_help_the_exit_codes(path, capsys):
    parser = dict(walk(build_parser()))[path]
    missing = [a.option_strings[0] if a.option_strings else a.dest for a in parser._actions
               if not isinstance(a, argparse._HelpAction) and not a.help]
    assert missing == [], f"torchbot {' '.join(path)}: no help text for {missing}"
    for action in parser._actions:  # every command listed under a group says what it does
        if isinstance(action, argparse._SubParsersAction):
            assert all(c.help for c in action._choices_actions), path
    with pytest.raises(SystemExit) as exit_:
        main([*path, "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    assert out.startswith(f"usage: torchbot {' '.join(path)}".rstrip())
    assert "exit status:\n  0  ok\n  1  done, with problems" in out and "2  usage or settings" in out
    assert "_command" not in out  # no internal dest name (release_command, branch_command) leaks
    assert parser.description, f"torchbot {' '.join(path)} --help does not say what the command does"
    assert re.search(r"^examples[^\n]*:\n  (\S+ \| )?torchbot ", out, re.M), \
        f"torchbot {' '.join(path)} --help has no examples"  # every command, not only those that write


def help_examples(text: str) -> list[str]:
    """The command lines under a help's ``examples`` heading (a pipe's torchbot side, no redirect)."""
    block = re.search(r"^examples[^\n]*:\n((?:  .*\n?)+)", text, re.M)
    raw = re.sub(r"\s*\\\n\s*", " ", block.group(1)) if block else ""  # a continued line, joined
    lines = [re.split(r"\s{2,}", line.strip())[0] for line in raw.splitlines()]
    return [line.split(" | ")[-1].split(" > ")[0] for line in lines if "torchbot " in line]


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "torchbot")
def test_every_help_example_is_that_command_and_parses(path):
    """Each example a help shows names a command of the tree and its options parse as written."""
    parser = build_parser()
    shown = help_examples(dict(walk(parser))[path].format_help())
    assert shown, path
    for line in shown:
        words = shlex.split(line)
        assert words[0] == "torchbot", line
        if path:
            assert words[1:1 + len(path)] == list(path), line
        try:
            build_parser().parse_args(words[1:])
        except SystemExit as err:
            pytest.fail(f"torchbot {' '.join(path)} --help shows {line!r}, which does not parse ({err.code})")


def test_every_command_that_writes_has_dry_run():
    tree = dict(walk(build_parser()))
    for path in [*WRITERS, ("release", "render")]:
        options = {o for a in tree[path]._actions for o in a.option_strings}
        assert "--dry-run" in options, path
    for path in [("release", "bump-pins"), ("release", "branch", "create"), ("release", "docs"),
                 ("release", "workflow")]:  # the ones that write files: the diff of what they would write
        assert "--diff" in {o for a in tree[path]._actions for o in a.option_strings}, path


def test_version_comes_from_the_package_metadata():
    r = run("--version")
    assert r.returncode == 0 and r.stdout == f"torchbot {version('torchbot')}\n"


@pytest.mark.parametrize("args", [[], ["release"], ["schedule"], ["release", "branch"]])
def test_a_bare_command_group_prints_its_help_and_exits_0(args, capsys):
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: torchbot {' '.join(args)}".rstrip()) and "COMMAND" in out
    assert "required" not in out


@pytest.mark.parametrize("args, usage", [
    (["release", "build", "--branch", "main", "--bogus"], "usage: torchbot release build"),
    (["release", "bump-pins", "--all", "--bogus"], "usage: torchbot release bump-pins"),
    (["release", "branch", "create", "pytorch-2.8-new", "--bogus"], "usage: torchbot release branch create"),
    (["catalog", "--bogus"], "usage: torchbot catalog"),
    (["ask", "--bogus"], "usage: torchbot ask"),
    (["schedule", "run"], "usage: torchbot schedule run"),
    (["release", "nonsense"], "usage: torchbot release"),
])
def test_a_mistake_shows_the_usage_of_its_own_command(args, usage, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(args)
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.startswith(usage) and f"Run '{usage.removeprefix('usage: ')} --help' for more." in err
    assert "_command" not in err and "Traceback" not in err


@pytest.fixture
def repo(tmp_path, monkeypatch):
    work, origin = build_repo(tmp_path / "repo", small_catalog_branches())
    with FakeNixpkgs() as fake:
        cudas = {"cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13_0", "cudaPackages_13_1"}
        fake.add_rev(NEW, "2.8.4", cudas)
        fake.add_rev(PIN_A, "2.8.0", cudas)
        with served(monkeypatch, work, fake, TORCHBOT_NIXPKGS_TARBALL_URL=fake.tarball_url,
                    TORCHBOT_LOCAL_BRANCHES=str(tmp_path / "branches.toml"), TORCHBOT_FLOX_ORG="example-org",
                    TORCHBOT_STATE_DB=str(tmp_path / "state.sqlite"), TORCHBOT_GIT_AUTHOR_NAME="torchbot",
                    TORCHBOT_GIT_AUTHOR_EMAIL="bot@example.com"):
            yield work, origin


@pytest.mark.parametrize("args", [
    ["release", "bump-pins", "--branch", "nope", "--rev", NEW],
    ["release", "build", "--branch", "nope", "--dry-run"],
    ["release", "workflow", "--commit", "--branch", "nope"],
    ["release", "branch", "create", "pytorch-2.8-new", "--pytorch", "2.8", "--pin", NEW, "--from", "nope"],
    ["release", "publish", "--branch", "nope", "--dry-run"],
])
def test_an_unknown_branch_is_bad_input_in_every_command(repo, args, capsys):
    work, _ = repo
    before = refs(work)
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, (args, err)
    assert "nope" in err and "Traceback" not in err
    assert refs(work) == before


def _clean(work: Path) -> str:
    return git(work, "status", "--porcelain")


def test_bump_dry_run_diff_shows_the_unified_diff_and_changes_nothing(repo, capsys):
    work, _ = repo
    before = refs(work)
    assert main(["release", "bump-pins", "--branch", "main", "--rev", NEW, "--dry-run", "--diff"]) == 0
    out = capsys.readouterr().out
    assert refs(work) == before and _clean(work) == ""
    assert "Dry run: nothing was written." in out
    assert "diff main: .flox/pkgs/" in out and "\n--- a/.flox/pkgs/" in out and "\n+++ b/.flox/pkgs/" in out
    removed = [line for line in out.splitlines() if line.startswith("-") and PIN_A in line]
    added = [line for line in out.splitlines() if line.startswith("+") and NEW in line]
    assert removed and len(added) == len(removed)
    # --diff alone is a dry run too
    assert main(["release", "bump-pins", "--branch", "main", "--rev", NEW, "--diff"]) == 0
    assert "nothing was written" in capsys.readouterr().out and refs(work) == before


def test_branch_create_dry_run_diff_writes_no_branch(repo, capsys):
    work, origin = repo
    before, remote = refs(work), refs(origin)
    args = ["release", "branch", "create", "pytorch-2.9-python312", "--pytorch", "2.8.4", "--python", "3.12",
            "--pin", NEW, "--from", "main", "--push", "--diff"]
    assert main(args) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert out.startswith("Would create branch pytorch-2.9-python312 from main") and "nothing was written" in out
    assert "diff pytorch-2.9-python312 (from main): " in out and "python312" in out
    assert refs(work) == before and refs(origin) == remote and _clean(work) == ""


def test_docs_and_workflow_dry_runs_write_nothing(repo, capsys):
    work, _ = repo
    before = refs(work)
    assert main(["release", "docs", "--write", "--dry-run", "--diff"]) == 0
    capsys.readouterr()
    assert main(["release", "workflow", "--commit", "--branch", "main", "--diff"]) == 0
    out = capsys.readouterr().out
    assert "would create (commit it to main)" in out and "+++ b/.github/workflows/" in out
    assert main(["release", "workflow", "--write", "--dry-run"]) == 0
    assert "Dry run: nothing was written." in capsys.readouterr().out
    assert refs(work) == before and _clean(work) == "" and not (work / ".github").exists()
    assert main(["schedule", "run", "publish", "--dry-run"]) == 0
    assert "nothing was run" in capsys.readouterr().out
    assert main(["release", "init", str(work.parent / "new"), "--dry-run"]) == 0
    assert "Dry run: nothing was written." in capsys.readouterr().out and not (work.parent / "new").exists()
    assert main(["release", "docs", "--check", "--dry-run"]) == 2  # --check writes nothing: a usage mistake
    assert main(["release", "workflow", "--diff"]) == 2  # nothing to write: a usage mistake


# -- completion ------------------------------------------------------------------------------

def _complete(*words: str) -> list[str]:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["__complete", "words", "--", *words]) == 0
    return out.getvalue().splitlines()


def test_completion_walks_the_parser_tree():
    assert _complete("rel") == ["release"]
    assert _complete("release", "bu") == ["bump-pins", "bump-pause", "build"]
    assert {"bump-pins", "build", "publish", "branch"} <= set(_complete("release", ""))  # after a space
    assert "--dry-run" in _complete("release", "build", "--") and "--bogus" not in _complete("release", "build", "--")
    assert _complete("release", "build", "--backend", "") == ["local", "github"]
    assert _complete("completion", "") == ["bash", "zsh", "fish"]
    assert "__complete" not in _complete("")


def test_branches_are_completed_from_the_repository_with_the_remotes(repo):
    work, origin = repo
    git(origin, "branch", "only-on-origin", "main")
    git(work, "fetch", "-q", "origin")
    names = _complete("release", "build", "--branch", "")
    assert {"main", "only-on-origin"} <= set(names) and "HEAD" not in names
    assert set(_complete("release", "bump-pins", "--branch", "ma")) == {n for n in names if n.startswith("ma")}
    assert "main" in _complete("release", "branch", "create", "pytorch-2.8-new", "--from", "")


def test_completion_without_a_repository_prints_nothing(monkeypatch):
    monkeypatch.setenv("TORCHBOT_REPO_PATH", "/nonexistent/repo")
    assert _complete("release", "build", "--branch", "") == []


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_are_valid_for_their_shell(shell, tmp_path):
    r = run("completion", shell)
    assert r.returncode == 0 and "torchbot __complete words" in r.stdout
    script = tmp_path / f"torchbot.{shell}"
    script.write_text(r.stdout)
    exe = shutil.which(shell)
    if exe:  # bash is always here; zsh and fish when installed
        check = subprocess.run([exe, "-n", str(script)], capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stderr
    marks = {"bash": "complete -o default -F _torchbot torchbot", "zsh": "compdef _torchbot torchbot",
             "fish": "complete -c torchbot"}
    assert marks[shell] in r.stdout


def test_bash_completion_completes_through_the_real_script(tmp_path):
    bindir = Path(sys.executable).parent
    if not (bindir / "torchbot").exists():
        ci.skip("the torchbot console script is not installed beside this interpreter")
    script = tmp_path / "torchbot.bash"
    script.write_text(run("completion", "bash").stdout)
    probe = (f"source {script}; COMP_WORDS=(torchbot release bu); COMP_CWORD=2; _torchbot; "
             "printf '%s\\n' \"${COMPREPLY[@]}\"")
    r = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=False, timeout=60,
                       env={"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path)})
    assert r.stdout.split() == ["bump-pins", "bump-pause", "build"], r.stderr
