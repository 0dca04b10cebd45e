"""Fixture repositories in the shapes the real build-pytorch and build-torchvision use today.

Everything here is written for the tests (no text is copied from the real repositories): small
recipes in each real *shape*, committed with plain git (independent of the code under test) to
a work repository with a local bare ``origin``. Each recipe comes with the facts a correct reader
must find in it, so tests assert per shape.

API (used by the issue 10, 11 and 12 tests)::

    pt = make_pytorch_repo(tmp_path)        # build-pytorch shaped; RepoFixture
    tv = make_torchvision_repo(tmp_path)    # build-torchvision shaped; RepoFixture
    pt.path, pt.origin                      # work repository (checked out on main), bare origin
    pt.kind                                 # "build-pytorch" | "build-torchvision"
    pt.branch_names                         # every branch, main first
    b = pt.branches["pytorch-2.10-python313"]   # BranchFacts: pytorch, python, cuda, pins, recipes
    b.packages                              # file names without .nix (what `flox build` takes)
    r = b.recipes["pytorch-python313-cuda13_1-sm90-avx512"]   # RecipeFacts
    r.pin, r.cuda, r.gpu_arch, r.cpu_isa, r.platforms, r.pname, r.shapes
    pt.recipe_path("pytorch-python313-cpu-avx2")   # ".flox/pkgs/pytorch-python313-cpu-avx2.nix"
    pt.by_shape("pname-differs")            # [(branch, RecipeFacts)] exercising a shape

Options: ``stale_readme=True`` writes every branch's README with the cross-branch rows of the
multi-pin branch out of date (fewer variants, pin "TBD"), the drift the real READMEs show;
``with_origin=False`` skips the bare origin.

Shapes (``RecipeFacts.shapes`` labels):
    pin-tarball          nixpkgs pinned by ``builtins.fetchTarball { url = …/archive/<sha>.tar.gz; }``
    pin-sha256           the same with a ``sha256`` attribute
    no-pin               callPackage style ``{ python3Packages, lib, … }:``; pin "none"
    pname-differs        ``pname`` is not the file name (the package is the file name)
    torch-source         overlay giving torch ``version = "2.10.0"`` from ``fetchFromGitHub``
    patch-overlay        overlay adding a magma patch (``fetchpatch``) for CUDA 13
    cuda-attr            ``cudaPackages = final.cudaPackages_X_Y`` overlay
    cuda-alias-major     ``cudaPackages = final.cudaPackages_13`` (major-only alias; minor from the name)
    cuda-name-only       no CUDA attribute: the version is the ``cudaX_Y`` part of the name
    cuda-cmake           ``-DCUDA_VERSION=X.Y`` in cmakeFlags
    gpu-targets-literal  ``gpuTargets = [ "12.1" ]``
    gpu-arch-sm          ``gpuArchSM`` (+ ``gpuArchNum``) let bindings used by gpuTargets
    torch-cuda-arch-list ``export TORCH_CUDA_ARCH_LIST=…`` (companions)
    passthru-gpuarch     ``passthru.gpuArch``
    cpu-flags            ``cpuFlags = [ … ]``
    passthru-cpuisa      ``passthru.cpuISA``
    platforms            a literal ``meta.platforms`` list
    platforms-inherited  ``platforms = oldAttrs.meta.platforms or [ … ]``
    big-parallel         ``requiredSystemFeatures = [ "big-parallel" ]``
    inline-torch         torchvision/torchaudio building its own PyTorch inline (``customPytorch``)
    import-sibling       companion that ``import``s a sibling pytorch recipe
    import-remote        companion importing a build-pytorch recipe from a pinned GitHub archive
    cpu-only, darwin     no GPU; Apple Silicon (MPS)
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.fixtures_pins import git

RECIPES = ".flox/pkgs"

# nixpkgs commits (made up; 40 hex digits like the real ones)
PIN_MAIN = "aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11"  # the 2.8-era pin of main and the 2.8 companions
PIN_13_0 = "bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22"  # 2.10 CPU, darwin and CUDA 13.0 group
PIN_13_1 = "cc33cc33cc33cc33cc33cc33cc33cc33cc33cc33"  # 2.10 CUDA 13.1 group
PIN_12_X = "dd44dd44dd44dd44dd44dd44dd44dd44dd44dd44"  # 2.10 CUDA 12.9 group and both 2.9 branches (shared)
PIN_SHA256 = "sha256:0fixturefixturefixturefixturefixturefixturefixture0"  # not a real hash; never fetched
BUILD_PYTORCH_REV = "ee55ee55ee55ee55ee55ee55ee55ee55ee55ee55"  # build-pytorch commit a torchvision recipe imports
TORCH_210_HASH = "sha256-FIXTUREtorch210sourcehashAAAAAAAAAAAAAAAAAA="
MAGMA_PATCH_HASH = "sha256-FIXTUREmagmapatchhashBBBBBBBBBBBBBBBBBBBBBBB="

CPU_FLAGS = {
    "avx": ["-mavx", "-mno-fma", "-mno-bmi", "-mno-bmi2", "-mno-avx2"],
    "avx2": ["-mavx2", "-mfma", "-mf16c"],
    "avx512": ["-mavx512f", "-mavx512dq", "-mavx512vl", "-mavx512bw", "-mfma"],
    "avx512bf16": ["-mavx512f", "-mavx512dq", "-mavx512vl", "-mavx512bw", "-mavx512bf16", "-mfma"],
    "avx512vnni": ["-mavx512f", "-mavx512dq", "-mavx512vl", "-mavx512bw", "-mavx512vnni", "-mfma"],
    "armv8_2": ["-march=armv8.2-a+fp16+dotprod"],
    "armv9": ["-march=armv9-a+sve+sve2"],
}
ARM = {"armv8_2", "armv9"}


def isa_platform(isa: str | None) -> str:
    return "aarch64-linux" if isa in ARM else "x86_64-linux"


@dataclass(frozen=True)
class RecipeFacts:
    """What a correct reader finds in one recipe."""

    package: str  # the file name without .nix: what `flox build` takes
    kind: str  # pytorch | torchvision | torchaudio
    python: str  # "3.13"
    pin: str  # nixpkgs commit, or "none"
    cuda: str | None  # "13.1"; None for CPU-only and darwin
    gpu_arch: str | None  # "sm90"; None for CPU-only and darwin
    cpu_isa: str | None  # None for darwin
    platforms: tuple[str, ...]  # what the package runs on (for an inherited list: the ISA's platform)
    pname: str  # the recipe's final pname (may differ from the package)
    pytorch: str | None  # PyTorch version the recipe itself builds (source override), else None (nixpkgs')
    darwin: bool = False
    big_parallel: bool = False
    torch_from: str | None = None  # companions: "inline", "import:<package>", "remote:<owner/repo>@<rev>:<package>"
    shapes: frozenset[str] = frozenset()

    @property
    def file(self) -> str:
        return f"{RECIPES}/{self.package}.nix"


@dataclass
class BranchFacts:
    name: str
    pytorch: str  # what the branch builds ("2.10.0"; for nixpkgs' torch the branch's major.minor)
    python: str
    summary: str
    recipes: dict[str, RecipeFacts] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # package -> recipe text

    @property
    def packages(self) -> list[str]:
        return sorted(self.recipes)

    @property
    def pins(self) -> list[str]:
        """Distinct pins, most used first ("none" for callPackage recipes)."""
        count: dict[str, int] = {}
        for r in self.recipes.values():
            count[r.pin] = count.get(r.pin, 0) + 1
        return sorted(count, key=lambda p: -count[p])

    @property
    def cuda(self) -> list[str]:
        """CUDA versions, newest first."""
        vs = {r.cuda for r in self.recipes.values() if r.cuda}
        return sorted(vs, key=lambda v: tuple(int(x) for x in v.split(".")), reverse=True)

    def pin_of_cuda(self, cuda: str | None) -> str:
        pins = {r.pin for r in self.recipes.values() if r.cuda == cuda and r.kind in ("pytorch", "torchvision")}
        assert len(pins) == 1, pins
        return pins.pop()

    @property
    def gpu_archs(self) -> list[str]:
        return sorted({r.gpu_arch for r in self.recipes.values() if r.gpu_arch}, key=lambda a: int(a[2:]))

    def add(self, facts: RecipeFacts, text: str) -> None:
        assert facts.package not in self.recipes, facts.package
        self.recipes[facts.package] = facts
        self.texts[facts.package] = text


@dataclass
class RepoFixture:
    path: Path  # work repository, checked out on main
    origin: Path | None  # bare repository holding every branch (None with with_origin=False)
    kind: str  # "build-pytorch" | "build-torchvision"
    branches: dict[str, BranchFacts]

    @property
    def branch_names(self) -> list[str]:
        return list(self.branches)

    def recipe_path(self, package: str) -> str:
        return f"{RECIPES}/{package}.nix"

    def facts(self, branch: str, package: str) -> RecipeFacts:
        return self.branches[branch].recipes[package]

    def by_shape(self, shape: str) -> list[tuple[str, RecipeFacts]]:
        return [(b.name, r) for b in self.branches.values() for r in b.recipes.values() if shape in r.shapes]

    def tip(self, branch: str) -> str:
        return git(self.path, "rev-parse", f"refs/heads/{branch}").strip()


# ---------------------------------------------------------------------------------------
# Recipe text, one function per real shape family


def _nix_list(items: list[str], indent: str = "") -> str:
    return "[ " + " ".join(f'"{i}"' for i in items) + " ]"


def _tarball(pin: str, sha256: bool) -> str:
    extra = f'\n    sha256 = "{PIN_SHA256}";' if sha256 else ""
    return (
        "builtins.fetchTarball {\n"
        f'    url = "https://github.com/NixOS/nixpkgs/archive/{pin}.tar.gz";{extra}\n'
        "  }"
    )


def _overlays(cuda_overlay: str | None, torch_source: str | None, magma_patch: bool) -> str:
    parts: list[str] = []
    if cuda_overlay:
        parts.append(f"      (final: prev: {{ cudaPackages = final.{cuda_overlay}; }})")
    if magma_patch:
        parts.append(
            "      # MAGMA needs a fix to build against CUDA 13 at this pin\n"
            "      (final: prev: {\n"
            "        magma = prev.magma.overrideAttrs (o: {\n"
            "          patches = (o.patches or []) ++ [\n"
            "            (prev.fetchpatch {\n"
            '              url = "https://example.invalid/magma/cuda13-fix.patch";\n'
            f'              hash = "{MAGMA_PATCH_HASH}";\n'
            "            })\n"
            "          ];\n"
            "        });\n"
            "      })"
        )
    if torch_source:
        parts.append(
            "      # torch from source: nixpkgs at this pin is older\n"
            "      (final: prev: {\n"
            "        python3Packages = prev.python3Packages.override {\n"
            "          overrides = pyfinal: pyprev: {\n"
            "            torch = pyprev.torch.overrideAttrs (old: rec {\n"
            f'              version = "{torch_source}";\n'
            "              src = prev.fetchFromGitHub {\n"
            '                owner = "pytorch";\n'
            '                repo = "pytorch";\n'
            '                rev = "v${version}";\n'
            f'                hash = "{TORCH_210_HASH}";\n'
            "                fetchSubmodules = true;\n"
            "              };\n"
            "              patches = [];\n"
            "            });\n"
            "          };\n"
            "        };\n"
            "      })"
        )
    if not parts:
        return ""
    return "    overlays = [\n" + "\n".join(parts) + "\n    ];\n"


def pinned_pytorch(
    *,
    package: str,
    pname: str,
    pin: str,
    python_attr: str = "python3Packages",
    sha256: bool = False,
    cuda_overlay: str | None = None,  # "cudaPackages_13_1" | "cudaPackages_13" | None
    sm: str | None = None,  # "9.0"; None: CPU-only / darwin
    gpu_literal: bool = False,  # gpuTargets = [ "12.1" ] instead of a gpuArchSM binding
    isa: str | None = None,
    darwin: bool = False,
    platforms: list[str] | None = None,
    torch_source: str | None = None,
    magma_patch: bool = False,
    cmake_cuda: str | None = None,
    big_parallel: bool = True,
) -> str:
    """A pytorch recipe pinned with fetchTarball (main, the 2.9 and 2.10 branches)."""
    gpu = sm is not None
    lets = []
    if gpu and not gpu_literal:
        lets.append(f'  gpuArchNum = "{sm.replace(".", "")}";\n  gpuArchSM = "{sm}";')
    if isa:
        lets.append(f"  cpuFlags = {_nix_list(CPU_FLAGS[isa])};")
    target = f'"{sm}"' if gpu_literal else "gpuArchSM"
    override = (
        f"cudaSupport = true;\n    gpuTargets = [ {target} ];" if gpu else "cudaSupport = false;"
    )
    gpu_arch = '"mps"' if darwin else (target if gpu else "null")
    cpu_isa = f'"{isa}"' if isa else "null"
    flags = ""
    if isa:
        flags = (
            '      export CXXFLAGS="${nixpkgs_pinned.lib.concatStringsSep " " cpuFlags} $CXXFLAGS"\n'
            '      export CFLAGS="${nixpkgs_pinned.lib.concatStringsSep " " cpuFlags} $CFLAGS"\n'
        )
    if darwin:
        flags += "      export USE_MPS=1\n"
    cmake = ""
    if cmake_cuda or torch_source:
        items = []
        if torch_source:
            items.append(f'"-DTORCH_BUILD_VERSION={torch_source}"')
        if cmake_cuda:
            items.append(f'"-DCUDA_VERSION={cmake_cuda}"')
        cmake = f"    cmakeFlags = (oldAttrs.cmakeFlags or []) ++ [ {' '.join(items)} ];\n"
    config_extra = " cudaSupport = true;" if gpu else ""
    return f"""# Fixture recipe: {package}
