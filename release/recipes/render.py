"""The recipe generator: catalog -> file contents of a build-pytorch branch (pure; no I/O
besides reading the Jinja2 templates under ``release/templates``).

Every value that reaches a Nix file comes from the catalog and is checked against a strict
pattern before rendering, so no free text is ever interpolated into a recipe.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from config.catalog import Branch, Catalog, Variant
from config.errors import CatalogError
from config.naming import parse_package_name, python_tag

TEMPLATES = Path(__file__).parents[1] / "templates"
RECIPES_DIR = ".flox/pkgs"
README = "README.md"
MANIFEST = ".flox/env/manifest.toml"
META_MARK = "torchbot:branch"

# Feature switches a CPU ISA turns off (catalog `disables`) -> environment and cmake flags.
SWITCH_ENV = {
    "FBGEMM": ("USE_FBGEMM",),
    "MKLDNN": ("USE_MKLDNN", "USE_MKLDNN_CBLAS"),
    "NNPACK": ("USE_NNPACK",),
}
SWITCH_CMAKE = {
    "NNPACK": ("-DUSE_NNPACK=OFF",),
}
# AVX-only builds also keep ATen from compiling AVX2/AVX-512 dispatch kernels.
AVX_ONLY_CMAKE = (
    "-DCXX_AVX2_FOUND=FALSE",
    "-DC_AVX2_FOUND=FALSE",
    "-DCXX_AVX512_FOUND=FALSE",
    "-DC_AVX512_FOUND=FALSE",
    "-DCAFFE2_COMPILER_SUPPORTS_AVX512_EXTENSIONS=OFF",
)

_SAFE = {
    "pin": re.compile(r"^[0-9a-f]{40}$"),
    "version": re.compile(r"^[0-9]+(\.[0-9]+){0,3}$"),
    "hash": re.compile(r"^sha256-[A-Za-z0-9+/]{43}=$"),
    "flag": re.compile(r"^-[a-z][a-z0-9=+._\-]*$"),
    "attr": re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$"),
    "key": re.compile(r"^[a-z][a-z0-9_]*$"),
    "cc": re.compile(r"^[0-9]{1,2}\.[0-9]{1,2}$"),
    "platform": re.compile(r"^(x86_64|aarch64)-(linux|darwin)$"),
    # descriptions from the catalog: words, numbers and light punctuation only
    "text": re.compile(r"^[A-Za-z0-9 .,:;()/+_\-]*$"),
    "driver": re.compile(r"^[0-9.]*$"),
    "cudnn": re.compile(r"^[0-9A-Za-z.]*$"),
}


def _check(kind: str, value, what: str) -> str:
    if value is None or not isinstance(value, str) or not _SAFE[kind].match(value):
        raise CatalogError(f"The catalog value for {what} ({value!r}) cannot be written into a recipe.")
    return value


@lru_cache(maxsize=1)
def _env():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=False,
        keep_trailing_newline=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
        lstrip_blocks=False,
    )


def _template(name: str):
    return _env().get_template(name)


def _variant_of(branch: Branch, variant: Variant | str) -> Variant:
    if isinstance(variant, str):
        try:
            return branch.by_package[variant]
        except KeyError:
            raise CatalogError(f"Branch '{branch.name}' has no package '{variant}'.") from None
    return variant


def recipe_context(catalog: Catalog, branch: Branch, v: Variant) -> dict:
    """The validated values one recipe template sees."""
    parsed = parse_package_name(v.package)
    if parsed is None or parsed.kind != v.kind or parsed.python != v.python:
        raise CatalogError(f"Package name '{v.package}' does not follow the naming convention.")
    _check("version", v.python, f"{v.package} python")
    pin = _check("pin", v.pin or branch.pin_for(v.cuda), f"{v.package} nixpkgs pin")
    _check("platform", v.platform, f"{v.package} platform")
    ctx: dict = {
        "v": v,
        "pin": pin,
        "pytorch": _check("version", branch.pytorch, f"{branch.name} PyTorch version"),
        "py_attr": _check("attr", python_tag(v.python) + "Packages", f"{v.package} python set"),
        "cuda": None,
        "arch": None,
        "isa": None,
        "torch_source": None,
        "cmake_flags": [],
        "disabled_env": [],
        "kind_title": v.kind.capitalize(),
    }
    if branch.torch_source and v.kind == "pytorch":
        _check("version", branch.torch_source.version, f"{branch.name} torch source version")
        _check("hash", branch.torch_source.hash, f"{branch.name} torch source hash")
        ctx["torch_source"] = branch.torch_source
    if v.cuda:
        tk = catalog.cuda.get(v.cuda)
        if tk is None:
            raise CatalogError(f"{v.package}: CUDA {v.cuda} is not a known toolkit.")
        _check("attr", tk.nix_attr, f"CUDA {v.cuda} package set")
        _check("driver", tk.min_driver, f"CUDA {v.cuda} minimum driver")
        ctx["cuda"] = tk
    if v.gpu_arch:
        arch = catalog.arch(v.gpu_arch)
        _check("key", arch.key, "GPU architecture")
        _check("cc", arch.cc, f"{arch.key} compute capability")
        _check("text", arch.desc, f"{arch.key} description")
        _check("text", arch.family, f"{arch.key} family")
        ctx["arch"] = arch
    if v.cpu_isa:
        isa = catalog.isa(v.cpu_isa)
        _check("key", isa.key, "CPU ISA")
        _check("text", isa.desc, f"{isa.key} description")
        _check("text", isa.hardware, f"{isa.key} hardware")
        for flag in isa.flags:
            _check("flag", flag, f"{isa.key} compiler flag")
        if isa.platform != v.platform:
            raise CatalogError(f"{v.package}: ISA {isa.key} builds for {isa.platform}, not {v.platform}.")
        ctx["isa"] = isa
        cmake: list[str] = []
        env: list[str] = []
        for switch in isa.disables:
            if switch not in SWITCH_ENV:
                raise CatalogError(f"{isa.key}: unknown feature switch '{switch}'.")
            env.extend(SWITCH_ENV[switch])
            cmake.extend(SWITCH_CMAKE.get(switch, ()))
        if isa.disables:  # an ISA below AVX2 (the AVX-only build)
            cmake = list(AVX_ONLY_CMAKE) + cmake
        ctx["cmake_flags"] = cmake
        ctx["disabled_env"] = env
    return ctx


def _recipe_template(v: Variant) -> str:
    if v.is_companion:
        return "recipes/companion.nix.j2"
    if v.darwin:
        return "recipes/darwin.nix.j2"
    if v.gpu_arch:
        return "recipes/gpu.nix.j2"
    return "recipes/cpu.nix.j2"


def render_recipe(catalog: Catalog, branch: Branch | str, variant: Variant | str) -> str:
    """The Nix recipe of one variant of a branch."""
    if isinstance(branch, str):
        branch = catalog.branch(branch)
    v = _variant_of(branch, variant)
    if v.is_companion and (not v.gpu_arch or not v.cpu_isa):
        raise CatalogError(f"Companion '{v.package}' needs a GPU architecture and a CPU ISA.")
    return _template(_recipe_template(v)).render(**recipe_context(catalog, branch, v)) + "\n"


def recipe_path(package: str) -> str:
    return f"{RECIPES_DIR}/{package}.nix"


def branch_meta(branch: Branch) -> dict:
    """The branch facts recipes do not carry (written into the README, read back by the
    reader). The pin is not among them: it lives only in the recipes' fetchTarball URL."""
    return {
        "name": branch.name,
        "pytorch": branch.pytorch,
        "cudnn": branch.cudnn,
        "min_driver": branch.min_driver,
        "purpose": branch.purpose,
        "summary": branch.summary,
        "vllm": branch.vllm,
        "order": {
            "cpu_isas": list(branch.cpu_isas),
            "cuda": [{"version": g.version, "archs": list(g.archs)} for g in branch.cuda_groups],
            "companions": [f"{c.kind}:{c.cuda}:{c.arch}:{c.isa}" for c in branch.companions],
        },
    }


