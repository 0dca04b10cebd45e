"""Which branch and CUDA group: the recommended branch unless the question's constraints
(Python, vLLM, PyTorch or CUDA version, an architecture only some branches carry, a driver too
old for a CUDA version) pick another, the newest CUDA group the driver allows, and the
alternatives worth naming. Every choice comes with its reason. Pure; may import config and
bot.engine's answer, hardware and cpu_isa."""

from __future__ import annotations

from bot.engine.answer import Answer, Pick
from bot.engine.cpu_isa import CpuPlan
from bot.engine.hardware import Hardware
from config.catalog import Branch, Catalog, GpuArch, Variant, vtuple


def constraints(cat: Catalog, hw: Hardware, ans: Answer) -> list[Branch]:
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
    needs = [
        x for x in (cat.cuda[cuda].min_driver if cuda in cat.cuda else None, arch.min_driver if arch else None) if x
    ]
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


def pick(cat: Catalog, b: Branch, v: Variant, org: str, note: str = "") -> Pick:
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


def choose(
    cat: Catalog, hw: Hardware, ans: Answer, arch: GpuArch | None, plan: CpuPlan, org: str
) -> Answer:
    candidates = constraints(cat, hw, ans)
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
                f"No branch that fits the question carries {arch.upper}; it is built on: "
                f"{', '.join(carriers) or 'no branch'}."
            )
            for name in carriers[:3]:
                b = cat.branches[name]
                v, _ = _best_in_branch(cat, Hardware(query="", driver=hw.driver), b, arch, plan.order)
                if v:
                    ans.alternatives.append(pick(cat, b, v, org, f"Python {b.python}, PyTorch {b.pytorch}"))
        else:
            ans.warnings.append(
                f"No {what} build with an ISA this CPU can run ({', '.join(plan.order)}) fits the question."
            )
        return ans

    best_branch, best = found[0]
    ans.recommendation = pick(cat, best_branch, best, org)
    ans.hardware_reasons, ans.hardware_warnings = len(ans.reasons), len(ans.warnings)
    ans.reasons.append(branch_reason(cat, hw, best_branch, arch, candidates))
    if best.cuda:
        cudas = sorted({v.cuda for v in best_branch.variants if v.gpu_arch == best.gpu_arch and v.cuda}, key=vtuple)
        if hw.cuda:
            ans.reasons.append(
                f"CUDA {best.cuda}: you asked for CUDA {hw.cuda} ({best_branch.name} carries {', '.join(cudas)})."
            )
        elif len(cudas) > 1:
            ans.reasons.append(
                f"{best_branch.name} carries {best.gpu_arch.upper()} for CUDA {', '.join(cudas)}; CUDA {best.cuda} is "
                f"the newest your setup allows."
            )
        reason = driver_reason(cat, hw, best.cuda, best.gpu_arch)
        if reason:
            ans.reasons.append(reason)
        need = None if hw.driver else _min_driver(cat, best.cuda, arch)
        if need and vtuple(best_branch.min_driver) and vtuple(best_branch.min_driver) < vtuple(need.split(".")[0]):
            ans.warnings.append(
                f"The branch README says driver {best_branch.min_driver}+, but code built with CUDA {best.cuda} "
                f"needs {need} or newer."
            )
    if best.cpu_isa and best.cpu_isa != plan.order[0]:
        ans.warnings.append(
            f"{best_branch.name} has no {arch.upper if arch else 'CPU-only'} {plan.order[0]} build; "
            f"{best.cpu_isa} is the best one there that this CPU can run."
        ) if arch else ans.warnings.append(
            f"{best_branch.name} has no CPU-only {plan.order[0]} build; {best.cpu_isa} is the best one there that this "
            f"CPU can run."
        )
    if arch and not arch.cudnn:
        ans.warnings.append(
            f"cuDNN is disabled in {arch.upper} builds: cuDNN 9.11+ dropped support for GPUs below compute capability "
            f"7.5."
        )
    isa = cat.isas.get(best.cpu_isa or "")
    if isa and isa.disables:
        ans.warnings.append(
            f"The {isa.key} build disables {', '.join(isa.disables)} (they need AVX2); expect slower CPU-side "
            f"operators."
        )
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


def branch_reason(cat: Catalog, hw: Hardware, b: Branch, arch: GpuArch | None, candidates: list[Branch]) -> str:
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
                ans.alternatives.append(pick(cat, best_branch, v, org, cond))
    elif plan.assumed and plan.arch == "aarch64":
        v, _ = _best_in_branch(cat, hw, best_branch, arch, ("armv9",))
        if v:
            seen.add(v.package + best_branch.name)
            ans.alternatives.append(pick(cat, best_branch, v, org, "if the CPU reports sve2"))
    # The general build next to a specialised one, and a portable build next to AVX-512.
    if not plan.assumed and best.cpu_isa == plan.order[0]:
        for isa, note in (("avx512", "the general FP32 build"), ("avx2", "portable to any AVX2 machine")):
            if isa == best.cpu_isa or isa not in plan.order:
                continue
            v, _ = _best_in_branch(cat, hw, best_branch, arch, (isa,))
            if v and v.package + best_branch.name not in seen:
                seen.add(v.package + best_branch.name)
                ans.alternatives.append(pick(cat, best_branch, v, org, note))
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
        ans.alternatives.append(pick(cat, b, v, org, f"PyTorch {b.pytorch}{cuda}, {b.purpose}"))
