"""The embedded build-torchvision branches (``config/data/torchvision.toml``): the companion
repository's branches as data, so "which torchvision for ..." is answered without a checkout.
``vision_specs`` turns the file into the fields of each branch and of its variants, which
``config.catalog_data.build_catalog`` builds them from; the real branches replace them when a
build-torchvision repository is configured. Imports nothing of torchbot but ``config.errors``
and ``config.naming`` (the catalog imports this module, not the other way round)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from config.errors import CatalogError
from config.naming import package_name


def vision_specs(cat: Any, data_dir: Path) -> list[dict[str, Any]]:
    """Per branch of the data: {"branch": Branch fields, "groups": CudaGroup fields,
    "variants": Variant fields}, the GPU builds of each CUDA group being every arch x the
    group's ISAs that arch allows (``cat.allowed_isas``), plus its ``extra`` builds."""
    path = data_dir / "torchvision.toml"
    if not path.is_file():
        return []
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise CatalogError(f"Catalog file {path} is not valid TOML: {err}.") from None
    out = []
    for name, b in raw.get("branch", {}).items():
        try:
            out.append(_spec(cat, name, b))
        except (KeyError, ValueError, TypeError) as err:
            raise CatalogError(f"torchvision branch '{name}' in {path} is malformed: {err!r}.") from None
    return out


def _variant(cat: Any, py: str, cuda: str | None, arch: str | None, isa: str | None, pin: str) -> dict[str, Any]:
    darwin = isa is None
    return {"package": package_name("torchvision", py, cuda=cuda, gpu_arch=arch, cpu_isa=isa, darwin=darwin),
            "kind": "torchvision", "python": py, "cuda": cuda, "gpu_arch": arch, "cpu_isa": isa,
            "platform": "aarch64-darwin" if darwin else cat.isas[isa].platform, "darwin": darwin, "pin": pin,
            "torch_from": "inline"}


def _spec(cat: Any, name: str, raw: dict) -> dict[str, Any]:
    py, pin, partner_name = str(raw["python"]), raw["pin"], raw["pairs_with"]
    groups = [(str(g["version"]), tuple(g["archs"]), g.get("pin")) for g in raw.get("cuda", [])]
    variants = [_variant(cat, py, None, None, isa, pin) for isa in raw.get("cpu_isas", [])]
    if raw.get("darwin_mps"):
        variants.append(_variant(cat, py, None, None, None, pin))
    for (version, archs, group_pin), spec in zip(groups, raw.get("cuda", []), strict=True):
        wanted = set(spec.get("isas", cat.all_isas))
        builds = [(a, i) for a in archs for i in cat.allowed_isas(cat.gpu_archs[a]) if i in wanted]
        builds += [tuple(x.split("-", 1)) for x in spec.get("extra", [])]
        variants += [_variant(cat, py, version, a, i, group_pin or pin) for a, i in dict.fromkeys(builds)]
    pairing = f"pairs with {partner_name}: PyTorch {raw['pytorch']}, CUDA {' / '.join(g[0] for g in groups)}"
    partner = cat.branches.get(partner_name)
    if partner is not None and not {pin, *(g[2] for g in groups if g[2])} & set(partner.pins):
        pairing += f"; nixpkgs {pin[:7]} is not on {partner_name}"
    branch = {"name": name, "pytorch": str(raw["pytorch"]), "python": py, "cudnn": "9.x", "min_driver": "",
              "purpose": raw.get("purpose", "python-variant"), "summary": "", "pin": pin,
              "cpu_isas": tuple(raw.get("cpu_isas", [])), "darwin_mps": bool(raw.get("darwin_mps")),
              "kind": "build-torchvision", "pairs_with": partner_name, "pairing": pairing}
    return {"branch": branch, "groups": groups, "variants": variants}
