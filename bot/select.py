"""The selection rules of the seeds, applied to hardware facts.

GPU -> SM architecture; CPU flags -> the best ISA build the CPU can run (a workload
picks the specialised AVX-512 builds only when the CPU has the instructions); branch: the
recommended one unless the question's constraints (Python, vLLM, PyTorch, CUDA, an
architecture only some branches carry, an old driver) pick another. Every choice is
explained in ``reasons``; every deviation from the seeds' prose in ``warnings``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bot.answer import Answer, Pick
from bot.hardware import Hardware
from config.catalog import Branch, Catalog, GpuArch, Variant, vtuple

GREP_X86 = "grep -o -w -E 'avx2|avx512f|avx512_vnni|avx512_bf16' /proc/cpuinfo | sort -u"
GREP_ARM = "grep -o -w -E 'asimddp|sve|sve2' /proc/cpuinfo | sort -u"


@dataclass(frozen=True)
class CpuPlan:
    arch: str  # x86_64 | aarch64
    order: tuple[str, ...]  # ISAs in preference order, all runnable (or assumed)
    assumed: bool  # CPU unknown: order is a safe assumption


def recommend(cat: Catalog, hw: Hardware, org: str = "your-org") -> Answer:
    ans = Answer(hardware=hw)
    ans.warnings.extend(hw.notes)
    if hw.gpu_arch:
        for c in cat.gpu_archs[hw.gpu_arch].corrections:
            if hw.gpu and fold_eq(c.model, hw.gpu):
                ans.warnings.append(f"{c.says}, but {c.truth}.")
    if hw.cpu_uarch and cat.uarchs[hw.cpu_uarch].note:
        ans.warnings.append(cat.uarchs[hw.cpu_uarch].note)

    if hw.os == "macos":
        return _darwin(cat, hw, ans, org)
    if hw.os == "windows":
        ans.warnings.append(
            "There are no native Windows builds; the Linux variants run under WSL2 (this answer assumes WSL2)."
        )

    if hw.gpu_foreign:
        ans.warnings.append(
            f"'{hw.gpu_foreign}' is not an NVIDIA GPU; this repository builds CUDA variants for NVIDIA GPUs, "
            "CPU-only variants and an Apple MPS variant (no ROCm, oneAPI or Neuron builds)."
        )
        _cpu_alternative(cat, hw, ans, org, "runs on the host CPU only")
        return ans
    if hw.gpu_unknown_cc:
        ans.warnings.append(
            f"Compute capability {hw.gpu_unknown_cc[2:-1]}.{hw.gpu_unknown_cc[-1]} is not a known NVIDIA architecture; "
            "check `nvidia-smi --query-gpu=name,compute_cap --format=csv`."
        )
        return ans
    if hw.gpu_arch:
        arch = cat.gpu_archs[hw.gpu_arch]
        name = hw.gpu or arch.upper
        if not arch.served:
            ans.warnings.append(f"No variant supports the {name} (compute capability {arch.cc}): {arch.reason}")
            _cpu_alternative(cat, hw, ans, org, "CPU-only build; the GPU would not be used")
            return ans
        ans.reasons.append(f"{name}: {arch.family}, compute capability {arch.cc} -> {arch.upper}.")
        return _gpu(cat, hw, arch, ans, org)

    if hw.no_gpu or hw.cpu_flags is not None or hw.cpu:
        ans.reasons.append("No NVIDIA GPU named: a CPU-only build.")
        return _cpu_only(cat, hw, ans, org)

    ans.missing.append(
        "Which NVIDIA GPU, if any (paste `nvidia-smi --query-gpu=name,compute_cap --format=csv`, or say 'no GPU')."
    )
    ans.missing.append("Which CPU (paste `lscpu`, or name the model or cloud instance).")
    return ans


def fold_eq(a: str, b: str) -> bool:
    return a.lower().replace(" ", "") == b.lower().replace(" ", "")


# ---------------------------------------------------------------------------------------
# CPU: which ISA builds can run


def cpu_plan(cat: Catalog, hw: Hardware, ans: Answer, platform_arch: str | None) -> CpuPlan | None:
    arch = hw.cpu_arch or platform_arch or "x86_64"
    isas = [i for i in cat.isas.values() if i.arch == arch]
    if hw.cpu_flags is None:
        base = "avx2" if arch == "x86_64" else "armv8_2"
        if arch == "x86_64":
            ans.warnings.append(
                "CPU not identified: assuming AVX2 (Intel Haswell 2013+ / AMD Zen), which nearly every x86-64 server "
                f"and desktop has. Check with `{GREP_X86}`: avx512f -> the avx512 build; avx512_vnni or avx512_bf16 -> "
                "the INT8 / BF16 builds; no avx2 -> the avx build."
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
            f"This CPU{f' ({hw.cpu})' if hw.cpu else ''} lacks {need}; every {arch} build is compiled for at least that, "
            "so any of them would crash with an illegal instruction."
        )
        return None
    general = sorted((i for i in runnable if i.workload is None), key=lambda i: -i.rank)
    special = [i for i in runnable if i.workload and i.workload == hw.workload]
    order = [i.key for i in special] + [i.key for i in general]
    if hw.workload in ("bf16-training", "int8-inference") and not special:
        want = next(i for i in cat.isas.values() if i.workload == hw.workload)
        ans.warnings.append(
            f"{hw.workload.replace('-', ' ').upper() if hw.workload == 'int8-inference' else 'BF16 training'} asks for the "
            f"{want.key} build, but this CPU does not report {', '.join(sorted(want.requires - flags))}; "
            f"the best build it can run is {order[0]}."
        )
    if special:
        ans.reasons.append(
            f"{hw.workload.replace('-', ' ')} and the CPU reports {', '.join(sorted(special[0].requires - general[0].requires)) if general else special[0].key}: {special[0].key}."
        )
    elif arch == "x86_64":
        ans.reasons.append(f"The CPU{f' ({hw.cpu})' if hw.cpu else ''} can run up to {order[0]}" + _flags_phrase(hw) + ".")
    else:
        top = order[0]
        why = "reports sve2" if top == "armv9" else "has no SVE2" if "sve2" not in flags else ""
        ans.reasons.append(f"The CPU{f' ({hw.cpu})' if hw.cpu else ''} {why}: {top}.")
        if top == "armv8_2" and "sve" in flags:
            ans.reasons.append(
                "It has SVE but not SVE2; the armv9 builds are compiled with -march=armv9-a+sve+sve2 and would hit illegal instructions."
            )
    return CpuPlan(arch, tuple(order), assumed=False)


def _flags_phrase(hw: Hardware) -> str:
    if hw.flags_source == "pasted":
        return " (from the pasted CPU flags)"
    if hw.flags_source == "stated":
        return " (from the flags named in the question)"
    return ""


# ---------------------------------------------------------------------------------------
# Branch choice


def _constraints(cat: Catalog, hw: Hardware, ans: Answer) -> list[Branch]:
    branches = sorted(cat.branches.values(), key=lambda b: (b.rank, tuple(-x for x in vtuple(b.pytorch))))
    out = []
    for b in branches:
        if hw.python and b.python != hw.python:
            continue
        if hw.vllm:
            if not b.vllm:
                continue
            if hw.vllm != "any" and not (b.vllm == hw.vllm or b.vllm.startswith(hw.vllm + ".")):
                continue
        if hw.pytorch and not (b.pytorch == hw.pytorch or b.pytorch.startswith(hw.pytorch + ".")):
            continue
        out.append(b)  # a CUDA request filters GPU variants later; CPU-only answers ignore it
    if not out:
        asked = []
        if hw.python:
            asked.append(f"Python {hw.python}")
        if hw.vllm:
            asked.append("vLLM" + ("" if hw.vllm == "any" else f" {hw.vllm}"))
        if hw.pytorch:
            asked.append(f"PyTorch {hw.pytorch}")
        offered = "; ".join(
            f"{b.name} (PyTorch {b.pytorch}, Python {b.python}{', vLLM ' + b.vllm if b.vllm else ''})"
            for b in cat.branches.values()
        )
        ans.warnings.append(f"No branch offers {' with '.join(asked)}. Branches: {offered}.")
    return out


def _driver_ok(cat: Catalog, hw: Hardware, cuda: str, arch: GpuArch | None) -> bool:
    if not hw.driver:
        return True
    need = [cat.cuda[cuda].min_driver] if cuda in cat.cuda else []
    if arch and arch.min_driver:
        need.append(arch.min_driver)
    return all(vtuple(hw.driver) >= vtuple(n) for n in need)


def _pick(cat: Catalog, b: Branch, v: Variant, org: str, note: str = "") -> Pick:
    return Pick(
        package=v.package,
        branch=b.name,
        gpu_arch=v.gpu_arch,
        cpu_isa=v.cpu_isa,
        cuda=v.cuda,
        python=b.python,
        pytorch=b.pytorch,
        platform=v.platform,
        build_command=f"git checkout {b.name} && flox build {v.package}",
        install_command=f"flox install {org}/{v.package}",
        note=note,
        repository=b.repository,
        kind=v.kind,
    )


def _best_in_branch(
    cat: Catalog, hw: Hardware, b: Branch, arch: GpuArch | None, order: tuple[str, ...]
) -> tuple[Variant | None, list[str]]:
    """Best pytorch variant of a branch for the arch and ISA order; and CUDA versions the
    driver ruled out."""
    ruled_out: list[str] = []
    by_isa: dict[str, list[Variant]] = {}
    for v in b.variants_for(arch.key if arch else None):
        if v.kind != "pytorch" or v.darwin:
            continue
        if arch is None and v.gpu_arch is not None:
            continue
        if arch is not None and v.gpu_arch != arch.key:
            continue
        if v.cpu_isa not in order:
            continue
        if v.cuda and hw.cuda and v.cuda != hw.cuda:
            continue
        if v.cuda and not _driver_ok(cat, hw, v.cuda, arch):
            if v.cuda not in ruled_out:
                ruled_out.append(v.cuda)
            continue
        by_isa.setdefault(v.cpu_isa, []).append(v)
    for isa in order:
        if isa in by_isa:
            return max(by_isa[isa], key=lambda v: vtuple(v.cuda or "0")), ruled_out
    return None, ruled_out


def _choose(
    cat: Catalog, hw: Hardware, ans: Answer, arch: GpuArch | None, plan: CpuPlan, org: str
) -> Answer:
    candidates = _constraints(cat, hw, ans)
    if not candidates:
        return ans
    found: list[tuple[Branch, Variant]] = []
    driver_blocked: list[str] = []
    for b in candidates:
        v, ruled = _best_in_branch(cat, hw, b, arch, plan.order)
        driver_blocked.extend(ruled)
        if v is not None:
            found.append((b, v))
    if not found:
        what = f"{arch.upper}" if arch else "CPU-only"
        where = [b.name for b in candidates if any(v.gpu_arch == (arch.key if arch else None) for v in b.variants)]
        if driver_blocked:
            cudas = sorted(set(driver_blocked), key=vtuple)
            ans.warnings.append(
                f"Driver {hw.driver} is too old for every {what} build that fits (CUDA {', '.join(cudas)}). "
                + _driver_need(cat, arch, cudas)
            )
        elif arch and not where:
            carriers = [b.name for b in cat.branches.values() if any(v.gpu_arch == arch.key for v in b.variants)]
            ans.warnings.append(
                f"No branch that fits the question carries {arch.upper}; it is built on: {', '.join(carriers) or 'no branch'}."
            )
            for name in carriers[:3]:
                b = cat.branches[name]
                v, _ = _best_in_branch(cat, Hardware(query="", driver=hw.driver), b, arch, plan.order)
                if v:
                    ans.alternatives.append(_pick(cat, b, v, org, f"Python {b.python}, PyTorch {b.pytorch}"))
        else:
            ans.warnings.append(f"No {what} build with an ISA this CPU can run ({', '.join(plan.order)}) fits the question.")
        return ans

    best_branch, best = found[0]
    ans.recommendation = _pick(cat, best_branch, best, org)
    ans.reasons.append(_branch_reason(cat, hw, best_branch, arch, candidates))
    if best.cuda:
        cudas = sorted({v.cuda for v in best_branch.variants if v.gpu_arch == best.gpu_arch and v.cuda}, key=vtuple)
        if len(cudas) > 1:
            ans.reasons.append(
                f"{best_branch.name} carries {best.gpu_arch.upper()} for CUDA {', '.join(cudas)}; CUDA {best.cuda} is the newest your setup allows."
            )
        if hw.driver:
            ans.reasons.append(f"Driver {hw.driver} supports CUDA {best.cuda} builds.")
        elif cat.cuda.get(best.cuda):
            need = max(
                (x for x in (cat.cuda[best.cuda].min_driver, arch.min_driver if arch else None) if x), key=vtuple
            )
            ans.reasons.append(f"Needs NVIDIA driver {need} or newer (CUDA {best.cuda}).")
            if vtuple(best_branch.min_driver) and vtuple(best_branch.min_driver) < vtuple(need.split(".")[0]):
                ans.warnings.append(
                    f"The branch README says driver {best_branch.min_driver}+, but code built with CUDA {best.cuda} needs {need} or newer."
                )
    if best.cpu_isa and best.cpu_isa != plan.order[0]:
        ans.warnings.append(
            f"{best_branch.name} has no {arch.upper if arch else 'CPU-only'} {plan.order[0]} build; "
            f"{best.cpu_isa} is the best one there that this CPU can run."
        ) if arch else ans.warnings.append(
            f"{best_branch.name} has no CPU-only {plan.order[0]} build; {best.cpu_isa} is the best one there that this CPU can run."
        )
    if arch and not arch.cudnn:
        ans.warnings.append(f"cuDNN is disabled in {arch.upper} builds: cuDNN 9.11+ dropped support for GPUs below compute capability 7.5.")
    isa = cat.isas.get(best.cpu_isa or "")
    if isa and isa.disables:
        ans.warnings.append(f"The {isa.key} build disables {', '.join(isa.disables)} (they need AVX2); expect slower CPU-side operators.")
    _alternatives(cat, hw, ans, arch, plan, found, org)
    return ans


def _driver_need(cat: Catalog, arch: GpuArch | None, cudas: list[str]) -> str:
    parts = [f"CUDA {v}: {cat.cuda[v].min_driver}+" for v in cudas if v in cat.cuda]
    floor = f" {arch.upper} GPUs need {arch.min_driver}+." if arch and arch.min_driver else ""
    return "Minimum drivers — " + ", ".join(parts) + "." + floor


def _branch_reason(cat: Catalog, hw: Hardware, b: Branch, arch: GpuArch | None, candidates: list[Branch]) -> str:
    head = f"Branch {b.name} (PyTorch {b.pytorch}, Python {b.python}): "
    if b.name == cat.recommended:
        return head + "the recommended general-purpose branch."
    why = []
    if hw.python:
        why.append(f"you asked for Python {hw.python}")
    if hw.vllm:
        why.append(f"certified for vLLM {b.vllm}" if b.vllm else "vLLM")
    if hw.pytorch:
        why.append(f"you asked for PyTorch {hw.pytorch}")
    rec = cat.branches.get(cat.recommended)
    if arch and rec and not any(v.gpu_arch == arch.key for v in rec.variants):
        carriers = [x.name for x in cat.branches.values() if any(v.gpu_arch == arch.key for v in x.variants)]
        why.append(f"{arch.upper} is only built on {', '.join(carriers)}")
    elif hw.driver and rec and rec not in candidates[:1]:
        why.append(f"driver {hw.driver}")
    if not why:
        why.append(b.summary or b.purpose)
    return head + "; ".join(why) + "."


def _alternatives(
    cat: Catalog, hw: Hardware, ans: Answer, arch: GpuArch | None, plan: CpuPlan,
    found: list[tuple[Branch, Variant]], org: str,
) -> None:
    best_branch, best = found[0]
    seen = {best.package + best_branch.name}
    # Other ISAs the CPU may have, when it was not identified.
    if plan.assumed and plan.arch == "x86_64":
        for isa, cond in (("avx512", "if the CPU reports avx512f"), ("avx", "if the CPU lacks avx2")):
            v, _ = _best_in_branch(cat, hw, best_branch, arch, (isa,))
            if v and v.package + best_branch.name not in seen:
                seen.add(v.package + best_branch.name)
                ans.alternatives.append(_pick(cat, best_branch, v, org, cond))
    elif plan.assumed and plan.arch == "aarch64":
        v, _ = _best_in_branch(cat, hw, best_branch, arch, ("armv9",))
        if v:
            seen.add(v.package + best_branch.name)
            ans.alternatives.append(_pick(cat, best_branch, v, org, "if the CPU reports sve2"))
    # The general build next to a specialised one, and a portable build next to AVX-512.
    if not plan.assumed and best.cpu_isa == plan.order[0]:
        for isa, note in (("avx512", "the general FP32 build"), ("avx2", "portable to any AVX2 machine")):
            if isa == best.cpu_isa or isa not in plan.order:
                continue
            v, _ = _best_in_branch(cat, hw, best_branch, arch, (isa,))
            if v and v.package + best_branch.name not in seen:
                seen.add(v.package + best_branch.name)
                ans.alternatives.append(_pick(cat, best_branch, v, org, note))
                break
    # The same hardware on other branches.
    limit = len(ans.alternatives) + 4
    for b, v in found[1:]:
        if len(ans.alternatives) >= limit:
            break
        if v.package + b.name in seen:
            continue
        seen.add(v.package + b.name)
        cuda = f", CUDA {v.cuda}" if v.cuda else ""
        ans.alternatives.append(_pick(cat, b, v, org, f"PyTorch {b.pytorch}{cuda}, {b.purpose}"))


# ---------------------------------------------------------------------------------------
# Paths


def _gpu(cat: Catalog, hw: Hardware, arch: GpuArch, ans: Answer, org: str) -> Answer:
    platform_arch = None
    if arch.platforms and all(p.startswith("aarch64") for p in arch.platforms):
        platform_arch = "aarch64"
        if hw.cpu_arch == "x86_64":
            ans.warnings.append(f"{arch.upper} systems have ARM CPUs; an x86-64 CPU was named, so no variant fits.")
            return ans
    plan = cpu_plan(cat, hw, ans, platform_arch)
    if plan is None:
        return ans
    allowed = set(cat.allowed_isas(arch))
    order = tuple(i for i in plan.order if i in allowed)
    if not order:
        ans.warnings.append(
            f"{arch.upper} builds exist only for {', '.join(sorted(allowed))}; none of them runs on this CPU ({', '.join(plan.order)})."
        )
        return ans
    if order != plan.order and not plan.assumed:
        ans.reasons.append(f"{arch.upper} is built only with {', '.join(sorted(allowed))}: the best of those this CPU runs is {order[0]}.")
    return _choose(cat, hw, ans, arch, CpuPlan(plan.arch, order, plan.assumed), org)


def _cpu_only(cat: Catalog, hw: Hardware, ans: Answer, org: str) -> Answer:
    plan = cpu_plan(cat, hw, ans, None)
    if plan is None:
        return ans
    return _choose(cat, hw, ans, None, plan, org)


def _cpu_alternative(cat: Catalog, hw: Hardware, ans: Answer, org: str, note: str) -> None:
    scratch = Answer(hardware=hw)
    plan = cpu_plan(cat, hw, scratch, None)
    if plan is None:
        return
    _choose(cat, hw, scratch, None, plan, org)
    if scratch.recommendation:
        ans.alternatives.append(replace(scratch.recommendation, note=note))


def _darwin(cat: Catalog, hw: Hardware, ans: Answer, org: str) -> Answer:
    if hw.gpu_arch:
        ans.warnings.append("macOS has no NVIDIA CUDA support; the GPU named is ignored for the macOS build.")
    if hw.apple_silicon is False:
        ans.warnings.append(
            "Intel Macs have no variant: the darwin-mps build targets Apple Silicon (aarch64-darwin) and the CPU builds are Linux-only."
        )
        return ans
    if hw.apple_silicon is None:
        ans.warnings.append("The darwin-mps build needs Apple Silicon (M1-M4) and macOS 12.3+; Intel Macs have no variant.")
    candidates = _constraints(cat, hw, ans)
    for b in candidates:
        v = next((x for x in b.variants if x.darwin), None)
        if v is None:
            continue
        ans.recommendation = _pick(cat, b, v, org)
        ans.reasons.append("macOS on Apple Silicon: the MPS (Metal) build with vecLib BLAS.")
        ans.reasons.append(_branch_reason(cat, hw, b, None, candidates))
        for other in candidates:
            if other is b:
                continue
            w = next((x for x in other.variants if x.darwin), None)
            if w and len(ans.alternatives) < 4:
                ans.alternatives.append(_pick(cat, other, w, org, f"PyTorch {other.pytorch}, Python {other.python}"))
        return ans
    if candidates:
        ans.warnings.append("No branch that fits the question has a darwin-mps build.")
    return ans