# (written for torchbot's tests in the shape of a pinned build-pytorch recipe)

{{ pkgs ? import <nixpkgs> {{}} }}:

let
  nixpkgs_pinned = import ({_tarball(pin, sha256)}) {{
    config = {{ allowUnfree = true; allowBroken = true;{config_extra} }};
{_overlays(cuda_overlay, torch_source, magma_patch)}  }};

{chr(10).join(lets)}

in
  (nixpkgs_pinned.{python_attr}.torch.override {{
    {override}
  }}).overrideAttrs (oldAttrs: {{
    pname = "{pname}";
    passthru = oldAttrs.passthru // {{
      gpuArch = {gpu_arch};
      cpuISA = {cpu_isa};
    }};
{'    requiredSystemFeatures = [ "big-parallel" ];' + chr(10) if big_parallel else ""}{cmake}    preConfigure = (oldAttrs.preConfigure or "") + ''
{flags}      echo "fixture build of {package}"
    '';
    meta = oldAttrs.meta // {{
      description = "Fixture PyTorch build {package}";
      platforms = {_nix_list(platforms or [])};
    }};
  }})
"""  # noqa: E501  (verbatim text)


def callpackage_pytorch(
    *, package: str, sm: str | None, isa: str | None, platforms: list[str], darwin: bool = False
) -> str:
    """main-staging's shape: a callPackage function of nixpkgs attributes, no pin of its own."""
    if sm:
        head = "{ python3Packages\n, lib\n, config\n, cudaPackages\n, addDriverRunpath\n}:"
        body = (
            "  (python3Packages.pytorch.override {\n"
            "    cudaSupport = true;\n"
            "    gpuTargets = [ gpuArchSM ];\n"
            "  }).overrideAttrs (oldAttrs: {"
        )
        lets = f'  gpuArchNum = "{sm.replace(".", "")}";\n  gpuArchSM = "{sm}";\n'
        gpu_arch = "gpuArchSM"
    else:
        head = "{ python3Packages\n, lib\n, openblas\n}:"
        body = "  python3Packages.pytorch.overrideAttrs (oldAttrs: {"
        lets = ""
        gpu_arch = '"mps"' if darwin else "null"
    if isa:
        lets += f"  cpuFlags = {_nix_list(CPU_FLAGS[isa])};\n"
    return f"""# Fixture recipe: {package} (callPackage style, nixpkgs from the caller)

{head}

let
{lets}  blas = "openblas";
in
{body}
    pname = "{package}";
    passthru = oldAttrs.passthru // {{
      gpuArch = {gpu_arch};
      cpuISA = {f'"{isa}"' if isa else 'null'};
    }};
    preConfigure = (oldAttrs.preConfigure or "") + ''
      export CXXFLAGS="$CXXFLAGS ${{lib.concatStringsSep " " cpuFlags}}"
    '';
    meta = oldAttrs.meta // {{
      platforms = {_nix_list(platforms)};
    }};
  }})
"""


