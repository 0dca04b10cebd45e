"""Every setting is checked when torchbot starts (issue 18 item 4): each mistake below, given to
the real CLI in a process of its own through the environment (tests/support/forked_cli.py),
exits 2 with one line on stderr naming its TORCHBOT_ variable and what is wrong, no traceback,
no secret, and nothing written where it runs.
``ask``'s answer group (no pydantic) gives the same verdict as the full settings where both apply.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support import forked_cli

ROOT = Path(__file__).resolve().parents[2]


def torchbot(cwd: Path, args: list[str], **env: str) -> subprocess.CompletedProcess:
    """The CLI in ``cwd`` with a home of its own (XDG_* under ``cwd``'s parent) and only ``env`` set."""
    home = cwd.parent / "home"
    base = {k: v for k, v in os.environ.items() if not k.upper().startswith("TORCHBOT_")}
    base.update(PYTHONPATH=str(ROOT), XDG_DATA_HOME=str(home / "data"), XDG_STATE_HOME=str(home / "state"),
                XDG_CACHE_HOME=str(home / "cache"))
    base.update(env)
    return forked_cli.run(args, env=base, cwd=cwd)


def one_line(r: subprocess.CompletedProcess, *needles: str) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def run(tmp_path):
    """Run torchbot from an empty working directory; afterwards it must still be empty."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (tmp_path / "afile").write_text("a regular file\n")
    (tmp_path / "adir").mkdir()
    (tmp_path / "plain").mkdir()  # a directory that is no git repository
    yield lambda args, **env: torchbot(cwd, args, **{k: v.format(tmp=tmp_path) for k, v in env.items()})
    assert list(cwd.iterdir()) == []


MATRIX = [
    # URLs
    ({"TORCHBOT_SLACK_API_URL": "slack.com/api"}, ["TORCHBOT_SLACK_API_URL", "'slack.com/api' is not an http(s) URL"]),
    ({"TORCHBOT_GITHUB_API_URL": "ftp://api.github.com/"}, ["TORCHBOT_GITHUB_API_URL", "not an http(s) URL"]),
    ({"TORCHBOT_CHANNELS_URL": "https://channels.nixos.org:port/"}, ["TORCHBOT_CHANNELS_URL", "is not a URL"]),
    ({"TORCHBOT_NIXPKGS_TARBALL_URL": "github.com/NixOS/nixpkgs/archive/"}, ["TORCHBOT_NIXPKGS_TARBALL_URL"]),
    ({"TORCHBOT_NIXPKGS_WEB_URL": "https:///"}, ["TORCHBOT_NIXPKGS_WEB_URL", "not an http(s) URL"]),
    # the state DB URL: a port that is no number, a password with '@' (never printed)
    ({"TORCHBOT_STATE_DB": "postgresql://bot:hunter2@127.0.0.1:fivefour/db"},
     ["TORCHBOT_STATE_DB", "the port 'fivefour' is not a number"]),
    ({"TORCHBOT_STATE_DB": "postgresql://bot:hun@ter2@127.0.0.1/db"}, ["TORCHBOT_STATE_DB", "%40"]),
    ({"TORCHBOT_STATE_DB": "postgresql://bot:hunter2/x@127.0.0.1/db"}, ["TORCHBOT_STATE_DB", "%2F"]),
    # torchbot's own files: the audit log writable, the log and cache directories created, the SQLite directory
    ({"TORCHBOT_AUDIT_LOG": "{tmp}/adir"}, ["TORCHBOT_AUDIT_LOG", "is a directory", "will not start"]),
    ({"TORCHBOT_AUDIT_LOG": "{tmp}/afile/audit.log"}, ["TORCHBOT_AUDIT_LOG", "afile is a file, not a directory"]),
    ({"TORCHBOT_LOG_DIR": "{tmp}/afile/logs"}, ["TORCHBOT_LOG_DIR", "cannot create the directory", "Not a directory"]),
    ({"TORCHBOT_LOG_DIR": "{tmp}/afile"}, ["TORCHBOT_LOG_DIR", "is a file, not a directory"]),
    ({"TORCHBOT_CACHE_DIR": "{tmp}/afile/cache"}, ["TORCHBOT_CACHE_DIR", "Not a directory", "TORCHBOT_CACHE_DIR=off"]),
    ({"TORCHBOT_STATE_DB": "{tmp}/afile/state.sqlite"}, ["TORCHBOT_STATE_DB", "afile is a file, not a directory"]),
    # command placeholders: only those torchbot fills
    ({"TORCHBOT_BUILD_COMMAND": "flox build {{pkg}}"}, ["TORCHBOT_BUILD_COMMAND", "{pkg} is not a placeholder",
                                                      "{package} and {org}"]),
    ({"TORCHBOT_PUBLISH_COMMAND": "flox publish -o {{org {{package}}"}, ["TORCHBOT_PUBLISH_COMMAND", "unexpected '{'",
                                                                        "literal braces"]),
    ({"TORCHBOT_BUILD_CHECK_COMMAND": "test -e ${{HOME}}"}, ["TORCHBOT_BUILD_CHECK_COMMAND", "{HOME}"]),
    ({"TORCHBOT_BUILD_RESULT_LINK": "result-{{org}}"}, ["TORCHBOT_BUILD_RESULT_LINK", "it fills {package})"]),
    # the Flox org: Flox's name rules, nothing a shell would read
    ({"TORCHBOT_FLOX_ORG": "my org; rm -rf ~"}, ["TORCHBOT_FLOX_ORG", "is not a Flox organisation name"]),
    ({"TORCHBOT_FLOX_ORG": "acme/ml"}, ["TORCHBOT_FLOX_ORG", "is not a Flox organisation name"]),
    # intervals and timeouts > 0, counts >= 1: never silently clamped
    ({"TORCHBOT_PUBLISH_INTERVAL_SECONDS": "0"}, ["TORCHBOT_PUBLISH_INTERVAL_SECONDS", "greater than 0"]),
    ({"TORCHBOT_FLUSH_INTERVAL_SECONDS": "-5"}, ["TORCHBOT_FLUSH_INTERVAL_SECONDS", "greater than 0"]),
    ({"TORCHBOT_POLL_INTERVAL_SECONDS": "0"}, ["TORCHBOT_POLL_INTERVAL_SECONDS", "greater than 0"]),
    ({"TORCHBOT_BUILD_TIMEOUT": "0"}, ["TORCHBOT_BUILD_TIMEOUT", "greater than 0"]),
    ({"TORCHBOT_HTTP_TIMEOUT": "-1"}, ["TORCHBOT_HTTP_TIMEOUT", "greater than 0"]),
    ({"TORCHBOT_GITHUB_POLL_SECONDS": "0"}, ["TORCHBOT_GITHUB_POLL_SECONDS", "greater than 0"]),
    ({"TORCHBOT_HTTP_RETRIES": "0"}, ["TORCHBOT_HTTP_RETRIES", "greater than or equal to 1"]),
    ({"TORCHBOT_BUILD_JOBS": "0"}, ["TORCHBOT_BUILD_JOBS", "greater than or equal to 1"]),
    # a plan's lifetime past any date (now + 3e11 s overflows when a plan is made)
    ({"TORCHBOT_PLAN_TTL_SECONDS": "300000000000"}, ["TORCHBOT_PLAN_TTL_SECONDS", "less than or equal to 604800"]),
    # numbers of seconds: finite (inf overflowed the Slack client: internal error)
    ({"TORCHBOT_HTTP_TIMEOUT": "inf"}, ["TORCHBOT_HTTP_TIMEOUT", "finite number"]),
    ({"TORCHBOT_BUILD_TIMEOUT": "nan"}, ["TORCHBOT_BUILD_TIMEOUT", "finite number"]),
    # TORCHBOT_CONFIG a readable file
    ({"TORCHBOT_CONFIG": "{tmp}/adir"}, ["TORCHBOT_CONFIG", "is a directory, not a TOML file"]),
    ({"TORCHBOT_CONFIG": "{tmp}/missing.toml"}, ["TORCHBOT_CONFIG", "does not exist"]),
    # the repositories, named by their variable
    ({"TORCHBOT_REPO_PATH": "{tmp}/missing"}, ["TORCHBOT_REPO_PATH", "missing does not exist"]),
    ({"TORCHBOT_REPO_PATH": "{tmp}/plain"}, ["TORCHBOT_REPO_PATH", "plain is not a git repository"]),
    ({"TORCHBOT_REPO_PATH": "{tmp}/afile"}, ["TORCHBOT_REPO_PATH", "is not a directory"]),
    # words with a fixed set of values
    ({"TORCHBOT_SCHEDULE_BUILD_BACKEND": "gitlab"}, ["TORCHBOT_SCHEDULE_BUILD_BACKEND", "'github', 'local' or 'none'"]),
    ({"TORCHBOT_GITHUB_REPO": "build-pytorch"}, ["TORCHBOT_GITHUB_REPO", "owner/name"]),
    ({"TORCHBOT_GITHUB_WORKFLOW_FILE": "../evil.yml"}, ["TORCHBOT_GITHUB_WORKFLOW_FILE", "not a workflow file name"]),
]


@pytest.mark.parametrize("env, needles", MATRIX, ids=[next(iter(e)) + "=" + next(iter(e.values())) for e, _ in MATRIX])
def test_each_settings_mistake_stops_the_start_with_one_line(run, env, needles):
    line = one_line(run(["release", "status"], **env), *needles)
    assert line.startswith("torchbot: TORCHBOT_")
    for secret in ("hunter2", "hun@ter2", "ter2"):
        assert secret not in line  # passwords are never printed, not even in part


def test_the_defaults_start_and_keep_torchbots_files_out_of_the_working_directory(run, tmp_path):
    r = run(["release", "status"])
    assert r.returncode == 0, r.stderr
    home = tmp_path / "home"
    assert (home / "data" / "torchbot" / "state.sqlite").is_file()
    assert (home / "state" / "torchbot" / "audit.log").is_file()
    assert (home / "state" / "torchbot" / "log").is_dir()


def test_paths_says_where_each_file_lives(run, tmp_path):
    r = run(["paths"], TORCHBOT_STATE_DB="postgresql://bot:hunter2@db.example:5432/torchbot",
            TORCHBOT_LOG_DIR="{tmp}/logs")
    assert r.returncode == 0, r.stderr
    home = tmp_path / "home"
    out = r.stdout
    assert "postgresql+psycopg://bot:***@db.example:5432/torchbot  (TORCHBOT_STATE_DB" in out and "hunter2" not in out
    assert f"{home / 'state' / 'torchbot' / 'audit.log'}  (TORCHBOT_AUDIT_LOG; not yet created)" in out
    assert f"{tmp_path / 'logs'}  (TORCHBOT_LOG_DIR" in out
    assert f"{home / 'cache' / 'torchbot'}  (TORCHBOT_CACHE_DIR" in out
    assert f"{home / 'data' / 'torchbot' / 'branches.toml'}  (TORCHBOT_LOCAL_BRANCHES" in out
    assert "(TORCHBOT_CONFIG; none (optional))" in out
    assert "torchbot paths" in run(["--help"]).stdout


# ask's answer group (no pydantic) and the full settings (`catalog` loads them) agree
ASK_MISTAKES = [
    ({"TORCHBOT_FLOX_ORG": "my org; rm -rf ~"},
     "TORCHBOT_FLOX_ORG: 'my org; rm -rf ~' is not a Flox organisation name"),
    ({"TORCHBOT_REPO_PATH": "{tmp}/missing"}, "TORCHBOT_REPO_PATH: {tmp}/missing does not exist"),
    ({"TORCHBOT_REPO_PATH": "{tmp}/plain"}, "TORCHBOT_REPO_PATH: {tmp}/plain is not a git repository"),
    ({"TORCHBOT_CACHE_DIR": "{tmp}/afile/c"}, "TORCHBOT_CACHE_DIR: cannot create the directory {tmp}/afile/c"),
]


@pytest.mark.parametrize("env, expect", ASK_MISTAKES, ids=[next(iter(e)) for e, _ in ASK_MISTAKES])
def test_ask_gives_the_same_verdict_as_the_full_settings(run, tmp_path, env, expect):
    light = one_line(run(["ask", "H100"], **env))
    full = one_line(run(["catalog"], **env))
    assert light == full and light.startswith("torchbot: " + expect.format(tmp=tmp_path))


BLANK_IS_DEFAULT = ["TORCHBOT_STATE_DB", "TORCHBOT_AUDIT_LOG", "TORCHBOT_LOG_DIR", "TORCHBOT_CACHE_DIR",
                    "TORCHBOT_LOCAL_BRANCHES"]


@pytest.mark.parametrize("variable", BLANK_IS_DEFAULT)
def test_a_blank_path_setting_means_its_default_never_the_working_directory(run, variable):
    def where(r: subprocess.CompletedProcess) -> list[str]:  # each file's place and setting, not whether it exists
        assert r.returncode == 0, r.stderr
        return [line.partition(";")[0] for line in r.stdout.splitlines()]

    default = where(run(["paths"]))
    for blank in ("", "  "):
        assert where(run(["paths"], **{variable: blank})) == default
        r = run(["ask", "H100 with Graviton3"], TORCHBOT_FLOX_ORG="acme", **{variable: blank})  # the answer group
        assert r.returncode == 0 and "flox install acme/" in r.stdout, r.stderr
        assert run(["catalog"], **{variable: blank}).returncode == 0  # the full settings
        r = run(["release", "status"], **{variable: blank})
        assert r.returncode == 0, r.stderr


def test_ask_answers_with_the_answer_group_and_writes_nothing(run):
    r = run(["ask", "H100 with Graviton3"], TORCHBOT_FLOX_ORG="acme", TORCHBOT_CACHE_DIR="off")
    assert r.returncode == 0 and "flox install acme/" in r.stdout, r.stderr


# The placeholder org is refused wherever it would be published or committed, before anything happens
def test_the_placeholder_org_is_not_committed_into_the_workflow(tmp_path):
    from tests.support import fixtures_builds as fx
    from tests.support.fixtures_pins import refs

    repo = fx.make_repo(tmp_path)
    before = refs(repo)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for extra in (["--commit", "--branch", fx.BRANCH], ["--write"]):
        one_line(torchbot(cwd, ["release", "workflow", "--repo", str(repo), *extra]),
                 "TORCHBOT_FLOX_ORG is the placeholder 'your-org'", "writing the build workflow")
    assert refs(repo) == before and not (repo / ".github").exists()
    printed = torchbot(cwd, ["release", "workflow"])  # printing it commits nothing: allowed
    assert printed.returncode == 0 and "your-org" in printed.stdout, printed.stderr


def test_the_placeholder_org_is_not_published(tmp_path):
    from release.builds import run as builds
    from release.publishing import publish
    from tests.support import fixtures_builds as fx

    repo = fx.make_repo(tmp_path, packages=fx.OK)
    ctx = fx.context(tmp_path, build_command="true", build_result_link="README.md")
    builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo))
    pending = {b.package for b in publish.pending(ctx, fx.BRANCH)}
    marker = tmp_path / "published"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    one_line(torchbot(cwd, ["release", "publish", "--repo", str(repo)], TORCHBOT_STATE_DB=ctx.settings.state_db,
                      TORCHBOT_PUBLISH_COMMAND=f"touch {marker}"),
             "TORCHBOT_FLOX_ORG is the placeholder 'your-org'", "before publishing")
    assert not marker.exists() and {b.package for b in publish.pending(ctx, fx.BRANCH)} == pending == set(fx.OK)
    r = torchbot(cwd, ["release", "publish", "--repo", str(repo)], TORCHBOT_STATE_DB=ctx.settings.state_db,
                 TORCHBOT_PUBLISH_COMMAND=f"touch {marker}", TORCHBOT_FLOX_ORG="acme")
    assert r.returncode == 0 and marker.exists(), r.stderr
