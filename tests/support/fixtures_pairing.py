"""A build-pytorch-shaped repository whose texts state facts about their branch and about another
repository, as the real vLLM branches do (written for the tests; no text copied from the real
repositories). Used by the derived-branch, unpinned-row and PyTorch-move tests.

Branches (``make_pairing_repo(tmp_path)`` -> ``PairingRepo``)::

    main                     callPackage recipes (unpinned), PyTorch 2.8, Python 3.13
    pytorch-2.9-vllm-0.15.1  pinned to PIN_V15 (torch 2.9.1), Python 3.13, CUDA 12.9; its recipes'
                             descriptions name Python 3.13, vLLM 0.15.1, build-vllm/main and the short
                             pin; its README a banner, branch tables, a section about build-vllm/main
                             with a table headed by refs, the Python support prose; a manifest listing
                             Python versions
    pytorch-2.9-vllm-0.13.0  pinned to PIN_V13, Python 3.12; its README places build-vllm/vllm-0.13.0
                             on PIN_V13
    cuda-12_9                named without a version: pinned to PIN_28 (torch 2.8.0), recipes that build
                             nixpkgs' torch; its README declares PyTorch 2.8.0 (banner, rows, prose)
    pytorch-2.8-python313    pinned to PIN_28; a branch name that declares PyTorch 2.8

The README of every branch has the cross-branch tables (Branches, Version Matrix) with a row per
branch; ``main``'s Version Matrix row is the dead ``[`none`](…/tree/none)`` link the issue reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.support.fixtures_pins import git

PIN_V15 = "15a15a15a15a15a15a15a15a15a15a15a15a15a1"  # vLLM 0.15.1's nixpkgs: torch 2.9.1
PIN_V14 = "14b14b14b14b14b14b14b14b14b14b14b14b14b1"  # vLLM 0.14.0's nixpkgs: torch 2.9.1
PIN_V13 = "13c13c13c13c13c13c13c13c13c13c13c13c13c1"  # vLLM 0.13.0's nixpkgs: torch 2.9.0
PIN_28 = "28d28d28d28d28d28d28d28d28d28d28d28d28d2"  # torch 2.8.0
PIN_291 = "29e29e29e29e29e29e29e29e29e29e29e29e29e2"  # torch 2.9.1
CUDA_SETS = {"cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13", "cudaPackages_13_0"}
TORCH = {PIN_V15: "2.9.1", PIN_V14: "2.9.1", PIN_V13: "2.9.0", PIN_28: "2.8.0", PIN_291: "2.9.1"}
FLAGS = {"avx2": '[ "-mavx2" "-mfma" "-mf16c" ]', "avx512": '[ "-mavx512f" "-mavx512dq" "-mavx512vl" "-mavx512bw" ]'}
ARCHS = {"sm90": ("9.0", "H100"), "sm86": ("8.6", "RTX 3090")}


def _tag(python: str) -> str:
    return "python" + python.replace(".", "")


def recipe(*, package: str, pin: str, python: str, isa: str, arch: str | None = None, cuda: str | None = None,
           vllm: tuple[str, str] | None = None) -> str:
    """A pinned recipe whose longDescription states its Python and, for a vLLM branch (``vllm``:
    (ref, vLLM version)), what it shares with that build-vllm branch."""
    pyset = _tag(python) + "Packages"
    gpu = arch is not None
    overlay = f"""
    overlays = [
      (final: prev: {{ cudaPackages = final.cudaPackages_{cuda.replace('.', '_')}; }})
    ];""" if gpu else ""
    build = (f"(pinned.{pyset}.torch.override {{\n    cudaSupport = true;\n    gpuTargets = [ smVersion ];\n"
             "  }).overrideAttrs") if gpu else f"pinned.{pyset}.torch.overrideAttrs"
    lets = f'  smVersion = "{ARCHS[arch][0]}";\n' if gpu else ""
    target = f"{ARCHS[arch][1]} ({arch.upper()}) with CUDA {cuda}" if gpu else "CPU only"
    pairing = ""
    if vllm:
        ref, version = vllm
        if gpu:
            pairing = (f"\n\n        Paired build: shares nixpkgs {pin[:7]} with {ref} (vLLM {version},\n"
                       f"        CUDA {cuda}), so this torch can stand in for the wheel there.")
        else:
            pairing = f"\n\n        Paired build: nixpkgs {pin[:7]}, as in {ref}; no GPU torch to swap in."
    return f"""# Test recipe {package}: PyTorch for {target}, {isa}
# Package name: {package}

{{ pkgs ? import <nixpkgs> {{}} }}:

let
  # nixpkgs pinned so every build of this branch agrees
  pinned = import (builtins.fetchTarball {{
    url = "https://github.com/NixOS/nixpkgs/archive/{pin}.tar.gz";
  }}) {{
    config = {{
      allowUnfree = true;{" cudaSupport = true;" if gpu else ""}
    }};{overlay}
  }};
{lets}  cpuFlags = {FLAGS[isa]};

in
  {build} (oldAttrs: {{
    pname = "{package}";
    passthru = oldAttrs.passthru // {{
      cpuISA = "{isa}";
    }};

    preConfigure = (oldAttrs.preConfigure or "") + ''
      export CXXFLAGS="${{pinned.lib.concatStringsSep " " cpuFlags}} $CXXFLAGS"
      export MAX_JOBS=16
      echo "building {package}"
    '';

    meta = oldAttrs.meta // {{
      description = "PyTorch for {target}, {isa}";
      longDescription = ''
        Test build of PyTorch:
        - Target: {target}
        - Python: {python}{pairing}
      '';
      platforms = [ "x86_64-linux" ];
    }};
  }})
"""


def callpackage_recipe(package: str, isa: str) -> str:
    """main's shape: nixpkgs from the caller (no pin)."""
    return f"""# Test recipe {package} (callPackage: nixpkgs comes from flox build)
{{ python3Packages, lib }}:

let
  cpuFlags = {FLAGS[isa]};
in
python3Packages.torch.overrideAttrs (oldAttrs: {{
  pname = "{package}";
  passthru = oldAttrs.passthru // {{ cpuISA = "{isa}"; }};
  preConfigure = (oldAttrs.preConfigure or "") + ''
    export CXXFLAGS="${{lib.concatStringsSep " " cpuFlags}} $CXXFLAGS"
  '';
  meta = oldAttrs.meta // {{ platforms = [ "x86_64-linux" ]; }};
}})
"""


@dataclass
class Branch:
    name: str
    pytorch: str
    python: str
    pin: str | None  # None: callPackage (unpinned)
    cuda: str | None
    vllm: tuple[str, str] | None = None  # (build-vllm ref, vLLM version)
    summary: str = ""

    def packages(self) -> dict[str, str]:
        tag = _tag(self.python)
        if self.pin is None:
            return {f"pytorch-{tag}-cpu-{isa}": callpackage_recipe(f"pytorch-{tag}-cpu-{isa}", isa)
                    for isa in ("avx2", "avx512")}
        out = {f"pytorch-{tag}-cpu-avx2": recipe(package=f"pytorch-{tag}-cpu-avx2", pin=self.pin, python=self.python,
                                                 isa="avx2", vllm=self.vllm)}
        for arch, isa in (("sm90", "avx512"), ("sm86", "avx2")):
            name = f"pytorch-{tag}-cuda{self.cuda.replace('.', '_')}-{arch}-{isa}"
            out[name] = recipe(package=name, pin=self.pin, python=self.python, isa=isa, arch=arch, cuda=self.cuda,
                               vllm=self.vllm)
        return out


BRANCHES = [
    Branch("main", "2.8.0", "3.13", None, None, summary="Stable baseline (callPackage)"),
    Branch("pytorch-2.9-vllm-0.15.1", "2.9.1", "3.13", PIN_V15, "12.9", ("build-vllm/main", "0.15.1"),
           "vLLM 0.15.1 pairing (nixpkgs `15a15a1`)"),
    Branch("pytorch-2.9-vllm-0.13.0", "2.9.0", "3.12", PIN_V13, "12.9", ("build-vllm/vllm-0.13.0", "0.13.0"),
           "vLLM 0.13.0 pairing (nixpkgs `13c13c1`)"),
    Branch("cuda-12_9", "2.8.0", "3.13", PIN_28, "12.9", summary="CUDA 12.9 builds"),
    Branch("pytorch-2.8-python313", "2.8.0", "3.13", PIN_28, "12.9", summary="PyTorch 2.8 line"),
]


def _pin_cell(b: Branch, own: bool) -> str:
    if b.pin is None:
        return "[`none`](https://github.com/NixOS/nixpkgs/tree/none)"
    s = f"**`{b.pin[:7]}`**" if own else f"`{b.pin[:7]}`"
    return f"[{s}](https://github.com/NixOS/nixpkgs/tree/{b.pin})"