def companion_import(*, package: str, kind: str, pin: str, cuda_overlay: str, sm: str, isa: str, sibling: str) -> str:
    """A build-pytorch companion (torchvision/torchaudio) importing its sibling pytorch recipe."""
    return f"""# Fixture recipe: {package} (links against ./{sibling}.nix)

{{ pkgs ? import <nixpkgs> {{}} }}:

let
  nixpkgs_pinned = import ({_tarball(pin, False)}) {{
    config = {{ allowUnfree = true; cudaSupport = true; }};
    overlays = [ (final: prev: {{ cudaPackages = final.{cuda_overlay}; }}) ];
  }};

  gpuArchSM = "{sm}";
  customPytorch = import ./{sibling}.nix {{}};
  cpuFlags = {_nix_list(CPU_FLAGS[isa])};

in
  (nixpkgs_pinned.python313Packages.{kind}.override {{
    torch = customPytorch;
  }}).overrideAttrs (oldAttrs: {{
    pname = "{package}";
    passthru = (oldAttrs.passthru or {{}}) // {{
      gpuArch = gpuArchSM;
      cpuISA = "{isa}";
    }};
    preConfigure = (oldAttrs.preConfigure or "") + ''
      export TORCH_CUDA_ARCH_LIST="${{gpuArchSM}}"
      export CXXFLAGS="${{nixpkgs_pinned.lib.concatStringsSep " " cpuFlags}} $CXXFLAGS"
    '';
    meta = oldAttrs.meta // {{
      platforms = [ "x86_64-linux" ];
    }};
  }})
"""


