"""``nvidia-smi`` tables as the tool prints them, for the property tests: the current layout
(Linux persistence mode, Windows WDDM/TCC driver model; 91 columns) and the older one (79
columns), names cut off with "..." where they do not fit their column, any fan, temperature,
power, memory and utilisation values, an optional processes section, and the whole table wrapped
at a terminal width. Hypothesis strategies; no torchbot code."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st


@dataclass(frozen=True)
class Layout:
    name: str
    widths: tuple[int, int, int]  # the three cells of a GPU row
    name_field: int  # characters the GPU name may take before nvidia-smi cuts it off
    header: tuple[str, str, str]
    statuses: tuple[str, ...]


NEW_LINUX = Layout("linux", (41, 24, 22), 28, ("GPU  Name                 Persistence-M", "Bus-Id          Disp.A",
                                              "Volatile Uncorr. ECC"), ("On", "Off"))
NEW_WINDOWS = Layout("windows", (41, 24, 22), 28, ("GPU  Name                  Driver-Model", "Bus-Id          Disp.A",
                                                  "Volatile Uncorr. ECC"), ("WDDM", "TCC"))
OLD_LINUX = Layout("old-linux", (31, 22, 22), 18, ("GPU  Name        Persistence-M", "Bus-Id        Disp.A",
                                                  "Volatile Uncorr. ECC"), ("On", "Off"))
OLD_WINDOWS = Layout("old-windows", (31, 22, 22), 18, ("GPU  Name            TCC/WDDM", "Bus-Id        Disp.A",
                                                      "Volatile Uncorr. ECC"), ("WDDM", "TCC"))
LAYOUTS = (NEW_LINUX, NEW_WINDOWS, OLD_LINUX, OLD_WINDOWS)


@dataclass(frozen=True)
class Table:
    text: str
    names: tuple[str, ...]  # the full name of each GPU row, in order
    cut: tuple[bool, ...]  # whether nvidia-smi cut that row's name off
    driver: str
    wrapped: bool


def _cell(text: str, width: int, right: bool = False) -> str:
    text = text[:width]
    return text.rjust(width) if right else text.ljust(width)


def _row(cells: tuple[str, str, str], layout: Layout) -> str:
    return "|" + "|".join(_cell(c, w) for c, w in zip(cells, layout.widths, strict=True)) + "|"


def _border(layout: Layout, ch: str = "-", joint: str = "+", ends: str = "+") -> str:
    return ends + joint.join(ch * w for w in layout.widths) + ends


def _full(layout: Layout, text: str) -> str:
    width = sum(layout.widths) + 2
    return "|" + _cell(text, width) + "|"


@st.composite
def _gpu_block(draw, layout: Layout, index: int, name: str) -> tuple[list[str], bool]:
    cut = len(name) > layout.name_field
    shown = name
    if cut:
        keep = layout.name_field - 4
        shown = draw(st.sampled_from([name[: keep + 1] + "...", name[:keep].rstrip() + " ..."]))
    status = draw(st.sampled_from(layout.statuses))
    first = f"{index:>4}  {shown:<{layout.name_field}}{status:>5}"
    bus = f"{draw(st.integers(0, 255)):08X}:{draw(st.integers(0, 255)):02X}:00.0"
    fan = draw(st.one_of(st.just("N/A"), st.integers(0, 100).map(lambda n: f"{n}%")))
    temp = f"{draw(st.integers(15, 99))}C"
    perf = f"P{draw(st.integers(0, 12))}"
    used, cap = draw(st.integers(0, 999)), draw(st.integers(10, 999))
    mem_used, mem_total = draw(st.integers(0, 200_000)), draw(st.integers(1, 200_000))
    util = f"{draw(st.integers(0, 100))}%"
    second = f"{fan:>4}  {temp:>4}  {perf:>4}  {used:>8}W / {cap:>4}W"
    lines = [
        _row((first, f"  {bus} {draw(st.sampled_from(['On', 'Off'])):>3} ",
              f"{draw(st.sampled_from(['N/A', '0', 'Off', 'On'])):>21} "), layout),
        _row((second[: layout.widths[0]].rjust(layout.widths[0]),
              f"{mem_used:>8}MiB / {mem_total:>7}MiB ".rjust(layout.widths[1]),
              f"{util:>6}  {draw(st.sampled_from(['Default', 'E. Process', 'Prohibited'])):>12} "), layout),
        _row(("", "", f"{draw(st.sampled_from(['N/A', 'Disabled', 'Enabled'])):>21} "), layout),
        _border(layout),
    ]
    return lines, cut


def _processes(draw, layout: Layout, n_gpus: int) -> list[str]:
    width = sum(layout.widths) + 2
    lines = ["+" + "-" * width + "+", _full(layout, " Processes:"),
             _full(layout, "  GPU   GI   CI        PID   Type   Process name                  GPU Memory"),
             "|" + "=" * width + "|"]
    for _ in range(draw(st.integers(0, 3))):
        proc = draw(st.sampled_from(["python", "/usr/lib/xorg/Xorg", "C:\\Windows\\explorer.exe", "ollama_llama_server",
                                     "...e\\steamwebhelper.exe", "vllm"]))
        usage = draw(st.one_of(st.just("N/A"), st.integers(0, 99_999).map(lambda n: f"{n}MiB")))
        gpu, pid = draw(st.integers(0, max(0, n_gpus - 1))), draw(st.integers(1, 99_999))
        kind = draw(st.sampled_from("CG"))
        lines.append(_full(layout, f"  {gpu:>3}   N/A  N/A  {pid:>8}      {kind}   {proc:<36}{usage:>9}"))
    lines.append("+" + "-" * width + "+")
    return lines


def wrap(text: str, width: int) -> str:
    """What a terminal of ``width`` columns shows: every line cut into pieces of that width."""
    out = []
    for line in text.split("\n"):
        out.extend(line[k : k + width] for k in range(0, max(len(line), 1), width))
    return "\n".join(out)


@st.composite
def tables(draw, names: st.SearchStrategy[str]) -> Table:
    layout = draw(st.sampled_from(LAYOUTS))
    gpu_names = draw(st.lists(names, min_size=1, max_size=8))
    major = draw(st.integers(470, 590))
    driver = f"{major}.{draw(st.integers(10, 99))}" + draw(st.sampled_from(["", f".{draw(st.integers(1, 20))}"]))
    smi = driver if layout.name.endswith("linux") else f"{major - 1}.{draw(st.integers(10, 99))}.01"
    width = sum(layout.widths) + 2
    cuda = draw(st.integers(0, 9))
    lines = ["+" + "-" * width + "+",
             _full(layout, f" NVIDIA-SMI {smi:<22} Driver Version: {driver:<13} CUDA Version: 12.{cuda}"),
             _border(layout, joint="+", ends="|"),
             _row(layout.header, layout),
             _row(("Fan  Temp   Perf          Pwr:Usage/Cap", "Memory-Usage".rjust(layout.widths[1] - 1),
                   "GPU-Util  Compute M."), layout),
             _row(("", "", "MIG M.".rjust(layout.widths[2] - 1)), layout),
             _border(layout, ch="=", joint="+", ends="|")]
    cut = []
    for i, name in enumerate(gpu_names):
        block, was_cut = draw(_gpu_block(layout, i, name))
        lines += block
        cut.append(was_cut)
    if draw(st.booleans()):
        lines += _processes(draw, layout, len(gpu_names))
    text = "\n".join(lines)
    wrapped = draw(st.booleans())
    if wrapped:
        text = wrap(text, draw(st.integers(24, width - 1)))
    before = draw(st.sampled_from(["", "which build for this box?\n", "nvidia-smi says:\n\n"]))
    after = draw(st.sampled_from(["", "\nthanks", "\n"]))
    return Table(before + text + after, tuple(gpu_names), tuple(cut), driver, wrapped)