def _rows(catalog: Catalog, branch: Branch) -> list[dict]:
    rows = []
    for v in branch.variants:
        if v.darwin:
            gpu = "Apple MPS"
        elif v.gpu_arch:
            arch = catalog.arch(v.gpu_arch)
            gpu = f"{arch.upper} ({arch.desc})"
        else:
            gpu = "none (CPU-only)"
        rows.append(
            {
                "package": v.package,
                "kind": v.kind,
                "gpu": gpu,
                "cuda": v.cuda or "-",
                "cpu": catalog.isa(v.cpu_isa).desc if v.cpu_isa else "Apple Silicon",
                "platform": v.platform,
            }
        )
    return rows


def render_readme(catalog: Catalog, branch: Branch) -> str:
    meta = json.dumps(branch_meta(branch), sort_keys=True, ensure_ascii=True)
    if "--" in meta or "\n" in branch.summary:
        raise CatalogError(f"Branch '{branch.name}': its summary cannot be written into the README.")
    return (
        _template("README.md.j2").render(
            b=branch,
            meta_json=meta,
            rows=_rows(catalog, branch),
            others=list(catalog.branches.values())
            if branch.name in catalog.branches
            else [*catalog.branches.values(), branch],
            cuda_versions=" / ".join(branch.cuda_versions),
        )
        + "\n"
    )


def render_manifest(catalog: Catalog, branch: Branch) -> str:
    systems = sorted({v.platform for v in branch.variants})
    return _template("manifest.toml.j2").render(
        b=branch,
        py_tag=python_tag(branch.python) + "Full",
        count=len(branch.variants),
        systems=systems,
    ) + "\n"


def render_branch(catalog: Catalog, branch: Branch | str) -> dict[str, str]:
    """Every file torchbot writes on a branch: repo-relative path -> content."""
    if isinstance(branch, str):
        branch = catalog.branch(branch)
    problems = catalog.matrix_conflicts(branch)
    if problems:
        raise CatalogError(f"Branch '{branch.name}' is impossible: {'; '.join(problems)}.")
    variants = branch.variants or catalog.expand(branch)
    if not branch.variants:
        from dataclasses import replace

        branch = replace(branch, variants=variants)
    files = {recipe_path(v.package): render_recipe(catalog, branch, v) for v in variants}
    files[README] = render_readme(catalog, branch)
    files[MANIFEST] = render_manifest(catalog, branch)
    return files


def render_all(catalog: Catalog) -> dict[str, dict[str, str]]:
    return {name: render_branch(catalog, b) for name, b in catalog.branches.items()}
