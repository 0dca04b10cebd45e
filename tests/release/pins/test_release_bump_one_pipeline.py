"""One bump pipeline: a bump of named branches (a single branch, --with-companions, a PyTorch
move) is planned, then delivered by ``release.pins.deliver.deliver`` in its mode, pushed or
committed locally as the weekly bump is. Every bumped pin group gets exactly one typed row
write in the release record, whichever repository and front end it came from; a branch that
moved since the plan leaves every branch (and the record) as it was. On the build-pytorch and
build-torchvision shapes of tests/support/fixtures_realshapes.py with local bare origins and
nixpkgs from a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest
from sqlalchemy import event

from bot.frontends.cli.main import main as cli
from config.settings import Settings
from release.state import open_state
from release.state.record import rows
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import git, refs
from tests.support.fixtures_realshapes import PIN_12_X, PIN_13_0, PIN_13_1, PIN_MAIN, make_repos

NEW = "7777000077770000777700007777000077770000"
ALL = {"cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13", "cudaPackages_13_0", "cudaPackages_13_1"}
PT, TV = "pytorch-2.10-python313", "pytorch-2.10"
OTHER = "pytorch-2.9-python311"  # shares PT's CUDA 12.9 pin (PIN_12_X)


@pytest.fixture
def repos(tmp_path, monkeypatch):
    pt, tv = make_repos(tmp_path)
    with FakeNixpkgs() as fake:
        fake.add_rev(PIN_MAIN, "2.8.0", ALL)
        for pin in (PIN_12_X, PIN_13_0, PIN_13_1, NEW):
            fake.add_rev(pin, "2.9.1", ALL)
        for k, v in {
            "TORCHBOT_REPO_PATH": f"{pt.path},{tv.path}",
            "TORCHBOT_CHANNELS_URL": fake.channels_url,
            "TORCHBOT_GITHUB_API_URL": fake.api_url,
            "TORCHBOT_NIXPKGS_TARBALL_URL": fake.tarball_url,
            "TORCHBOT_HTTP_RETRIES": "1",
            "TORCHBOT_STATE_DB": f"sqlite:///{tmp_path / 'state.db'}",
        }.items():
            monkeypatch.setenv(k, v)
        yield pt, tv


@contextmanager
def record_writes():
    """The release record's row writes (INSERT/UPDATE of release_record), as the database saw them."""
    seen: list[str] = []
    engine = open_state(Settings().state_db).engine

    def listen(conn, cursor, statement, params, context, many):
        text = " ".join(statement.split()).upper()
        if text.startswith(("INSERT INTO RELEASE_RECORD", "UPDATE RELEASE_RECORD")):
            seen.extend([text] * (len(params) if many else 1))

    event.listen(engine, "before_cursor_execute", listen)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", listen)


def bump(capsys, *args) -> tuple[int, dict]:
    rc = cli(["release", "bump-pins", "--json", *args])
    return rc, json.loads(capsys.readouterr().out)


def test_a_pushed_bump_of_one_branch_is_delivered_and_recorded_once(repos, capsys):
    pt, _ = repos
    with record_writes() as writes:
        rc, out = bump(capsys, "--branch", PT, "--cuda", "13.1", "--rev", NEW, "--push")
    assert rc == 0, out
    sha = out["commits"][PT]
    assert git(pt.origin, "rev-parse", PT).strip() == sha  # on the remote
    assert git(pt.path, "rev-parse", PT).strip() == sha  # the local branch followed
    assert git(pt.path, "rev-parse", f"origin/{PT}").strip() == sha
    (row,) = [r for r in rows(open_state(Settings().state_db), pt.path) if r.branch == PT]
    assert (row.bump_kind, row.target, row.delivery, row.commit) == ("bumped", NEW, "push", sha)
    assert len(writes) == 1, writes  # one typed row write for the one bumped group


def test_a_companion_bump_records_each_repositorys_groups_once(repos, capsys):
    pt, tv = repos
    with record_writes() as writes:
        rc, out = bump(capsys, "--branch", PT, "--cuda", "13.1", "--rev", NEW, "--with-companions")
    assert rc == 0, out
    st = open_state(Settings().state_db)
    (mine,) = [r for r in rows(st, pt.path) if r.branch == PT]
    (theirs,) = [r for r in rows(st, tv.path) if r.branch == TV]
    assert (mine.delivery, mine.target, mine.commit) == ("local", NEW, out["commits"][PT])
    assert (theirs.delivery, theirs.target, theirs.commit) == ("local", NEW, out["companions"][0]["commits"][TV])
    assert len(writes) == 2, writes  # one per bumped group, build-pytorch's and build-torchvision's


def test_a_branch_that_moved_since_the_plan_leaves_every_branch_and_the_record_as_they_were(repos):
    from release.context import Context
    from release.pins.commands import plan_bump

    pt, _ = repos
    ctx = Context(Settings(), use_repo=False)
    plan = plan_bump(ctx, [PT, OTHER], NEW, from_pin=PIN_12_X, push=True, repo=str(pt.path))
    assert {bp.branch for bp in plan.data.to_commit} == {PT, OTHER}
    old = git(pt.path, "rev-parse", f"origin/{OTHER}").strip()
    moved = git(pt.path, "commit-tree", f"{old}^{{tree}}", "-p", old, "-m", "a teammate's commit").strip()
    git(pt.path, "update-ref", f"refs/heads/{OTHER}", moved)
    before, remote_before = refs(pt.path), refs(pt.origin)
    from config.errors import ExternalError

    with record_writes() as writes, pytest.raises(ExternalError) as err:
        plan.apply()
    assert f"Branch '{OTHER}' moved since the plan was made; nothing was changed" in err.value.message
    assert refs(pt.path) == before and refs(pt.origin) == remote_before  # neither branch moved, nothing pushed
    assert writes == []
