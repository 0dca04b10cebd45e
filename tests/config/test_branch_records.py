"""Created branches are recorded with their repository (issue 18 items 4 and 5): `release branch
create` and a later `ask`, run from one directory, leave nothing in it; the record lives in the
platform's data directory, keyed by the repository's git directory, and the branch joins the
catalog only where that repository is read. A bad record is one line per mistake naming the file,
the repository, the branch and the key (checked with pydantic), never a KeyError."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support import forked_cli
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import NEW, build_repo, small_catalog_branches

ROOT = Path(__file__).resolve().parents[2]
CREATE = ["release", "branch", "create", "pytorch-2.9-python312", "--pytorch", "2.9.1", "--python", "3.12",
          "--cuda", "12.9,12.8", "--gpu", "sm61,sm75", "--pin", NEW, "--from", "main"]


@pytest.fixture
def world(tmp_path):
    """Two repositories of the same shape (the one a branch is made in, and another), an empty
    working directory, a home of its own, and nixpkgs on 127.0.0.1."""
    work, _ = build_repo(tmp_path / "one", small_catalog_branches())
    other, _ = build_repo(tmp_path / "two", small_catalog_branches())
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    with FakeNixpkgs() as fake:
        fake.add_rev(NEW, "2.9.1", {"cudaPackages_12_8", "cudaPackages_12_9"})
        home = tmp_path / "home"
        env = {k: v for k, v in os.environ.items() if not k.upper().startswith("TORCHBOT_")}
        env.update(PYTHONPATH=str(ROOT), XDG_DATA_HOME=str(home / "data"), XDG_STATE_HOME=str(home / "state"),
                   XDG_CACHE_HOME=str(home / "cache"), TORCHBOT_CHANNELS_URL=fake.channels_url,
                   TORCHBOT_GITHUB_API_URL=fake.api_url, TORCHBOT_HTTP_RETRIES="1")

        def torchbot(*args: str, repo: Path | None = None) -> subprocess.CompletedProcess:
            e = dict(env, **({"TORCHBOT_REPO_PATH": str(repo)} if repo else {}))
            return forked_cli.run(list(args), env=e, cwd=cwd)

        yield torchbot, work, other, cwd, home / "data" / "torchbot" / "branches.toml"


def branches(r: subprocess.CompletedProcess) -> set[str]:
    assert r.returncode == 0, r.stderr
    return {b["branch"] for b in json.loads(r.stdout)["branches"]}


def test_a_created_branch_shows_only_where_its_repository_is_read_and_leaves_no_file_here(world):
    torchbot, work, other, cwd, record = world
    r = torchbot(*CREATE, repo=work)
    assert r.returncode == 0, r.stderr
    assert f"Recorded in {record}" in r.stdout
    ask = torchbot("ask", "H100 with an EPYC 9654, python 3.12")
    assert ask.returncode == 0, ask.stderr
    assert list(cwd.iterdir()) == []  # nothing in the directory torchbot ran from

    key = str((work / ".git").resolve())
    assert list(tomllib.loads(record.read_text())["repository"]) == [key]
    assert "pytorch-2.9-python312" in branches(torchbot("catalog", "--json", repo=work))
    assert "pytorch-2.9-python312" not in branches(torchbot("catalog", "--json", repo=other))
    assert "pytorch-2.9-python312" not in branches(torchbot("catalog", "--json"))  # the embedded catalog
    assert "pytorch-2.9-python312" not in ask.stdout
    assert list(cwd.iterdir()) == []


def _record(path: Path, repo: Path, table: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[repository."{(repo / ".git").resolve()}".branch."pytorch-2.9-python312"]\n' + table)


GOOD = f'''pytorch = "2.9.1"
python = "3.12"
pin = "{NEW}"
cpu_isas = ["avx2"]
'''


@pytest.mark.parametrize("table, key, says", [
    (GOOD + '[[repository."{git}".branch."pytorch-2.9-python312".cuda]]\nversion = "12.8"\narchs = "sm90"\n',
     "cuda[0].archs", "Input should be a valid list"),
    (GOOD.replace(f'pin = "{NEW}"\n', ""), "pin", "Field required"),
    (GOOD.replace('"3.12"', "3.12"), "python", "Input should be a valid string"),
    (GOOD + 'colour = "blue"\n', "colour", "Extra inputs are not permitted"),
    (GOOD + '[[repository."{git}".branch."pytorch-2.9-python312".cuda]]\nversion = "12.8"\narchs = ["sm99"]\n',
     "cuda[0].archs[0]", "unknown GPU architecture 'sm99'"),
    (GOOD.replace('["avx2"]', '["avx2", "sse9"]'), "cpu_isas[1]", "unknown CPU ISA 'sse9'"),
])
def test_a_bad_record_is_one_line_naming_file_branch_and_key(world, table, key, says):
    torchbot, work, _, cwd, record = world
    git = (work / ".git").resolve()
    _record(record, work, table.replace("{git}", str(git)))
    r = torchbot("catalog", "--json", repo=work)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(
        f"torchbot: {record} (TORCHBOT_LOCAL_BRANCHES): repository {git}, branch 'pytorch-2.9-python312', {key}: {says}"
    ), r.stderr
    assert branches(torchbot("catalog", "--json")) and list(cwd.iterdir()) == []  # the embedded catalog still answers


def test_a_record_file_of_the_old_shape_or_not_toml_is_one_line(world):
    torchbot, work, _, _, record = world
    record.parent.mkdir(parents=True)
    record.write_text('[branch."pytorch-2.9-python312"]\n' + GOOD)
    r = torchbot("catalog", "--json", repo=work)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "without their repository" in r.stderr, r.stderr
    record.write_text("[repository\n")
    r = torchbot("catalog", "--json", repo=work)
    assert r.returncode == 2 and r.stderr.startswith(f"torchbot: {record} (TORCHBOT_LOCAL_BRANCHES) is not valid TOML")


def test_a_branch_recorded_twice_for_one_repository_is_refused(world):
    torchbot, work, _, _, record = world
    assert torchbot(*CREATE, repo=work).returncode == 0
    subprocess.run(["git", "-C", str(work), "branch", "-D", "pytorch-2.9-python312"], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(work), "push", "-q", "origin", ":pytorch-2.9-python312"], check=False,
                   capture_output=True)
    before = record.read_text()
    r = torchbot(*CREATE, repo=work)
    assert r.returncode == 1 and "is already recorded for" in r.stderr, r.stderr
    assert record.read_text() == before
    assert "pytorch-2.9-python312" not in subprocess.run(["git", "-C", str(work), "branch"], capture_output=True,
                                                         text=True, check=True).stdout  # the branch was taken back


def test_ask_from_a_repository_without_records_imports_no_pydantic(world):
    """Records of other repositories (even broken ones) cost `ask` nothing: no pydantic, no error."""
    torchbot, work, other, cwd, record = world
    _record(record, other, GOOD.replace('"3.12"', "3.12"))  # broken, but for the other repository
    code = ("import sys; from bot.frontends.cli.main import main; rc = main(['ask', 'H100']); "
            "assert not [m for m in sys.modules if m.startswith('pydantic')], 'pydantic imported'; sys.exit(rc)")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("TORCHBOT_")}
    home = cwd.parent / "home"
    env.update(PYTHONPATH=str(ROOT), TORCHBOT_REPO_PATH=str(work), XDG_DATA_HOME=str(home / "data"),
               XDG_STATE_HOME=str(home / "state"), XDG_CACHE_HOME=str(home / "cache"))
    r = subprocess.run([sys.executable, "-c", code], check=False, cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "flox install" in r.stdout, r.stderr
    assert torchbot("catalog", "--json", repo=other).returncode == 2  # where it is read, it is checked
