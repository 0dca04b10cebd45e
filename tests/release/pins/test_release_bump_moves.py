"""Deliberate PyTorch moves in `release bump-pins`: the guard refuses a move to another PyTorch
line unless --pytorch says exactly what the new pin's nixpkgs holds; --torch-src moves a branch
to a source override the reader reads back as that version. The moved branch's declared
versions follow in the same commit, the other branches' README rows in one commit each. On the
repository of tests/support/fixtures_pairing.py (``cuda-12_9`` is named without a version, as the real
branch was), nixpkgs from a real HTTP server on 127.0.0.1, tarballs hashed by nix-prefetch-url."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from bot.frontends.cli.main import main as cli
from config.catalog_data import load_catalog
from release.recipes.reader import read_repository
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pairing import CUDA_SETS, PIN_28, PIN_291, TORCH, make_pairing_repo
from tests.support.fixtures_pins import git, refs, served, tree_files

B = "cuda-12_9"
HASH_210 = "sha256-" + "C" * 43 + "="
HASH_211 = "sha256-" + "D" * 43 + "="


@pytest.fixture
def repo(tmp_path, monkeypatch):
    r = make_pairing_repo(tmp_path)
    with FakeNixpkgs() as fake:
        for pin, torch in TORCH.items():
            fake.add_rev(pin, torch, CUDA_SETS)
        with served(monkeypatch, r.path, fake, TORCHBOT_NIXPKGS_TARBALL_URL=fake.tarball_url,
                    TORCHBOT_NIX_STORE=str(tmp_path / "nix-store")):
            yield r


def bump(capsys, *args) -> tuple[int, str, str]:
    rc = cli(["release", "bump-pins", "--branch", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("flags, says", [
    ((), "promises PyTorch 2.8.0"),
    (("--pytorch", "2.9.2"), f"--pytorch 2.9.2 is not what nixpkgs {PIN_291[:7]} holds (torch 2.9.1)"),
    (("--pytorch", "2.9"), "--pytorch '2.9' is not an exact PyTorch version X.Y.Z"),
])
def test_a_move_to_another_pytorch_line_needs_the_version_the_new_pin_holds(repo, capsys, flags, says):
    before = refs(repo.path)
    rc, _out, err = bump(capsys, B, "--rev", PIN_291, *flags)
    assert rc != 0 and says in err, err
    assert "Traceback" not in err and refs(repo.path) == before


def test_a_branch_named_for_another_pytorch_line_is_refused_even_with_the_flag(repo, capsys):
    rc, _out, err = bump(capsys, "pytorch-2.8-python313", "--rev", PIN_291, "--pytorch", "2.9.1")
    assert rc == 1 and "its name promises PyTorch 2.8" in err and "release branch create" in err


def test_pytorch_move_updates_the_declared_versions_in_the_same_commit(repo, capsys):
    rc, out, err = bump(capsys, B, "--rev", PIN_291, "--pytorch", "2.9.1", "--dry-run")
    assert rc == 0, err
    assert out.splitlines()[0] == f"nixpkgs {PIN_291[:7]} (--rev); {B} PyTorch 2.8.0 -> 2.9.1 (--pytorch 2.9.1):"
    tips = refs(repo.path)
    rc, out, err = bump(capsys, B, "--rev", PIN_291, "--pytorch", "2.9.1", "--json")
    assert rc == 0, err
    data = json.loads(out)
    assert data["headline"].startswith(f"nixpkgs {PIN_291[:7]} (--rev); {B} PyTorch 2.8.0 -> 2.9.1")
    assert data["branches"][0]["pytorch"] == {"old": "2.8.0", "new": "2.9.1"}
    # one commit on the branch: recipes on the new pin (with its sha256), README saying 2.9.1
    assert git(repo.path, "rev-parse", f"{B}^") .strip() == tips[f"refs/heads/{B}"]
    assert "torch 2.8.0 -> 2.9.1" in git(repo.path, "log", "-1", "--format=%s", B)
    for text in tree_files(repo.path, B).values():
        assert PIN_291 in text and PIN_28 not in text and "sha256 = " in text
    readme = repo.show(B, "README.md")
    assert f"**You are on the `{B}` branch** — PyTorch 2.9.1 + CUDA 12.9" in readme
    assert "This branch builds PyTorch 2.9.1 from nixpkgs' own torch." in readme
    assert f"| **`{B}`** ⬅️ | **2.9.1** | **12.9** | **3** |" in readme
    assert f"| **`{B}`** ⬅️ | **2.9.1** | **12.9** | **3.13** | [**`{PIN_291[:7]}`**]" in readme
    assert "2.8.0" not in "\n".join(line for line in readme.splitlines() if B in line)
    # the other branches' rows about it, one commit each; their other rows as they were
    for other in ("main", "pytorch-2.9-vllm-0.15.1", "pytorch-2.8-python313"):
        text = repo.show(other, "README.md")
        assert f"| `{B}` | 2.9.1 | 12.9 | 3.13 | [`{PIN_291[:7]}`]" in text, other
        assert "| `pytorch-2.9-vllm-0.13.0` | 2.9.0 | 12.9 | 3.12 | [`13c13c1`]" in text
        assert git(repo.path, "log", "-1", "--format=%s", other).strip() == \
            f"README: {B} builds PyTorch 2.9.1 on nixpkgs {PIN_291[:7]}"
        assert git(repo.path, "rev-parse", f"{other}^").strip() == tips[f"refs/heads/{other}"]
    # the reader now reads the branch as PyTorch 2.9.1, and no README row about it is stale
    load_catalog.cache_clear()
    assert read_repository(repo.path, load_catalog()).branches[B].branch.pytorch == "2.9.1"
    cli(["release", "docs", "--check", "--json"])
    stale = json.loads(capsys.readouterr().out)["stale"]
    assert [s for s in stale if s["row"] == B] == []


def _stale_variants_row_on_main(repo) -> str:
    """main's README, with its Branches row about cuda-12_9 saying 4 variants (it has 3):
    stale before any move, so not a move's to fix."""
    git(repo.path, "checkout", "-q", "main")
    readme = (repo.path / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith(f"| `{B}` | 2.8.0 | 12.9 | 3 |"))
    readme = readme.replace(row, row.replace(" | 3 | ", " | 4 | "))
    (repo.path / "README.md").write_text(readme)
    git(repo.path, "commit", "-qam", "README: a row gone stale")
    return readme


