"""The README's examples answer as shown (and those of the docs/*.md pages it links, issue 28):
every `torchbot ask` command in their ``sh`` blocks is
run as written (the console script in a subprocess, through ``bash`` for the pipelines) and its
answer is checked against what the README says next to it; every ``$ torchbot ask`` transcript
is checked line by line. The commands that read the machine get a recorded ``nvidia-smi`` and
``lscpu`` on PATH (real executables printing recorded output); the repository example runs
against fixture repositories in the real shapes."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.fixtures_realshapes import make_repos

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README = "\n".join(p.read_text() for p in PAGES)  # the README and the docs pages, one text
ASKING = ROOT / "docs" / "asking.md"  # where the --json contract is stated

SMI_TABLE = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 4090        Off |   00000000:01:00.0  On |                  Off |
| 30%   45C    P8             25W /  450W |    1234MiB /  24564MiB |      3%      Default |
+-----------------------------------------+------------------------+----------------------+
"""
SMI_CSV = "name, compute_cap, driver_version\nNVIDIA GeForce RTX 4090, 8.9, 550.54.15\n"
LSCPU = """\
Architecture:            x86_64
Vendor ID:               AuthenticAMD
Model name:              AMD Ryzen 9 7950X 16-Core Processor
CPU max MHz:             5881.0000
Flags:                   fpu vme sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma f16c avx512f avx512dq avx512bw avx512vl
"""


@dataclass(frozen=True)
class Example:
    command: str
    claim: str  # the comment the README gives it
    with_repositories: bool  # shown after `export TORCHBOT_REPO_PATH=...`


def examples() -> list[Example]:
    out = []
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        repos = "TORCHBOT_REPO_PATH=" in block
        for line in block.splitlines():
            if re.search(r"\btorchbot ask\b", line):
                command, _, claim = line.partition(" #")
                out.append(Example(command.strip(), claim.strip(), repos))
    return out


def transcripts() -> list[tuple[str, list[str]]]:
    return [(cmd, shown.rstrip("\n").split("\n"))
            for cmd, shown in re.findall(r"```text\n\$ (torchbot ask [^\n]*)\n(.*?)```", README, re.S)]


def stubs(tmp_path: Path) -> Path:
    """`nvidia-smi` and `lscpu` that print recorded output, first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\ncase "$*" in\n  *--query-gpu*) cat <<\'EOF\'\n{SMI_CSV}EOF\n;;\n'
                   f"  *) cat <<'EOF'\n{SMI_TABLE}EOF\n;;\nesac\n")
    lscpu = bin_dir / "lscpu"
    lscpu.write_text(f"#!/bin/sh\ncat <<'EOF'\n{LSCPU}EOF\n")
    for f in (smi, lscpu):
        f.chmod(0o755)
    return bin_dir


def run(command: str, tmp_path: Path, repo_path: str | None = None) -> str:
    """The README's command line as a shell runs it, with torchbot's console script."""
    torchbot = f"{shlex.quote(sys.executable)} -m bot"
    line = re.sub(r"(?:\.venv/bin/)?\btorchbot\b(?= )", torchbot, command)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
    env.update(PATH=f"{stubs(tmp_path)}:{env.get('PATH', '')}", XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               TORCHBOT_CACHE_DIR=str(tmp_path / "cache"))
    if repo_path:
        env["TORCHBOT_REPO_PATH"] = repo_path
    r = subprocess.run(["bash", "-o", "pipefail", "-c", line], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=120, check=False)
    assert r.returncode == 0, (command, r.stderr)
    return r.stdout


def recommended(out: str) -> tuple[str | None, str | None]:
    """(package, branch) of a text or JSON answer."""
    if out.lstrip().startswith("{"):
        rec = json.loads(out)["recommendation"]
        return (rec["package"], rec["branch"]) if rec else (None, None)
    pm = re.search(r"^Use (\S+)$", out, re.M)
    bm = re.search(r"^  branch   (\S+) ", out, re.M)
    return (pm and pm.group(1), bm and bm.group(1))


def contract_keys() -> set[str]:
    block = re.search(r"## The `ask --json` contract\n\n```\n(.*?)```", ASKING.read_text(), re.S)
    assert block, "docs/asking.md states the --json contract"
    return set(re.findall(r'"(\w+)"', block.group(1)))


def test_the_readme_has_the_examples_this_test_checks():
    assert len(examples()) >= 8 and transcripts()
    readme = PAGES[0].read_text()
    assert sum(bool(re.search(r"\btorchbot ask\b", line)) for block in re.findall(r"```sh\n(.*?)```", readme, re.S)
               for line in block.splitlines()) >= 8  # the tour itself, not only the reference pages


@pytest.mark.parametrize("example", examples(), ids=lambda e: e.command[:60])
def test_a_readme_example_answers_as_the_readme_says(example, tmp_path):
    repo_path = None
    if example.with_repositories:
        pt, tv = make_repos(tmp_path)
        repo_path = f"{pt.path},{tv.path}"
    out = run(example.command, tmp_path, repo_path)
    package, branch = recommended(out)
    claim = example.claim
    checked = False
    if "->" in claim:  # "-> PACKAGE" (or "-> PACKAGE on BRANCH")
        want = claim.split("->", 1)[1].split()
        assert package == want[0], (example.command, out)
        if len(want) >= 3 and want[1] == "on":
            assert branch == want[2]
        checked = True
    if "JSON object" in claim:
        d = json.loads(out)
        keys = contract_keys()
        assert set(d) <= keys and set(d["hardware"]) <= keys and set(d["recommendation"]) <= keys, d.keys()
        checked = True
    if "--here" in example.command:  # this machine: its GPUs (the recorded nvidia-smi) and CPU
        assert out.startswith("This machine:") and "RTX 4090" in out.split("\n\n")[0], out
        assert package or "No variant" in out
        if "python 3.12" in example.command and package:
            assert "python312" in package  # the words still count
        checked = True
    if example.command.rstrip().endswith("ask -"):  # pasted output read from stdin
        assert package and "-sm89-" in package, out  # the RTX 4090 the recorded output shows
        checked = True
    if "torchvision" in example.command and not example.with_repositories:
        assert package and package.startswith("torchvision-"), out  # its transcript is checked below
        checked = True
    if "exists on the branch it names" in claim:
        assert package in {p for r in (pt, tv) for b in r.branches.values() if b.name == branch for p in b.packages}
        checked = True
    assert checked, f"the README says {claim!r} about {example.command!r}; this test does not check that yet"


@pytest.mark.parametrize(("command", "shown"), transcripts(), ids=lambda x: x[:50] if isinstance(x, str) else "")
def test_a_readme_transcript_is_what_torchbot_prints(command, shown, tmp_path):
    out = run(command, tmp_path).split("\n")
    chunks, chunk = [], []
    for line in shown:  # "..." marks lines the README leaves out
        if line.strip() == "...":
            chunks.append(chunk)
            chunk = []
        else:
            chunk.append(line)
    chunks.append(chunk)
    at = 0
    for chunk in (c for c in chunks if c):
        starts = [i for i in range(at, len(out) - len(chunk) + 1) if out[i : i + len(chunk)] == chunk]
        assert starts, (command, chunk, out)
        at = starts[0] + len(chunk)
