"""Issue 34 point 4: a local build run whose first variants fail on the same download stops
starting builds, and says so: the rest are recorded ``interrupted`` (``--resume`` takes them once
the download works) with the reason, instead of failing one by one for minutes."""

from __future__ import annotations

from pathlib import Path

from release.builds import run as builds
from tests.support import fixtures_builds as fx

VARIANTS = [f"pytorch-python313-cuda12_8-sm{n}-avx2" for n in range(70, 78)]
URL = "https://github.com/NixOS/nixpkgs/archive/0123.tar.gz"


def test_a_run_stops_once_its_first_variants_fail_on_the_same_download(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=VARIANTS)
    fail = f"sh -c \"echo \\\"error: unable to download '{URL}': Couldn't resolve host name (6)\\\" >&2; exit 1\""
    ctx = fx.context(tmp_path, build_command=fail)
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo)
    rows = {r["package"]: r for r in builds.build(ctx, plan, jobs=1)}
    failed = [p for p, r in rows.items() if r["state"] == "failed"]
    stopped = [p for p, r in rows.items() if r["state"] == "interrupted"]
    assert len(failed) == 2 and len(stopped) == len(VARIANTS) - 2, rows
    assert all(URL in rows[p]["message"] and "--resume" in rows[p]["message"] for p in stopped)
    # a run whose failures are on different downloads (or not downloads) goes on
    ctx2 = fx.context(tmp_path / "other", build_command="sh -c 'echo error: builder failed >&2; exit 1'")
    (tmp_path / "other").mkdir()
    rows2 = builds.build(ctx2, builds.prepare(ctx2, fx.BRANCH, repo=repo), jobs=1)
    assert {r["state"] for r in rows2} == {"failed"}
