"""The recipe reader on the tree-sitter-nix syntax tree: the parts of Nix recipes use (comments,
``''`` strings, interpolation, ``inherit``, ``with``, ``rec``) are read as Nix reads them, and a
recipe with a syntax error is a problem naming its file and line while the rest of its branch is
still read.

The values the reader evaluates are checked against ``nix-instantiate --eval`` itself."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from config.catalog_data import load_catalog
from release.adapters.git import commit_changes
from release.recipes.facts import read_recipe
from release.recipes.init import init_repository
from release.recipes.nixtree import UNKNOWN, Attrs, NixSyntaxError, Scope, parse
from release.recipes.reader import read_repository

PIN = "0123456789abcdef0123456789abcdef01234567"
OTHER_PIN = "fedcba9876543210fedcba9876543210fedcba98"

# ---------------------------------------------------------------------------------------
# values, against Nix

EXPRESSIONS = [
    '"plain"',
    r'"tab\there \"quoted\" back\\slash \${not interpolated} \n"',
    'let v = "2.10.0"; in "v${v}"',
    'let a = "x"; b = "${a}-${a}"; in b',
    '"${"nested"} string"',
    "let a = \"x\"; in ''\n    line one ${a}\n      deeper ''${kept} '''quoted'''\n    last ''\\n escaped\n  ''",
    "''\n\n    first after a blank line\n\n      two blank lines above\n  \t''",
    "''  no newline after the quotes ''",
    'rec { version = "2.10.0"; rev = "v${version}"; }',
    'let x = "outer"; in rec { x = "inner"; y = x; }',
    'let x = "outer"; in rec { inherit x; y = x; }',
    'let s = { a = "1"; b = "2"; }; in { inherit (s) a b; }',
    'let a = "1"; in let inherit a; in a',
    'let s = { a = "from with"; }; in with s; a',
    'let a = "lexical"; s = { a = "from with"; }; in with s; a',
    '{ a.b.c = "x"; a.d = "y"; }',
    '({ a = "1"; } // { b = "2"; }).b',
    '({ a = "1"; } // { a = "2"; }).a',
    '[ "a" ] ++ [ "b" ]',
    '{ /* block */ a = "1"; # line\n b = [ "x" /* between */ "y" ]; }',
    "[ true false null ]",
    'let meta = { platforms = [ "x86_64-linux" ]; }; in meta.platforms',
]


def _plain(value):
    """The reader's value as JSON (an unknown part fails the comparison)."""
    if isinstance(value, Attrs):
        return {name: _plain(value.get(name)) for name in sorted(value.names())}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    assert value is not UNKNOWN
    return value