def test_a_move_that_keeps_the_version_and_pin_commits_to_no_other_branch(repo, capsys):
    _stale_variants_row_on_main(repo)
    tips = refs(repo.path)
    rc, out, err = bump(capsys, B, "--torch-src", f"v2.8.0,{HASH_210}")  # same PyTorch, same pin: from source
    assert rc == 0, err
    assert "own commit" not in out, out
    moved = {r for r in refs(repo.path) if refs(repo.path)[r] != tips[r]}
    assert moved == {f"refs/heads/{B}"}, moved


def test_other_branches_get_only_the_cells_the_move_changes_with_a_message_saying_what(repo, capsys):
    readme = _stale_variants_row_on_main(repo)
    rc, _out, err = bump(capsys, B, "--rev", PIN_291, "--torch-src", f"v2.9.1,{HASH_210}")
    assert rc == 0, err
    after = repo.show("main", "README.md")
    # the PyTorch cells follow the move; the variant count stale before it is left as written
    assert f"| `{B}` | 2.9.1 | 12.9 | 4 |" in after
    assert f"| `{B}` | 2.9.1 | 12.9 | 3.13 | [`{PIN_291[:7]}`]" in after
    assert [a for a, b in zip(readme.splitlines(), after.splitlines(), strict=True) if a != b and B not in a] == []
    assert git(repo.path, "log", "-1", "--format=%s", "main").strip() == \
        f"README: {B} builds PyTorch 2.9.1 on nixpkgs {PIN_291[:7]}"
    # a move of the pin alone says so
    rc, _out, err = bump(capsys, B, "--rev", PIN_28, "--torch-src", f"v2.9.1,{HASH_210}")
    assert rc == 0, err
    assert git(repo.path, "log", "-1", "--format=%s", "main").strip() == f"README: {B} is on nixpkgs {PIN_28[:7]}"
    assert f"| `{B}` | 2.9.1 | 12.9 | 3.13 | [`{PIN_28[:7]}`]" in repo.show("main", "README.md")


