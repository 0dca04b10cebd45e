"""The timetable (``release.timetable``) is the one list of jobs: every job has a body
(``release.schedule.bodies``) and a preview, and ``torchbot schedule run JOB --dry-run`` says what
each would do without running it (no ``None`` in a suggested command, no internal error)."""

from __future__ import annotations

import pytest

from bot.frontends.cli.main import main as cli
from release.schedule.bodies import JOB_KINDS
from release.timetable import PREVIEWS, job_specs
from tests.support import fixtures_builds as fx


def test_every_job_of_the_timetable_has_a_body_and_a_preview(tmp_path):
    kinds = {s.kind for s in job_specs(fx.context(tmp_path))}
    assert kinds == set(JOB_KINDS) == set(PREVIEWS)


@pytest.mark.parametrize("job", ["bump", "docs-check", "dashboard-issue", "poll-builds", "publish",
                                 "flush-announcements"])
def test_schedule_run_dry_run_of_every_job_previews_it(job, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TORCHBOT_STATE_DB", f"sqlite:///{tmp_path}/s.db")
    monkeypatch.setenv("TORCHBOT_CACHE_DIR", str(tmp_path / "cache"))
    assert cli(["schedule", "run", job, "--dry-run"]) == 0
    out = capsys.readouterr()
    assert f"{job}: would " in out.out and "nothing was run" in out.out and "preview: " in out.out
    assert "None" not in out.out and "internal error" not in out.err
