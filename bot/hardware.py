"""Free text -> typed hardware facts.

Reads GPU and CPU model names (with plurals, counts and typos in the words around them),
compute capabilities, pasted ``nvidia-smi`` / ``lscpu`` / ``/proc/cpuinfo`` output (Linux and
WSL), cloud instance names and families, OS, workload words and version constraints. What
looks like a GPU, CPU or instance name but is not known is kept in ``unknown_*`` so the answer
can say so instead of dropping it. Pure: the only input is the text and the catalog (and
archspec's microarchitecture database, to name a CPU from pasted flags); every pattern comes
from the catalog data or from the small grammar below. All regular expressions are linear
(no nested quantifiers), and input beyond ``MAX_INPUT`` characters is not read. May import
config and bot.fuzzy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from bot import fuzzy
from config.catalog import Catalog, check_patterns

MAX_INPUT = 100_000  # characters read at all (GPU rows, flag lines)
SCAN = 16_000  # characters searched for model, instance and unknown names: a question, or pasted
#                nvidia-smi + lscpu output, is far shorter (/proc/cpuinfo's per-core repeats are dropped first)

# Folding applied before matching model names: trademarks and separators become spaces.
_FOLD_RE = re.compile(r"\((?:r|tm|c)\)|[®™]|[\-_/,;|()\[\]\"'`]+")
_SPACES_RE = re.compile(r"\s+")


def fold(text: str) -> str:
    return _SPACES_RE.sub(" ", _FOLD_RE.sub(" ", text.lower().replace("×", "x"))).strip()


def _bounded(pattern: str) -> str:
    return rf"(?<![a-z0-9])(?:{pattern})(?![a-z0-9])"


@dataclass(frozen=True)
class GpuSeen:
    name: str  # model name as in the catalog (or a non-NVIDIA accelerator's name)
    arch: str | None  # catalog arch key; None for a non-NVIDIA accelerator
    count: int | None = None


@dataclass
class Hardware:
    """What the question says about the machine. ``None`` means "not said"."""

    query: str
    gpu: str | None = None  # model name as in the catalog
    gpu_arch: str | None = None  # catalog arch key, e.g. "sm90" (may be an unserved arch)
    gpu_count: int | None = None
    gpus: list[GpuSeen] = field(default_factory=list)  # every GPU model named, in order
    gpu_foreign: str | None = None  # a non-NVIDIA accelerator that was named
    gpu_unknown_cc: str | None = None  # a compute capability the catalog does not know
    cpu: str | None = None
    cpu_uarch: str | None = None
    cpu_arch: str | None = None  # x86_64 | aarch64
    cpu_flags: frozenset[str] | None = None
    flags_source: str | None = None  # pasted | model | stated
    stated_flags: frozenset[str] = frozenset()
    os: str | None = None  # linux | macos | windows
    wsl: bool = False
    apple_silicon: bool | None = None
    workload: str | None = None  # bf16-training | int8-inference | training | inference
    python: str | None = None
    vllm: str | None = None  # a version, or "any"
    driver: str | None = None
    cuda: str | None = None  # a CUDA version the user asked for ("13.1", or a major: "13")
    pytorch: str | None = None
    instance: str | None = None
    instance_provider: str | None = None
    instance_gpu_less: bool = False  # a CPU-only cloud family
    system_cpu: str | None = None  # the CPU a named system or superchip comes with
    no_gpu: bool = False
    unknown_gpu: list[str] = field(default_factory=list)  # GPU-like names torchbot does not know
    gpu_unnamed: bool = False  # the question mentions a GPU ("my gpu box") without naming a known one
    gpu_suggestions: dict[str, str] = field(default_factory=dict)  # unknown name -> a model it may be ("a1oo": A100)
    unknown_cpu: list[str] = field(default_factory=list)
    unknown_instance: str | None = None
    corrections: list[tuple[str, str]] = field(default_factory=list)  # (as typed, read as)
    notes: list[str] = field(default_factory=list)

    @property
    def unknown(self) -> list[str]:
        return [*self.unknown_gpu, *self.unknown_cpu, *([self.unknown_instance] if self.unknown_instance else [])]

    def to_dict(self) -> dict:
        return {
            "gpu": self.gpu,
            "gpu_arch": self.gpu_arch,
            "gpu_count": self.gpu_count,
            "gpus": [{"name": g.name, "arch": g.arch, "count": g.count} for g in self.gpus],
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
            "unknown": self.unknown,
        }


# ---------------------------------------------------------------------------------------
# Compiled matchers, built once per catalog


@dataclass(frozen=True)
class _Matchers:
    gpu: dict[str, str]  # joined lower-case tokens ("rtx3080ti") -> model name
    system: dict[str, str]  # joined tokens -> system name
    starts: frozenset[str]  # prefixes of the keys: tokens an n-gram that matches can start with
    max_tokens: int
    foreign: re.Pattern | None
    cpu: re.Pattern | None  # every CPU model pattern, group "c<index into catalog.cpu_models>"
    instance_source: str | None  # compiled on first use: most questions name no instance
    instance_idx: tuple[int, ...]
    families: dict[str, tuple[int, bool]]  # bare family -> (instance index, needs the provider named)
    providers: dict[str, re.Pattern]
    brands: re.Pattern | None  # CPU brand words (group "brand") with an optional model number
    relevant_flags: frozenset[str]


_TOKEN_RE = re.compile(r"[a-z0-9]+")
_COUNT_PREFIX_RE = re.compile(r"(\d{1,2})x([a-z].*)")  # "8xh100"


def _name_keys(name: str) -> list[str]:
    """Lookup keys of a product name: its tokens joined ("rtx 3080 ti" -> "rtx3080ti");
    GeForce names also without the "rtx"/"gtx" prefix ("4090" names the card here)."""
    tokens = _TOKEN_RE.findall(name.lower())
    keys = ["".join(tokens)]
    if len(tokens) >= 2 and tokens[0] in ("rtx", "gtx") and tokens[1].isdigit():
        keys.append("".join(tokens[1:]))
    return keys


def _tokens(folded: str) -> list[tuple[str, int, int]]:
    """(token, start, end) of the folded text; "8xh100" is split into "8x" and "h100"."""
    out = []
    for tm in _TOKEN_RE.finditer(folded):
        tok, start = tm.group(0), tm.start()
        cm = _COUNT_PREFIX_RE.fullmatch(tok) if "x" in tok else None
        if cm:
            cut = start + len(cm.group(1)) + 1
            out.append((tok[: cut - start], start, cut))
            out.append((cm.group(2), cut, tm.end()))
        else:
            out.append((tok, start, tm.end()))
    return out


def _lookup(table: dict[str, str], tokens: list[tuple[str, int, int]], m: _Matchers):
    """Longest-first scan of token n-grams against a key table: linear in the input. A plural
    ("4090s", "L40Ss", "A6000s") is read as its singular when the singular is a model name.
    Yields (value, start, end) character spans."""
    i, n_tokens = 0, len(tokens)
    starts = m.starts
    while i < n_tokens:
        first = tokens[i][0]
        if first not in starts and not (first[-1] == "s" and first[:-1] in starts):
            i += 1
            continue
        best = None
        key = ""
        for n in range(min(m.max_tokens, n_tokens - i)):
            key += tokens[i + n][0]
            hit = table.get(key)
            if hit is None and len(key) > 2 and key[-1] == "s" and any(c.isdigit() for c in key):
                hit = table.get(key[:-1])
            if hit is not None:
                best = (hit, n + 1)
            if key not in starts:  # no key begins with these tokens: longer n-grams cannot match
                break
        if best is not None:
            yield best[0], tokens[i][1], tokens[i + best[1] - 1][2]
            i += best[1]
        else:
            i += 1


def _compile(source: str, kind: str, parts: list[str]) -> re.Pattern:
    try:
        return re.compile(source)
    except re.error:
        check_patterns(kind, parts)  # names the bad one
        raise


@lru_cache(maxsize=8)
def _instance_re(cat: Catalog) -> re.Pattern:
    return _compile(_matchers(cat).instance_source, "Instance", [x.pattern for x in cat.instances])


@lru_cache(maxsize=8)
def _matchers(cat: Catalog) -> _Matchers:
    gpu: dict[str, str] = {}
    for n in cat.gpu_models:
        for k in _name_keys(n):
            gpu.setdefault(k, n)
    system = {k: n for n in cat.systems for k in _name_keys(n)[:1]}
    max_tokens = max(len(_TOKEN_RE.findall(n.lower())) for n in [*cat.gpu_models, *cat.systems])
    # An n-gram can only match when its first token begins a key ("rtx" or "rtx4090" for "rtx4090").
    starts = {k[:i] for k in [*gpu, *system] for i in range(1, len(k) + 1)}
    foreign = (
        re.compile(_bounded("|".join(f"(?:{p})" for p in cat.foreign_patterns))) if cat.foreign_patterns else None
    )
    # One search for every CPU model: the first named wins; at one position, the first in the data.
    cpu = (
        _compile(_bounded("|".join(f"(?P<c{i}>{m.pattern})" for i, m in enumerate(cat.cpu_models))), "CPU model",
                 [m.pattern for m in cat.cpu_models])
        if cat.cpu_models
        else None
    )
    inst = list(enumerate(cat.instances))
    instance = (
        # one boundary around the alternation: far faster than one per alternative
        r"(?<![a-z0-9.\-_])(?:" + "|".join(rf"(?P<i{n}>{x.pattern})" for n, (_, x) in enumerate(inst)) + r")(?![a-z0-9])"
        if inst
        else None
    )
    taken = set(gpu) | set(system)
    families: dict[str, tuple[int, bool]] = {}
    for i, x in inst:
        for fam in x.families:
            key = fam.lower().replace("-", "")
            families.setdefault(key, (i, len(key) < 3 or key in taken))
    providers = {
        name: re.compile(_bounded("|".join(re.escape(w) for w in words))) for name, words in cat.providers.items()
    }
    brand_words = sorted(cat.cpu_brands, key=len, reverse=True)
    brands = (
        re.compile(
            _bounded(
                "(?P<brand>" + "|".join(re.escape(w) for w in brand_words) + ")"
                r"(?P<model>(?: (?:platinum|gold|silver|bronze|max|pro|ai|w|e[357]|v|n))*"
                r" ?[a-z]{0,2}\d[0-9a-z+]*)?"
            )
        )
        if brand_words
        else None
    )
    return _Matchers(
        gpu, system, frozenset(starts), max_tokens, foreign, cpu, instance, tuple(i for i, _ in inst), families, providers, brands,
        cat.relevant_flags,
    )


# ---------------------------------------------------------------------------------------
# Small grammar for the rest

_CPUINFO_REPEAT_RE = re.compile(r"^processor[ \t]*:[ \t]*[1-9][0-9]*[ \t]*\n(?:[^\n]+\n?)*", re.M)
_FLAGS_LINE_RE = re.compile(r"^[ \t]*(?:flags|features)[ \t]*:[ \t]*([^\n]*)$", re.M)
# Flag names anywhere in the text ("avx512_bf16", "amx_int8", "svebf16", a build name
# "...-avx512bf16"): instructions the CPU has, never words about the work.
_FLAG_TOKEN_RE = re.compile(r"(?<![a-z0-9])-?m?(?:avx|amx|sve|asimd)[a-z0-9_]*")
_UUID_RE = re.compile(r"\(uuid: ?[^)\n]*\)|gpu-[0-9a-f]{8}-[0-9a-f-]{27}")
_ARCH_LINE_RE = re.compile(r"^[ \t]*architecture[ \t]*:[ \t]*(\S+)", re.M)
_MODEL_LINE_RE = re.compile(r"^[ \t]*model name[ \t]*:[ \t]*([^\n]*)$", re.M)
_VENDOR_LINE_RE = re.compile(r"^[ \t]*vendor(?:_id| id)[ \t]*:[ \t]*(\S+)", re.M)
_CPU_PART_RE = re.compile(r"^[ \t]*cpu part[ \t]*:[ \t]*(0x[0-9a-f]{3})", re.M)
_VENDOR_ARM_RE = re.compile(r"^[ \t]*(?:vendor id[ \t]*:[ \t]*(?:arm|apm|cavium|nvidia|ampere)|cpu implementer[ \t]*:)", re.M)
_ARM_WORD_RE = re.compile(r"(?<![a-z0-9])(?:aarch64|arm64|armv[89](?:\.\d)?(?: ?a)?|arm)(?![a-z0-9])")
_SM_RE = re.compile(r"(?<![a-z0-9])sm ?(\d{2,3})(?![0-9])")
_CC_RE = re.compile(r"(?:compute capability|compute cap|capability|\bcc)\s*(?:is|of|=|:)?\s*(\d{1,2})\.(\d)(?![\d.])")
_BARE_CC_RE = re.compile(r"(?<![\w.])(\d{1,2})\.(\d)(?![\w.])")
_VERSIONISH_BEFORE = re.compile(r"(?:python|py|cuda|torch|pytorch|vllm|driver|cudnn|version|macos|ubuntu|v|nvcc|release)\s*[:=v]?\s*$")
_PY_RE = re.compile(r"(?<![a-z0-9])(?:python|py|cp|cpython)\s?v?(3)\.?(1[0-5]|[89])(?![0-9])")
_VLLM_RE = re.compile(r"(?<![a-z0-9])vllm(?:\s*(?:version|v|==|@|=)?\s*v?(\d+\.\d+(?:\.\d+)?))?")
# "Driver Version: 566.36" first: under WSL (and Windows) the NVIDIA-SMI version is the Linux
# library's, the driver version is the Windows driver's, and that one decides what CUDA runs.
_DRIVER_VERSION_RE = re.compile(r"driver version\s*:?\s*(\d{3})(?:\.(\d{1,3}))?(?:\.(\d{1,3}))?")
_DRIVER_RE = re.compile(r"(?:driver(?: version)?|nvidia smi|nvidia-smi)\s*[:=]?\s*(\d{3})(?:\.(\d{1,3}))?(?:\.(\d{1,3}))?")
_SMI_VERSION_RE = re.compile(r"nvidia-smi\s+(\d{3})\.")
_RDRIVER_RE = re.compile(r"(?<![a-z0-9])r(\d{3})(?: driver)?(?![0-9])")
_CUDA_RE = re.compile(r"(?<![a-z0-9])cuda\s*(version\s*:)?\s*(?:v|=|==|>=)?\s*(\d{2})(?:\.(\d))?(?![0-9.]*\d)")
_CU_TAG_RE = re.compile(r"(?<![a-z0-9])cu(1[0-3])(\d)(?![0-9])")  # PyTorch wheel tags: cu128, cu131
_TORCH_RE = re.compile(r"(?<![a-z0-9])(?:pytorch|torch)\s*(?:version\s*)?v?(\d)\.(\d{1,2})(?![0-9])")
_NO_GPU_RE = re.compile(
    r"no (?:nvidia |discrete |dedicated )?(?:gpus?|graphics card|cuda)|without (?:a |an )?(?:nvidia )?gpu|cpu[ -]?only|gpu[ -]?less|no accelerator"
)
_MAC_RE = re.compile(
    r"(?<![a-z0-9])(?:mac ?os|macbook(?: pro| air)?|mac (?:mini|studio|pro)|imac|darwin|apple silicon|os ?x|mps|metal performance)(?![a-z0-9])"
)
_APPLE_CHIP_RE = re.compile(r"(?<![a-z0-9])(?:apple )?m([1-5])(?: (?:pro|max|ultra))?(?![a-z0-9])")
_INTEL_MAC_RE = re.compile(r"intel mac|mac\w* (?:with )?(?:an )?intel|x86_64 darwin|intel based mac")
_WINDOWS_RE = re.compile(r"(?<![a-z0-9])(?:windows|wddm)(?![a-z0-9])")
_WSL_RE = re.compile(r"(?<![a-z0-9])(?:wsl ?2?|microsoft standard wsl2|wsl2 kernel)(?![a-z0-9])")
_LINUX_RE = re.compile(r"(?<![a-z0-9])(?:linux|ubuntu|debian|rhel|rocky|nixos|fedora)(?![a-z0-9])")
_BF16_RE = re.compile(r"(?<![a-z0-9])(?:bf ?16|bfloat ?16|brain ?float)(?![a-z0-9])")
_INT8_RE = re.compile(r"(?<![a-z0-9])(?:int ?8|int ?4|quanti[sz]\w*|q8)(?![a-z0-9])")
_TRAIN_RE = re.compile(r"(?<![a-z0-9])(?:train\w*|fine ?tun\w*|pretrain\w*)")
_INFER_RE = re.compile(r"(?<![a-z0-9])(?:inference|inferencing|serving|serve)(?![a-z0-9])")
# GPU counts next to a model name: "8x H100", "8 x H100", "H100 x8", "a pair of 3090s", "dual 4090".
_COUNT_WORDS = {
    "one": 1, "single": 1, "two": 2, "dual": 2, "twin": 2, "pair of": 2, "couple of": 2, "three": 3, "four": 4,
    "quad": 4, "five": 5, "six": 6, "eight": 8, "ten": 10, "twelve": 12, "sixteen": 16,
}
_COUNT_BEFORE_RE = re.compile(
    r"(?:(?<![\d.])(?P<n>\d{1,2}) ?(?P<x>x|way)? ?|(?<![a-z])(?P<w>"
    + "|".join(sorted(_COUNT_WORDS, key=len, reverse=True))
    + r") )(?:nvidia |geforce |tesla |quadro |rtx |gtx )*$"
)
_COUNT_AFTER_RE = re.compile(r"s? ?x ?(\d{1,2})(?![0-9_])")
# Names that look like hardware: reported when the catalog does not know them.
_GPU_LIKE_RE = re.compile(
    r"(?<![a-z0-9])(?:"
    r"(?:geforce |nvidia |quadro |tesla |titan )*(?:rtx|gtx|gt) ?(?:a|pro )?\d{3,4}(?: ?(?:ti|super|ada))*"
    r"|(?:nvidia|tesla|quadro) [a-z]{1,2} ?\d{2,4}[a-z]{0,3}"
    r"|(?!h26[45])[abh]\d{3}[a-z]{0,2}"
    r"|[abhlt]\d[\do]*o[\do]*[a-z]?"  # "A1OO": a letter O for a zero
    r"|g[bh]\d{2,3}"
    r")s?(?![a-z0-9])"
)
_DIGIT_LOOKALIKES = str.maketrans({"o": "0", "l": "1", "i": "1"})
_CPU_LIKE_RE = re.compile(r"(?<![a-z0-9])(?:i[3579] ?\d{4,5}[a-z]{0,3}\d?[a-z]?|\d{4,5}(?:k|kf|ks|x3d|hx|hs|hk|xe))(?![a-z0-9])")
_INSTANCE_LIKE_RE = re.compile(
    r"(?<![a-z0-9.\-_])(?:"
    r"[a-z]{1,4}\d{1,2}[a-z0-9\-]{0,8}\.(?:nano|micro|small|medium|large|\d{0,2}xlarge|metal(?:-\d+xl)?)"
    r"|[a-z]\d[a-z]?-(?:standard|highmem|highcpu|highgpu|megagpu|ultragpu|edgegpu|maxgpu|ultramem|megamem|hypermem|custom)(?:-\d+[a-z]?)*"
    r"|standard_[a-z]+\d+[a-z0-9_]*"
    r")(?![a-z0-9])"
)
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
    if "processor" in raw:
        raw = _CPUINFO_REPEAT_RE.sub("", raw)  # /proc/cpuinfo: one block per core, the first says it all
    if len(raw) > MAX_INPUT:
        hw.notes.append(f"Only the first {MAX_INPUT:,} characters of the question were read.")
        raw = raw[:MAX_INPUT]
    low = _UUID_RE.sub(" ", raw.lower())
    m = _matchers(cat)

    # Typos in the words (never in model numbers), read before anything else.
    fixes = fuzzy.corrections(_FLAGS_LINE_RE.sub(" ", low[:SCAN]))
    if fixes:
        low = fuzzy.apply(low, fixes)
        hw.corrections = sorted(fixes.items())
        hw.notes.append("Read " + ", ".join(f"'{a}' as '{b}'" for a, b in hw.corrections) + ".")

    # Cloud instance first: its name can look like a GPU ("a2-highgpu") and it fixes GPU + CPU.
    inst_gpu = inst_cpu = None
    hit = _instance(cat, m, low[:SCAN])
    if hit is not None:
        idx, start, end = hit
        inst = cat.instances[idx]
        hw.instance, hw.instance_provider = low[start:end], inst.provider
        inst_gpu, inst_cpu = inst.gpu, inst.cpu
        hw.instance_gpu_less = inst.gpu is None
        if inst.note:
            hw.notes.append(inst.note)
        low = low[:start] + " " + low[end:]
        others = []  # further instances named: said, not silently dropped
        while len(others) < 4 and (more := _instance(cat, m, low[:SCAN])) is not None:
            others.append(low[more[1] : more[2]])
            low = low[: more[1]] + " " + low[more[2] :]
        if others:
            hw.notes.append(
                f"The question names several instances ({', '.join([hw.instance, *others])}); this answer is for "
                f"{hw.instance}. Ask again with {' or '.join(others)} alone for {'its' if len(others) == 1 else 'their'} build."
            )
    else:
        im = _INSTANCE_LIKE_RE.search(low, 0, SCAN)
        if im:
            hw.unknown_instance = im.group(0)
    folded = fold(low)
    # Words of the question itself, without pasted flag lines ("amx_int8" is not a workload).
    flagless = _FLAGS_LINE_RE.sub(" ", low)
    prose = fold(flagless)

    _parse_versions(hw, low, folded)
    _parse_os(hw, prose, low)
    _parse_workload(hw, fold(_FLAG_TOKEN_RE.sub(" ", flagless)))
    _parse_gpu(cat, m, hw, folded, low, inst_gpu)
    _parse_cpu(cat, m, hw, low, folded, prose, inst_cpu)
    if _NO_GPU_RE.search(folded) and hw.gpu_arch is None:
        hw.no_gpu = True
    if hw.instance_gpu_less and hw.gpu_arch is None and hw.gpu_foreign is None:
        hw.no_gpu = True
    if not hw.no_gpu and hw.gpu_arch is None and hw.gpu_foreign is None and not hw.gpus and not hw.unknown_gpu \
            and hw.gpu_unknown_cc is None and not inst_gpu:
        _unnamed_gpu(hw, prose[:SCAN])
    return hw


# "a GPU", "XYZ9000 gpus", "graphics card": a GPU the question mentions without naming one torchbot knows
_GPU_WORD_RE = re.compile(r"(?<![a-z0-9])(?:([a-z0-9][a-z0-9-]{1,15}) )?(?:gpus?|graphics cards?|video cards?)(?![a-z0-9])")
_COUNT_RE = re.compile(r"\d+x?|x\d+|[a-z]+")  # "8x gpus", "4 gpus", "nvidia gpu": no model number


def _unnamed_gpu(hw: Hardware, prose: str) -> None:
    """A model-number-like word before "gpu" is an unknown GPU name; a bare mention of a GPU is
    remembered, so the answer asks which one instead of answering CPU-only."""
    for gm in _GPU_WORD_RE.finditer(prose):
        word = gm.group(1)
        if word and not _COUNT_RE.fullmatch(word) and not _CPU_LIKE_RE.fullmatch(word):
            hw.unknown_gpu.append(word)
            return
        hw.gpu_unnamed = True


# Every instance name has one of these shapes: AWS "<family>.<size>", GCP "<family>-<kind>",
# Azure "standard_..." or a "v<generation>" series. Text without any skips the big search.
_INSTANCE_GATE_RE = re.compile(r"\.\d*[a-z]|[a-z]\d[a-z]?-[a-z]|standard_|[a-z _]v\d|hx\d")


def _instance(cat: Catalog, m: _Matchers, low: str) -> tuple[int, int, int] | None:
    """(instance index, start, end) of a named cloud instance or family."""
    if m.instance_source is not None and _INSTANCE_GATE_RE.search(low):
        im = _instance_re(cat).search(low)
        if im:
            return m.instance_idx[int(im.lastgroup[1:])], im.start(), im.end()
    if not m.families:
        return None
    named: dict[str, bool] = {}  # provider -> named in the text (searched once, not per family token)
    for tm in re.finditer(r"(?<![a-z0-9.\-_])[a-z][a-z0-9]*\d[a-z0-9]*(?:-[a-z0-9]+)?(?![a-z0-9.])", low):
        fam = m.families.get(tm.group(0).replace("-", ""))
        if fam is None:
            continue
        idx, needs_provider = fam
        provider = cat.instances[idx].provider
        if needs_provider:
            if provider not in named:
                named[provider] = provider in m.providers and m.providers[provider].search(low) is not None
            if not named[provider]:
                continue
        return idx, tm.start(), tm.end()
    return None


def _parse_versions(hw: Hardware, low: str, folded: str) -> None:
    pm = _PY_RE.search(folded)
    if pm:
        hw.python = f"{pm.group(1)}.{pm.group(2)}"
    vm = _VLLM_RE.search(folded)
    if vm:
        hw.vllm = vm.group(1) or "any"
    dm = _DRIVER_VERSION_RE.search(low) or _DRIVER_RE.search(low) or _DRIVER_RE.search(folded)
    csv_driver = next((r["driver_version"] for r in _smi_csv(low) if re.fullmatch(r"\d{3}(?:\.\d+){0,2}", r.get("driver_version", ""))), None)
    if csv_driver:
        hw.driver = csv_driver
    elif dm:
        hw.driver = ".".join(g for g in dm.groups() if g)
        sm = _SMI_VERSION_RE.search(low)
        if sm and hw.driver.split(".")[0] != sm.group(1):
            # nvidia-smi's own version differs from the driver's: WSL or Windows reports the
            # Windows driver, which is the one that has to support the CUDA version.
            hw.wsl = True
    else:
        rm = _RDRIVER_RE.search(folded)
        if rm:
            hw.driver = rm.group(1)
    for cm in _CUDA_RE.finditer(low):
        if cm.group(1):  # "CUDA Version: 12.4" in nvidia-smi: what the driver supports, not a request
            continue
        hw.cuda = f"{cm.group(2)}.{cm.group(3)}" if cm.group(3) else cm.group(2)
        break
    else:
        um = _CU_TAG_RE.search(folded)
        if um:
            hw.cuda = f"{um.group(1)}.{um.group(2)}"
    tm = _TORCH_RE.search(folded)
    if tm:
        hw.pytorch = f"{tm.group(1)}.{tm.group(2)}"


def _parse_os(hw: Hardware, folded: str, low: str) -> None:
    if _MAC_RE.search(folded) or (_APPLE_CHIP_RE.search(folded) and "apple" in folded):
        hw.os = "macos"
        if _INTEL_MAC_RE.search(folded):
            hw.apple_silicon = False
        elif _APPLE_CHIP_RE.search(folded) or "apple silicon" in folded:
            hw.apple_silicon = True
    elif _WSL_RE.search(folded) or hw.wsl and not _WINDOWS_RE.search(folded):
        hw.os = "linux"
        hw.wsl = True
        hw.notes.append(
            "WSL2 runs the Linux builds; under WSL the Windows NVIDIA driver is the one that counts "
            "(nvidia-smi's 'Driver Version')."
        )
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


def _count_near(folded: str, start: int, end: int, table: bool, plural: bool) -> int | None:
    after = _COUNT_AFTER_RE.match(folded, end)
    if after and 1 <= int(after.group(1)) <= 16:
        return int(after.group(1))
    before = _COUNT_BEFORE_RE.search(folded[max(0, start - 24) : start])
    if before is None:
        return None
    if before.group("w"):
        return _COUNT_WORDS[before.group("w")]
    n = int(before.group("n"))
    if not 1 <= n <= 64:
        return None
    if before.group("x") or (not table and (plural or n <= 16)):
        head = folded[max(0, start - 24) : start][: before.start()]
        if not before.group("x") and _VERSIONISH_BEFORE.search(head):
            return None  # "python 3.12 H100", "driver 535 A100"
        return n
    return None


def _parse_gpu(cat: Catalog, m: _Matchers, hw: Hardware, folded: str, low: str, inst_gpu: str | None) -> None:
    system_cpu = None
    spans: list[tuple[int, int]] = []
    if inst_gpu:
        order = [inst_gpu]
        counts: dict[str, int | None] = {inst_gpu: None}
    else:
        tokens = _tokens(folded)
        table = "|" in low or "gpu 0:" in low
        order, counts, occurrences = [], {}, {}
        explicit: dict[str, int] = {}
        for sysname, s, e in _lookup(m.system, tokens, m):
            gname, system_cpu = cat.systems[sysname]
            spans.append((s, e))
            if gname not in order:
                order.append(gname)
            break
        for name, s, e in _lookup(m.gpu, tokens, m):
            spans.append((s, e))
            if name not in order:
                order.append(name)
            occurrences[name] = occurrences.get(name, 0) + 1
            n = _count_near(folded, s, e, table, folded[e - 1 : e] == "s" and not name.lower().endswith("s"))
            if n is not None:
                explicit[name] = explicit.get(name, 0) + n
        for name in order:
            counts[name] = explicit.get(name) or (occurrences.get(name, 0) if occurrences.get(name, 0) > 1 else None)
    arch_of = dict(cat.gpu_models)
    resolved: list[str] = []
    if not inst_gpu:
        # nvidia-smi CSV rows: a name torchbot does not know is still read by its compute_cap.
        for row in _smi_csv(low):
            fname = fold(row.get("name", ""))
            key = _cc_key(row.get("compute_cap", ""))
            if not fname or any(True for _ in _lookup(m.gpu, _tokens(fname), m)) or key not in cat.gpu_archs:
                continue
            label = row["name"].strip()
            resolved.append(fname)
            if label not in order:
                order.append(label)
                counts[label] = None
                arch_of[label] = key
                hw.notes.append(
                    f"'{label}' is not in torchbot's GPU list; its compute capability {row['compute_cap'].strip()} "
                    f"(from nvidia-smi) says {key.upper()}."
                )
            else:
                counts[label] = (counts[label] or 1) + 1
    for name in order:
        hw.gpus.append(GpuSeen(name, arch_of.get(name), counts.get(name)))
    name = order[0] if order else None
    archs = {g.arch for g in hw.gpus if g.arch}
    if len(archs) > 1:
        hw.notes.append(
            "The question names GPUs of different architectures ("
            + ", ".join(f"{g.name}: {g.arch.upper()}" for g in hw.gpus if g.arch)
            + ")."
        )
    if name is not None and name in arch_of:
        hw.gpu = name
        hw.gpu_arch = arch_of[name]
        hw.gpu_count = counts.get(name)
    elif name is not None:
        hw.gpu_foreign = name
    if m.foreign is not None:
        for fm in m.foreign.finditer(folded, 0, SCAN):
            spans.append(fm.span())
            if hw.gpu_arch is None and hw.gpu_foreign is None:
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
    if not inst_gpu:
        for gm in _GPU_LIKE_RE.finditer(folded, 0, SCAN):
            s, e = gm.span()
            if any(s < b and a < e for a, b in spans) or any(gm.group(0) in r for r in resolved):
                continue
            if gm.group(0) not in hw.unknown_gpu:
                hw.unknown_gpu.append(gm.group(0))
                # A letter O or l typed for a digit is suggested, never assumed.
                typed = gm.group(0).replace(" ", "")
                guess = m.gpu.get(typed[0] + typed[1:].translate(_DIGIT_LOOKALIKES))
                if guess:
                    hw.gpu_suggestions[gm.group(0)] = guess


def _cc_key(cc: str) -> str | None:
    cm = re.fullmatch(r"\s*(\d{1,2})\.(\d)\s*", cc)
    return f"sm{cm.group(1)}{cm.group(2)}" if cm else None


def _smi_csv(low: str) -> list[dict[str, str]]:
    """Rows of ``nvidia-smi --query-gpu=... --format=csv`` output (header line first)."""
    if "compute_cap" not in low and "driver_version" not in low:
        return []
    rows: list[dict[str, str]] = []
    cols: list[str] | None = None
    for line in low[:SCAN].splitlines():
        cells = [c.strip() for c in line.split(",")]
        if cols is None:
            if len(cells) >= 2 and ("compute_cap" in cells or "driver_version" in cells):
                cols = [c.split(" ")[0] for c in cells]
            continue
        if len(cells) != len(cols):
            cols = None
            continue
        rows.append(dict(zip(cols, cells)))
    return rows


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
    source_text = fold(cpu_name) if cpu_name else folded[:SCAN]
    matched = None
    cm = m.cpu.search(source_text) if m.cpu is not None else None
    if cm:
        model = cat.cpu_models[int(cm.lastgroup[1:])]
        hw.cpu = model.name
        uarch_key = model.uarch
        matched = cm.span() if not cpu_name else None
    if uarch_key is None:
        pm = _CPU_PART_RE.search(low)
        if pm and pm.group(1) in cat.arm_parts:
            uarch_key = cat.arm_parts[pm.group(1)]
            hw.cpu = cat.uarchs[uarch_key].name
    if uarch_key is None and pasted:
        uarch_key = _uarch_from_flags(cat, low, pasted)
        if uarch_key is not None:
            mm = _MODEL_LINE_RE.search(low)
            hw.cpu = (mm.group(1).strip() if mm else "") or cat.uarchs[uarch_key].name
            hw.notes.append(
                f"CPU identified from its flags as {cat.uarchs[uarch_key].name} (archspec's microarchitecture database)."
            )
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

    if uarch_key is None and not pasted and not cpu_name:
        _unknown_cpu(cat, m, hw, folded)
    elif matched is not None and m.brands is not None:
        # A second, unknown CPU next to a known one ("Xeon 9999 or EPYC 9654?") is still said.
        for bm in m.brands.finditer(folded, 0, SCAN):
            if bm.group("model") and not (bm.start() < matched[1] and matched[0] < bm.end()):
                if not m.cpu.search(bm.group(0)):
                    hw.unknown_cpu.append(bm.group(0))

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
                hw.unknown_cpu.clear()  # the flags say what matters
        elif hw.flags_source == "model":
            missing = sorted(f for f in (stated - denied) if f != "avx512" and f not in hw.cpu_flags)
            if missing:
                hw.notes.append(
                    f"The question says the CPU has {', '.join(missing)}, but {hw.cpu} does not implement "
                    f"{'it' if len(missing) == 1 else 'them'}; this answer follows the hardware."
                )


def _unknown_cpu(cat: Catalog, m: _Matchers, hw: Hardware, folded: str) -> None:
    """No CPU model recognised: a brand with a model number torchbot does not know is kept (and
    its architecture taken from the brand); ARM words make the answer ARM, never x86."""
    if m.brands is not None:
        for bm in m.brands.finditer(folded, 0, SCAN):
            arch = cat.cpu_brands.get(bm.group("brand"))
            if arch and hw.cpu_arch is None:
                hw.cpu_arch = arch
            if bm.group("model") and bm.group(0) not in hw.unknown_cpu:
                hw.unknown_cpu.append(bm.group(0))
    for cm in _CPU_LIKE_RE.finditer(folded, 0, SCAN):
        if cm.group(0) not in hw.unknown_cpu:
            hw.unknown_cpu.append(cm.group(0))
            hw.cpu_arch = hw.cpu_arch or "x86_64"
    if hw.cpu_arch is None and _ARM_WORD_RE.search(folded, 0, SCAN):
        hw.cpu_arch = "aarch64"


def _uarch_from_flags(cat: Catalog, low: str, pasted: set[str]) -> str | None:
    """An x86 microarchitecture named from pasted flags with archspec's rule (the newest
    microarchitecture of the CPU's vendor whose features the CPU all has), when torchbot's
    data maps it. The flags themselves still decide the build."""
    vm = _VENDOR_LINE_RE.search(low)
    vendor = {"genuineintel": "GenuineIntel", "authenticamd": "AuthenticAMD"}.get(vm.group(1) if vm else "")
    if vendor is None or "avx" not in pasted:
        return None
    from archspec.cpu import TARGETS
    from archspec.cpu.detect import compatibility_check_for_x86_64, partial_uarch

    info = partial_uarch(vendor=vendor, features=set(pasted))  # archspec's own reading of the flags
    by_archspec = {u.archspec: k for k, u in cat.uarchs.items() if u.archspec}
    best = None
    for name, t in TARGETS.items():
        if name in by_archspec and t.vendor == vendor and compatibility_check_for_x86_64(info, t):
            if best is None or (len(t.ancestors), len(t.features)) > best[0]:
                best = ((len(t.ancestors), len(t.features)), name)
    return by_archspec[best[1]] if best else None