def test_torch_src_writes_an_override_the_reader_reads_back_as_that_version(repo, capsys, tmp_path):
    rc, out, err = bump(capsys, B, "--torch-src", f"v2.10.0,{HASH_210}")
    assert rc == 0, err
    assert f"{B}: " in out and "torch: build PyTorch 2.10.0 from source (v2.10.0)" in out
    recipes = tree_files(repo.path, B)
    for text in recipes.values():
        assert PIN_28 in text  # the pin stays without --rev
        assert 'version = "2.10.0";' in text and 'rev = "v${version}";' in text and HASH_210 in text
        assert '"-DTORCH_BUILD_VERSION=2.10.0"' in text and "export PYTORCH_BUILD_VERSION=2.10.0" in text
        assert 'echo "2.10.0" > version.txt' in text and "patches = [];" in text
    load_catalog.cache_clear()
    model = read_repository(repo.path, load_catalog())
    bm = model.branches[B]
    assert bm.branch.pytorch == "2.10.0" and bm.problems == []
    assert {(f.pytorch, f.torch_source.hash) for f in bm.recipes.values()} == {("2.10.0", HASH_210)}
    if shutil.which("nix-instantiate"):
        d = tmp_path / "parse"
        d.mkdir()
        for path, text in recipes.items():
            (d / path.rsplit("/", 1)[1]).write_text(text)
        r = subprocess.run(["nix-instantiate", "--parse", *map(str, d.iterdir())], capture_output=True, text=True,
                           check=False)
        assert r.returncode == 0, r.stderr
    assert "PyTorch 2.10.0 + CUDA 12.9" in repo.show(B, "README.md")
    # an existing override is pointed at the new source
    rc, out, err = bump(capsys, B, "--torch-src", f"v2.11.0,{HASH_211}", "--rev", PIN_291)
    assert rc == 0, err
    load_catalog.cache_clear()
    bm = read_repository(repo.path, load_catalog()).branches[B]
    assert {(f.pytorch, f.torch_source.hash, f.pin) for f in bm.recipes.values()} == {("2.11.0", HASH_211, PIN_291)}
    assert all("2.10.0" not in t for t in tree_files(repo.path, B).values())


def test_a_source_move_leaves_nixpkgs_torch_of_its_pin_to_the_lines_about_other_branches(repo, capsys):
    # once cuda-12_9 builds 2.10.0 from source, nixpkgs' torch 2.8.0 at its pin is what *other*
    # branches on that pin build: a line saying 2.8.0 is about them, whatever the next move is
    rc, _out, err = bump(capsys, B, "--torch-src", f"v2.10.0,{HASH_210}")
    assert rc == 0, err
    git(repo.path, "checkout", "-q", B)
    readme = (repo.path / "README.md").read_text()
    (repo.path / "README.md").write_text(readme + (
        "\n```bash\n# PyTorch 2.10.0 + CUDA 12.9 (this branch)\nflox build pytorch-python313-cuda12_9-sm90-avx512\n\n"
        "# PyTorch 2.8.0 + CUDA 12.9 (the stable line)\n"
        "git checkout pytorch-2.8-python313 && flox build pytorch-python313-cuda12_9-sm90-avx512\n```\n"))
    git(repo.path, "commit", "-qam", "README: how to build")
    git(repo.path, "checkout", "-q", "main")
    rc, out, err = bump(capsys, B, "--torch-src", f"v2.10.1,{HASH_211}")
    assert rc == 0, err
    assert out.splitlines()[0].endswith(f"{B} PyTorch 2.10.0 -> 2.10.1 (--torch-src v2.10.1):")
    readme = repo.show(B, "README.md")
    assert "# PyTorch 2.10.1 + CUDA 12.9 (this branch)" in readme
    assert "# PyTorch 2.8.0 + CUDA 12.9 (the stable line)" in readme
    assert f"| `pytorch-2.8-python313` | 2.8.0 | 12.9 | 3.13 | [`{PIN_28[:7]}`]" in readme


def test_torch_src_is_refused_on_a_recipe_it_cannot_write(repo, capsys):
    before = refs(repo.path)
    rc, _out, err = bump(capsys, "main", "--torch-src", f"v2.10.0,{HASH_210}")
    assert rc == 1 and "no recipe with a nixpkgs pin" in err
    rc, _out, err = bump(capsys, B, "--torch-src", "v2.10.0")
    assert rc != 0 and "REV,HASH" in err
    assert refs(repo.path) == before


