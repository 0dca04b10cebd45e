"""Which CPU ISA builds a CPU can run, best first: the build's compile flags decide what the CPU
must report (pasted, from its model, or stated); an unknown x86 CPU gets the avx2 guess with the
command to check, an unknown ARM one armv8_2. Pure; may import config and bot.engine.hardware."""

from __future__ import annotations

from dataclasses import dataclass

from bot.engine.answer import Answer
from bot.engine.hardware import Hardware
from config.catalog import Catalog

GREP_X86 = "grep -o -w -E 'avx2|avx512f|avx512_vnni|avx512_bf16' /proc/cpuinfo | sort -u"
GREP_ARM = "grep -o -w -E 'asimddp|sve|sve2' /proc/cpuinfo | sort -u"


@dataclass(frozen=True)
class CpuPlan:
    """The CPU instruction set chosen for the question, and why."""

    arch: str  # x86_64 | aarch64
    order: tuple[str, ...]  # ISAs in preference order, all runnable (or assumed)
    assumed: bool  # CPU unknown: order is a safe assumption


def cpu_plan(cat: Catalog, hw: Hardware, ans: Answer, platform_arch: str | None) -> CpuPlan | None:
    arch = hw.cpu_arch or platform_arch or "x86_64"
    isas = [i for i in cat.isas.values() if i.arch == arch]
    if hw.cpu_flags is None:
        base = _guess(cat, hw, arch)
        if base is None:
            lacks = ", ".join(sorted(hw.denied_flags & cat.isas[_GUESS[arch][-1]].requires))
            ans.warnings.append(
                f"The question says the CPU has no {lacks}; every {arch} build here is compiled for at least that, "
                "so none of them would run on it."
            )
            return None
        if base == "avx":
            lacks = ", ".join(sorted(hw.denied_flags & cat.isas["avx2"].requires))
            ans.warnings.append(
                f"CPU not identified, and the question says it has no {lacks}: assuming AVX (Intel Sandy Bridge+ / "
                f"AMD Bulldozer+). Check with `{GREP_X86}`: no avx at all -> no build here runs on it."
            )
        elif arch == "x86_64":
            ans.warnings.append(
                "CPU not identified: assuming AVX2 (Intel Haswell 2013+ / AMD Zen), which nearly every x86-64 server "
                f"and desktop has. Check with `{GREP_X86}`: avx512f -> the avx512 build; avx512_vnni or avx512_bf16 -> "
                "the INT8 / BF16 builds; no avx2 -> the avx build; no avx at all (low-power Celeron, Pentium Silver, "
                "Atom) -> no build here runs on it."
            )
        else:
            ans.warnings.append(
                "ARM CPU not identified: assuming ARMv8.2 (FP16 + dot product, Graviton2/Neoverse N1 and later). "
                f"Check with `{GREP_ARM}`: sve2 -> the armv9 build; no asimddp -> no ARM variant runs."
            )
        return CpuPlan(arch, (base,), assumed=True)

    flags = hw.cpu_flags
    runnable = [i for i in isas if i.requires <= flags]
    if not runnable:
        need = "AVX" if arch == "x86_64" else "ARMv8.2 FP16 and dot-product instructions"
        ans.warnings.append(
            f"This CPU{f' ({hw.cpu})' if hw.cpu else ''} lacks {need}; every {arch} build here, CPU-only or CUDA, is "
            "compiled for at least that, so any of them would stop with an illegal instruction. What runs on it is a "
            f"PyTorch compiled for baseline {arch} that picks vector kernels at run time, such as nixpkgs' own "
            "`python3Packages.torch`."
        )
        return None
    general = sorted((i for i in runnable if i.workload is None), key=lambda i: -i.rank)
    special = [i for i in runnable if i.workload and i.workload == hw.workload]
    order = [i.key for i in special] + [i.key for i in general]
    if hw.workload in ("bf16-training", "int8-inference") and not special:
        want = next(i for i in cat.isas.values() if i.workload == hw.workload)
        ans.warnings.append(
            f"{hw.workload.replace('-', ' ').upper() if hw.workload == 'int8-inference' else 'BF16 training'} asks for "
            f"the "
            f"{want.key} build, but this CPU does not report {', '.join(sorted(want.requires - flags))}; "
            f"the best build it can run is {order[0]}."
        )
    if special:
        reports = ", ".join(sorted(special[0].requires - general[0].requires)) if general else special[0].key
        ans.reasons.append(f"{hw.workload.replace('-', ' ')} and the CPU reports {reports}: {special[0].key}.")
    elif arch == "x86_64":
        ans.reasons.append(
            f"The CPU{f' ({hw.cpu})' if hw.cpu else ''} can run up to {order[0]}" + _flags_phrase(hw) + "."
        )
    else:
        top = order[0]
        why = "reports sve2" if top == "armv9" else "has no SVE2" if "sve2" not in flags else ""
        ans.reasons.append(f"The CPU{f' ({hw.cpu})' if hw.cpu else ''} {why}: {top}.")
        if top == "armv8_2" and "sve" in flags:
            ans.reasons.append(
                "It has SVE but not SVE2; the armv9 builds are compiled with -march=armv9-a+sve+sve2 and would hit "
                "illegal instructions."
            )
    return CpuPlan(arch, tuple(order), assumed=False)


_GUESS = {"x86_64": ("avx2", "avx"), "aarch64": ("armv8_2",)}  # for an unknown CPU, most likely first


def _guess(cat: Catalog, hw: Hardware, arch: str) -> str | None:
    """The build assumed for a CPU not identified: the most likely one whose instructions the
    question does not say the CPU lacks ("no avx2": the avx build)."""
    return next((k for k in _GUESS[arch] if not (cat.isas[k].requires & hw.denied_flags)), None)


def _flags_phrase(hw: Hardware) -> str:
    if hw.flags_source == "pasted":
        return f" (from the CPU flags in {hw.flags_from})" if hw.flags_from else " (from the pasted CPU flags)"
    if hw.flags_source == "stated":
        return " (from the flags named in the question)"
    return ""
