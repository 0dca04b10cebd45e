"""The dashboard model built from fixture repositories (two repositories, a three-pin branch, stale
READMEs, a companion off its pair, held / current / bumped / PR-open bumps, builds in every state)
and its JSON and terminal renderings checked against it."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from release.dashboard.commands import dashboard
from release.dashboard.text import plain, rich_tables
from tests.support.fixtures_dashboard import HEAD, HELD, MULTI, PR_BRANCH, PR_HEAD, dashboard_world
from tests.support.fixtures_realshapes import PIN_13_0, PIN_MAIN

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with dashboard_world(tmp_path_factory.mktemp("dashboard")) as w:
        w.result = dashboard(w.ctx, now=w.now)
        yield w


def _branch(d: dict, repo: str, name: str) -> dict:
    r = next(r for r in d["repositories"] if r["name"] == repo)
    return next(b for b in r["branches"] if b["branch"] == name)


def test_every_branch_of_both_repositories_is_in_the_json(world):
    d = json.loads(json.dumps(world.result.to_dict()))  # plain JSON all the way down
    assert [r["name"] for r in d["repositories"]] == ["build-pytorch", "build-torchvision"]
    assert {b["branch"] for b in d["repositories"][0]["branches"]} == set(world.pt.branch_names)
    assert {b["branch"] for b in d["repositories"][1]["branches"]} == set(world.tv.branch_names)


def test_pins_carry_their_date_age_channel_and_distance_from_its_head(world):
    d = world.result.to_dict()
    main = _branch(d, "build-pytorch", "main")
    (pin,) = main["pins"]
    assert (pin["rev"], pin["date"][:10], pin["age_days"]) == (PIN_MAIN, "2025-08-01", 213)
    assert (pin["channel"], pin["channel_head"], pin["behind_commits"], pin["behind_days"]) == (
        "nixos-unstable", HEAD, 7, 212)
    multi = _branch(d, "build-pytorch", MULTI)
    assert len(multi["pins"]) == 3 and sum(p["packages"] for p in multi["pins"]) == multi["builds"]["total"]
    assert any(p["rev"] == PIN_13_0 and "CUDA 13.0" in p["labels"] for p in multi["pins"])


def test_bump_states_held_with_reason_current_and_pr_open_with_its_builds(world):
    d = world.result.to_dict()
    main = _branch(d, "build-pytorch", "main")["bump"]
    assert main["state"] == "held" and main["groups"][0]["reason"] == HELD
    assert (main["groups"][0]["rev"], main["groups"][0]["pytorch"]) == (HEAD, "2.9.1")
    assert _branch(d, "build-pytorch", MULTI)["bump"]["state"] == "current"
    pr = _branch(d, "build-pytorch", PR_BRANCH)["bump"]
    assert pr["state"] == "pr-open"
    assert pr["pull_request"]["head"] == PR_HEAD and pr["pull_request"]["url"].endswith("/pull/1")
    assert pr["pull_request"]["builds"] == {"built": 2, "failed": 1}
    assert pr["pull_request"]["summary"] == "2/3 built, 1 failed"


def test_builds_per_platform_at_the_head_and_what_is_published(world):
    d = world.result.to_dict()
    main = _branch(d, "build-pytorch", "main")["builds"]
    assert (main["built"], main["failed"], main["running"]) == (2, 2, 2)
    assert main["not built"] == main["total"] - 6
    assert sum(p["total"] for p in main["platforms"]) == main["total"]
    assert sorted(main["failed_packages"]) == sorted(world.failed)
    assert _branch(d, "build-pytorch", "main")["published"] == {"packages": 1, "of": main["total"], "failed": []}
    multi = _branch(d, "build-pytorch", MULTI)["builds"]
    assert multi["built"] == 2  # three more were built at an older commit: not at the head


def test_drift_and_the_next_scheduled_runs(world):
    d = world.result.to_dict()
    assert _branch(d, "build-pytorch", "main")["drift"]["readme"]
    companion = _branch(d, "build-torchvision", "pytorch-2.9")["drift"]["companion"]
    assert companion and "pin" in companion[0]
    jobs = {j["id"]: j["next_run"] for j in _branch(d, "build-pytorch", "main")["jobs"]}
    assert jobs["bump"] == "2026-03-09T06:00:00+00:00"  # Monday 06:00 after the fixture's Monday noon
    assert "docs-check" in jobs and "dashboard-issue" in jobs
    vllm = {j["id"] for j in _branch(d, "build-pytorch", "pytorch-2.9-vllm-0.14.0")["jobs"]}
    assert not any(j.startswith("bump") for j in vllm)  # vLLM pins are bumped by hand
    tv = {j["id"] for j in _branch(d, "build-torchvision", "main")["jobs"]}
    assert "bump" in tv  # the weekly bump goes through every branch of both repositories


def test_needs_a_human_lists_held_failed_and_drift_with_their_actions(world):
    needs = world.result.to_dict()["needs_a_human"]
    assert needs[0]["kind"] == "held" and needs[0]["action"]["command"] == f"bump main {HEAD} --pytorch 2.9.1"
    failed = next(n for n in needs if n["kind"] == "failed")
    assert failed["action"]["command"].split()[:2] == ["build", "main"]
    assert {n["kind"] for n in needs} == {"held", "failed", "pr-failed", "readme-drift", "companion-drift"}


def test_the_plain_text_table_says_what_the_model_says(world):
    text = plain(world.result.model)
    assert text == world.result.text()
    lines = text.splitlines()
    for name in world.pt.branch_names + world.tv.branch_names:
        assert any(line.split()[:1] == [name] for line in lines), name
    main = next(line for line in lines if line.split()[:1] == ["main"])
    assert "held" in main and "2/10 built, 2 failed, 2 running" in main and "aa11aa1 (213d)" in main
    assert f"Needs a human ({len(world.result.model.needs)}):" in text
    assert "PR #1 (2/3 built, 1 failed)" in text


def test_rich_tables_colour_the_states(world):
    from rich.console import Console

    out = io.StringIO()
    rich_tables(world.result.model, Console(file=out, force_terminal=True, width=220, color_system="truecolor"))
    shown = out.getvalue()
    assert "\x1b[" in shown and "Needs a human" in shown
    for name in world.pt.branch_names:
        assert name in shown


@pytest.mark.parametrize("width", [80, 100, 130])
@pytest.mark.parametrize("source", ["fixtures", "real-width"])
def test_at_80_columns_each_branch_row_keeps_its_name_state_pin_and_counts_whole(world, source, width):
    """The compact layout: no cell cut (no "…"), every line within 80 columns, and each branch's row
    reads name, PyTorch, first pin (7 characters and its age), bump state, built/total, published/total."""
    from datetime import UTC, datetime

    from rich.console import Console

    from release.dashboard.model import build
    from tests.support.fixtures_dashboard import real_width_facts

    real = build(real_width_facts(), datetime(2026, 11, 28, tzinfo=UTC))
    model = world.result.model if source == "fixtures" else real
    out = io.StringIO()
    rich_tables(model, Console(file=out, width=width, color_system=None))
    lines = out.getvalue().splitlines()
    table = lines[:next(i for i, line in enumerate(lines) if line.startswith("Needs a human"))]
    assert all(len(line) <= width for line in lines) and not any("…" in line for line in table)
    starts = [next(i for i, line in enumerate(table) if line.startswith(f"{r.name}  (")) for r in model.repositories]
    for r, start, end in zip(model.repositories, starts, [*starts[1:], len(table)], strict=True):
        _compact_rows_say(table[start:end], r.branches)
    assert "PR #1" in out.getvalue() or source == "real-width"


def _compact_rows_say(table: list[str], branches) -> None:
    from release.dashboard.text import compact_bump_cell

    for b in branches:
        row = next(line.split() for line in table if line.split()[:1] == [b.name])
        c = b.builds
        assert row == [b.name, b.pytorch, b.pins[0].rev[:7], f"{b.pins[0].age_days}d", *compact_bump_cell(b).split(),
                       f"{c['built']}/{c['total']}", f"{b.published}/{b.variants}"], row


def test_a_wide_terminal_gets_every_column_whole(world):
    from rich.console import Console

    from release.dashboard.text import wide_width

    out = io.StringIO()
    rich_tables(world.result.model, Console(file=out, width=wide_width(world.result.model), color_system=None))
    text = out.getvalue()
    assert "next bump" in text and "behind" in text and "PR #1 (2/3 built, 1 failed)" in text
    table = text.split("Needs a human")[0]
    assert "…" not in table and all(len(line) <= wide_width(world.result.model) for line in text.splitlines())


def test_without_a_repository_it_says_what_it_needs_in_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
    env.update(XDG_DATA_HOME=str(tmp_path / "d"), XDG_STATE_HOME=str(tmp_path / "s"),
               XDG_CACHE_HOME=str(tmp_path / "c"), XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    r = subprocess.run([sys.executable, "-m", "bot", "dashboard", "--json"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, check=False)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "torchbot: No repository: pass --repo PATH or set TORCHBOT_REPO_PATH (build-pytorch, then "
        "build-torchvision)."]


def test_the_cli_prints_the_json_of_the_configured_repositories(world, tmp_path):
    s = world.ctx.settings
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
    env.update(TORCHBOT_REPO_PATH=f"{world.pt.path},{world.tv.path}", TORCHBOT_STATE_DB=s.state_db,
               TORCHBOT_CACHE_DIR=s.cache_dir, TORCHBOT_CHANNELS_URL=s.channels_url,
               TORCHBOT_GITHUB_API_URL=s.github_api_url, TORCHBOT_GITHUB_TOKEN="ghp-test",
               TORCHBOT_GITHUB_REPO=s.github_repo, XDG_STATE_HOME=str(tmp_path / "s"),
               XDG_DATA_HOME=str(tmp_path / "d"))
    r = subprocess.run([sys.executable, "-m", "bot", "dashboard", "--json"], cwd=ROOT, env=env,
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert _branch(d, "build-pytorch", "main")["bump"]["state"] == "held"
    assert len([b for rr in d["repositories"] for b in rr["branches"]]) == 8


def test_recorded_per_group_outcomes_of_a_bump_of_every_branch_are_shown(world):
    """The bump stage's outcome objects (one per pin group) kept in the release record give each group
    its own state, its target revision and PyTorch as typed fields (no sentence read back); a later
    bump of a branch replaces that branch's rows and leaves the other branches' alone."""
    from release.pins.sweep import PinOutcome
    from release.pins.weekly import record
    from release.state.record import rows

    def bump(*outcomes, delivered=()):
        return [SimpleNamespace(repo_path=world.tv.path, outcomes=list(outcomes))], list(delivered)

    def outcome(group, kind, reason="", **kw):
        return PinOutcome(repo="build-torchvision", branch="pytorch-2.10", group=group, kind=kind,
                          old_pin=kw.get("old"), new_pin=kw.get("new"), tracks="nixos-unstable", torch_old="2.10.0",
                          torch_new=kw.get("torch"), reason=reason, delivery=kw.get("delivery", ""),
                          reason_kind=kw.get("why", ""), target=kw.get("new"),
                          cuda=tuple(v.removeprefix("CUDA ") for v in group.split(", ") if v.startswith("CUDA ")))

    from release.state import state_for

    before = len(rows(state_for(world.ctx)))
    record(*bump(outcome("CUDA 13.1", "current")), world.ctx.settings)
    assert len(rows(state_for(world.ctx))) == before + 1
    pr = SimpleNamespace(repo=str(world.tv.path), branch="pytorch-2.10", head="bump/pytorch-2.10-222222222222",
                         url="https://github.test/acme/build-torchvision/pull/9", number=9, commit="2" * 40,
                         how="pull request opened")
    record(*bump(outcome("CUDA 13.1", "held", "the head has torch 2.11.0; the branch promises 2.10.0",
                         new=HEAD, torch="2.11.0", why="breaks-promise"),
                 outcome("CUDA 13.0, CPU", "kept-promise", "moved to the newest commit that keeps torch 2.10.0",
                         old=PIN_13_0, new="2" * 40, delivery="pull request opened", why="promise-kept"),
                 delivered=[pr]), world.ctx.settings)
    assert len(rows(state_for(world.ctx))) == before + 2  # the branch's rows replaced, the others kept
    d = dashboard(world.ctx, now=world.now).to_dict()
    bump_ = _branch(d, "build-torchvision", "pytorch-2.10")["bump"]
    assert [(g["group"], g["state"]) for g in bump_["groups"]] == [("CUDA 13.1", "held"), ("CUDA 13.0, CPU", "bumped")]
    assert bump_["state"] == "held" and bump_["groups"][0]["pytorch"] == "2.11.0" and bump_["groups"][0]["rev"] == HEAD
    assert bump_["groups"][0]["reason_kind"] == "breaks-promise"
    assert bump_["pull_request"]["url"].endswith("/pull/9")  # the PR the bump went out as (no GitHub list for it)
    assert bump_["pull_request"]["state"] == "open" and bump_["pull_request"]["sha"] == "2" * 40
    needs = [n for n in d["needs_a_human"] if n["branch"] == "pytorch-2.10" and n["kind"] == "held"]
    assert needs and needs[0]["action"]["command"] == f"bump pytorch-2.10 {HEAD} --pytorch 2.11.0 --cuda 13.1"
    assert needs[0]["action"]["key"].startswith("approve-bump:pytorch-2.10:CUDA-13.1:")


def test_a_pin_nixpkgs_does_not_know_leaves_only_its_own_facts_unknown(tmp_path):
    """One unknown commit (a force-pushed nixpkgs branch) is noted and not asked for again; the
    other pins still get their dates; nixpkgs down is not asked again on the next run."""
    from release.dashboard.collect import NixpkgsFacts
    from tests.support.fakes_nixpkgs import FakeNixpkgs
    from tests.support.fixtures_dashboard import DATES
    from tests.support.fixtures_dashboard import settings as world_settings

    with FakeNixpkgs() as nix:
        nix.add_commit(PIN_MAIN)
        nix.dates.update(DATES)
        s = world_settings(tmp_path, SimpleNamespace(path=tmp_path), SimpleNamespace(path=tmp_path), nix,
                           SimpleNamespace(url=nix.api_url))
        facts = NixpkgsFacts(s)
        assert facts.date("ab" * 20) is None and facts.date(PIN_MAIN) == DATES[PIN_MAIN]
        facts.close()
        asked = len(nix.requests)
        again = NixpkgsFacts(s)
        assert again.date("ab" * 20) is None and again.date(PIN_MAIN) == DATES[PIN_MAIN]
        assert len(nix.requests) == asked  # neither asked again: one kept, one a known miss
        nix.mode = "down"
        assert again.head("nixos-unstable") is None and "nixpkgs" in again.notes[-1]
        again.close()
        asked = len(nix.requests)
        third = NixpkgsFacts(s)
        assert third.head("nixos-unstable") is None and len(nix.requests) == asked  # not asked while it is down