def torchvision_inline(
    *,
    package: str,
    pin: str,
    sm: str | None,
    isa: str,
    inner_pname: str | None,
    cuda_overlay: str | None = None,
    torch_source: str | None = None,
    cmake_cuda: str | None = None,
    platforms_inherited: bool = False,
    platforms: list[str] | None = None,
    sha256: bool = False,
) -> str:
    """A build-torchvision recipe: its own PyTorch built inline, then torchvision over it."""
    gpu = sm is not None
    lets = []
    if gpu:
        lets.append(f'  gpuArchNum = "{sm.replace(".", "")}";\n  gpuArchSM = "{sm}";')
    lets.append(f"  cpuFlags = {_nix_list(CPU_FLAGS[isa])};")
    override = "cudaSupport = true;\n    gpuTargets = [ gpuArchSM ];" if gpu else "cudaSupport = false;"
    inner_name = f'    pname = "{inner_pname}";\n' if inner_pname else ""
    cmake = (
        f'    cmakeFlags = (oldAttrs.cmakeFlags or []) ++ [ "-DCUDA_VERSION={cmake_cuda}" ];\n' if cmake_cuda else ""
    )
    plat = (
        f"oldAttrs.meta.platforms or {_nix_list(['x86_64-linux', 'aarch64-linux'])}"
        if platforms_inherited
        else _nix_list(platforms or [isa_platform(isa)])
    )
    config_extra = " cudaSupport = true;" if gpu else ""
    return f"""# Fixture recipe: {package} (torchvision over an inline PyTorch)

{{ pkgs ? import <nixpkgs> {{}} }}:

let
  nixpkgs_pinned = import ({_tarball(pin, sha256)}) {{
    config = {{ allowUnfree = true;{config_extra} }};
{_overlays(cuda_overlay, torch_source, False)}  }};

{chr(10).join(lets)}

  customPytorch = (nixpkgs_pinned.python3Packages.torch.override {{
    {override}
  }}).overrideAttrs (oldAttrs: {{
{inner_name}    requiredSystemFeatures = [ "big-parallel" ];
{cmake}    preConfigure = (oldAttrs.preConfigure or "") + ''
      export CXXFLAGS="${{nixpkgs_pinned.lib.concatStringsSep " " cpuFlags}} $CXXFLAGS"
    '';
  }});

in
  (nixpkgs_pinned.python3Packages.torchvision.override {{
    torch = customPytorch;
  }}).overrideAttrs (oldAttrs: {{
    pname = "{package}";
    propagatedBuildInputs = (oldAttrs.propagatedBuildInputs or []) ++ [ customPytorch.out ];
    requiredSystemFeatures = [ "big-parallel" ];
    preConfigure = (oldAttrs.preConfigure or "") + ''
      export CXXFLAGS="${{nixpkgs_pinned.lib.concatStringsSep " " cpuFlags}} $CXXFLAGS"
    '';
    meta = oldAttrs.meta // {{
      description = "Fixture torchvision build {package}";
      platforms = {plat};
    }};
  }})
"""


def torchvision_darwin_remote(*, package: str, pin: str, rev: str, pytorch_package: str) -> str:
    """A build-torchvision darwin recipe importing build-pytorch's recipe from a GitHub archive."""
    return f"""# Fixture recipe: {package} (PyTorch from build-pytorch at a fixed commit)

{{ pkgs ? import <nixpkgs> {{}} }}:

let
  nixpkgs_pinned = import ({_tarball(pin, False)}) {{
    config = {{ allowUnfree = true; }};
  }};

  pytorch_src = builtins.fetchTarball {{
    url = "https://github.com/example-org/build-pytorch/archive/{rev}.tar.gz";
  }};
  customPytorch = import "${{pytorch_src}}/.flox/pkgs/{pytorch_package}.nix" {{}};

in
  (nixpkgs_pinned.python3Packages.torchvision.override {{
    torch = customPytorch;
  }}).overrideAttrs (oldAttrs: {{
    pname = "{package}";
    propagatedBuildInputs = (oldAttrs.propagatedBuildInputs or []) ++ [ customPytorch.out ];
    meta = oldAttrs.meta // {{
      platforms = [ "aarch64-darwin" ];
    }};
  }})
"""


# ---------------------------------------------------------------------------------------
# The build-pytorch fixture


def _arch_sm(arch: str) -> str:
    num = arch[2:]
    return f"{num[:-1]}.{num[-1]}"


def _pt_name(py: str, *, cuda: str | None = None, arch: str | None = None, isa: str | None = None, darwin=False,
             kind: str = "pytorch") -> str:
    tag = "python" + py.replace(".", "")
    if darwin:
        return f"{kind}-{tag}-darwin-mps"
    if arch is None:
        return f"{kind}-{tag}-cpu-{isa}"
    return f"{kind}-{tag}-cuda{cuda.replace('.', '_')}-{arch}-{isa}"


