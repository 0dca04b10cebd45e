"""The `torchbot` console script: ask/catalog output, JSON, stdin and exit codes."""

import json
import os
import subprocess
import sys
from pathlib import Path

from bot.frontends.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def run(*args, stdin=None, env=None):
    e = dict(os.environ, **(env or {}))
    e.pop("TORCHBOT_REPO_PATH", None)
    return subprocess.run(
        [sys.executable, "-m", "bot", *args], check=False, input=stdin, capture_output=True, text=True, cwd=ROOT, env=e,
        timeout=60,
    )


def test_ask_json_is_one_object(capsys, monkeypatch):
    monkeypatch.delenv("TORCHBOT_REPO_PATH", raising=False)
    assert main(["ask", "--json", "H100", "with", "Graviton3"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["query"] == "H100 with Graviton3"
    assert d["recommendation"]["package"] == "pytorch-python313-cuda12_9-sm90-armv8_2"


def test_ask_reads_pasted_output_from_stdin():
    r = run("ask", "--json", "-", stdin="| 0 NVIDIA A100-SXM4-80GB On |\nModel name: AMD EPYC 7763 64-Core Processor\n")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["recommendation"]["package"] == "pytorch-python313-cuda12_9-sm80-avx2"


def test_no_recommendation_is_still_exit_0():
    r = run("ask", "Tesla K80")
    assert r.returncode == 0 and "No variant" in r.stdout and "K80" in r.stdout


def test_usage_errors_exit_2_without_traceback():
    r = run("ask")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = run("frobnicate")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_a_reader_that_leaves_early_is_not_an_error():
    """`torchbot catalog | head -1`: the pipe closes before the output is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {k: v for k, v in os.environ.items() if k != "TORCHBOT_REPO_PATH"}
    try:
        r = subprocess.run(
            [sys.executable, "-m", "bot", "catalog"],
            check=False,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert r.returncode == 141 and r.stderr == ""


def test_flox_org_from_settings():
    r = run("ask", "--json", "DGX Spark", env={"TORCHBOT_FLOX_ORG": "ml-infra"})
    rec = json.loads(r.stdout)["recommendation"]
    assert rec["install_command"] == "flox install ml-infra/pytorch-python313-cuda13_1-sm121-armv9"


def test_catalog_lists_branches_pins_and_counts(capsys, monkeypatch):
    monkeypatch.delenv("TORCHBOT_REPO_PATH", raising=False)
    assert main(["catalog", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    counts = {b["branch"]: b["variants"] for b in d["branches"]}
    assert counts["main"] == 62 and counts["pytorch-2.9-vllm-0.14.0"] == 131
    assert d["recommended"] == "pytorch-2.9-python313"
    assert main(["catalog"]) == 0
    out = capsys.readouterr().out
    assert "pytorch-2.9-python313 *" in out and "fe5e41d" in out


def test_catalog_and_ask_answer_from_a_repository(tmp_path, capsys, monkeypatch):
    from config.catalog_data import load_catalog
    from release.adapters.git import commit_changes
    from release.recipes.init import init_repository

    repo = tmp_path / "bp"
    init_repository(repo, load_catalog(), ["main", "pytorch-2.10-python313"], "t", "t@example.com")
    commit_changes(repo, "main", {".flox/pkgs/pytorch-python313-cuda12_8-sm90-bogus.nix": "{ this is not a recipe"},
                   "add a broken recipe", "t", "t@example.com")
    monkeypatch.delenv("TORCHBOT_REPO_PATH", raising=False)
    assert main(["catalog", "--json", "--repo", str(repo)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {b["branch"] for b in d["branches"]} == {"main", "pytorch-2.10-python313"}
    assert d["source"] == f"repository {repo}"
    assert any("sm90-bogus" in p for p in d["problems"])

    monkeypatch.setenv("TORCHBOT_REPO_PATH", str(repo))
    assert main(["ask", "--json", "H100"]) == 0
    rec = json.loads(capsys.readouterr().out)["recommendation"]
    assert rec["branch"] in {"main", "pytorch-2.10-python313"}  # only the repository's branches


def test_catalog_of_a_missing_repository_is_a_sentence():
    r = run("catalog", "--repo", "/nonexistent/bp")
    assert r.returncode == 1 and "does not exist" in r.stderr and "Traceback" not in r.stderr
