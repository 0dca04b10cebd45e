"""README cross-branch tables against the repository's facts (release.docs.tables, pure): what
is stale, and a fix that touches only those rows and leaves every other byte as written."""

from __future__ import annotations

from release.docs.facts import BranchDoc
from release.docs.tables import check_readme

P1 = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"
P2 = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"
P3 = "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3"
P4 = "d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4"


def url(p):
    return f"[`{p[:7]}`](https://github.com/NixOS/nixpkgs/tree/{p})"


DOCS = {
    "main": BranchDoc("main", "2.8.0", "3.13", ("12.8",), 62, ((P1, ("12.8",)),), ("sm61", "sm120"), True, True,
                      "Stable baseline"),
    "py311": BranchDoc("py311", "2.9.1", "3.11", ("12.9", "12.8"), 131, ((P4, ("12.9", "12.8")),)),
    "vllm": BranchDoc("vllm", "2.9.1", "3.12", ("12.9", "12.8"), 131, ((P4, ("12.9", "12.8")),)),
    "multi": BranchDoc("multi", "2.10.0", "3.13", ("13.0", "13.1", "12.9"), 237,
                       ((P2, ("13.0",)), (P3, ("13.1",)), (P4, ("12.9",))), ("sm75", "sm121"), True, True,
                       "Full matrix"),
}

README = f"""# Fixture README

Intro prose mentioning `multi` and 68 variants stays as written.

## Multi-Branch Strategy

| Branch | PyTorch | CUDA | Python | Variants | Key Additions |
|--------|---------|------|--------|----------|---------------|
| **`main`** ⬅️ | 2.8.0 | 12.8 | 3.13 | 62 | Stable baseline |
| `py311` | 2.9.1 | 12.8 / 12.9.1 | 3.11 | 131 | Pin-compatible with vllm (nixpkgs `{P4[:7]}`) |
| `vllm` | 2.9.1 | 12.9 / 12.8 | 3.12 | 131 | vLLM pin-certified (nixpkgs `{P1[:7]}`) |
| `multi` | **2.10** | **13.0** | **3.13** | **68** | Bleeding edge |
| `gone` | 2.7.0 | 12.6 | 3.12 | 40 | Retired long ago |

## Version Matrix

| Branch | PyTorch | CUDA | cuDNN | Python | Min Driver | Nixpkgs Pin |
|--------|---------|------|-------|--------|------------|-------------|
| **`main`** ⬅️ | **2.8.0** | **12.8** | **9.x** | **3.13** | **550+** | [**`{P1[:7]}`**](https://github.com/NixOS/nixpkgs/tree/{P1}) |
| `py311` | 2.9.1 | 12.9 | 9.13.0 | 3.11 | 550+ | {url(P4)} |
| | | 12.8 | 9.13.0 | 3.11 | 550+ | {url(P4)} |
| `vllm` | 2.9.1 | 12.9 / 12.8 | 9.x | 3.12 | 550+ | {url(P4)} |
| `multi` | 2.10 | 13.0 | TBD | 3.13 | 570+ | TBD |

Prose between tables with `{P2[:7]}` stays.

### Variants on Other Branches

| Branch | PyTorch | CUDA | Architectures | Variants |
|--------|---------|------|---------------|----------|
| `py311` | 2.9.1 | 12.9 / 12.8 | SM61–SM120 | 131 (Python 3.11) |
| `vllm` | 2.9.1 | 12.9 / 12.8 | SM61–SM120 | 131 (Python 3.12) |
| `multi` | 2.10 | 13.0 / 13.1 / 12.9 | SM75–SM121 | 237 (Python 3.13) |

| Kind | Count |
|------|-------|
| cpu | 6 |
"""  # noqa: E501  (verbatim text)


def check(text=README, own="main"):
    return check_readme(text, own, DOCS, existing=set(DOCS) | {"main-staging"}, skip=["*-staging"])


