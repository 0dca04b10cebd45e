"""Every scheduled job previews through the real CLI, and the command it suggests runs as written.

``torchbot schedule list --json`` names the jobs; ``torchbot schedule run JOB --dry-run`` must answer
for each (no ``KeyError``, no ``--branch None``, no per-branch ``bump:main``), and the preview it
prints (``torchbot ...``) is itself run through the console script against the fixture repositories
and the nixpkgs stand-in, and must succeed. ``torchbot dashboard --issue --dry-run`` prints each
repository's issue as it would be written, without a GitHub token and without asking GitHub."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.support import forked_cli
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_realshapes import make_repos
from tests.support.fixtures_weekly import nixpkgs_history

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("schedule-cli")
    pt, tv = make_repos(tmp)
    with FakeNixpkgs() as nix:
        nixpkgs_history(nix)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
        env.update(TORCHBOT_REPO_PATH=f"{pt.path},{tv.path}", TORCHBOT_CHANNELS_URL=nix.channels_url,
                   TORCHBOT_GITHUB_API_URL=nix.api_url, TORCHBOT_NIXPKGS_TARBALL_URL=nix.tarball_url,
                   TORCHBOT_HTTP_RETRIES="1", TORCHBOT_HTTP_TIMEOUT="5", TORCHBOT_STATE_DB=f"sqlite:///{tmp}/s.db",
                   TORCHBOT_CACHE_DIR=str(tmp / "cache"), XDG_STATE_HOME=str(tmp / "state"),
                   XDG_DATA_HOME=str(tmp / "data"), XDG_CONFIG_HOME=str(tmp / "config"))
        yield {"env": env, "tmp": tmp, "pt": pt, "tv": tv}


def torchbot(world, *args: str) -> subprocess.CompletedProcess:
    return forked_cli.run(list(args), env=world["env"], cwd=world["tmp"], timeout=300)


def jobs(world) -> list[str]:
    r = torchbot(world, "schedule", "list", "--json")
    assert r.returncode == 0, r.stderr
    return [j["id"] for j in json.loads(r.stdout)]


JOBS = ("bump", "docs-check", "dashboard-issue", "poll-builds", "publish", "flush-announcements")


def test_the_schedule_has_the_jobs_this_test_walks(world):
    assert set(jobs(world)) == set(JOBS)  # a new job needs a line here, and so its own dry run


@pytest.mark.parametrize("job", JOBS)
def test_a_job_dry_run_answers_and_its_preview_runs_as_written(world, job):
    assert job in jobs(world)
    r = torchbot(world, "schedule", "run", job, "--dry-run", "--json")
    assert r.returncode == 0 and "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    out = json.loads(r.stdout)
    assert out["job"] == job and out["dry_run"] is True
    preview = out["preview"]
    assert "None" not in preview and "bump:" not in preview, preview
    if not preview.startswith("torchbot "):
        assert job == "flush-announcements", preview  # the one job with nothing to preview says so
        return
    command = shlex.split(preview.split("  (")[0])[1:]
    ran = torchbot(world, *command)
    assert ran.returncode == 0, (preview, ran.stdout[-2000:], ran.stderr[-2000:])
    assert "Traceback" not in ran.stderr


def test_the_text_dry_run_says_nothing_ran(world):
    r = torchbot(world, "schedule", "run", "dashboard-issue", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].endswith("nothing was run.")
    assert "preview: torchbot dashboard --issue --dry-run" in r.stdout


def test_an_unknown_job_is_one_line_naming_the_jobs(world):
    r = torchbot(world, "schedule", "run", "bump:main", "--dry-run")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "torchbot: No job 'bump:main'. Jobs: bump, docs-check, dashboard-issue, poll-builds, publish, "
        "flush-announcements."]


def test_the_help_examples_of_schedule_run_are_jobs_there_are(world):
    r = torchbot(world, "schedule", "run", "--help")
    assert r.returncode == 0
    shown = [line.split()[3] for line in r.stdout.splitlines() if line.strip().startswith("torchbot schedule run")]
    assert shown and set(shown) <= set(jobs(world)), shown


def test_dashboard_issue_dry_run_prints_each_issue_and_writes_nothing(world):
    r = torchbot(world, "dashboard", "--issue", "--dry-run")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    for repo in ("build-pytorch", "build-torchvision"):
        assert f"<!-- torchbot-dashboard:{repo} -->" in r.stdout
    assert r.stdout.rstrip().endswith("Dry run: GitHub was not asked; no box was acted on, no issue written.")
    d = json.loads(torchbot(world, "dashboard", "--issue", "--dry-run", "--json").stdout)
    assert [i["repository"] for i in d["issues"]] == ["build-pytorch", "build-torchvision"] and d["dry_run"]
    assert all(i["body"].startswith("<!-- torchbot-dashboard:") for i in d["issues"])
    assert not (world["tmp"] / "cache" / "dashboard-issues.json").exists()  # no issue number kept: none was made


def test_dashboard_dry_run_without_issue_is_one_line(world):
    r = torchbot(world, "dashboard", "--dry-run")
    assert r.returncode == 2 and r.stderr.strip() == "torchbot: --dry-run goes with --issue (the dashboard itself " \
                                                      "writes nothing)."


def test_dashboard_issue_without_a_token_says_it_skipped(world):
    r = torchbot(world, "dashboard", "--issue", "--json")
    assert r.returncode == 0, r.stderr
    assert "skipped (no TORCHBOT_GITHUB_TOKEN)" in r.stderr and "internal error" not in r.stderr
    assert json.loads(r.stdout)["ok"] is True