def test_a_torch_src_tag_that_disagrees_with_pytorch_is_refused_naming_both(repo, capsys):
    # the tag is the version the recipes would fetch: a different --pytorch would label v2.10.0's source 2.9.1
    before = refs(repo.path)
    rc, _out, err = bump(capsys, B, "--rev", PIN_291, "--torch-src", f"v2.10.0,{HASH_210}", "--pytorch", "2.9.1")
    assert rc != 0 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "v2.10.0" in err and "2.9.1" in err, err
    assert "Nothing was changed" in err and refs(repo.path) == before
    # a tag that agrees (or a pre-release of that version) is taken
    rc, out, err = bump(capsys, B, "--torch-src", f"v2.10.0-rc3,{HASH_210}", "--pytorch", "2.10.0", "--dry-run")
    assert rc == 0 and "PyTorch 2.8.0 -> 2.10.0" in out.splitlines()[0], err


def test_in_chat_the_plan_says_the_version_change_first_and_a_confirm_applies_it(repo, tmp_path):
    from bot.frontends.chat import Chat, PlanReply
    from config.settings import Settings
    from release.context import Context

    chat = Chat(Context(Settings(admins=["UADMIN"], audit_log=tmp_path / "audit.log",
                                 state_db=f"sqlite:///{tmp_path / 'state.sqlite'}"), use_repo=False))
    refused = chat.command("bump", f"{B} {PIN_291}", user="UADMIN")
    assert not isinstance(refused, PlanReply) and "promises PyTorch 2.8.0" in refused.text()
    assert "needs a value" in chat.command("bump", f"{B} {PIN_291} --pytorch", user="UADMIN").text()
    plan = chat.command("bump", f"{B} {PIN_291} --pytorch 2.9.1", user="UADMIN")
    assert isinstance(plan, PlanReply), plan.text()
    assert plan.text().splitlines()[0].endswith(
        f"--pytorch 2.9.1: nixpkgs {PIN_291[:7]} (--rev); {B} PyTorch 2.8.0 -> 2.9.1 (--pytorch 2.9.1):")
    from bot.frontends.slack.blocks import render

    slack = render(plan)
    change = f"{B} PyTorch 2.8.0 -&gt; 2.9.1"  # "->" as Slack message text (escaped; shown as "->")
    assert change in slack.text and change in slack.blocks[0]["text"]["text"]
    result = chat.confirm(plan.pending.id, "UADMIN").wait(120)
    assert "PyTorch 2.8.0 -> 2.9.1" in result.text(), result.text()
    assert "PyTorch 2.9.1 + CUDA 12.9" in repo.show(B, "README.md")
    # a source move on the current pin is a plan with a Confirm too, made again from the same flags
    plan = chat.command("bump", f"{B} --torch-src v2.10.0,{HASH_210}", user="UADMIN")
    assert isinstance(plan, PlanReply), plan.text()
    assert plan.text().splitlines()[0].endswith(f"{B} PyTorch 2.9.1 -> 2.10.0 (--torch-src v2.10.0):")
    chat.confirm(plan.pending.id, "UADMIN").wait(120)
    load_catalog.cache_clear()
    assert read_repository(repo.path, load_catalog()).branches[B].branch.pytorch == "2.10.0"


def test_a_deliberate_move_is_kept_in_the_release_record_as_the_bump_stage_wrote_it(repo, capsys):
    """The bump stage is the one writer of bump outcomes, whichever pipeline ran: a ``--pytorch``
    move (what a dashboard Approve runs) writes its group's row, typed: target, PyTorch, kind."""
    from config.settings import Settings
    from release.state import open_state
    from release.state.record import rows

    rc, _out, err = bump(capsys, B, "--rev", PIN_291, "--pytorch", "2.9.1")
    assert rc == 0, err
    (row,) = [r for r in rows(open_state(Settings().state_db), repo.path) if r.branch == B]
    assert (row.bump_kind, row.reason_kind, row.target, row.pytorch, row.torch_old) == (
        "bumped", "moved-by-hand", PIN_291, "2.9.1", "2.8.0")
    assert row.delivery == "local" and row.commit == git(repo.path, "rev-parse", B).strip() and row.cuda == "12.9"
