"""The selection rules of the seeds, applied to hardware facts.

GPU -> SM architecture; CPU flags -> the best ISA build the CPU can run (a workload
picks the specialised AVX-512 builds only when the CPU has the instructions); branch: the
recommended one unless the question's constraints (Python, vLLM, PyTorch, CUDA, an
architecture only some branches carry, an old driver) pick another. Every choice is
explained in ``reasons``; every deviation from the seeds' prose in ``warnings``.

``recommend`` says what is unknown, then takes one path by the hardware (one GPU, mixed GPUs,
CPU only, macOS); the CPU ISA rules are in ``cpu_isa``, the branch and CUDA choice in
``branches``. Pure; may import config and the rest of bot.engine.
"""

from __future__ import annotations

from dataclasses import replace

from bot.engine.answer import Answer, read_as
from bot.engine.branches import branch_reason, choose, constraints, pick
from bot.engine.cpu_isa import CpuPlan, cpu_plan
from bot.engine.hardware import GpuSeen, Hardware
from config.catalog import Catalog, GpuArch, vtuple
from config.regex_cache import rx

ASK_GPU = "`nvidia-smi -L` (or `nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv`)"
ASK_CPU = "`lscpu` (or `grep -m1 -E 'model name|flags|Features|CPU part' /proc/cpuinfo`)"


def recommend(cat: Catalog, hw: Hardware, org: str = "your-org") -> Answer:
    ans = Answer(hardware=hw, read=read_as(hw))
    if (line := _refusal(hw)) is not None:
        ans.refusal = line
        ans.warnings.append(line)
        return ans
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
    if hw.machines:
        ans.missing.append("Which machine is this for: " + "; or ".join(hw.machines)
                           + "? Ask again naming only its parts.")
        return ans

    if hw.os == "macos":
        return _darwin(cat, hw, ans, org)
    if hw.os == "windows":
        ans.warnings.append(
            "There are no native Windows builds; the Linux variants run under WSL2 (this answer assumes WSL2)."
        )

    if hw.gpu_foreign and hw.no_gpu and hw.gpu_arch is None:  # "no NVIDIA, the CPU-only build" beside a Radeon
        ans.reasons.append(f"CPU-only build, as asked: the {hw.gpu_foreign} is not an NVIDIA GPU and is not used.")
        ans.warnings.append(f"The {hw.gpu_foreign} is not used by this build (no ROCm, oneAPI or Neuron builds here).")
        return _cpu_only(cat, hw, ans, org)
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


NOTHING = ("Nothing in this names hardware: name a GPU, CPU or cloud instance, or paste "
           "`nvidia-smi -L` / `lscpu` output.")


def _refusal(hw: Hardware) -> str | None:
    """The one line for input that cannot get an answer: nothing that names hardware, or a
    non-NVIDIA accelerator alone; None when there is something to answer or ask about."""
    cpu = hw.cpu or hw.cpu_flags is not None or hw.cpu_arch or hw.cpu_candidates or hw.unknown_cpu or hw.stated_flags
    other = hw.instance or hw.unknown_instance or hw.os or hw.no_gpu or hw.system_cpu or hw.notes or hw.machines
    nvidia = hw.gpu_arch or hw.gpus or hw.unknown_gpu or hw.gpu_unnamed or hw.gpu_unknown_cc
    if cpu or other or nvidia:
        return None
    if hw.gpu_foreign:
        at = hw.query.lower().find(hw.gpu_foreign)
        shown = hw.query[at : at + len(hw.gpu_foreign)] if at >= 0 else hw.gpu_foreign
        return (f"'{shown}' is not an NVIDIA GPU, and these builds are CUDA (NVIDIA), CPU-only and Apple "
                "MPS only (no ROCm, oneAPI or Neuron): say 'CPU-only' and name the CPU for a CPU build.")
    if _MODEL_LIKE_RE.search(hw.query[:16_000].lower()):
        return None  # "H1000": a model number torchbot does not know is asked about, not refused
    return NOTHING


_MODEL_LIKE_RE = rx(r"(?<![a-z0-9])[a-z]{1,4}[ -]?\d{3,5}[a-z]{0,3}(?![a-z0-9])")


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
    if hw.cpu_candidates:
        ans.warnings.append(
            f"'{hw.cpu_ambiguous}' is the number of more than one CPU ({'; '.join(hw.cpu_candidates)}); "
            f"this answer is for the instructions {'both' if len(hw.cpu_candidates) == 2 else 'all of them'} have."
        )
        ans.missing.append(f"Which CPU is '{hw.cpu_ambiguous}': {' or '.join(hw.cpu_candidates)}?")
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
            f"{arch.upper} builds exist only for {', '.join(sorted(allowed))}; none of them runs on this CPU "
            f"({', '.join(plan.order)})."
        )
        return ans
    if order != plan.order and not plan.assumed:
        ans.reasons.append(
            f"{arch.upper} is built only with {', '.join(sorted(allowed))}: the best of those this CPU runs is "
            f"{order[0]}."
        )
    return choose(cat, hw, ans, arch, CpuPlan(plan.arch, order, plan.assumed), org)


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
        part.reasons.append(
            f"{', '.join(g.name for g in gpus)}: {arch.family}, compute capability {arch.cc} -> {arch.upper}."
        )
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
    return choose(cat, hw, ans, None, plan, org)


def _cpu_alternative(cat: Catalog, hw: Hardware, ans: Answer, org: str, note: str) -> None:
    scratch = Answer(hardware=hw)
    plan = cpu_plan(cat, hw, scratch, None)
    if plan is None:
        return
    choose(cat, hw, scratch, None, plan, org)
    if scratch.recommendation:
        ans.alternatives.append(replace(scratch.recommendation, note=note))


def _darwin(cat: Catalog, hw: Hardware, ans: Answer, org: str) -> Answer:
    if hw.gpu_arch:
        ans.warnings.append("macOS has no NVIDIA CUDA support; the GPU named is ignored for the macOS build.")
    if hw.apple_silicon is False:
        ans.warnings.append(
            "Intel Macs have no variant: the darwin-mps build targets Apple Silicon (aarch64-darwin) and the CPU "
            "builds are Linux-only."
        )
        return ans
    if hw.apple_silicon is None:
        ans.warnings.append(
            "The darwin-mps build needs Apple Silicon (M1-M4) and macOS 12.3+; Intel Macs have no variant."
        )
    candidates = constraints(cat, hw, ans)
    for b in candidates:
        v = next((x for x in b.variants if x.darwin), None)
        if v is None:
            continue
        ans.recommendation = pick(cat, b, v, org)
        ans.reasons.append("macOS on Apple Silicon: the MPS (Metal) build with vecLib BLAS.")
        ans.reasons.append(branch_reason(cat, hw, b, None, candidates))
        for other in candidates:
            if other is b:
                continue
            w = next((x for x in other.variants if x.darwin), None)
            if w and len(ans.alternatives) < 4:
                ans.alternatives.append(pick(cat, other, w, org, f"PyTorch {other.pytorch}, Python {other.python}"))
        return ans
    if candidates:
        ans.warnings.append("No branch that fits the question has a darwin-mps build.")
    return ans
