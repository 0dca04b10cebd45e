"""Cloud instances and families in a question ("p5.48xlarge", "a3-highgpu-8g", "Standard_ND96isr
H100 v5", "a g6e"): which one, and where it was named. Pure; may import config."""

from __future__ import annotations

from bot.engine.hardware.matchers import Matchers, instance_re
from config.catalog import Catalog
from config.regex_cache import rx

# Shapes of instance names, for an unknown one to be said rather than dropped.
INSTANCE_LIKE_RE = rx(
    r"(?<![a-z0-9.\-_])(?:"
    r"[a-z]{1,4}\d{1,2}[a-z0-9\-]{0,8}\.(?:nano|micro|small|medium|large|\d{0,2}xlarge|metal(?:-\d+xl)?)"
    r"|[a-z]\d[a-z]?-(?:standard|highmem|highcpu|highgpu|megagpu|ultragpu|edgegpu|maxgpu|ultramem|megamem|hypermem|custom)(?:-\d+[a-z]?)*"
    r"|standard_[a-z]+\d+[a-z0-9_]*"
    r"|(?:vm|bm)\.(?:standard|denseio|gpu|optimized|hpc)[a-z0-9]*(?:\.[a-z0-9-]+)+"  # OCI "VM.Standard.E5.Flex"
    r")(?![a-z0-9])"
)
# Every instance name has one of these shapes: AWS "<family>.<size>", GCP "<family>-<kind>",
# Azure "standard_..." or a "v<generation>" series, OCI "BM.GPU...", Lambda "gpu_8x_...",
# CoreWeave's GPU class or name, Nebius "gpu-h100-sxm", Scaleway "H100-2-80G", RunPod by name.
# Text without any skips the big search.
_FAMILY_TOKEN_RE = rx(r"(?<![a-z0-9.\-_])[a-z][a-z0-9]*\d[a-z0-9]*(?:-[a-z0-9]+)?(?![a-z0-9.])")
_INSTANCE_GATE_RE = rx(
    r"\.\d*[a-z]|[a-z]\d[a-z]?-[a-z]|standard_|[a-z _]v\d|hx\d|gpu_\d|_nvlink_|coreweave"
    r"|gpu-[a-z]|\d-\d+g|runpod"
)


def find_instance(cat: Catalog, m: Matchers, low: str) -> tuple[int, int, int] | None:
    """(instance index, start, end) of a named cloud instance or family."""
    if m.instance_source is not None and _INSTANCE_GATE_RE.search(low):
        im = instance_re(cat).search(low)
        if im:
            return m.instance_idx[int(im.lastgroup[1:])], im.start(), im.end()
    if not m.families:
        return None
    named: dict[str, bool] = {}  # provider -> named in the text (searched once, not per family token)
    for tm in _FAMILY_TOKEN_RE.finditer(low):
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