def _branch_main(name: str = "main", python: str = "3.13", pin: str = PIN_MAIN) -> BranchFacts:
    """2.8-era main: one pin, CUDA 12.8 by overlay, companions importing sibling recipes."""
    b = BranchFacts(name, "2.8", python, "Stable baseline + Darwin MPS + torchvision/torchaudio")
    py_attr = "python" + python.replace(".", "") + "Packages"
    for isa in ("avx2", "armv8_2"):
        pkg = _pt_name(python, isa=isa)
        # the seeds' CPU avx2 recipe lists aarch64-linux too; an x86 ISA build runs on x86 only
        listed = ["x86_64-linux", "aarch64-linux"] if isa == "avx2" else ["aarch64-linux"]
        text = pinned_pytorch(package=pkg, pname=pkg, pin=pin, python_attr=py_attr, isa=isa, platforms=listed,
                              sha256=(isa == "avx2"))
        shapes = {"pin-tarball", "cpu-only", "cpu-flags", "passthru-cpuisa", "platforms", "big-parallel"}
        if isa == "avx2":
            shapes.add("pin-sha256")
        b.add(RecipeFacts(pkg, "pytorch", python, pin, None, None, isa, (isa_platform(isa),), pkg, None,
                          big_parallel=True, shapes=frozenset(shapes)), text)
    for arch, isa in (("sm75", "avx"), ("sm75", "avx2"), ("sm90", "avx512"), ("sm90", "armv9"), ("sm89", "avx2")):
        pkg = _pt_name(python, cuda="12.8", arch=arch, isa=isa)
        text = pinned_pytorch(package=pkg, pname=pkg, pin=pin, python_attr=py_attr, cuda_overlay="cudaPackages_12_8",
                              sm=_arch_sm(arch), isa=isa, platforms=[isa_platform(isa)])
        b.add(RecipeFacts(pkg, "pytorch", python, pin, "12.8", arch, isa, (isa_platform(isa),), pkg, None,
                          big_parallel=True,
                          shapes=frozenset({"pin-tarball", "cuda-attr", "gpu-arch-sm", "passthru-gpuarch", "cpu-flags",
                                            "passthru-cpuisa", "platforms", "big-parallel"})), text)
    pkg = _pt_name(python, darwin=True)
    b.add(
        RecipeFacts(
            pkg,
            "pytorch",
            python,
            pin,
            None,
            None,
            None,
            ("aarch64-darwin",),
            pkg,
            None,
            darwin=True,
            big_parallel=True,
            shapes=frozenset({"pin-tarball", "darwin", "platforms"}),
        ),
        pinned_pytorch(package=pkg, pname=pkg, pin=pin, python_attr=py_attr, darwin=True, platforms=["aarch64-darwin"]),
    )
    for kind in ("torchvision", "torchaudio"):
        pkg = _pt_name(python, cuda="12.8", arch="sm75", isa="avx", kind=kind)
        sibling = _pt_name(python, cuda="12.8", arch="sm75", isa="avx")
        b.add(RecipeFacts(pkg, kind, python, pin, "12.8", "sm75", "avx", ("x86_64-linux",), pkg, None,
                          torch_from=f"import:{sibling}",
                          shapes=frozenset({"pin-tarball", "cuda-attr", "import-sibling", "torch-cuda-arch-list",
                                            "passthru-gpuarch", "passthru-cpuisa", "platforms"})),
              companion_import(package=pkg, kind=kind, pin=pin, cuda_overlay="cudaPackages_12_8", sm="7.5", isa="avx",
                               sibling=sibling))
    return b


def _branch_staging() -> BranchFacts:
    """main-staging: callPackage recipes without a pin (CUDA from the name), one pinned darwin recipe."""
    b = BranchFacts("main-staging", "2.8", "3.13", "Staging area for main (unpinned callPackage recipes)")
    for arch, isa in (("sm90", "avx512"), ("sm120", "avx2"), ("sm90", "armv8_2")):
        pkg = _pt_name("3.13", cuda="12.8", arch=arch, isa=isa)
        b.add(RecipeFacts(pkg, "pytorch", "3.13", "none", "12.8", arch, isa, (isa_platform(isa),), pkg, None,
                          shapes=frozenset({"no-pin", "cuda-name-only", "gpu-arch-sm", "passthru-gpuarch", "cpu-flags",
                                            "passthru-cpuisa", "platforms"})),
              callpackage_pytorch(package=pkg, sm=_arch_sm(arch), isa=isa, platforms=[isa_platform(isa)]))
    pkg = _pt_name("3.13", isa="avx512")
    b.add(RecipeFacts(pkg, "pytorch", "3.13", "none", None, None, "avx512", ("x86_64-linux",), pkg, None,
                      shapes=frozenset({"no-pin", "cpu-only", "cpu-flags", "passthru-cpuisa", "platforms"})),
          callpackage_pytorch(package=pkg, sm=None, isa="avx512", platforms=["x86_64-linux"]))
    pkg = _pt_name("3.13", darwin=True)
    b.add(RecipeFacts(pkg, "pytorch", "3.13", PIN_MAIN, None, None, None, ("aarch64-darwin",), pkg, None, darwin=True,
                      big_parallel=True, shapes=frozenset({"pin-tarball", "darwin", "platforms", "big-parallel"})),
          pinned_pytorch(package=pkg, pname=pkg, pin=PIN_MAIN, darwin=True, platforms=["aarch64-darwin"]))
    return b


