"""The result of ``ask``: one object that the CLI prints, the console chat shows and Slack
renders as Block Kit. ``to_dict`` is the JSON contract of ``torchbot ask --json``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.engine.hardware import Hardware


@dataclass(frozen=True)
class Pick:
    """A variant chosen for the question, with the branch it comes from."""

    package: str
    branch: str
    gpu_arch: str | None
    cpu_isa: str | None
    cuda: str | None
    python: str
    pytorch: str
    platform: str
    build_command: str
    install_command: str
    note: str = ""  # why this is an alternative (not part of the JSON contract's required keys)
    repository: str | None = None  # the repository whose branch holds the recipe (None: embedded catalog)
    kind: str = "pytorch"  # pytorch | torchvision | torchaudio
    pairs_with: dict[str, Any] | None = None  # companions: the PyTorch package it is built against

    def to_dict(self) -> dict[str, Any]:
        d = {
            "package": self.package,
            "branch": self.branch,
            "gpu_arch": self.gpu_arch,
            "cpu_isa": self.cpu_isa,
            "cuda": self.cuda,
            "python": self.python,
            "pytorch": self.pytorch,
            "platform": self.platform,
            "build_command": self.build_command,
            "install_command": self.install_command,
            "repository": self.repository,
        }
        if self.kind != "pytorch":
            d["kind"] = self.kind
            d["pairs_with"] = self.pairs_with
        if self.note:
            d["note"] = self.note
        return d


def read_as(hw: Hardware) -> list[str]:
    """What the question was read as, part by part, so a misreading shows."""
    out = [f"{g.count}x {g.name} → GPU" if g.count else f"{g.name} → GPU" for g in hw.gpus if g.arch]
    if hw.gpu_foreign:
        out.append(f"{hw.gpu_foreign} → not an NVIDIA GPU")
    if hw.no_gpu and not hw.gpus:
        out.append("no GPU → CPU-only")
    if hw.instance:
        at = hw.query.lower().find(hw.instance)
        out.append(f"{hw.query[at : at + len(hw.instance)] if at >= 0 else hw.instance} → "
                   f"{hw.instance_provider} instance")
    if hw.cpu:
        out.append(f"{hw.cpu} → CPU")
    elif hw.cpu_flags is not None and hw.flags_source == "pasted":
        out.append("pasted flags → CPU")
    elif hw.instance and not hw.instance_gpu_less:  # a shape whose provider does not publish its CPU
        out.append(f"CPU unknown ({hw.instance_provider} does not publish it)")
    for value, what in ((hw.python, "Python"), (hw.cuda, "CUDA"), (hw.pytorch, "PyTorch"), (hw.driver, "driver"),
                        (hw.os, "OS"), (hw.workload, "workload")):
        if value:
            out.append(f"{value} → {what}")
    return out


@dataclass
class Answer:
    """What `ask` says: the recommendation, the alternatives, the reasons, warnings and questions back."""

    hardware: Hardware
    recommendation: Pick | None = None
    alternatives: list[Pick] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    # how many of ``reasons`` are about the hardware (GPU, CPU); the rest explain the branch and
    # CUDA choice, which a companion answer (torchvision/torchaudio) makes for itself
    hardware_reasons: int | None = field(default=None, repr=False, compare=False)
    hardware_warnings: int | None = field(default=None, repr=False, compare=False)  # likewise for warnings
    read: list[str] = field(default_factory=list)  # what the question was read as: "4x RTX 4090 → GPU"
    refusal: str | None = None  # bad input (nothing names hardware; a non-NVIDIA accelerator only): one line

    exit_code = 0  # any answer is a successful command

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.hardware.query,
            "hardware": self.hardware.to_dict(),
            "recommendation": self.recommendation.to_dict() if self.recommendation else None,
            "alternatives": [a.to_dict() for a in self.alternatives],
            "reasons": list(self.reasons),
            "warnings": list(self.warnings),
            "missing": list(self.missing),
            "read": list(self.read),
        }

    def text(self) -> str:
        if self.refusal:
            return self.refusal
        lines: list[str] = []
        r = self.recommendation
        if r:
            lines.append(f"Use {r.package}")
            cuda = f", CUDA {r.cuda}" if r.cuda else ""
            lines.append(f"  branch   {r.branch} (PyTorch {r.pytorch}{cuda}, Python {r.python}, {r.platform})")
            if r.repository:
                lines.append(f"  repo     {r.repository}")
            if r.pairs_with:
                pw = r.pairs_with
                where = f" on {pw['branch']}" if pw.get("branch") else ""
                lines.append(f"  pairs    PyTorch {pw.get('pytorch')}: {pw.get('package') or pw.get('how')}{where}")
            lines.append(f"  build    {r.build_command}")
            lines.append(f"  install  {r.install_command}")
        else:
            lines.append("No variant to recommend.")
        if self.read:
            lines.append("Read:  " + "; ".join(self.read))
        if self.reasons:
            lines.append("Why:")
            lines.extend(f"  - {x}" for x in self.reasons)
        if self.warnings:
            lines.append("Warnings:")
            lines.extend(f"  ! {x}" for x in self.warnings)
        if self.missing:
            lines.append("To answer, tell me:")
            lines.extend(f"  ? {x}" for x in self.missing)
        if self.alternatives:
            lines.append("Alternatives:")
            for a in self.alternatives:
                note = f" — {a.note}" if a.note else ""
                lines.append(f"  - {a.package} on {a.branch}{note}")
        return "\n".join(lines)
