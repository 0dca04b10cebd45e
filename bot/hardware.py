"""Free text -> typed hardware facts.

Reads GPU and CPU model names, compute capabilities, pasted ``nvidia-smi`` / ``lscpu`` /
``/proc/cpuinfo`` output, cloud instance names, OS, workload hints and version
constraints. Pure: the only input is the text and the catalog; every pattern comes from
the catalog data or from the small grammar below. All regular expressions are linear
(no nested quantifiers), and input beyond ``MAX_INPUT`` characters is not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from config.catalog import Catalog

MAX_INPUT = 100_000  # /proc/cpuinfo repeats per core; the first blocks say it all

# Folding applied before matching model names: trademarks and separators become spaces.
_FOLD_RE = re.compile(r"\((?:r|tm|c)\)|[®™]|[\-_/,;|()\[\]\"'`]+")
_SPACES_RE = re.compile(r"\s+")


def fold(text: str) -> str:
    return _SPACES_RE.sub(" ", _FOLD_RE.sub(" ", text.lower())).strip()


def _bounded(pattern: str) -> str:
    return rf"(?<![a-z0-9])(?:{pattern})(?![a-z0-9])"


@dataclass
class Hardware:
    """What the question says about the machine. ``None`` means "not said"."""

    query: str
    gpu: str | None = None  # model name as in the catalog
    gpu_arch: str | None = None  # catalog arch key, e.g. "sm90" (may be an unserved arch)
    gpu_count: int | None = None
    gpu_foreign: str | None = None  # a non-NVIDIA accelerator that was named
    gpu_unknown_cc: str | None = None  # a compute capability the catalog does not know
    cpu: str | None = None
    cpu_uarch: str | None = None
    cpu_arch: str | None = None  # x86_64 | aarch64
    cpu_flags: frozenset[str] | None = None
    flags_source: str | None = None  # pasted | model | stated
    stated_flags: frozenset[str] = frozenset()
    os: str | None = None  # linux | macos | windows
    apple_silicon: bool | None = None
    workload: str | None = None  # bf16-training | int8-inference | training | inference
    python: str | None = None
    vllm: str | None = None  # a version, or "any"
    driver: str | None = None
    cuda: str | None = None  # a CUDA version the user asked for
    pytorch: str | None = None
    instance: str | None = None
    system_cpu: str | None = None  # the CPU a named system or superchip comes with
    no_gpu: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "gpu": self.gpu,
            "gpu_arch": self.gpu_arch,
            "gpu_count": self.gpu_count,
            "cpu": self.cpu,
            "cpu_uarch": self.cpu_uarch,
            "cpu_arch": self.cpu_arch,
            "cpu_flags": sorted(self.cpu_flags or ()),
            "os": self.os,
            "workload": self.workload,
            "python": self.python,
            "vllm": self.vllm,
            "driver": self.driver,
            "cuda": self.cuda,
            "pytorch": self.pytorch,
            "instance": self.instance,
            "other_accelerator": self.gpu_foreign,
        }


# ---------------------------------------------------------------------------------------
# Compiled matchers, built once per catalog


@dataclass(frozen=True)
class _Matchers:
    gpu: dict[str, str]  # joined lower-case tokens ("rtx3080ti") -> model name
    system: dict[str, str]  # joined tokens -> system name
    max_tokens: int
    foreign: re.Pattern | None
    cpu: tuple[tuple[re.Pattern, int], ...]  # (pattern, index into catalog.cpu_models)
    instance: re.Pattern | None
    instance_idx: tuple[int, ...]
    relevant_flags: frozenset[str]


_TOKEN_RE = re.compile(r"[a-z0-9]+")


def _name_keys(name: str) -> list[str]:
    """Lookup keys of a product name: its tokens joined ("rtx 3080 ti" -> "rtx3080ti");
    GeForce names also without the "rtx"/"gtx" prefix ("4090" names the card here)."""
    tokens = _TOKEN_RE.findall(name.lower())
    keys = ["".join(tokens)]
    if len(tokens) >= 2 and tokens[0] in ("rtx", "gtx") and tokens[1].isdigit():
        keys.append("".join(tokens[1:]))
    return keys


def _lookup(table: dict[str, str], tokens: list[str], max_tokens: int):
    """Longest-first scan of token n-grams against a key table: linear in the input."""
    i, n_tokens = 0, len(tokens)
    while i < n_tokens:
        for n in range(min(max_tokens, n_tokens - i), 0, -1):
            hit = table.get("".join(tokens[i : i + n]))
            if hit is not None:
                yield hit
                i += n
                break
        else:
            i += 1


@lru_cache(maxsize=8)
def _matchers(cat: Catalog) -> _Matchers:
    gpu: dict[str, str] = {}
    for n in cat.gpu_models:
        for k in _name_keys(n):
            gpu.setdefault(k, n)
    system = {k: n for n in cat.systems for k in _name_keys(n)[:1]}
    max_tokens = max(len(_TOKEN_RE.findall(n.lower())) for n in [*cat.gpu_models, *cat.systems])
    foreign = (
        re.compile(_bounded("|".join(f"(?:{p})" for p in cat.foreign_patterns))) if cat.foreign_patterns else None
    )
    cpu = tuple((re.compile(_bounded(m.pattern)), i) for i, m in enumerate(cat.cpu_models))
    inst = [(i, x) for i, x in enumerate(cat.instances)]
    instance = (
        re.compile(
            "|".join(rf"(?P<i{n}>(?<![a-z0-9.\-_])(?:{x.pattern})(?![a-z0-9]))" for n, (_, x) in enumerate(inst))
        )
        if inst
        else None
    )
    return _Matchers(
        gpu, system, max_tokens, foreign, cpu, instance, tuple(i for i, _ in inst), cat.relevant_flags,
    )


# ---------------------------------------------------------------------------------------
# Small grammar for the rest

_FLAGS_LINE_RE = re.compile(r"^[ \t]*(?:flags|features)[ \t]*:[ \t]*([^\n]*)$", re.M)
_ARCH_LINE_RE = re.compile(r"^[ \t]*architecture[ \t]*:[ \t]*(\S+)", re.M)
_CPU_PART_RE = re.compile(r"^[ \t]*cpu part[ \t]*:[ \t]*(0x[0-9a-f]{3})", re.M)
_VENDOR_ARM_RE = re.compile(r"^[ \t]*(?:vendor id[ \t]*:[ \t]*(?:arm|apm|cavium|nvidia|ampere)|cpu implementer[ \t]*:)", re.M)
_SM_RE = re.compile(r"(?<![a-z0-9])sm ?(\d{2,3})(?![0-9])")
_CC_RE = re.compile(r"(?:compute capability|compute cap|capability|\bcc)\s*(?:is|of|=|:)?\s*(\d{1,2})\.(\d)(?![\d.])")
_BARE_CC_RE = re.compile(r"(?<![\w.])(\d{1,2})\.(\d)(?![\w.])")
_VERSIONISH_BEFORE = re.compile(r"(?:python|py|cuda|torch|pytorch|vllm|driver|cudnn|version|macos|ubuntu|v|nvcc|release)\s*[:=v]?\s*$")
_PY_RE = re.compile(r"(?<![a-z0-9])(?:python|py|cp|cpython)\s?v?(3)\.?(1[0-5]|[89])(?![0-9])")
_VLLM_RE = re.compile(r"(?<![a-z0-9])vllm(?:\s*(?:version|v|==|@|=)?\s*v?(\d+\.\d+(?:\.\d+)?))?")
_DRIVER_RE = re.compile(r"(?:driver(?: version)?|nvidia smi|nvidia-smi)\s*[:=]?\s*(\d{3})(?:\.(\d{1,3}))?(?:\.(\d{1,3}))?")
_RDRIVER_RE = re.compile(r"(?<![a-z0-9])r(\d{3})(?: driver)?(?![0-9])")
_CUDA_RE = re.compile(r"(?<![a-z0-9])cuda\s*(version\s*:)?\s*v?(\d{2})\.(\d)(?![0-9])")
_TORCH_RE = re.compile(r"(?<![a-z0-9])(?:pytorch|torch)\s*(?:version\s*)?v?(\d)\.(\d{1,2})(?![0-9])")
_NO_GPU_RE = re.compile(
    r"no (?:nvidia |discrete |dedicated )?(?:gpu|graphics card|cuda)|without (?:a |an )?(?:nvidia )?gpu|cpu[ -]?only|gpu[ -]?less|no accelerator"
)
_MAC_RE = re.compile(
    r"(?<![a-z0-9])(?:mac ?os|macbook(?: pro| air)?|mac (?:mini|studio|pro)|imac|darwin|apple silicon|os ?x|mps|metal performance)(?![a-z0-9])"
)
_APPLE_CHIP_RE = re.compile(r"(?<![a-z0-9])(?:apple )?m([1-5])(?: (?:pro|max|ultra))?(?![a-z0-9])")
_INTEL_MAC_RE = re.compile(r"intel mac|mac\w* (?:with )?(?:an )?intel|x86_64 darwin|intel based mac")
_WINDOWS_RE = re.compile(r"(?<![a-z0-9])windows(?![a-z0-9])")
_WSL_RE = re.compile(r"(?<![a-z0-9])wsl ?2?(?![a-z0-9])")
_LINUX_RE = re.compile(r"(?<![a-z0-9])(?:linux|ubuntu|debian|rhel|rocky|nixos|fedora)(?![a-z0-9])")
_BF16_RE = re.compile(r"(?<![a-z0-9])(?:bf ?16|bfloat ?16|brain ?float)(?![a-z0-9])")
_INT8_RE = re.compile(r"(?<![a-z0-9])(?:int ?8|int ?4|quantized|quantised|quantization|quantisation|q8)(?![a-z0-9])")
_TRAIN_RE = re.compile(r"(?<![a-z0-9])(?:train\w*|fine ?tun\w*|pretrain\w*)")
_INFER_RE = re.compile(r"(?<![a-z0-9])(?:inference|inferencing|serving)(?![a-z0-9])")
_GPU_COUNT_RE = re.compile(r"(?<![a-z0-9])(\d{1,2}) ?x ?(?=[a-z])")
# Flags stated in prose ("it has AVX-512", "no avx512"): canonical flag names.
_STATED_RE = re.compile(
    r"(?P<neg>\b(?:no|not|without|lacks?|lacking|missing)\s+(?:the\s+)?)?"
    r"(?<![a-z0-9])(?P<flag>avx ?512 ?_?bf16|avx ?512 ?_?vnni|avx ?512 ?f|avx ?512|avx ?_?vnni|avx ?2|avx|sve ?2|sve|fma|f16c|asimddp|dotprod)(?![a-z0-9])"
)
_STATED_CANON = {
    "avx512bf16": "avx512_bf16",
    "avx512vnni": "avx512_vnni",
    "avx512f": "avx512f",
    "avx512": "avx512",
    "avxvnni": "avx_vnni",
    "avx2": "avx2",
    "avx": "avx",
    "sve2": "sve2",
    "sve": "sve",
    "fma": "fma",
    "f16c": "f16c",
    "asimddp": "asimddp",
    "dotprod": "asimddp",
}


def _closure(cat: Catalog, flags: set[str]) -> frozenset[str]:
    out = set(flags)
    todo = list(flags)
    while todo:
        f = todo.pop()
        for g in cat.implies.get(f, ()):
            if g not in out:
                out.add(g)
                todo.append(g)
    out.discard("avx512")  # a word, not a cpuinfo flag
    return frozenset(out)


def parse(cat: Catalog, text: str) -> Hardware:
    raw = text if isinstance(text, str) else str(text)
    hw = Hardware(query=raw)
    if len(raw) > MAX_INPUT:
        hw.notes.append(f"Only the first {MAX_INPUT:,} characters of the question were read.")
        raw = raw[:MAX_INPUT]
    low = raw.lower()
    m = _matchers(cat)

    # Cloud instance first: its name can look like a GPU ("a2-highgpu") and it fixes GPU + CPU.
    inst_gpu = inst_cpu = None
    if m.instance is not None:
        im = m.instance.search(low)
        if im:
            idx = m.instance_idx[int(im.lastgroup[1:])]
            inst = cat.instances[idx]
            hw.instance = im.group(0)
            inst_gpu, inst_cpu = inst.gpu, inst.cpu
            low = low[: im.start()] + " " + low[im.end() :]
    folded = fold(low)
    # Words of the question itself, without pasted flag lines ("amx_int8" is not a workload).
    prose = fold(_FLAGS_LINE_RE.sub(" ", low))

    _parse_versions(hw, low, folded)
    _parse_os(hw, prose)
    _parse_workload(hw, prose)
    _parse_gpu(cat, m, hw, folded, inst_gpu)
    _parse_cpu(cat, m, hw, low, folded, prose, inst_cpu)
    if _NO_GPU_RE.search(folded) and hw.gpu_arch is None:
        hw.no_gpu = True
    return hw


def _parse_versions(hw: Hardware, low: str, folded: str) -> None:
    pm = _PY_RE.search(folded)
    if pm:
        hw.python = f"{pm.group(1)}.{pm.group(2)}"
    vm = _VLLM_RE.search(folded)
    if vm:
        hw.vllm = vm.group(1) or "any"
    dm = _DRIVER_RE.search(low) or _DRIVER_RE.search(folded)
    if dm:
        hw.driver = ".".join(g for g in dm.groups() if g)
    else:
        rm = _RDRIVER_RE.search(folded)
        if rm:
            hw.driver = rm.group(1)
    for cm in _CUDA_RE.finditer(low):
        if cm.group(1):  # "CUDA Version: 12.4" in nvidia-smi: what the driver supports, not a request
            continue
        hw.cuda = f"{cm.group(2)}.{cm.group(3)}"
        break
    tm = _TORCH_RE.search(folded)
    if tm:
        hw.pytorch = f"{tm.group(1)}.{tm.group(2)}"


def _parse_os(hw: Hardware, folded: str) -> None:
    if _MAC_RE.search(folded) or (_APPLE_CHIP_RE.search(folded) and "apple" in folded):
        hw.os = "macos"
        if _INTEL_MAC_RE.search(folded):
            hw.apple_silicon = False
        elif _APPLE_CHIP_RE.search(folded) or "apple silicon" in folded:
            hw.apple_silicon = True
    elif _WSL_RE.search(folded):
        hw.os = "linux"
        hw.notes.append("WSL2 runs the Linux builds.")
    elif _WINDOWS_RE.search(folded):
        hw.os = "windows"
    elif _LINUX_RE.search(folded):
        hw.os = "linux"


def _parse_workload(hw: Hardware, folded: str) -> None:
    bf16 = _BF16_RE.search(folded) is not None
    int8 = _INT8_RE.search(folded) is not None
    train = _TRAIN_RE.search(folded) is not None
    infer = _INFER_RE.search(folded) is not None
    if int8:
        hw.workload = "int8-inference"
    elif bf16 and not infer:
        hw.workload = "bf16-training"
    elif train:
        hw.workload = "training"
    elif infer:
        hw.workload = "inference"


def _parse_gpu(cat: Catalog, m: _Matchers, hw: Hardware, folded: str, inst_gpu: str | None) -> None:
    system_cpu = None
    if inst_gpu:
        name = inst_gpu
    else:
        name = None
        tokens = _TOKEN_RE.findall(folded)
        for sysname in _lookup(m.system, tokens, m.max_tokens):
            name, system_cpu = cat.systems[sysname]
            break
        seen: dict[str, int] = {}
        for n in _lookup(m.gpu, tokens, m.max_tokens):
            seen[n] = seen.get(n, 0) + 1
        if seen and name is None:
            name = next(iter(seen))
        archs = {cat.gpu_models[n] for n in seen}
        if name in cat.gpu_models:
            archs.add(cat.gpu_models[name])
        if len(archs) > 1:
            hw.notes.append(
                "The question names GPUs of different architectures ("
                + ", ".join(sorted(seen))
                + f"); a variant targets one architecture, so this answer is for the {name}."
            )
        if seen and name in seen and seen[name] > 1:
            hw.gpu_count = seen[name]
    if name is not None and name in cat.gpu_models:
        hw.gpu = name
        hw.gpu_arch = cat.gpu_models[name]
    elif name is not None:
        hw.gpu_foreign = name
    if hw.gpu_arch is None and hw.gpu_foreign is None and m.foreign is not None:
        fm = m.foreign.search(folded)
        if fm:
            hw.gpu_foreign = fm.group(0)
    if hw.gpu_arch is None and hw.gpu_foreign is None:
        key = None
        smm = _SM_RE.search(folded)
        if smm:
            key = "sm" + smm.group(1)
        else:
            ccm = _CC_RE.search(folded)
            if ccm:
                key = f"sm{ccm.group(1)}{ccm.group(2)}"
            else:
                key = _bare_cc(cat, folded)
        if key:
            if key in cat.gpu_archs:
                hw.gpu_arch = key
            else:
                hw.gpu_unknown_cc = key
    hw.system_cpu = system_cpu
    cm = _GPU_COUNT_RE.search(folded)
    if cm and hw.gpu_arch and hw.gpu_count is None:
        hw.gpu_count = int(cm.group(1))


def _bare_cc(cat: Catalog, folded: str) -> str | None:
    """A lone "8.6" is a compute capability only if it is one and nothing says it is a
    Python, CUDA, driver or PyTorch version."""
    known = {a.cc: k for k, a in cat.gpu_archs.items()}
    for bm in _BARE_CC_RE.finditer(folded):
        cc = f"{bm.group(1)}.{bm.group(2)}"
        if cc not in known:
            continue
        if _VERSIONISH_BEFORE.search(folded[max(0, bm.start() - 16) : bm.start()]):
            continue
        return known[cc]
    return None


def _parse_cpu(
    cat: Catalog, m: _Matchers, hw: Hardware, low: str, folded: str, prose: str, inst_cpu: str | None
) -> None:
    # Pasted flags (lscpu "Flags:", /proc/cpuinfo "flags"/"Features") are the machine's own word.
    pasted: set[str] = set()
    for fl in _FLAGS_LINE_RE.finditer(low):
        tokens = fl.group(1).split()
        if len(tokens) >= 3:
            pasted.update(tokens)
    am = _ARCH_LINE_RE.search(low)
    if am:
        arch = am.group(1)
        if arch in ("x86_64", "amd64", "i686"):
            hw.cpu_arch = "x86_64"
        elif arch in ("aarch64", "arm64", "armv8l"):
            hw.cpu_arch = "aarch64"

    uarch_key = None
    cpu_name = inst_cpu or hw.system_cpu
    source_text = fold(cpu_name) if cpu_name else folded
    for pat, idx in m.cpu:
        if pat.search(source_text):
            model = cat.cpu_models[idx]
            hw.cpu = model.name
            uarch_key = model.uarch
            break
    if uarch_key is None:
        pm = _CPU_PART_RE.search(low)
        if pm and pm.group(1) in cat.arm_parts:
            uarch_key = cat.arm_parts[pm.group(1)]
            hw.cpu = cat.uarchs[uarch_key].name
    if uarch_key is not None:
        u = cat.uarchs[uarch_key]
        hw.cpu_uarch = uarch_key
        hw.cpu_arch = hw.cpu_arch or u.arch
    if pasted:
        hw.cpu_flags = frozenset(f for f in pasted if f in m.relevant_flags)
        hw.flags_source = "pasted"
        if hw.cpu_arch is None:
            hw.cpu_arch = "aarch64" if ("asimd" in pasted or "fphp" in pasted) else "x86_64"
    elif uarch_key is not None:
        hw.cpu_flags = cat.uarchs[uarch_key].flags
        hw.flags_source = "model"
    elif hw.cpu_arch is None and _VENDOR_ARM_RE.search(low):
        hw.cpu_arch = "aarch64"

    stated: set[str] = set()
    denied: set[str] = set()
    for sm in _STATED_RE.finditer(prose):
        flag = _STATED_CANON.get(sm.group("flag").replace(" ", "").replace("_", ""))
        if flag is None:
            continue
        (denied if sm.group("neg") else stated).add(flag)
    if stated or denied:
        claimed = _closure(cat, stated - denied) - _closure(cat, denied)
        hw.stated_flags = claimed | (stated & {"avx512"})
        if hw.cpu_flags is None:
            if claimed:
                hw.cpu_flags = claimed
                hw.flags_source = "stated"
                if hw.cpu_arch is None:
                    hw.cpu_arch = "aarch64" if ({"sve", "sve2", "asimddp"} & claimed) else "x86_64"
        elif hw.flags_source == "model":
            missing = sorted(f for f in (stated - denied) if f != "avx512" and f not in hw.cpu_flags)
            if missing:
                hw.notes.append(
                    f"The question says the CPU has {', '.join(missing)}, but {hw.cpu} does not implement "
                    f"{'it' if len(missing) == 1 else 'them'}; this answer follows the hardware."
                )
