"""The catalog's data files -> the typed catalog (``config.catalog``): reading the TOML in
``config/data``, microarchitecture flags from archspec, branch tables and their variant
matrices, the torchvision branches, and the compiled cache that spares a process all of it.
May import config only; config.catalog never imports this module."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from config.catalog import (
    DATA_DIR,
    Branch,
    Catalog,
    Companion,
    Correction,
    CpuIsa,
    CpuModel,
    CudaGroup,
    CudaToolkit,
    GpuArch,
    Instance,
    TorchSource,
    Uarch,
    Variant,
)
from config.errors import CatalogError


def _load(name: str, data_dir: Path) -> dict:
    import tomllib  # only when the catalog is built, not when it comes from the compiled cache

    path = data_dir / name
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise CatalogError(f"Catalog file {path} is missing.") from None
    except tomllib.TOMLDecodeError as err:
        raise CatalogError(f"Catalog file {path} is not valid TOML: {err}.") from None


_VENDORS = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}


def _uarch(key: str, raw: dict, relevant: frozenset[str]) -> Uarch:
    """A microarchitecture: flags from archspec's database when it knows it, else from the data."""
    name = raw.get("archspec")
    if name is None:
        try:
            return Uarch(key, raw["vendor"], raw["arch"], raw["name"], frozenset(raw["flags"]) & relevant,
                         raw.get("note", ""), None, raw.get("nearest"))
        except KeyError as err:
            raise CatalogError(
                f"Microarchitecture '{key}' needs `archspec` or `vendor`, `arch` and `flags` ({err})."
            ) from None
    from archspec.cpu import (
        TARGETS,  # imported when the catalog is built, not with this module
    )

    target = TARGETS.get(name)
    if target is None:
        raise CatalogError(f"Microarchitecture '{key}' names '{name}', which archspec does not know.")
    vendor = _VENDORS.get(target.vendor, target.vendor)
    return Uarch(key, vendor, target.family.name, raw["name"], frozenset(target.features) & relevant,
                 raw.get("note", ""), name)


def check_patterns(kind: str, patterns: Iterable[str]) -> None:
    """CatalogError naming the first invalid regular expression."""
    for p in patterns:
        try:
            re.compile(p)
        except re.error as err:
            raise CatalogError(f"{kind} pattern {p!r} in the catalog is invalid: {err}.") from None


def branch_from_dict(name: str, raw: dict) -> Branch:
    """A Branch (without variants) from its TOML table; used by the loader and by tools
    that add branches."""
    try:
        groups = tuple(
            CudaGroup(str(g["version"]), tuple(g["archs"]), g.get("pin")) for g in raw.get("cuda", [])
        )
        companions = []
        for spec in raw.get("companions", []):
            kind, cuda, arch, isa = spec.split(":")
            companions.append(Companion(kind, cuda, arch, isa))
        ts = raw.get("torch_source")
        return Branch(
            name=name,
            pytorch=str(raw["pytorch"]),
            python=str(raw["python"]),
            cudnn=str(raw.get("cudnn", "9.x")),
            min_driver=str(raw.get("min_driver", "")),
            purpose=raw.get("purpose", "python-variant"),
            summary=raw.get("summary", ""),
            pin=raw["pin"],
            cpu_isas=tuple(raw.get("cpu_isas", [])),
            darwin_mps=bool(raw.get("darwin_mps", False)),
            cuda_groups=groups,
            companions=tuple(companions),
            vllm=raw.get("vllm"),
            torch_source=TorchSource(ts["version"], ts["hash"]) if ts else None,
        )
    except (KeyError, ValueError, TypeError) as err:
        raise CatalogError(f"Branch '{name}' in the catalog is malformed: {err!r}.") from None


def branch_to_dict(branch: Branch) -> dict:
    """The TOML table for a branch (inverse of :func:`branch_from_dict`)."""
    raw: dict = {
        "pytorch": branch.pytorch,
        "python": branch.python,
        "cudnn": branch.cudnn,
        "min_driver": branch.min_driver,
        "purpose": branch.purpose,
        "summary": branch.summary,
        "pin": branch.pin,
        "cpu_isas": list(branch.cpu_isas),
        "darwin_mps": branch.darwin_mps,
    }
    if branch.vllm:
        raw["vllm"] = branch.vllm
    if branch.companions:
        raw["companions"] = [f"{c.kind}:{c.cuda}:{c.arch}:{c.isa}" for c in branch.companions]
    if branch.torch_source:
        raw["torch_source"] = {"version": branch.torch_source.version, "hash": branch.torch_source.hash}
    raw["cuda"] = [
        {"version": g.version, "archs": list(g.archs), **({"pin": g.pin} if g.pin else {})}
        for g in branch.cuda_groups
    ]
    return raw


def expand_branches(cat: Catalog, raw_branches: dict[str, dict], where: str) -> list[Branch]:
    """Branches from their TOML tables with their variant matrices; CatalogError for an impossible one."""
    branches = []
    for name, raw in raw_branches.items():
        b = branch_from_dict(name, raw)
        problems = cat.matrix_conflicts(b)
        if problems:
            raise CatalogError(f"Branch '{name}' in {where} is impossible: {'; '.join(problems)}.")
        branches.append(replace(b, variants=cat.expand(b)))
    return branches