def test_stale_rows_are_named_with_what_they_say_and_what_is_true():
    c = check()
    found = {(s.table, s.row): s for s in c.stale}
    assert set(found) == {
        ("Multi-Branch Strategy", "vllm"),  # quotes another branch's pin
        ("Multi-Branch Strategy", "multi"),  # CUDA 13.0 only, 68 variants
        ("Multi-Branch Strategy", "gone"),  # no such branch
        ("Version Matrix", "multi"),  # TBD pin, one row for three pins
    }  # main's own row may be missing from its "Variants on Other Branches"
    multi = found[("Multi-Branch Strategy", "multi")]
    assert multi.says == "CUDA 13.0; variants 68" and multi.true == "CUDA 13.0 / 13.1 / 12.9; variants 237"
    assert multi.line == 12
    vm = found[("Version Matrix", "multi")]
    assert "pin TBD" in vm.says and f"pin {P2[:7]} | {P3[:7]} | {P4[:7]}" in vm.true
    assert found[("Multi-Branch Strategy", "gone")].true == "the repository has no such branch"
    assert found[("Multi-Branch Strategy", "vllm")].says == f"pin {P1[:7]}"
    # agreeing spellings are not drift: 2.10 vs 2.10.0, 12.9.1 vs 12.9, CUDA order, continuation rows
    assert ("Multi-Branch Strategy", "py311") not in found and ("Version Matrix", "py311") not in found


def test_fix_changes_only_the_stale_rows():
    c = check()
    old, new = README.splitlines(), c.text.splitlines()
    kept = [
        line for line in old if not any(k in line for k in ("`multi`", "`gone`", "`vllm` | 2.9.1 | 12.9 / 12.8 | 3.12"))
    ]
    assert all(line in new for line in kept)  # every other line byte for byte
    assert "`gone`" not in c.text
    assert f"| `vllm` | 2.9.1 | 12.9 / 12.8 | 3.12 | 131 | vLLM pin-certified (nixpkgs `{P4[:7]}`) |" in new
    assert "| `multi` | **2.10** | **13.0 / 13.1 / 12.9** | **3.13** | **237** | Bleeding edge |" in new
    # one Version Matrix row per pin group: the README's own row keeps its cells (cuDNN, driver);
    # the rows torchbot adds leave them empty rather than copy "570+" to CUDA groups it does not hold for
    rows = [line for line in new if line.startswith("| `multi` | 2.10 |") and "nixpkgs/tree/" in line]
    assert rows == [
        f"| `multi` | 2.10 | 13.0 | TBD | 3.13 | 570+ | {url(P2)} |",
        f"| `multi` | 2.10 | 13.1 | | 3.13 | | {url(P3)} |",
        f"| `multi` | 2.10 | 12.9 | | 3.13 | | {url(P4)} |",
    ]
    assert "| `multi` | 2.10 | 13.0 / 13.1 / 12.9 | SM75–SM121 | 237 (Python 3.13) |" in new
    # checked again: clean, and fixing is idempotent
    again = check(c.text)
    assert again.stale == [] and again.text == c.text


def test_a_missing_branch_gets_a_row_and_other_branches_tables_may_omit_their_own():
    text = README.replace("| `vllm` | 2.9.1 | 12.9 / 12.8 | SM61–SM120 | 131 (Python 3.12) |\n", "")
    c = check(text, own="vllm")
    missing = [s for s in c.stale if s.says == "no row"]
    assert [(s.table, s.row) for s in missing] == [("Variants on Other Branches", "main")]
    assert "| `main` | 2.8.0 | 12.8 | SM61–SM120, CPU, Darwin | 62 |" in c.text.splitlines()
    # main's README needs no row for main in its "other branches" table
    c = check(text, own="main")
    assert ("Variants on Other Branches", "vllm") in {(s.table, s.row) for s in c.stale}
    assert ("Variants on Other Branches", "main") not in {(s.table, s.row) for s in c.stale}


def test_rows_of_skipped_and_undocumented_branches_are_left_alone():
    text = README.replace("| `gone` |", "| `main-staging` |")
    c = check(text)
    assert "main-staging" not in {s.row for s in c.stale}
    assert "| `main-staging` | 2.7.0 | 12.6 | 3.12 | 40 | Retired long ago |" in c.text


def test_a_readme_without_cross_branch_tables_is_untouched():
    text = "# Title\n\n| Kind | Count |\n|---|---|\n| cpu | 6 |\nno newline at the end"
    c = check(text)
    assert c.stale == [] and c.text == text
