"""Longest first under the concurrency cap (issue 33 point 3): the matrix is dispatched in the
order of the variants' recorded build times, longest first, companions after their pytorch."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from release.builds import run as builds
from release.builds.github import batches
from release.builds.plan import BuildItem, longest_first
from release.state import Build, state_for, utcnow
from tests.support import fixtures_builds as fx
from tests.support.fakes_github import FakeGitHub


@given(st.dictionaries(st.sampled_from([f"pytorch-v{n}" for n in range(12)]), st.floats(0, 1e5), min_size=1),
       st.sets(st.sampled_from([f"pytorch-v{n}" for n in range(12)])))
def test_known_durations_come_longest_first_and_unknown_ones_count_as_the_longest(seconds, extra) -> None:
    items = [BuildItem(p, "b") for p in sorted(set(seconds) | extra)]
    ordered, said = longest_first(items, seconds)
    assert sorted(i.package for i in ordered) == sorted(i.package for i in items)
    times = [seconds.get(i.package, max(seconds.values())) for i in ordered]
    assert times == sorted(times, reverse=True)
    assert said == f"longest first from the recorded build times of {len(seconds)} of {len(items)} variant(s)"


def test_no_history_keeps_the_plan_as_it_was() -> None:
    items = [BuildItem("pytorch-b", "x"), BuildItem("pytorch-a", "y")]
    assert longest_first(items, {}) == (items, None)


def test_companions_stay_after_every_pytorch_variant() -> None:
    items = [BuildItem("pytorch-a", "1"), BuildItem("torchvision-a", "2", after="pytorch-a"),
             BuildItem("pytorch-b", "3")]
    ordered, _ = longest_first(items, {"torchvision-a": 99.0, "pytorch-a": 1.0, "pytorch-b": 5.0})
    assert [i.package for i in ordered] == ["pytorch-b", "pytorch-a", "torchvision-a"]


def test_the_dispatched_matrix_is_longest_first_from_the_recorded_builds(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path)
    ctx = fx.context(tmp_path)
    hours = {fx.OK[0]: 1, fx.OK[1]: 3, fx.FAILING: 2}
    now = utcnow()
    with state_for(ctx).session() as s:  # an earlier release's builds, with their times
        s.add_all(Build(package=p, branch="pytorch-2.7-python313", state="succeeded", backend="github",
                        started=now - timedelta(hours=h), finished=now) for p, h in hours.items())
    with FakeGitHub() as gh:
        ctx = fx.context(tmp_path, github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        assert [i.package for i in plan.items] == [fx.OK[1], fx.FAILING, fx.OK[0], fx.COMPANION]
        assert "Order: longest first from the recorded build times of 3 of 4 variant(s)." in plan.text()
        (torch, comps), = batches(plan.items)
        assert [e["package"] for e in torch] == [fx.OK[1], fx.FAILING, fx.OK[0]]
        assert [e["package"] for e in comps] == [fx.COMPANION]
