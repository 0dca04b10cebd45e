"""Pasted ``lscpu`` and ``/proc/cpuinfo`` output: the flag line (the machine's own word on its
instructions), the architecture line, the model name, the vendor and ARM's CPU part. Pure;
may import config."""

from __future__ import annotations

import re

from config.regex_cache import rx

CPUINFO_REPEAT_RE = rx(r"^processor[ \t]*:[ \t]*[1-9][0-9]*[ \t]*\n(?:[^\n]+\n?)*", re.M)
FLAGS_LINE_RE = rx(r"^[ \t]*(?:flags|features)[ \t]*:[ \t]*([^\n]*)$", re.M)
# Flag names anywhere in the text ("avx512_bf16", "amx_int8", "svebf16", a build name
# "...-avx512bf16"): instructions the CPU has, never words about the work.
FLAG_TOKEN_RE = rx(r"(?<![a-z0-9])-?m?(?:avx|amx|sve|asimd)[a-z0-9_]*")
# The lines of pasted lscpu and /proc/cpuinfo output, by their keys: numbers in them are clock
# speeds, caches and counts ("CPU max MHz: 3090.0000"), never GPU model numbers.
KEY_LINE_RE = rx(
    r"[ \t]*(?:architecture|cpu op-mode\(s\)|address sizes|byte order|cpu\(s\)|(?:on|off)-line cpu\(s\) list"
    r"|vendor(?:_id| id)|model name|bios [a-z ]+|cpu family|thread\(s\) per core"
    r"|core\(s\) per (?:socket|cluster)|socket\(s\)|cluster\(s\)|stepping|frequency boost"
    r"|cpu(?:\(s\))? scaling mhz|cpu (?:max |min )?mhz|bogomips|flags|features|virtuali[sz]ation(?: type)?"
    r"|hypervisor vendor|l[123][di]?(?: cache)?|numa node(?:\(s\)|\d+ cpu\(s\))|vulnerability [a-z0-9 _]+"
    r"|processor|microcode|cache size|physical id|siblings|core id|cpu cores|(?:initial )?apicid"
    r"|fpu(?:_exception)?|cpuid level|wp|bugs|clflush size|cache_alignment|power management|tlb size"
    r"|cpu (?:implementer|architecture|variant|part|revision)|model)[ \t]*:(?:[ \t][^\n]*)?"
)
_ARCH_LINE_RE = rx(r"^[ \t]*architecture[ \t]*:[ \t]*(\S+)", re.M)
_MODEL_LINE_RE = rx(r"^[ \t]*model name[ \t]*:[ \t]*([^\n]*)$", re.M)
_VENDOR_LINE_RE = rx(r"^[ \t]*vendor(?:_id| id)[ \t]*:[ \t]*(\S+)", re.M)
_CPU_PART_RE = rx(r"^[ \t]*cpu part[ \t]*:[ \t]*(0x[0-9a-f]{3})", re.M)
_VENDOR_ARM_RE = rx(
    r"^[ \t]*(?:vendor id[ \t]*:[ \t]*(?:arm|apm|cavium|nvidia|ampere)|cpu implementer[ \t]*:)", re.M
)
_ARCHES = {"x86_64": "x86_64", "amd64": "x86_64", "i686": "x86_64", "aarch64": "aarch64", "arm64": "aarch64",
           "armv8l": "aarch64"}


def pasted_flags(low: str) -> set[str]:
    """Every flag of the pasted flag lines (lscpu "Flags:", /proc/cpuinfo "flags" / "Features")."""
    flags: set[str] = set()
    for fl in FLAGS_LINE_RE.finditer(low):
        tokens = fl.group(1).split()
        if len(tokens) >= 3:
            flags.update(tokens)
    return flags


def pasted_arch(low: str) -> str | None:
    """x86_64 | aarch64 from an "Architecture:" line."""
    am = _ARCH_LINE_RE.search(low)
    return _ARCHES.get(am.group(1)) if am else None


def arm_part(low: str) -> str | None:
    """ARM's "CPU part" id (0xd40 ...)."""
    pm = _CPU_PART_RE.search(low)
    return pm.group(1) if pm else None


def model_line(low: str) -> str:
    """The "Model name:" line as pasted, or ""."""
    mm = _MODEL_LINE_RE.search(low)
    return mm.group(1).strip() if mm else ""


def arm_vendor(low: str) -> bool:
    """A vendor or CPU-implementer line of an ARM CPU."""
    return _VENDOR_ARM_RE.search(low) is not None


def vendor(low: str) -> str | None:
    """Intel | AMD from the "vendor_id" line."""
    vm = _VENDOR_LINE_RE.search(low)
    return {"genuineintel": "Intel", "authenticamd": "AMD"}.get(vm.group(1) if vm else "")