def readme(current: Branch) -> str:
    n = len(current.packages())
    extra = f", vLLM {current.vllm[1]} pairing" if current.vllm else ""
    lines = [
        "# PyTorch test builds",
        "",
        f"> **You are on the `{current.name}` branch** — PyTorch {current.pytorch} + CUDA {current.cuda or 'none'} "
        f"({n} variants{extra})",
        "",
        "## Branches",
        "",
        "| Branch | PyTorch | CUDA | Variants | Key Additions |",
        "|--------|---------|------|----------|---------------|",
    ]
    for b in BRANCHES:
        count = str(len(b.packages()))
        cells = [f"`{b.name}`", b.pytorch, b.cuda or "-", count, b.summary]
        if b is current:
            cells = [f"**`{b.name}`** ⬅️"] + [f"**{c}**" for c in cells[1:-1]] + [f"**This branch** — {b.summary}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Version Matrix", "", "| Branch | PyTorch | CUDA | Python | Nixpkgs Pin |",
              "|--------|---------|------|--------|-------------|"]
    for b in BRANCHES:
        cells = [f"`{b.name}`", b.pytorch, b.cuda or "-", b.python, _pin_cell(b, b is current)]
        if b is current:
            cells = [f"**`{b.name}`** ⬅️"] + [f"**{c}**" for c in cells[1:4]] + [cells[4]]
        lines.append("| " + " | ".join(cells) + " |")
    if current.vllm:
        ref, version = current.vllm
        tag = _tag(current.python)
        lines += [
            "", "## Pairing with vLLM", "",
            f"This branch shares its nixpkgs with [`{ref}`](https://example.invalid/build-vllm), so a torch built "
            "here can replace the wheel that vLLM build ships.",
            "", "### What the two builds share", "",
            f"| Property | `{ref}` | `{current.name}` |",
            "|----------|" + "-" * (len(ref) + 4) + "|" + "-" * (len(current.name) + 4) + "|",
            f"| Nixpkgs pin | `{current.pin[:7]}` | `{current.pin[:7]}` |",
            f"| Python | {current.python} | {current.python} |",
            f"| PyTorch | {current.pytorch} (wheel) | {current.pytorch} (from source) |",
            "", "### Swapping the torch in", "",
            "```bash",
            f"flox build pytorch-{tag}-cuda12_9-sm90-avx512   # then point the vLLM {version} build at it",
            "```",
        ]
    lines += ["", "## Python", "",
              f"Current variants use Python {current.python}. To add Python 3.12 or 3.11 variants, copy a recipe "
              f"and change its `{_tag(current.python)}Packages`.", ""]
    if current.name == "cuda-12_9":
        lines += [f"This branch builds PyTorch {current.pytorch} from nixpkgs' own torch.", ""]
    return "\n".join(lines)


def manifest(current: Branch) -> str:
    tag = _tag(current.python)
    return f"""version = 1

[install]
{tag}Full.pkg-path = "{tag}Full"

[hook]
on-activate = '''
echo "  Python Versions: 3.11, 3.12, 3.13"
echo "  flox build pytorch-{tag}-cpu-avx2"
'''
"""


@dataclass
class PairingRepo:
    path: Path
    origin: Path

    def show(self, branch: str, path: str) -> str:
        return git(self.path, "show", f"{branch}:{path}")


def make_pairing_repo(tmp_path: Path) -> PairingRepo:
    work = Path(tmp_path) / "build-pytorch"
    work.mkdir(parents=True)
    git(work, "init", "-q", "-b", "main")
    git(work, "config", "commit.gpgsign", "false")
    (work / ".gitignore").write_text("result*\n")
    git(work, "add", ".gitignore")
    git(work, "commit", "-q", "-m", "Initial commit")
    base = git(work, "rev-parse", "HEAD").strip()
    for b in BRANCHES:
        git(work, "checkout", "-q", *(["main"] if b.name == "main" else ["-b", b.name, base]))
        pkgs = work / ".flox" / "pkgs"
        if pkgs.exists():
            for f in pkgs.iterdir():
                f.unlink()
        pkgs.mkdir(parents=True, exist_ok=True)
        for name, text in b.packages().items():
            (pkgs / f"{name}.nix").write_text(text)
        (work / ".flox" / "env").mkdir(parents=True, exist_ok=True)
        (work / ".flox" / "env" / "manifest.toml").write_text(manifest(b))
        (work / "README.md").write_text(readme(b))
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", f"{b.name}: test recipes")
    git(work, "checkout", "-q", "main")
    origin = Path(tmp_path) / "build-pytorch-origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(work, "remote", "add", "origin", str(origin))
    git(work, "push", "-q", "origin", "refs/heads/*:refs/heads/*")
    git(work, "fetch", "-q", "origin")
    return PairingRepo(work, origin)