def _branch_210() -> BranchFacts:
    """pytorch-2.10-python313: three pins, PyTorch 2.10.0 by source override, CUDA 13.0 (major alias +
    magma patch), 13.1 and 12.9; pnames 'pytorch210-…' differ from the file names."""
    b = BranchFacts("pytorch-2.10-python313", "2.10.0", "3.13",
                    "Full matrix SM75-SM121 + ARM + Darwin MPS, CUDA 13.0 / 13.1 / 12.9")

    def add(pkg, *, pin, cuda, arch, isa, cuda_overlay, shapes, magma=False, literal=False, darwin=False):
        pname = pkg.replace("pytorch-python313", "pytorch210-python313") if not darwin else pkg
        platforms = ["aarch64-darwin"] if darwin else [isa_platform(isa)]
        text = pinned_pytorch(package=pkg, pname=pname, pin=pin, cuda_overlay=cuda_overlay,
                              sm=_arch_sm(arch) if arch else None, gpu_literal=literal, isa=isa, darwin=darwin,
                              platforms=platforms, torch_source="2.10.0", magma_patch=magma,
                              cmake_cuda=cuda if cuda in ("13.0", "13.1") else None)
        s = {"pin-tarball", "torch-source", "platforms", "big-parallel", *shapes}
        if pname != pkg:
            s.add("pname-differs")
        if arch:
            s.update({"passthru-gpuarch", "gpu-targets-literal" if literal else "gpu-arch-sm"})
        if isa:
            s.update({"cpu-flags", "passthru-cpuisa"})
        if magma:
            s.add("patch-overlay")
        if cuda in ("13.0", "13.1"):
            s.add("cuda-cmake")
        b.add(RecipeFacts(pkg, "pytorch", "3.13", pin, cuda, arch, isa, tuple(platforms), pname, "2.10.0",
                          darwin=darwin, big_parallel=True, shapes=frozenset(s)), text)

    for isa in ("avx2", "avx512", "armv9"):
        add(_pt_name("3.13", isa=isa), pin=PIN_13_0, cuda=None, arch=None, isa=isa, cuda_overlay=None,
            shapes={"cpu-only"})
    add(_pt_name("3.13", darwin=True), pin=PIN_13_0, cuda=None, arch=None, isa=None, cuda_overlay=None,
        shapes={"darwin"}, darwin=True)
    for arch, isa in (("sm90", "avx512"), ("sm100", "armv9"), ("sm121", "armv9"), ("sm110", "armv9")):
        add(_pt_name("3.13", cuda="13.0", arch=arch, isa=isa), pin=PIN_13_0, cuda="13.0", arch=arch, isa=isa,
            cuda_overlay="cudaPackages_13", shapes={"cuda-alias-major"}, magma=True, literal=(arch == "sm121"))
    for arch, isa in (
        ("sm90", "avx512"),
        ("sm90", "avx512bf16"),
        ("sm100", "armv9"),
        ("sm121", "armv9"),
        ("sm89", "avx2"),
    ):
        add(_pt_name("3.13", cuda="13.1", arch=arch, isa=isa), pin=PIN_13_1, cuda="13.1", arch=arch, isa=isa,
            cuda_overlay="cudaPackages_13_1", shapes={"cuda-attr"}, literal=(arch == "sm121"))
    for arch, isa in (("sm90", "avx512"), ("sm86", "avx2"), ("sm61", "avx")):
        add(_pt_name("3.13", cuda="12.9", arch=arch, isa=isa), pin=PIN_12_X, cuda="12.9", arch=arch, isa=isa,
            cuda_overlay="cudaPackages_12_9", shapes={"cuda-attr"})
    return b


def _branch_29(name: str, python: str, summary: str) -> BranchFacts:
    """A small 2.9 branch on the shared pin PIN_12_X (nixpkgs' own torch; CUDA 12.9 and 12.8)."""
    b = BranchFacts(name, "2.9", python, summary)
    py_attr = "python" + python.replace(".", "") + "Packages"
    pkg = _pt_name(python, isa="avx2")
    b.add(RecipeFacts(pkg, "pytorch", python, PIN_12_X, None, None, "avx2", ("x86_64-linux",), pkg, None,
                      big_parallel=True,
                      shapes=frozenset({"pin-tarball", "cpu-only", "cpu-flags", "passthru-cpuisa", "platforms",
                                        "big-parallel"})),
          pinned_pytorch(package=pkg, pname=pkg, pin=PIN_12_X, python_attr=py_attr, isa="avx2",
                         platforms=["x86_64-linux"]))
    for cuda, arch, isa in (("12.9", "sm90", "avx512"), ("12.9", "sm70", "avx2"), ("12.8", "sm86", "avx2")):
        pkg = _pt_name(python, cuda=cuda, arch=arch, isa=isa)
        b.add(RecipeFacts(pkg, "pytorch", python, PIN_12_X, cuda, arch, isa, (isa_platform(isa),), pkg, None,
                          big_parallel=True,
                          shapes=frozenset({"pin-tarball", "cuda-attr", "gpu-arch-sm", "passthru-gpuarch",
                                            "cpu-flags", "passthru-cpuisa", "platforms", "big-parallel"})),
              pinned_pytorch(package=pkg, pname=pkg, pin=PIN_12_X, python_attr=py_attr,
                             cuda_overlay="cudaPackages_" + cuda.replace(".", "_"), sm=_arch_sm(arch), isa=isa,
                             platforms=[isa_platform(isa)]))
    return b


# ---------------------------------------------------------------------------------------
# The build-torchvision fixture


def _tv_cpu(b: BranchFacts, pin: str, isa: str) -> None:
    """A CPU-only torchvision recipe over nixpkgs' torch, built inline."""
    pkg = _pt_name("3.13", isa=isa, kind="torchvision")
    b.add(RecipeFacts(pkg, "torchvision", "3.13", pin, None, None, isa, (isa_platform(isa),), pkg, None,
                      big_parallel=True, torch_from="inline",
                      shapes=frozenset({"pin-tarball", "inline-torch", "cpu-only", "cpu-flags", "platforms",
                                        "big-parallel"})),
          torchvision_inline(package=pkg, pin=pin, sm=None, isa=isa, inner_pname=None))