def test_the_values_the_reader_evaluates_are_what_nix_evaluates():
    ours = []
    for expr in EXPRESSIONS:
        src = parse(expr)
        ours.append(_plain(src.value(src.root, Scope(src))))
    listed = "[\n" + "\n".join(f"({e})" for e in EXPRESSIONS) + "\n]"
    r = subprocess.run(["nix-instantiate", "--eval", "--strict", "--json", "-E", listed],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    for expr, mine, nix in zip(EXPRESSIONS, ours, json.loads(r.stdout), strict=True):
        assert mine == nix, expr


INDENTED_PIECES = [" ", "  ", "    ", "\n", "\n", "\t", "x", "y z", "''$", "'''", "''\\n", "''\\t", "${v}", "${w}"]
QUOTED_PIECES = [" ", "\n", "x", "\\n", "\\t", '\\"', "\\\\", "\\${", "${v}", "$"]


def test_generated_strings_evaluate_as_nix_evaluates_them():
    """Indentation, blank lines, escapes and interpolations in every order (a fixed seed: the
    same 400 strings every run), evaluated by the reader and by nix-instantiate."""
    import random

    rng = random.Random(20)
    texts = ["''" + "".join(rng.choices(INDENTED_PIECES, k=rng.randint(0, 14))) + "''" for _ in range(300)]
    texts += ['"' + "".join(rng.choices(QUOTED_PIECES, k=rng.randint(0, 10))) + '"' for _ in range(100)]
    exprs = [f'let v = "V"; w = "a\\nb"; in {t}' for t in texts]
    ours = []
    for expr in exprs:
        src = parse(expr)
        ours.append(src.value(src.root, Scope(src)))
    listed = "[\n" + "\n".join(f"({e})" for e in exprs) + "\n]"
    r = subprocess.run(["nix-instantiate", "--eval", "--strict", "--json", "-E", listed],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    for text, mine, nix in zip(texts, ours, json.loads(r.stdout), strict=True):
        assert mine == nix, text


def test_what_only_nixpkgs_knows_stays_unknown():
    src = parse('{ pkgs }: let v = pkgs.lib.version; in { a = v; b = "x-${v}"; c = pkgs.x or "d"; }')
    from release.recipes.buildchain import peel

    node, scope = peel(src, src.root, Scope(src))
    got = src.value(node, scope)
    assert got.get("a") is UNKNOWN
    assert got.get("b") == "x-${v}"  # kept as written, never guessed
    assert got.get("c").default == "d"  # `or`: Nix takes pkgs.x when it exists


# ---------------------------------------------------------------------------------------
# facts through each part of the syntax


def recipe(body: str, *, let: str = "", head: str = "{ pkgs ? import <nixpkgs> {} }:") -> str:
    return f"""# a recipe written for the test
{head}
let
  nixpkgs_pinned = import (builtins.fetchTarball {{
    url = "https://github.com/NixOS/nixpkgs/archive/{PIN}.tar.gz";
  }}) {{
    config = {{ allowUnfree = true; cudaSupport = true; }};
    overlays = [ (final: prev: {{ cudaPackages = final.cudaPackages_12_8; }}) ];
  }};
{let}
in
{body}
"""


CHAIN = """  (nixpkgs_pinned.python313Packages.torch.override {{
    cudaSupport = true;
    {args}
  }}).overrideAttrs (oldAttrs: {{
    {attrs}
  }})"""


def facts(name: str, text: str):
    f = read_recipe(load_catalog(), name + ".nix", text)
    assert f.problem is None, f.problem
    return f


def test_comments_say_nothing():
    """A pin, a CUDA set or flags in a comment are not the recipe's."""
    text = recipe(
        CHAIN.format(args='gpuTargets = [ "9.0" ]; # gpuTargets = [ "8.0" ];',
                     attrs='pname = "p"; /* preConfigure = "-mavx512f"; */ preConfigure = "-mavx2 -mfma -mf16c";'),
        let=f'  # url = "https://github.com/NixOS/nixpkgs/archive/{OTHER_PIN}.tar.gz";\n'
            "  # cudaPackages = final.cudaPackages_13_0;",
    )
    f = facts("pytorch-python313-cuda12_8-sm90-avx2", text)
    assert (f.pin, f.pins, f.cuda, f.gpu_arch, f.cpu_isa) == (PIN, (PIN,), "12.8", "sm90", "avx2")


def test_flags_and_arch_lists_are_read_from_indented_build_scripts():
    attrs = """preConfigure = (oldAttrs.preConfigure or "") + ''
      export CXXFLAGS="${nixpkgs_pinned.lib.concatStringsSep " " cpuFlags} $CXXFLAGS"
      echo "''${NOT_AN_INTERPOLATION}"
      export TORCH_CUDA_ARCH_LIST="8.9"
    '';"""
    text = recipe(CHAIN.format(args="", attrs=attrs), let='  cpuFlags = [ "-mavx2" "-mfma" "-mf16c" ];')
    f = facts("pytorch-python313-cuda12_8-sm89-avx2", text)
    assert f.cpu_flags == ("-mavx2", "-mfma", "-mf16c") and f.cpu_isa == "avx2"
    assert f.gpu_targets == ("8.9",) and f.gpu_arch == "sm89"


def test_interpolated_strings_are_filled_in():
    text = recipe(CHAIN.format(args="gpuTargets = [ gpuArchSM ];",
                               attrs='pname = "pytorch-python313-cuda12_8-sm${gpuArchNum}-avx2";'),
                  let='  major = "12";\n  gpuArchNum = "${major}0";\n  gpuArchSM = "${major}.0";\n'
                      '  cpuFlags = [ "-mavx2" "-mfma" "-mf16c" ];')
    f = facts("pytorch-python313-cuda12_8-sm120-avx2", text)
    assert f.pname == "pytorch-python313-cuda12_8-sm120-avx2"
    assert f.gpu_targets == ("12.0",) and f.gpu_arch == "sm120" and f.notes == ()


def test_a_target_only_nix_can_compute_is_taken_from_the_name_with_a_note():
    text = recipe(CHAIN.format(args="gpuTargets = [ gpuArchSM ];", attrs='pname = "p";'),
                  let='  gpuArchSM = "${builtins.substring 0 2 "120"}.0";\n'
                      '  cpuFlags = [ "-mavx2" "-mfma" "-mf16c" ];')
    f = facts("pytorch-python313-cuda12_8-sm120-avx2", text)
    assert f.gpu_arch == "sm120"
    assert "GPU target sm120 taken from the name (the recipe computes it)" in f.notes


@pytest.mark.parametrize("args,let", [
    ("inherit gpuTargets;", '  gpuTargets = [ "9.0" ];'),
    ("inherit (cfg) gpuTargets;", '  cfg = { gpuTargets = [ "9.0" ]; };'),
])
def test_inherited_arguments_are_read(args, let):
    text = recipe(CHAIN.format(args=args, attrs='pname = "p";'),
                  let=let + '\n  cpuFlags = [ "-mavx2" "-mfma" "-mf16c" ];')
    f = facts("pytorch-python313-cuda12_8-sm80-avx2", text)
    assert f.gpu_targets == ("9.0",) and f.gpu_arch == "sm90"
    assert any("the name says sm80" in n for n in f.notes)


def test_a_build_inside_with_is_read_through_its_environment():
    body = CHAIN.replace("nixpkgs_pinned.python313Packages.torch", "python312Packages.torch")
    text = recipe("  with nixpkgs_pinned;\n" + body.format(args='gpuTargets = [ "9.0" ];', attrs='pname = "p";'),
                  let='  cpuFlags = [ "-mavx2" "-mfma" "-mf16c" ];')
    f = facts("pytorch-python312-cuda12_8-sm90-avx2", text)
    assert (f.kind, f.python, f.pin, f.cuda, f.gpu_arch) == ("pytorch", "3.12", PIN, "12.8", "sm90")


def test_rec_sets_see_their_own_names():
    attrs = """pname = "p";
    meta = rec { supported = [ "aarch64-linux" ]; platforms = supported; };
    passthru = rec { arch = "9.0"; gpuArch = arch; };"""
    text = recipe(CHAIN.format(args="", attrs=attrs), let='  cpuFlags = [ "-march=armv8.2-a+fp16+dotprod" ];')
    f = facts("pytorch-python313-cuda12_8-sm90-armv8_2", text)
    assert f.listed_platforms == ("aarch64-linux",) and f.platforms == ("aarch64-linux",)
    assert f.gpu_targets == ("9.0",) and f.cpu_isa == "armv8_2"


def test_a_rec_source_override_is_read():
    overlay = """(final: prev: { python3Packages = prev.python3Packages.override { overrides = pf: pp: {
        torch = pp.torch.overrideAttrs (old: rec {
          version = "2.10.0";
          src = prev.fetchFromGitHub { owner = "pytorch"; repo = "pytorch"; rev = "v${version}"; hash = "sha256-x"; };
        });
      }; }; })"""
    text = recipe(CHAIN.format(args='gpuTargets = [ "9.0" ];', attrs='pname = "p";'),
                  let='  cpuFlags = [ "-mavx2" "-mfma" "-mf16c" ];')
    text = text.replace("(final: prev: { cudaPackages = final.cudaPackages_12_8; })",
                        "(final: prev: { cudaPackages = final.cudaPackages_12_8; })\n      " + overlay)
    f = facts("pytorch-python313-cuda12_8-sm90-avx2", text)
    assert f.pytorch == "2.10.0" and f.torch_source.hash == "sha256-x"


# ---------------------------------------------------------------------------------------
# syntax errors


@pytest.mark.parametrize("text,line,says", [
    ('{ pkgs }:\nlet\n  x = "never closed;\nin x\n', 3, "never closed"),
    ("{ pkgs }:\nlet\n  a = ''\n    never closed\nin a\n", 3, "never closed"),
    ("{ pkgs }:\nlet\n  x = (1;\nin x\n", 3, "')' is missing"),
    ("{ pkgs }:\nlet\n  x = 1;\n  y = ;\nin x\n", 4, "an expression is missing"),
    ("{ a = 1; } }\n", 1, "unexpected '}'"),
])
def test_a_syntax_error_is_named_by_its_line(text, line, says):
    with pytest.raises(NixSyntaxError) as err:
        parse(text)
    assert str(err.value).startswith(f"line {line}: ") and says in str(err.value)
    f = read_recipe(load_catalog(), "pytorch-python313-cpu-avx2.nix", text)
    assert f.problem == f"unparsable: {err.value}" and not f.usable


MISTAKES = {
    "a ; dropped": ('cpuFlags = [ "-mavx2" "-mfma" "-mf16c" ];', 'cpuFlags = [ "-mavx2" "-mfma" "-mf16c" ]'),
    "( closed by ]": ('cpuFlags = [ "-mavx2"', 'cpuFlags = ( "-mavx2"'),
    "a string left open": ('pname = "p";', 'pname = "p;'),
    "a } dropped": ("cudaSupport = true; };", "cudaSupport = true; ;"),
    "no in": ("\nin\n", "\n\n"),
    "a stray )": ("gpuTargets = [", "gpuTargets = ) ["),
    "= twice": ("pname = ", "pname = = "),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_the_line_of_a_syntax_error_is_the_line_nix_names(mistake, tmp_path):
    good = recipe(CHAIN.format(args='gpuTargets = [ "9.0" ];', attrs='pname = "p";'),
                  let='  cpuFlags = [ "-mavx2" "-mfma" "-mf16c" ];')
    old, new = MISTAKES[mistake]
    assert old in good
    broken = tmp_path / "broken.nix"
    broken.write_text(good.replace(old, new, 1))
    r = subprocess.run(["nix-instantiate", "--parse", str(broken)], capture_output=True, text=True, check=False)
    assert r.returncode != 0
    nix_line = int(re.search(r"broken\.nix:(\d+):", r.stderr)[1])
    with pytest.raises(NixSyntaxError, match=rf"^line {nix_line}: "):
        parse(broken.read_text())


def test_a_broken_recipe_is_a_problem_of_its_file_and_line_and_the_branch_is_still_read(tmp_path):
    catalog = load_catalog()
    work = tmp_path / "build-pytorch"
    init_repository(work, catalog, ["main"], "t", "t@example.com")
    good = read_repository(work, catalog).branches["main"]
    name = ".flox/pkgs/pytorch-python313-cpu-avx2.nix"
    text = subprocess.run(["git", "-C", str(work), "show", f"main:{name}"], capture_output=True, text=True,
                          check=True).stdout
    lines = text.splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if "pname" in ln)
    lines[at] = lines[at].replace(";", "", 1)  # a missing `;`
    commit_changes(work, "main", {name: "".join(lines)}, "break a recipe", "t", "t@example.com")
    model = read_repository(work, catalog).branches["main"]
    problems = [p for p in model.problems if p.startswith(name)]
    assert len(problems) == 1 and "unparsable: line" in problems[0], model.problems
    assert set(good.packages) - set(model.packages) == {"pytorch-python313-cpu-avx2"}


def test_a_process_that_finds_every_recipe_in_the_fact_cache_never_loads_the_grammar(tmp_path):
    """tree-sitter is imported on the first parse: a warm `ask` or `catalog` does not pay for it."""
    import os
    import sys

    work = tmp_path / "build-pytorch"
    init_repository(work, load_catalog(), ["main"], "t", "t@example.com")
    probe = (
        "import sys\n"
        "from config.catalog_data import load_catalog\n"
        "from release.recipes.reader import read_repository\n"
        f"model = read_repository({str(work)!r}, load_catalog())\n"
        "print(len(model.branches['main'].variants), 'tree_sitter' in sys.modules)\n"
    )
    env = dict(os.environ, TORCHBOT_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                           check=True).stdout.split() for _ in range(2)]
    assert runs[0][1] == "True" and runs[1][1] == "False"  # the first read parses; the second reads the cache
    assert runs[0][0] == runs[1][0] != "0"


# ---------------------------------------------------------------------------------------
# CPU flags: the list a script joins, evaluated where Nix evaluates it (checked against
# nix-instantiate --eval on the stub nixpkgs of tests/nixstub)

STUB = Path(__file__).resolve().parents[2] / "support" / "nixstub"
AVX512 = '[ "-mavx512f" "-mavx512dq" "-mavx512vl" "-mavx512bw" "-mfma" ]'
JOIN = 'pinned.lib.concatStringsSep " " '
BF16 = '[ "-mavx512f" "-mavx512dq" "-mavx512vl" "-mavx512bw" "-mavx512bf16" "-mfma" ]'


def flags_recipe(inner_let: str, joined: str) -> str:
    """A recipe whose outer let binds cpuFlags to the AVX-512 flags, and whose overrideAttrs
    function binds its own names (``inner_let``) around the set holding preConfigure, which
    interpolates ``joined``."""
    return f"""{{ nixpkgsSrc }}:
let
  pinned = import nixpkgsSrc {{ config = {{ allowUnfree = true; }}; }};
  cpuFlags = {AVX512};
in
  pinned.python313Packages.torch.overrideAttrs (oldAttrs: let
{inner_let}
  in {{
    pname = "pytorch-python313-cpu-avx512bf16";
    preConfigure = (oldAttrs.preConfigure or "") + ''
      export CXXFLAGS="${{{joined}}} $CXXFLAGS"
    '';
  }})
"""


def nix_cxxflags(text: str, tmp_path) -> tuple[str, ...]:
    """The flags CXXFLAGS gets when Nix evaluates the recipe against the stub nixpkgs."""
    f = tmp_path / "recipe.nix"
    f.write_text(text)
    r = subprocess.run(["nix-instantiate", "--eval", "--strict", "--json", "-E",
                        f"(import {f} {{ nixpkgsSrc = {STUB}; }}).preConfigure"],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    return tuple(re.search(r'CXXFLAGS="(.*) \$CXXFLAGS"', json.loads(r.stdout))[1].split())


@pytest.mark.parametrize("inner_let, joined", [
    (f"    cpuFlags = {BF16};", JOIN + "cpuFlags"),  # the function's own cpuFlags, not the outer let's
    ('    extra = [ "-mavx512bf16" ];', JOIN + "(cpuFlags ++ extra)"),  # both lists
    (f"    isaFlags = {BF16};\n    joined = {JOIN}isaFlags;", "joined"),  # through a bound name
], ids=["own cpuFlags", "cpuFlags ++ extra", "a bound joined string"])
def test_the_flags_a_script_joins_are_the_ones_nix_joins_in_the_scripts_scope(inner_let, joined, tmp_path):
    text = flags_recipe(inner_let, joined)
    f = read_recipe(load_catalog(), "pytorch-python313-cpu-avx512bf16.nix", text)
    assert f.problem is None, f.problem
    assert f.cpu_flags == nix_cxxflags(text, tmp_path)
    assert f.cpu_isa == "avx512bf16" and not any("name says" in n for n in f.notes), f.notes


def test_a_joined_list_only_nixpkgs_computes_is_not_guessed_and_a_note_says_so(tmp_path):
    text = flags_recipe('    extra = builtins.filter (x: x != "") [ "-mavx512bf16" ];', JOIN + "(cpuFlags ++ extra)")
    assert "-mavx512bf16" in nix_cxxflags(text, tmp_path)
    f = read_recipe(load_catalog(), "pytorch-python313-cpu-avx512bf16.nix", text)
    assert f.cpu_flags == () and f.cpu_isa == "avx512bf16"  # not the outer AVX-512 list: the name, with a note
    assert "the CPU flags `(cpuFlags ++ extra)` are computed by nixpkgs; the CPU ISA is not read from them" in f.notes
    assert "CPU ISA avx512bf16 taken from the name" in f.notes


# ---------------------------------------------------------------------------------------
# a name bound twice: tree-sitter-nix accepts it, Nix's parser does not

BOUND_TWICE = [
    "{\n  a = 1;\n  a = 2;\n}",
    "let\n  a = 1;\n  b = 0;\n  a = 2;\nin a",
    "{\n  a.x = 1;\n  a.x = 2;\n}",
    "{\n  a.x = 1;\n  a = 3;\n}",
    "{ b }:\n{\n  inherit b;\n  b = 1;\n}",
    "{ b }:\n{ inherit b\n    b; }",
    '{\n  "a" = 1;\n  a = 2;\n}',
    'rec {\n  a = 1;\n  ${"a"} = 2;\n}',
    "{\n  a = { x = 1; };\n  a.x = 2;\n}",
    "{\n  a = let in { x = 1; };\n  a.y = 2;\n}",
    "{ b }:\n{\n  a = { inherit b; };\n  a.b = 2;\n}",
    "{ a,\n  a }: a",
    "x@{\n  y,\n  x }: x",
    "{ x,\n  ... }\n@x: x",
    '{\n  version = "1";\n  version = "2";\n}',
    "{\n  a.b = 1;\n  a.b = 2;\n}",
    "{ s }:\n{\n  inherit (s) x;\n  x = 1;\n}",
    "{\n  inherit a;\n  inherit a;\n}",
]
MERGED = [
    "{\n  a = { x = 1; };\n  a.y = 2;\n}",
    "{\n  a.y = 2;\n  a = rec { x = 1; };\n}",
    "{\n  a = ({ x = 1; });\n  a.y.z = 2;\n  a.y.w = 3;\n}",
    "let\n  a.x = 1;\n  a.y = 2;\nin a",
    "{\n  a = { };\n  a.b = 1;\n}",
    "x: {\n  ${x} = 1;\n  ${x} = 2;\n}",
    "f: { a = 1; } // { a = 2; }",
    "{\n  a.b = 1;\n  a.c = 2;\n}",
    "{ b, s }:\n{\n  inherit b;\n  inherit (s) x y;\n  c = 1;\n}",
    "x@{ y, ... }: { x = y; }",
    "let a = 1; in { a = 2; }",
]


@pytest.mark.parametrize("text", BOUND_TWICE + MERGED)
def test_a_name_bound_twice_is_a_syntax_error_where_nix_says_so_on_the_line_nix_names(text, tmp_path):
    f = tmp_path / "expr.nix"
    f.write_text(text)
    r = subprocess.run(["nix-instantiate", "--parse", str(f)], capture_output=True, text=True, check=False)
    if r.returncode == 0:
        assert text in MERGED
        parse(text)
        return
    assert text in BOUND_TWICE, r.stderr
    nix_line = int(re.search(r"at .*expr\.nix:(\d+):\d+:\n", r.stderr)[1])
    with pytest.raises(NixSyntaxError, match=rf"^line {nix_line}: (attribute '[\w.]+' already defined at line \d+"
                                             r"|duplicate formal function argument '[ax]')$"):
        parse(text)


def test_a_recipe_that_binds_cpuflags_twice_is_a_problem_of_its_file_and_line(tmp_path):
    text = recipe(CHAIN.format(args='gpuTargets = [ "9.0" ];', attrs='pname = "p";'),
                  let='  cpuFlags = [ "-mavx2" "-mfma" "-mf16c" ];\n  cpuFlags = [ "-mavx512f" ];')
    f = read_recipe(load_catalog(), "pytorch-python313-cuda12_8-sm90-avx2.nix", text)
    line = text.splitlines().index('  cpuFlags = [ "-mavx512f" ];') + 1
    assert f.problem == f"unparsable: line {line}: attribute 'cpuFlags' already defined at line {line - 1}"
    assert not f.usable
