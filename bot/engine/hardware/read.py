"""``parse``: the whole question, or pasted output, -> ``Hardware``. Drops /proc/cpuinfo's
per-core repeats, reads typos in the words, then the cloud instance (it fixes GPU and CPU), the
constraint words, the GPUs, the CPU, and what is said without a name. Pure; may import config."""

from __future__ import annotations

from bot.engine import fuzzy
from bot.engine.hardware import cpuinfo, gpus, nvidia_smi, words
from bot.engine.hardware.cpus import read_cpu
from bot.engine.hardware.facts import MAX_INPUT, SCAN, Hardware, fold
from bot.engine.hardware.instances import INSTANCE_LIKE_RE, find_instance
from bot.engine.hardware.machines import settle
from bot.engine.hardware.matchers import Matchers, matchers
from bot.engine.hardware.retract import retract
from config.catalog import Catalog
from config.regex_cache import rx

# A count glued to the model it precedes ("4x4090", "8xH100", "2x A6000", "4×L40S"): a space
# is put after the "x", so the model reads as a name and the count as its count.
_GLUED_COUNT_RE = rx(r"(?<![a-z0-9.])([1-9]\d?) ?[x×*] ?(?=(?:rtx |gtx |rtx|gtx)?[a-z]{0,2}\d)")
# A compound machine or product name ("vm.standard.a2.flex", "standard_d8ps_v6", "ampere a2"): with
# "no GPU" or "CPU-only" said, a GPU-like token inside it is part of the name, not a GPU.
_COMPOUND_RE = rx(r"(?<![\w.])[a-z][a-z0-9-]*(?:[._][a-z0-9-]+){2,}(?![\w])|(?<![a-z0-9])ampere a\d(?![0-9])")
_GPU_TOKEN_RE = rx(r"(?<![a-z])(?:[abhlt]\d|rtx|gtx|gh\d|gb\d)")


def parse(cat: Catalog, text: str) -> Hardware:
    raw = text if isinstance(text, str) else str(text)
    hw = Hardware(query=raw)
    if "processor" in raw:
        raw = cpuinfo.CPUINFO_REPEAT_RE.sub("", raw)  # /proc/cpuinfo: one block per core, the first says it all
    if len(raw) > MAX_INPUT:
        hw.notes.append(f"Only the first {MAX_INPUT:,} characters of the question were read.")
        raw = raw[:MAX_INPUT]
    low = _typos(hw, nvidia_smi.UUID_RE.sub(" ", raw.lower()))
    low = _GLUED_COUNT_RE.sub(lambda g: g.group(1) + "x ", low)
    m = matchers(cat)
    # A part the question takes back ("an A100, no wait, an H100") is blanked before anything is read.
    low = retract(cat, m, hw, settle(cat, m, hw, low))
    # Cloud instance first: its name can look like a GPU ("a2-highgpu") and it fixes GPU + CPU.
    low, inst_gpu, inst_cpu = _instances(cat, m, hw, low)
    if words.NO_GPU_RE.search(fold(low[:SCAN])):
        low = _names_not_gpus(hw, low)
    folded = fold(low)
    # Pasted nvidia-smi output is read row by row; the free text is read without it.
    pasted = nvidia_smi.read_pasted(low)
    free = "\n".join(pasted.lines)
    # Words of the question itself, without pasted flag lines ("amx_int8" is not a workload).
    flagless = cpuinfo.FLAGS_LINE_RE.sub(" ", low)
    prose = fold(flagless)

    words.read_versions(hw, low, folded)
    words.read_os(hw, prose, low)
    words.read_workload(hw, fold(cpuinfo.FLAG_TOKEN_RE.sub(" ", flagless)))
    gpus.read_gpus(cat, m, hw, gpus.gpu_text(_gpu_lines(hw, pasted.lines)), pasted.rows, inst_gpu)
    read_cpu(cat, m, hw, low, folded if free == low else fold(free), prose, inst_cpu)
    if words.NO_GPU_RE.search(folded) and hw.gpu_arch is None:
        hw.no_gpu = True
    if hw.instance_gpu_less and hw.gpu_arch is None and hw.gpu_foreign is None:
        hw.no_gpu = True
    if not hw.no_gpu and hw.gpu_arch is None and hw.gpu_foreign is None and not hw.gpus and not hw.unknown_gpu \
            and hw.gpu_unknown_cc is None and not inst_gpu:
        gpus.unnamed_gpu(hw, prose[:SCAN])
    return hw


def _names_not_gpus(hw: Hardware, low: str) -> str:
    """The question says the machine has no GPU: a GPU-like token inside a compound machine or
    product name ("VM.Standard.A2.Flex", "Ampere A2") is part of that name, and is blanked."""
    def blank(cm) -> str:
        name = cm.group(0)
        if not _GPU_TOKEN_RE.search(name):
            return name
        at = hw.query.lower().find(name)
        shown = hw.query[at : at + len(name)] if at >= 0 else name
        hw.notes.append(f"Read '{shown}' as a name, not a GPU: the question says the machine has no GPU.")
        if hw.unknown_instance is None and ("." in name or "_" in name):
            hw.unknown_instance = shown  # a machine torchbot does not know: its CPU is not assumed
        return " " * len(name)

    return _COMPOUND_RE.sub(blank, low[:SCAN]) + low[SCAN:]


def _gpu_lines(hw: Hardware, lines: list[str]) -> list[str]:
    """The lines GPU names may be read from: not lscpu's or /proc/cpuinfo's (their numbers are
    clocks and caches), and an unknown instance's name cut out (it names no GPU)."""
    out = ["" if cpuinfo.KEY_LINE_RE.fullmatch(line) else line for line in lines]
    if hw.unknown_instance:
        out = [line.replace(hw.unknown_instance, "|") for line in out]
    return out


def _typos(hw: Hardware, low: str) -> str:
    """Typos in the words (never in model numbers), read before anything else."""
    fixes = fuzzy.corrections(cpuinfo.FLAGS_LINE_RE.sub(" ", low[:SCAN]))
    if not fixes:
        return low
    hw.corrections = sorted(fixes.items())
    hw.notes.append("Read " + ", ".join(f"'{a}' as '{b}'" for a, b in hw.corrections) + ".")
    return fuzzy.apply(low, fixes)


def _instances(cat: Catalog, m: Matchers, hw: Hardware, low: str) -> tuple[str, str | None, str | None]:
    """The first cloud instance named (cut out of the text), and its GPU and CPU; further ones
    are said, not silently dropped; an instance-like name torchbot does not know is kept."""
    hit = find_instance(cat, m, low[:SCAN])
    if hit is None:
        im = INSTANCE_LIKE_RE.search(low, 0, SCAN)
        if im:
            hw.unknown_instance = im.group(0)
        return low, None, None
    idx, start, end = hit
    inst = cat.instances[idx]
    hw.instance, hw.instance_provider = low[start:end], inst.provider
    hw.instance_gpu_less = inst.gpu is None
    if inst.note:
        hw.notes.append(inst.note)
    low = low[:start] + " " + low[end:]
    others = []
    while len(others) < 4 and (more := find_instance(cat, m, low[:SCAN])) is not None:
        others.append(low[more[1] : more[2]])
        low = low[: more[1]] + " " + low[more[2] :]
    if others:
        hw.notes.append(
            f"The question names several instances ({', '.join([hw.instance, *others])}); this answer is for "
            f"{hw.instance}. Ask again with {' or '.join(others)} alone for {'its' if len(others) == 1 else 'their'} "
            f"build."
        )
    return low, inst.gpu, inst.cpu
