"""The selection rules of the seeds, applied to hardware facts.

GPU -> SM architecture; CPU flags -> the best ISA build the CPU can run (a workload
picks the specialised AVX-512 builds only when the CPU has the instructions); branch: the
recommended one unless the question's constraints (Python, vLLM, PyTorch, CUDA, an
architecture only some branches carry, an old driver) pick another. Every choice is
explained in ``reasons``; every deviation from the seeds' prose in ``warnings``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bot.engine.answer import Answer, Pick
from bot.engine.hardware import GpuSeen, Hardware
from config.catalog import Branch, Catalog, GpuArch, Variant, vtuple

GREP_X86 = "grep -o -w -E 'avx2|avx512f|avx512_vnni|avx512_bf16' /proc/cpuinfo | sort -u"
GREP_ARM = "grep -o -w -E 'asimddp|sve|sve2' /proc/cpuinfo | sort -u"
ASK_GPU = "`nvidia-smi -L` (or `nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv`)"
ASK_CPU = "`lscpu` (or `grep -m1 -E 'model name|flags|Features|CPU part' /proc/cpuinfo`)"


@dataclass(frozen=True)
class CpuPlan:
    arch: str  # x86_64 | aarch64
    order: tuple[str, ...]  # ISAs in preference order, all runnable (or assumed)
    assumed: bool  # CPU unknown: order is a safe assumption


def recommend(cat: Catalog, hw: Hardware, org: str = "your-org") -> Answer:
    ans = Answer(hardware=hw)
    ans.warnings.extend(hw.notes)
    for g in hw.gpus or [GpuSeen(hw.gpu or "", hw.gpu_arch)]:
        if g.arch in cat.gpu_archs:
            for c in cat.gpu_archs[g.arch].corrections:
                if g.name and fold_eq(c.model, g.name):
                    ans.warnings.append(f"{c.says}, but {c.truth}.")
    if hw.cpu_uarch and cat.uarchs[hw.cpu_uarch].note:
        ans.warnings.append(cat.uarchs[hw.cpu_uarch].note)
    if not _say_unknown(hw, ans):
        return ans

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
    if len({g.arch for g in hw.gpus if g.arch}) > 1:
        return _mixed(cat, hw, ans, org)
    if hw.gpu_arch:
        arch = cat.gpu_archs[hw.gpu_arch]
        name = hw.gpu or arch.upper
        if not arch.served:
            ans.warnings.append(f"No variant supports the {name} (compute capability {arch.cc}): {arch.reason}")
            _cpu_alternative(cat, hw, ans, org, "CPU-only build; the GPU would not be used")
            return ans
        ans.reasons.append(f"{name}: {arch.family}, compute capability {arch.cc} -> {arch.upper}.")
        return _gpu(cat, hw, arch, ans, org)

    if hw.gpu_unnamed and not hw.no_gpu:
        ans.warnings.append("The question mentions a GPU but not which one, so I won't answer CPU-only for it.")
        ans.missing.append(f"Which NVIDIA GPU (paste {ASK_GPU}), or say 'no GPU' for a CPU-only build.")
        return ans
    if hw.no_gpu or hw.cpu_flags is not None or hw.cpu:
        if hw.instance_gpu_less:
            ans.reasons.append(f"{hw.instance} ({hw.instance_provider}) has no GPU: a CPU-only build.")
        else:
            ans.reasons.append("No NVIDIA GPU named: a CPU-only build.")
        if hw.cuda:
            ans.warnings.append(f"CPU-only builds have no CUDA; the CUDA {hw.cuda} asked for does not apply to them.")
        return _cpu_only(cat, hw, ans, org)
    if hw.cpu_arch == "aarch64":
        ans.missing.append(
            f"Which NVIDIA GPU, if any (paste {ASK_GPU}, or say 'no GPU'); the CPU is ARM."
        )
        return ans

    ans.missing.append(
        f"Which NVIDIA GPU, if any (paste {ASK_GPU}, or say 'no GPU')."
    )
    ans.missing.append(f"Which CPU (paste {ASK_CPU}, or name the model or cloud instance).")
    return ans


def fold_eq(a: str, b: str) -> bool:
    return a.lower().replace(" ", "") == b.lower().replace(" ", "")


def _quoted(names: list[str]) -> str:
    return ", ".join(f"'{n}'" for n in names)


def _say_unknown(hw: Hardware, ans: Answer) -> bool:
    """Say what was named but is not known, and ask; False when no answer can be given
    without guessing (an unknown GPU and no known one, or an unknown instance whose CPU may
    be ARM). Never drops the name silently, never answers CPU-only for an unknown GPU."""
    if hw.unknown_gpu:
        names = ", ".join(
            f"'{n}'" + (f" (the {hw.gpu_suggestions[n]}?)" if n in hw.gpu_suggestions else "") for n in hw.unknown_gpu
        )
        if hw.gpu_arch is None and hw.gpu_foreign is None:
            ans.warnings.append(
                f"I don't know the GPU {names}, so I won't guess its architecture or answer CPU-only for it."
            )
            ans.missing.append(f"Which GPU {names} is: paste {ASK_GPU}, or give its compute capability.")
            return False
        ans.warnings.append(
            f"I don't know the GPU {names}; this answer is for the {hw.gpu or hw.gpu_foreign} only. "
            f"If {names} is in this machine, paste {ASK_GPU}."
        )
    if hw.unknown_instance:
        if hw.cpu_flags is None and not hw.cpu and hw.cpu_arch is None:
            ans.warnings.append(
                f"I don't know the instance type '{hw.unknown_instance}': its CPU may be x86-64 or ARM, "
                "so I won't guess a build."
            )
            ans.missing.append(f"Run {ASK_CPU} and {ASK_GPU} on it and paste the output, or name its CPU and GPU.")
            return False
        ans.warnings.append(
            f"I don't know the instance type '{hw.unknown_instance}'; this answer follows the hardware named."
        )
    if hw.unknown_cpu:
        names = _quoted(hw.unknown_cpu)
        if hw.cpu_uarch:
            ans.warnings.append(f"I don't know the CPU {names}; this answer is for the {hw.cpu}.")
        else:
            arch = {"aarch64": "an ARM (aarch64) CPU", "x86_64": "an x86-64 CPU"}.get(hw.cpu_arch or "", "a CPU")
            ans.warnings.append(
                f"I don't know the CPU {names}; this answer assumes {arch} of unknown generation. "
                f"Paste {ASK_CPU} for an exact answer."
            )
    return True


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


def _min_driver(cat: Catalog, cuda: str, arch: GpuArch | None) -> str | None:
    """The oldest driver that runs code built with ``cuda`` on ``arch``."""
    needs = [x for x in (cat.cuda[cuda].min_driver if cuda in cat.cuda else None, arch.min_driver if arch else None) if x]
    return max(needs, key=vtuple) if needs else None


def driver_reason(cat: Catalog, hw: Hardware, cuda: str, gpu_arch: str | None) -> str | None:
    """The driver line of an answer for a build with ``cuda`` (shared with companion answers)."""
    if hw.driver:
        return f"Driver {hw.driver} supports CUDA {cuda} builds."
    need = _min_driver(cat, cuda, cat.gpu_archs.get(gpu_arch) if gpu_arch else None)
    return f"Needs NVIDIA driver {need} or newer (CUDA {cuda})." if need else None


def _driver_ok(cat: Catalog, hw: Hardware, cuda: str, arch: GpuArch | None) -> bool:
    if not hw.driver:
        return True
    need = [cat.cuda[cuda].min_driver] if cuda in cat.cuda else []
    if arch and arch.min_driver:
        need.append(arch.min_driver)
    return all(vtuple(hw.driver) >= vtuple(n) for n in need)


def cuda_matches(have: str, asked: str) -> bool:
    """A request for "13.1" matches 13.1 only; a bare major ("13") any 13.x."""
    return have == asked or ("." not in asked and have.split(".")[0] == asked)


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
    for v in b.pytorch_by_arch.get(arch.key if arch else None, ()):
        if v.cpu_isa not in order:
            continue
        if v.cuda and hw.cuda and not cuda_matches(v.cuda, hw.cuda):
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
        held = _cuda_held(candidates, arch) if hw.cuda and arch else {}
        if hw.cuda and arch and held and not any(cuda_matches(c, hw.cuda) for c in held):
            ans.warnings.append(
                f"No branch that fits the question holds {arch.upper} builds for CUDA {hw.cuda}. "
                f"{arch.upper} is built for: "
                + "; ".join(
                    f"CUDA {c} on {', '.join(bs) if len(bs) <= 2 else f'{len(bs)} branches'}"
                    for c, bs in sorted(held.items(), key=lambda x: vtuple(x[0]))
                )
                + "."
            )
        elif driver_blocked:
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
    ans.hardware_reasons, ans.hardware_warnings = len(ans.reasons), len(ans.warnings)
    ans.reasons.append(_branch_reason(cat, hw, best_branch, arch, candidates))
    if best.cuda:
        cudas = sorted({v.cuda for v in best_branch.variants if v.gpu_arch == best.gpu_arch and v.cuda}, key=vtuple)
        if hw.cuda:
            ans.reasons.append(f"CUDA {best.cuda}: you asked for CUDA {hw.cuda} ({best_branch.name} carries {', '.join(cudas)}).")
        elif len(cudas) > 1:
            ans.reasons.append(
                f"{best_branch.name} carries {best.gpu_arch.upper()} for CUDA {', '.join(cudas)}; CUDA {best.cuda} is the newest your setup allows."
            )
        reason = driver_reason(cat, hw, best.cuda, best.gpu_arch)
        if reason:
            ans.reasons.append(reason)
        if not hw.driver and (need := _min_driver(cat, best.cuda, arch)):
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


def _cuda_held(branches: list[Branch], arch: GpuArch) -> dict[str, list[str]]:
    """CUDA version -> branches holding builds of this architecture for it."""
    held: dict[str, list[str]] = {}
    for b in branches:
        for g in b.cuda_groups:
            if arch.key in g.archs and b.name not in held.setdefault(g.version, []):
                held[g.version].append(b.name)
    return held


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
    if hw.cuda and arch and rec and not any(
        v.cuda and v.gpu_arch == arch.key and cuda_matches(v.cuda, hw.cuda) for v in rec.variants
    ):
        why.append(f"you asked for CUDA {hw.cuda}")
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


def _mixed(cat: Catalog, hw: Hardware, ans: Answer, org: str) -> Answer:
    """GPUs of different architectures in one question: one answer per architecture. The
    recommendation is for the lowest compute capability; when every GPU shares its major
    version that build runs on all of them (a GPU runs code built for a lower minor version of
    its own major), otherwise no single build does and each architecture gets its own."""
    by_arch: dict[str, list[GpuSeen]] = {}
    for g in hw.gpus:
        if g.arch:
            by_arch.setdefault(g.arch, []).append(g)
    for key in list(by_arch):
        arch = cat.gpu_archs[key]
        if not arch.served:
            names = ", ".join(g.name for g in by_arch.pop(key))
            ans.warnings.append(f"No variant supports the {names} (compute capability {arch.cc}): {arch.reason}")
    if not by_arch:
        _cpu_alternative(cat, hw, ans, org, "CPU-only build; the GPUs would not be used")
        return ans
    keys = sorted(by_arch, key=lambda k: vtuple(cat.gpu_archs[k].cc))
    low = cat.gpu_archs[keys[0]]

    def one(key: str) -> Answer:
        gpus = by_arch[key]
        sub = replace(hw, gpu=gpus[0].name, gpu_arch=key, gpu_count=gpus[0].count, gpus=gpus, notes=[])
        part = Answer(hardware=sub)
        arch = cat.gpu_archs[key]
        part.reasons.append(f"{', '.join(g.name for g in gpus)}: {arch.family}, compute capability {arch.cc} -> {arch.upper}.")
        return _gpu(cat, sub, arch, part, org)

    first = one(keys[0])
    ans.recommendation = first.recommendation
    ans.reasons.extend(first.reasons)
    ans.warnings.extend(w for w in first.warnings if w not in ans.warnings)
    ans.missing.extend(first.missing)
    majors = {cat.gpu_archs[k].cc.split(".")[0] for k in keys}
    names = {k: ", ".join(g.name for g in by_arch[k]) for k in keys}
    if len(keys) == 1:
        pass
    elif len(majors) == 1:
        ans.reasons.append(
            f"One build for all of them: {low.upper} code runs on "
            + ", ".join(f"the {names[k]} ({cat.gpu_archs[k].cc})" for k in keys[1:])
            + f" too, since they share compute capability major {low.cc.split('.')[0]}; "
            "the other architectures' builds are listed for a box with only those GPUs."
        )
    else:
        ans.warnings.append(
            "No single variant runs on all of these GPUs: "
            + ", ".join(f"{names[k]} is {cat.gpu_archs[k].upper}" for k in keys)
            + ". Builds target one architecture and a GPU of another major version cannot run them; "
            "use one environment per GPU type (choose the GPUs with CUDA_VISIBLE_DEVICES). "
            f"The recommendation is for the {names[keys[0]]}; the alternatives give one build per other architecture."
        )
    picks = []
    for k in keys[1:]:
        other = one(k)
        if other.recommendation:
            r = other.recommendation
            picks.append(replace(r, note=f"for the {names[k]} ({cat.gpu_archs[k].upper})"))
        else:
            ans.warnings.extend(f"{names[k]}: {w}" for w in other.warnings if w not in ans.warnings)
    ans.alternatives = picks + first.alternatives
    return ans


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