def _tv_branch_main() -> BranchFacts:
    """torchvision main: nixpkgs' torch (2.8) built inline without a pname, CUDA from the name only,
    inherited platforms, a darwin recipe taking PyTorch from build-pytorch at a fixed commit."""
    b = BranchFacts("main", "2.8", "3.13", "Stable baseline")
    for arch, isa in (("sm75", "avx2"), ("sm90", "avx512"), ("sm90", "armv8_2")):
        pkg = _pt_name("3.13", cuda="12.8", arch=arch, isa=isa, kind="torchvision")
        b.add(RecipeFacts(pkg, "torchvision", "3.13", PIN_MAIN, "12.8", arch, isa, (isa_platform(isa),), pkg, None,
                          big_parallel=True, torch_from="inline",
                          shapes=frozenset({"pin-tarball", "inline-torch", "cuda-name-only", "gpu-arch-sm", "cpu-flags",
                                            "platforms-inherited", "big-parallel"})),
              torchvision_inline(package=pkg, pin=PIN_MAIN, sm=_arch_sm(arch), isa=isa, inner_pname=None,
                                 platforms_inherited=True))
    _tv_cpu(b, PIN_MAIN, "avx2")
    pkg = _pt_name("3.13", darwin=True, kind="torchvision")
    b.add(
        RecipeFacts(
            pkg,
            "torchvision",
            "3.13",
            PIN_MAIN,
            None,
            None,
            None,
            ("aarch64-darwin",),
            pkg,
            None,
            darwin=True,
            torch_from=f"remote:example-org/build-pytorch@{BUILD_PYTORCH_REV}:pytorch-python313-darwin-mps",
            shapes=frozenset({"pin-tarball", "darwin", "import-remote", "platforms"}),
        ),
        torchvision_darwin_remote(
            package=pkg, pin=PIN_MAIN, rev=BUILD_PYTORCH_REV, pytorch_package="pytorch-python313-darwin-mps"
        ),
    )
    return b


def _tv_branch_210() -> BranchFacts:
    """torchvision pytorch-2.10: inline PyTorch 2.10.0 (source override; its pname comes first in the
    file), CUDA 13.0 by major alias on one pin and 13.1 on another, CPU-only recipes."""
    b = BranchFacts("pytorch-2.10", "2.10.0", "3.13", "Full matrix SM75-SM121, CUDA 13.0 / 13.1")

    def add(cuda, arch, isa, pin, overlay):
        pkg = _pt_name("3.13", cuda=cuda, arch=arch, isa=isa, kind="torchvision")
        inner = f"pytorch210-for-torchvision-{arch or 'cpu'}-{isa}"
        s = {"pin-tarball", "inline-torch", "torch-source", "cpu-flags", "platforms", "big-parallel"}
        if arch:
            s.update({"gpu-arch-sm", "cuda-cmake", "cuda-alias-major" if overlay == "cudaPackages_13" else "cuda-attr"})
        else:
            s.add("cpu-only")
        b.add(RecipeFacts(pkg, "torchvision", "3.13", pin, cuda, arch, isa, (isa_platform(isa),), pkg, "2.10.0",
                          big_parallel=True, torch_from="inline", shapes=frozenset(s)),
              torchvision_inline(package=pkg, pin=pin, sm=_arch_sm(arch) if arch else None, isa=isa, inner_pname=inner,
                                 cuda_overlay=overlay, torch_source="2.10.0", cmake_cuda=cuda))

    for isa in ("avx2", "armv9"):
        add(None, None, isa, PIN_13_0, None)
    for arch, isa in (("sm90", "avx512"), ("sm89", "avx2"), ("sm121", "armv9")):
        add("13.0", arch, isa, PIN_13_0, "cudaPackages_13")
    for arch, isa in (("sm90", "avx512"), ("sm89", "avx2"), ("sm100", "armv9")):
        add("13.1", arch, isa, PIN_13_1, "cudaPackages_13_1")
    return b


def _tv_branch_29() -> BranchFacts:
    """torchvision pytorch-2.9: nixpkgs' torch at the shared 12.x pin, CUDA 12.9 by attribute; a sha256 pin."""
    b = BranchFacts("pytorch-2.9", "2.9", "3.13", "Full coverage, CUDA 12.9")
    for arch, isa, sha in (("sm90", "avx512", True), ("sm75", "avx2", False)):
        pkg = _pt_name("3.13", cuda="12.9", arch=arch, isa=isa, kind="torchvision")
        s = {"pin-tarball", "inline-torch", "cuda-attr", "gpu-arch-sm", "cpu-flags", "platforms", "big-parallel"}
        if sha:
            s.add("pin-sha256")
        b.add(RecipeFacts(pkg, "torchvision", "3.13", PIN_12_X, "12.9", arch, isa, (isa_platform(isa),), pkg, None,
                          big_parallel=True, torch_from="inline", shapes=frozenset(s)),
              torchvision_inline(package=pkg, pin=PIN_12_X, sm=_arch_sm(arch), isa=isa, inner_pname=None,
                                 cuda_overlay="cudaPackages_12_9", sha256=sha))
    _tv_cpu(b, PIN_12_X, "avx512")
    return b


# ---------------------------------------------------------------------------------------
# READMEs: cross-branch tables in the real READMEs' table shapes (own text)


def _cuda_cell(b: BranchFacts) -> str:
    return " / ".join(b.cuda) or "-"


