"""Names and values checked before they act (issue 26, point 5): git's ref-name rules in code
(the same verdicts as `git check-ref-format --branch`), the repository's naming pattern, no
`refs/` path; hostile names create no ref and record nothing; a blank option value is refused
with one line and changes nothing; bytes that are not text get no recommendation."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.frontends.cli.main import main as cli
from release.branches.naming import naming_problem, ref_name_problem
from tests.support.fixtures_pins import NEW, build_repo, refs, small_catalog_branches

ROOT = Path(__file__).resolve().parents[3]
EXISTING = ["main", "main-staging", "pytorch-2.8-python312", "pytorch-2.9-vllm-0.15.1", "pytorch-2.10-python313"]
NAMES = ["pytorch-2.9-python312", "x..y", "-x", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[b", "a\\b", "a.lock",
         "a/.b", "a//b", "a/", "a.", "@", "a@{1}", "HEAD", "main;id", "refs/heads/x", "a\tb", "ok/name", ".a",
         "x/y.lock/z", "pytorch-2.9-vllm-0.15.1"]


@pytest.mark.parametrize("name", NAMES)
def test_the_pure_rules_give_gits_verdict(tmp_path, name):
    git_ok = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True, check=False,
                            cwd=tmp_path).returncode == 0
    ours_ok = ref_name_problem(name) is None
    if name in ("HEAD", "@"):  # git takes them (as HEAD); torchbot never makes such a branch
        assert not ours_ok
    else:
        assert ours_ok == git_ok, (name, ref_name_problem(name))


@pytest.mark.parametrize(("name", "why"), [
    ("main;id", "naming pattern"), ("a..b", "contains"), ("refs/heads/x", "not a ref path"), ("pytorch-2.9", None),
    ("pytorch-2.9-python312", None), ("pytorch-2.9-vllm-0.15.1", None), ("Pytorch-2.9-x", "naming pattern"),
    ("torch-2.9-python312", "naming pattern"), ("pytorch-2.9-python312;rm", "naming pattern"),
    ("pytorch-2.9-$(id)", "naming pattern"),
])
def test_the_repository_naming_pattern(name, why):
    problem = naming_problem(name, EXISTING)
    assert (problem is None) if why is None else (why in (problem or "")), problem


def test_torchvision_branches_follow_their_repository_s_family():
    assert naming_problem("torchvision-0.24-python312", ["main", "torchvision-0.23"]) is None
    assert "torchvision-X.Y" in naming_problem("pytorch-2.9-x", ["main", "torchvision-0.23"])


@pytest.fixture
def repo(tmp_path, monkeypatch):
    work, origin = build_repo(tmp_path / "repo", small_catalog_branches())
    monkeypatch.setenv("TORCHBOT_REPO_PATH", str(work))
    monkeypatch.setenv("TORCHBOT_LOCAL_BRANCHES", str(tmp_path / "branches.toml"))
    monkeypatch.setenv("TORCHBOT_CHANNELS_URL", "http://127.0.0.1:9/")  # nothing may reach the network
    monkeypatch.setenv("TORCHBOT_GITHUB_API_URL", "http://127.0.0.1:9/")
    return work, origin, tmp_path / "branches.toml"


@pytest.mark.parametrize("name", ["main;id", "refs/heads/x", "a..b", "-x", "pytorch-2.9-x y"])
def test_a_hostile_branch_name_creates_no_ref_and_records_nothing(repo, capsys, name):
    work, origin, records = repo
    before, before_origin = refs(work), refs(origin)
    try:
        rc = cli(["release", "branch", "create", name, "--pytorch", "2.9.1", "--python", "3.12", "--cuda", "12.9",
                  "--pin", NEW, "--from", "main", "--push"])
    except SystemExit as stop:  # argparse takes '-x' for an option: a usage error, exit 2
        rc = stop.code
    err = capsys.readouterr().err
    assert rc == 2 and any(x.startswith("torchbot: ") for x in err.splitlines()) and "Traceback" not in err, err
    assert refs(work) == before and refs(origin) == before_origin and not records.exists()


@pytest.mark.parametrize("option", [["--channel", ""], ["--cuda", ""], ["--channel", "  "], ["--rev="],
                                    ["--from-pin", "\t"]])
def test_a_blank_option_value_is_refused_with_one_line_and_changes_nothing(repo, capsys, option):
    work, origin, _ = repo
    before, before_origin = refs(work), refs(origin)
    with pytest.raises(SystemExit) as stop:
        cli(["release", "bump-pins", "--branch", "main", *option])
    err = capsys.readouterr().err
    said = [x for x in err.splitlines() if x.startswith("torchbot: ")]  # bump-pins usage, then one line
    assert stop.value.code == 2 and len(said) == 1
    assert "an empty value" in said[0] and option[0].split("=")[0] in said[0]
    assert refs(work) == before and refs(origin) == before_origin


def test_bytes_that_are_not_text_get_no_recommendation(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
    noise = os.urandom(1 << 20)
    r = subprocess.run([sys.executable, "-m", "bot", "ask", "-"], input=noise, capture_output=True, cwd=tmp_path,
                       env={**env, "PYTHONPATH": str(ROOT)}, timeout=120, check=False)
    assert r.returncode != 0 and b"not text I can read" in r.stderr and b"Use " not in r.stdout
    assert len(r.stderr.decode().strip().splitlines()) == 1
    ok = subprocess.run([sys.executable, "-m", "bot", "ask", "-"], input=b"NVIDIA H100 80GB HBM3\n",
                        capture_output=True, cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)}, timeout=120,
                        check=False)
    assert ok.returncode == 0 and ok.stdout.startswith(b"Use ")
