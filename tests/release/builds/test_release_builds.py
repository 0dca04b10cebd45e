"""Local builds: a real nix-build of trivial derivations in a worktree of a real branch."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from release.builds import run as builds
from release.state import Build, BuildRun, open_state
from tests.support import fixtures_builds as fx
from tests.support.waiting import wait_for


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return fx.make_repo(tmp_path)


def test_build_all_with_two_jobs(tmp_path: Path, repo: Path) -> None:
    ctx = fx.context(tmp_path)
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo)
    assert [i.package for i in plan.items][-1] == fx.COMPANION  # companions come last
    assert {i.pin for i in plan.items} == {fx.PIN}
    rows = {r["package"]: r for r in builds.run_local(ctx, plan, jobs=2)}

    assert set(rows) == set(fx.ALL)
    assert rows[fx.FAILING]["state"] == "failed"
    for pkg in [*fx.OK, fx.COMPANION]:
        assert rows[pkg]["state"] == "succeeded", rows[pkg]
        log = Path(rows[pkg]["log"]).read_text()
        assert "torchbot: ok /nix/store/" in log
    assert "exited with status" in Path(rows[fx.FAILING]["log"]).read_text()
    # the companion started only after its pytorch finished
    torch = rows["pytorch-python313-cuda12_8-sm90-avx512"]
    assert datetime.fromisoformat(rows[fx.COMPANION]["started"][:-1]) >= datetime.fromisoformat(torch["finished"][:-1])
    # worktree removed, repo clean
    assert "torchbot-wt-" not in builds.git(repo, "worktree", "list")
    # state DB has exactly one build per variant (the companion did not rebuild pytorch)
    st = open_state(ctx.settings.state_db)
    assert len(st.builds(fx.BRANCH, latest_only=False)) == len(fx.ALL)


def test_changed_only_after_noop_bump_builds_nothing(tmp_path: Path, repo: Path) -> None:
    ctx = fx.context(tmp_path)
    builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, [fx.OK[0], "torch*"], repo=repo), jobs=2)
    fx.noop_bump(repo)
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo, changed_only=True)
    # only the never-succeeded variant (the failing one) remains; the rest is unchanged
    # the companion is rebuilt because the pytorch it imports is being built
    assert [i.package for i in plan.items] == [fx.FAILING, "pytorch-python313-cuda12_8-sm90-avx512", fx.COMPANION]
    ok_plan = builds.prepare(ctx, fx.BRANCH, [fx.OK[0]], repo=repo, changed_only=True)
    assert ok_plan.items == [] and ok_plan.unchanged == [fx.OK[0]]


def test_companion_waits_and_is_failed_when_pytorch_fails(tmp_path: Path) -> None:
    # a repo whose companion imports a failing pytorch recipe
    work = fx.make_repo(tmp_path, packages=[fx.COMPANION])
    (work / "x").write_text("")
    fx.sh(work, "git", "checkout", "--quiet", fx.BRANCH)
    fx.write_recipes(work, fx.PIN, "n", packages=[fx.COMPANION])
    p = work / ".flox/pkgs/pytorch-python313-cuda12_8-sm90-avx512.nix"
    p.write_text(p.parent.joinpath(f"{fx.COMPANION}.nix").read_text().replace("echo ${torch} > $out", "exit 3")
                 .replace("  torch = import ./pytorch-python313-cuda12_8-sm90-avx512.nix {};\n", ""))
    fx.sh(work, "git", "add", ".flox")
    fx.sh(work, "git", "commit", "--quiet", "-m", "failing torch")
    fx.sh(work, "git", "push", "--quiet", "origin", fx.BRANCH)
    fx.sh(work, "git", "checkout", "--quiet", "main")
    ctx = fx.context(tmp_path)
    plan = builds.prepare(ctx, fx.BRANCH, repo=work)
    rows = {r["package"]: r for r in builds.run_local(ctx, plan, jobs=2)}
    assert rows["pytorch-python313-cuda12_8-sm90-avx512"]["state"] == "failed"
    assert rows[fx.COMPANION]["state"] == "failed"
    assert "its pytorch variant" in rows[fx.COMPANION]["message"]


def test_interrupted_builds_marked_and_resumed(tmp_path: Path, repo: Path) -> None:
    ctx = fx.context(tmp_path, build_command="true", build_result_link="README.md")
    st = open_state(ctx.settings.state_db)
    with st.session() as s:  # a build left running by a process that is gone
        s.add(Build(package=fx.OK[0], branch=fx.BRANCH, state="running", owner=f"{os.uname().nodename}:999999"))
    rows = builds.status(ctx, fx.BRANCH)
    assert rows[0]["state"] == "interrupted"
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo, resume=True)
    assert [i.package for i in plan.items] == [fx.OK[0]]
    assert builds.run_local(ctx, plan)[0]["state"] == "succeeded"


def test_timeout_marks_failed(tmp_path: Path, repo: Path) -> None:
    ctx = fx.context(tmp_path, build_command="sleep 30", build_timeout=0.5)
    rows = builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, [fx.OK[0]], repo=repo))
    assert rows[0]["state"] == "failed" and "timed out" in rows[0]["message"]


def test_cli_build_and_status_json(tmp_path: Path, repo: Path, monkeypatch, capsys) -> None:
    from bot.frontends.cli import main as cli
    monkeypatch.setenv("TORCHBOT_STATE_DB", f"sqlite:///{tmp_path / 'cli.sqlite'}")
    monkeypatch.setenv("TORCHBOT_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("TORCHBOT_BUILD_COMMAND", "true")
    monkeypatch.setenv("TORCHBOT_BUILD_RESULT_LINK", "README.md")
    code = cli.main(["release", "build", "--repo", str(repo), "--branch", fx.BRANCH, "--variant", "pytorch-*cpu*",
                     "--jobs", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["builds"][0]["state"] == "succeeded"
    assert cli.main(["release", "status", "--branch", fx.BRANCH, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert {"package", "branch", "state", "started", "finished", "log"} <= set(status[0])
    assert cli.main(["release", "build", "--repo", str(repo), "--branch", "nope"]) == 2
    assert "does not exist" in capsys.readouterr().err


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_killed_torchbot_takes_its_builds_with_it_and_a_restart_resolves_and_resumes(tmp_path: Path,
                                                                                     repo: Path) -> None:
    import signal
    import subprocess
    import sys

    gate = tmp_path / "gate"
    gate.mkdir()
    # each build records its shell and a grandchild, then runs for long
    command = f"echo $$ > {gate}/{{package}}.pid; sleep 300 & echo $! > {gate}/{{package}}.child; wait"
    env = dict(os.environ, TORCHBOT_STATE_DB=f"sqlite:///{tmp_path / 'kill.sqlite'}",
               TORCHBOT_LOG_DIR=str(tmp_path / "logs"), TORCHBOT_BUILD_COMMAND=command,
               TORCHBOT_BUILD_RESULT_LINK="README.md")
    proc = subprocess.Popen([sys.executable, "-m", "bot", "release", "build", "--repo", str(repo),
                             "--branch", fx.BRANCH, "--variant", "pytorch-*", "--jobs", "2"],
                            env=env, cwd=Path(__file__).resolve().parents[3],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ctx = fx.context(tmp_path, state_db=env["TORCHBOT_STATE_DB"], build_command="true",
                     build_result_link="README.md")
    def written() -> list[int] | None:  # each file is created, then written: wait for all four numbers
        pids = [f.read_text().strip() for f in gate.glob("*.*")]
        return [int(p) for p in pids] if len(pids) == 4 and all(pids) else None

    try:
        pids = wait_for(written, "two builds running")
        assert len(pids) == 4 and all(_alive(p) for p in pids)
        assert "torchbot-wt-" in builds.git(repo, "worktree", "list")
        # while it runs, nothing of it can be built a second time
        busy = builds.prepare(ctx, fx.BRANCH, ["pytorch-*"], repo=repo)
        assert busy.items == [] and len(busy.skipped) == 3
        assert all(s.reason.startswith("already building since") for s in busy.skipped)
    finally:  # the SIGKILL under test; on a failure above too, so nothing of it outlives the test
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    wait_for(lambda: not any(_alive(p) for p in pids), "the builds to die with torchbot")

    rows = {r["package"]: r for r in builds.status(ctx, fx.BRANCH)}  # the next start resolves the run
    assert sorted(r["state"] for r in rows.values()) == ["interrupted"] * 3, rows
    assert all("resume with --resume" in r["message"] for r in rows.values())
    assert "torchbot-wt-" not in builds.git(repo, "worktree", "list")
    admin = repo / ".git" / "worktrees"
    assert not admin.exists() or not any(admin.iterdir())  # pruned
    with open_state(ctx.settings.state_db).session() as s:
        (run,) = s.query(BuildRun).all()
        assert run.state == "interrupted" and not Path(run.worktree).exists()
        assert run.outcome.startswith(f"interrupted: torchbot stopped during this build of {fx.BRANCH}; 3 build(s)")
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo, resume=True)
    assert sorted(i.package for i in plan.items) == sorted(p for p in fx.ALL if p.startswith("pytorch-"))
    assert {r["state"] for r in builds.run_local(ctx, plan, jobs=2)} == {"succeeded"}
    st = open_state(ctx.settings.state_db)
    # one interrupted and one succeeded build per variant, never two at once
    per_variant = {}
    for b in st.builds(fx.BRANCH, latest_only=False):
        per_variant.setdefault(b.package, []).append(b.state)
    assert per_variant == {i.package: ["interrupted", "succeeded"] for i in plan.items}


def test_result_check_and_a_variant_another_torchbot_is_building(tmp_path: Path, repo: Path) -> None:
    from release.state import BuildLock, BuildRun

    ctx = fx.context(tmp_path, build_command="true", build_result_link="README.md",
                     build_check_command="test -s README.md && test {package} != " + fx.OK[0])
    rows = {r["package"]: r for r in builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, fx.OK, repo=repo))}
    assert rows[fx.OK[0]]["state"] == "failed" and rows[fx.OK[0]]["message"].startswith("the result check failed")
    assert rows[fx.OK[1]]["state"] == "succeeded"
    st = open_state(ctx.settings.state_db)
    owner = f"{os.uname().nodename}:{os.getppid()}"  # a live torchbot (this process's parent) builds OK[0]
    with st.session() as s:
        s.add(BuildRun(run_key="other", branch=fx.BRANCH, owner=owner))
        s.add(Build(id=900, package=fx.OK[0], branch=fx.BRANCH, state="running", owner=owner, run_key="other"))
        s.add(BuildLock(branch=fx.BRANCH, package=fx.OK[0], build_id=900, run_key="other", owner=owner,
                        since=datetime(2030, 1, 2, 17, 59)))
    plan = builds.prepare(ctx, fx.BRANCH, fx.OK, repo=repo)
    assert [i.package for i in plan.items] == [fx.OK[1]]
    assert f"skipped {fx.OK[0]}: already building since 2030-01-02 17:59 UTC (build 900, torchbot {owner})" \
        in plan.text()
    # a lock taken between the plan and the run is honoured too
    rows = builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, [fx.OK[1]], repo=repo))
    assert [r["state"] for r in rows] == ["succeeded"]
    with st.session() as s:
        s.add(BuildLock(branch=fx.BRANCH, package=fx.OK[1], build_id=901, run_key="other", owner=owner))
    late = builds.run_local(ctx, plan)
    assert [(r["package"], r["state"]) for r in late] == [(fx.OK[1], "skipped")]
    assert late[0]["message"].startswith("already building since")


def test_local_builds_only_what_this_host_builds_and_lists_the_rest(tmp_path: Path, capsys) -> None:
    from release.builds.commands import plan_build

    repo = fx.make_repo(tmp_path, packages=[*fx.OK, fx.ARM, fx.DARWIN])
    ctx = fx.context(tmp_path, build_platforms=["x86_64-linux"])
    plan = plan_build(ctx, fx.BRANCH, repo=repo)
    d = plan.to_dict()
    assert sorted(b["package"] for b in d["build"]) == sorted(fx.OK)
    assert {b["platform"] for b in d["build"]} == {"x86_64-linux"}
    assert d["skipped"] == [
        {
            "package": fx.ARM,
            "platform": "aarch64-linux",
            "reason": "aarch64-linux recipe; this host builds x86_64-linux",
        },
        {
            "package": fx.DARWIN,
            "platform": "aarch64-darwin",
            "reason": "aarch64-darwin recipe; this host builds x86_64-linux",
        },
    ]
    result = plan.apply()
    states = {r["package"]: r["state"] for r in result.to_dict()["builds"]}
    assert states == {**dict.fromkeys(fx.OK, "succeeded"), fx.ARM: "skipped", fx.DARWIN: "skipped"}
    assert result.exit_code == 0 and "skipped     pytorch-python313-darwin-mps  aarch64-darwin recipe" in result.text()
    # the state DB records only what was built
    assert sorted(r["package"] for r in builds.status(ctx, fx.BRANCH)) == sorted(fx.OK)


def test_an_arm_host_builds_the_arm_variant(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=[*fx.OK, fx.ARM])
    ctx = fx.context(tmp_path, build_platforms="aarch64-linux", build_command="true", build_result_link="README.md")
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo)
    assert [i.package for i in plan.items] == [fx.ARM] and {s.package for s in plan.skipped} == set(fx.OK)
    assert builds.host_platform() in ("x86_64-linux", "aarch64-linux", "aarch64-darwin", "x86_64-darwin")


def test_every_variant_skipped_is_not_nothing_to_build(tmp_path: Path) -> None:
    from release.builds.commands import plan_build

    repo = fx.make_repo(tmp_path, packages=[fx.DARWIN])
    result = plan_build(fx.context(tmp_path, build_platforms=["x86_64-linux"]), fx.BRANCH, repo=repo).apply()
    assert [(r["package"], r["state"]) for r in result.rows] == [(fx.DARWIN, "skipped")]
    assert "Nothing to build" not in result.text()