def readme_text(repo_kind: str, branches: list[BranchFacts], current: str, *, stale: bool = False) -> str:
    """A branch README: intro, the branch list, the version matrix with one row per pin group and
    the variant counts. ``stale``: the multi-pin branch's rows are out of date (fewer variants,
    pin "TBD"), as hand-maintained READMEs drift."""
    title = "PyTorch" if repo_kind == "build-pytorch" else "TorchVision"
    lines = [
        f"# {title} builds (fixture)",
        "",
        f"Fixture repository for torchbot's tests. This README belongs to `{current}`.",
        "",
        "## Branches",
        "",
        "| Branch | PyTorch | CUDA | Python | Variants | Key Additions |",
        "|--------|---------|------|--------|----------|---------------|",
    ]
    multi = next((b.name for b in branches if len({r.pin for r in b.recipes.values()}) > 2), None)
    for b in branches:
        count = str(len(b.recipes))
        cuda = _cuda_cell(b)
        if stale and b.name == multi:
            count, cuda = str(len(b.recipes) // 2), " / ".join(b.cuda[:1])
        cells = [f"`{b.name}`", b.pytorch, cuda, b.python, count, b.summary]
        if b.name == current:
            cells = [f"**{c}**" for c in cells]
            cells[0] += " (this branch)"
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Version Matrix",
        "",
        "| Branch | PyTorch | CUDA | Python | Nixpkgs Pin |",
        "|--------|---------|------|--------|-------------|",
    ]
    for b in branches:
        groups: dict[str, list[str]] = {}
        for r in b.recipes.values():
            if r.cuda:
                groups.setdefault(r.pin, [])
                if r.cuda not in groups[r.pin]:
                    groups[r.pin].append(r.cuda)
        if not groups:
            groups = {b.pins[0]: []}
        for pin, cudas in groups.items():
            shown = "TBD" if stale and b.name == multi else (
                "none" if pin == "none" else f"[`{pin[:7]}`](https://github.com/NixOS/nixpkgs/tree/{pin})")
            cells = [f"`{b.name}`", b.pytorch, " / ".join(cudas) or "-", b.python, shown]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"## Variants on `{current}`", "", "| Kind | Count |", "|------|-------|"]
    cur = next(b for b in branches if b.name == current)
    kinds: dict[str, int] = {}
    for r in cur.recipes.values():
        key = "darwin" if r.darwin else ("cpu" if r.gpu_arch is None else f"cuda {r.cuda}")
        kinds[key] = kinds.get(key, 0) + 1
    for k, n in sorted(kinds.items()):
        lines.append(f"| {k} | {n} |")
    lines += ["", "Build one with `flox build <package>` (the file name under `.flox/pkgs/`).", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Building the repositories


_TEMPLATES: dict[tuple[str, bool, bool], Path] = {}  # the first repository of each kind made by this process


def _commit_branches(root: Path, kind: str, branches: list[BranchFacts], stale_readme: bool, with_origin: bool
                     ) -> RepoFixture:
    """The repository (and its bare origin): made once per process with git, then copied (its
    origin's URL set to the copy's): about twenty git commands saved per repository made."""
    key = (kind, stale_readme, with_origin)
    if key not in _TEMPLATES:
        made = Path(tempfile.mkdtemp(prefix="torchbot-fixture-template-"))
        atexit.register(shutil.rmtree, made, True)
        _make(made, kind, branches, stale_readme, with_origin)
        _TEMPLATES[key] = made
    work = root / kind
    shutil.copytree(_TEMPLATES[key] / kind, work, symlinks=True)
    origin = None
    if with_origin:
        origin = root / f"{kind}-origin.git"
        shutil.copytree(_TEMPLATES[key] / origin.name, origin, symlinks=True)
        git(work, "remote", "set-url", "origin", str(origin))
    return RepoFixture(work, origin, kind, {b.name: b for b in branches})


def _make(root: Path, kind: str, branches: list[BranchFacts], stale_readme: bool, with_origin: bool) -> None:
    work = root / kind
    work.mkdir(parents=True)
    git(work, "init", "-q", "-b", "main")
    git(work, "config", "commit.gpgsign", "false")
    (work / ".gitignore").write_text("result*\n")
    git(work, "add", ".gitignore")
    git(work, "commit", "-q", "-m", "Initial commit")
    base = git(work, "rev-parse", "HEAD").strip()
    for b in branches:
        if b.name != "main":
            git(work, "checkout", "-q", "-b", b.name, base)
        else:
            git(work, "checkout", "-q", "main")
        pkgs = work / RECIPES
        if pkgs.exists():
            for f in pkgs.iterdir():
                f.unlink()
        pkgs.mkdir(parents=True, exist_ok=True)
        for name, text in b.texts.items():
            (pkgs / f"{name}.nix").write_text(text)
        (work / "README.md").write_text(readme_text(kind, branches, b.name, stale=stale_readme))
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", f"{b.name}: fixture recipes")
    git(work, "checkout", "-q", "main")
    origin = None
    if with_origin:
        origin = root / f"{kind}-origin.git"
        git(root, "init", "-q", "--bare", str(origin))
        git(origin, "symbolic-ref", "HEAD", "refs/heads/main")
        git(work, "remote", "add", "origin", str(origin))
        git(work, "push", "-q", "origin", "refs/heads/*:refs/heads/*")
        git(work, "fetch", "-q", "origin")


def pytorch_branches() -> list[BranchFacts]:
    """The build-pytorch fixture's branches (main first), with their recipes and facts."""
    return [
        _branch_main(),
        _branch_staging(),
        _branch_210(),
        _branch_29("pytorch-2.9-python311", "3.11", "Python 3.11, pin shared with the vLLM branch"),
        _branch_29("pytorch-2.9-vllm-0.14.0", "3.12", "vLLM 0.14.0 pin-certified"),
    ]


def torchvision_branches() -> list[BranchFacts]:
    return [_tv_branch_main(), _tv_branch_29(), _tv_branch_210()]


def make_pytorch_repo(tmp_path: Path, *, stale_readme: bool = False, with_origin: bool = True) -> RepoFixture:
    """A build-pytorch-shaped repository in ``tmp_path/build-pytorch`` (bare origin next to it)."""
    return _commit_branches(Path(tmp_path), "build-pytorch", pytorch_branches(), stale_readme, with_origin)


def make_torchvision_repo(tmp_path: Path, *, stale_readme: bool = False, with_origin: bool = True) -> RepoFixture:
    """A build-torchvision-shaped repository in ``tmp_path/build-torchvision``."""
    return _commit_branches(Path(tmp_path), "build-torchvision", torchvision_branches(), stale_readme, with_origin)


def make_repos(tmp_path: Path, **kw) -> tuple[RepoFixture, RepoFixture]:
    """Both repositories side by side: (build-pytorch, build-torchvision)."""
    return make_pytorch_repo(tmp_path, **kw), make_torchvision_repo(tmp_path, **kw)