def _systems(gpus: dict, named: dict, archs: dict[str, GpuArch], models: dict[str, str]):
    """Superchips of gpus.toml [systems] and the systems sold by name of systems.toml: name ->
    (GPU model, CPU name or None), and name -> the note said with it."""
    systems = {name: (s["gpu"], s["cpu"]) for name, s in gpus.get("systems", {}).items()}
    notes: dict[str, str] = {}
    for s in named.get("system", []):
        try:
            name, gpu = s["name"], s["gpu"]
        except KeyError as err:
            raise CatalogError(f"A system in systems.toml lacks {err}.") from None
        if name in systems:
            raise CatalogError(f"System '{name}' is listed twice (gpus.toml [systems] or systems.toml).")
        if gpu not in models:
            raise CatalogError(f"System '{name}' names GPU '{gpu}', which gpus.toml does not list.")
        systems[name] = (gpu, s.get("cpu"))
        if s.get("note"):
            notes[name] = s["note"]
    return systems, notes


def build_catalog(data_dir: Path = DATA_DIR, extra_branches: dict[str, dict] | None = None) -> Catalog:
    gpus = _load("gpus.toml", data_dir)
    cpus = _load("cpus.toml", data_dir)
    inst = _load("instances.toml", data_dir)
    cuda = _load("cuda.toml", data_dir)
    br = _load("branches.toml", data_dir)

    archs: dict[str, GpuArch] = {}
    models: dict[str, str] = {}
    for key, a in gpus.get("arch", {}).items():
        arch = GpuArch(
            key=key,
            cc=a["cc"],
            family=a.get("family", ""),
            desc=a.get("desc", ""),
            min_cuda=a.get("min_cuda"),
            max_cuda=a.get("max_cuda"),
            min_driver=a.get("min_driver"),
            platforms=tuple(a.get("platforms", ())),
            isas=tuple(a["isas"]) if "isas" in a else None,
            cudnn=a.get("cudnn", True),
            served=a.get("served", True),
            reason=a.get("reason", ""),
            models=tuple(a.get("models", ())),
            corrections=tuple(Correction(**c) for c in a.get("corrections", ())),
        )
        archs[key] = arch
        for m in arch.models:
            if m in models:
                raise CatalogError(f"GPU model '{m}' is listed under both {models[m]} and {key}.")
            models[m] = key
    systems, system_notes = _systems(gpus, _load("systems.toml", data_dir), archs, models)

    isas = {
        key: CpuIsa(
            key=key,
            arch=i["arch"],
            desc=i["desc"],
            rank=i["rank"],
            flags=tuple(i["flags"]),
            requires=frozenset(i["requires"]),
            disables=tuple(i.get("disables", ())),
            workload=i.get("workload"),
            hardware=i.get("hardware", ""),
        )
        for key, i in cpus["isa"].items()
    }
    relevant = frozenset(cpus.get("flags", {}).get("relevant", ()))
    uarchs = {key: _uarch(key, u, relevant) for key, u in cpus["uarch"].items()}
    cpu_models = tuple(CpuModel(m["pattern"], m["name"], m["uarch"]) for m in cpus.get("model", []))
    for m in cpu_models:
        if m.uarch not in uarchs:
            raise CatalogError(f"CPU model '{m.name}' names unknown microarchitecture '{m.uarch}'.")
    # Patterns are compiled where they are used (bot/engine/hardware.py), which reports a bad one with
    # check_patterns: compiling 140 of them here would cost every process that never asks.
    instances = tuple(
        Instance(i["pattern"], i["provider"], i.get("gpu"), i.get("cpu"), tuple(i.get("families", ())),
                 i.get("note", ""))
        for i in inst.get("instance", [])
    )

    toolkits = {v: CudaToolkit(v, c["min_driver"], c["nix_attr"]) for v, c in cuda.items()}

    defaults = br.get("defaults", {})
    raw_branches = dict(br.get("branch", {}))
    raw_branches.update(extra_branches or {})
    cat = Catalog(
        gpu_archs=archs,
        gpu_models=models,
        systems=systems,
        system_notes=system_notes,
        foreign_patterns=tuple(gpus.get("foreign", {}).get("patterns", ())),
        isas=isas,
        implies={k: tuple(v) for k, v in cpus.get("implies", {}).items()},
        uarchs=uarchs,
        cpu_models=cpu_models,
        arm_parts=dict(cpus.get("arm_parts", {})),
        instances=instances,
        cuda=toolkits,
        branches={},
        recommended=defaults.get("recommended", ""),
        all_isas=tuple(defaults.get("all_isas", isas)),
        relevant_flags=relevant | {f for i in isas.values() for f in i.requires},
        providers={k: tuple(v) for k, v in inst.get("providers", {}).items()},
        cpu_brands={w: arch for arch, words in cpus.get("brands", {}).items() for w in words},
        data_dir=data_dir,
    )
    cat = cat.with_branches(expand_branches(cat, raw_branches, "the catalog"), "embedded")
    if cat.recommended not in cat.branches:
        raise CatalogError(f"The recommended branch '{cat.recommended}' is not in the catalog.")
    from config.vision_branches import (
        vision_specs,  # the companion repository's branches, as data
    )

    vision = {s["branch"]["name"]: Branch(**s["branch"], cuda_groups=tuple(CudaGroup(*g) for g in s["groups"]),
                                          variants=tuple(Variant(**v) for v in s["variants"]))
              for s in vision_specs(cat, data_dir)}
    return replace(cat, vision=vision)


@lru_cache(maxsize=4)
def load_catalog(data_dir: Path = DATA_DIR) -> Catalog:
    """The embedded catalog. Branches ``release branch create`` made are not in it: they belong
    to their repository and join the catalog where it is read (config.branch_records). Built
    once per content of the data files and torchbot's code, then read from the compiled cache
    (config.catalog_cache)."""
    from config.catalog_cache import cached, files_key

    return cached("catalog", files_key(data_dir), lambda: build_catalog(data_dir), Catalog)
