"""`/pins` with both repositories: a repository column (so `main` twice is two rows that say
whose), the next scheduled bump as a time from the bump trigger (not the cron string), vLLM
branches bumped by hand, and build-torchvision rows scheduled by the weekly bump of every branch."""

from __future__ import annotations

import re

from bot.frontends.chat import Chat
from config.settings import Settings
from release.context import Context
from tests.support.fixtures_realshapes import make_repos


def test_pins_says_whose_branch_and_when_the_schedule_bumps_it(tmp_path):
    pt, tv = make_repos(tmp_path)
    s = Settings(repo_path=pt.path, repo_paths=[pt.path, tv.path], state_db=f"sqlite:///{tmp_path / 's.sqlite'}",
                 bump_cron="0 6 * * 1", _env_file=None)
    result = Chat(Context(s)).command("pins", "")
    lines = result.text().splitlines()
    assert lines[0].split()[:2] == ["repository", "branch"]
    assert "cron" not in result.text()
    mains = [line.split() for line in lines if line.split()[1:2] == ["main"]]
    assert sorted(m[0] for m in mains) == ["pytorch", "torchvision"]
    rows = {(line.split()[0], line.split()[1]): line for line in lines[1:]}
    when = re.search(r"(\d{4}-\d\d-\d\d 06:00 UTC)", rows[("pytorch", "main")])
    assert when, rows[("pytorch", "main")]
    assert "manual (vLLM pin)" in rows[("pytorch", "pytorch-2.9-vllm-0.14.0")]
    for name in tv.branch_names:  # the weekly bump goes through every branch of both repositories
        assert when.group(1) in rows[("torchvision", name)]
    d = result.to_dict()
    assert d["next_scheduled_bump"] == when.group(1)
    assert {b["next_bump"] for b in d["branches"] if b["kind"] == "build-torchvision"} == {when.group(1)}
