"""The question's constraint words: Python, vLLM, PyTorch and CUDA versions, the driver (typed,
or pasted from ``nvidia-smi``), the OS (macOS / Apple Silicon, Windows, WSL, Linux), the
workload (only from words about work) and "no GPU". Pure; may import config."""

from __future__ import annotations

from bot.engine.hardware import nvidia_smi
from bot.engine.hardware.facts import Hardware
from config.regex_cache import rx

_PY_RE = rx(r"(?<![a-z0-9])(?:python|py|cp|cpython)\s?v?(3)\.?(1[0-5]|[89])(?![0-9])")
_VLLM_RE = rx(r"(?<![a-z0-9])vllm(?:\s*(?:version|v|==|@|=)?\s*v?(\d+\.\d+(?:\.\d+)?))?")
_DRIVER_RE = rx(
    r"(?:driver(?: version)?|nvidia smi|nvidia-smi)\s*[:=]?\s*(\d{3})(?:\.(\d{1,3}))?(?:\.(\d{1,3}))?"
)
_RDRIVER_RE = rx(r"(?<![a-z0-9])r(\d{3})(?: driver)?(?![0-9])")
_CUDA_RE = rx(r"(?<![a-z0-9])cuda\s*(version\s*:)?\s*(?:v|=|==|>=)?\s*(\d{2})(?:\.(\d))?(?![0-9.]*\d)")
_CU_TAG_RE = rx(r"(?<![a-z0-9])cu(1[0-3])(\d)(?![0-9])")  # PyTorch wheel tags: cu128, cu131
_TORCH_RE = rx(r"(?<![a-z0-9])(?:pytorch|torch)\s*(?:version\s*)?v?(\d)\.(\d{1,2})(?![0-9])")
NO_GPU_RE = rx(
    r"no (?:nvidia |discrete |dedicated )?(?:gpus?|graphics card|cuda)|without (?:a |an )?(?:nvidia )?gpu"
    r"|cpu[ -]?only|gpu[ -]?less|no accelerator|no nvidia(?![a-z])|not an nvidia|non nvidia gpu"
)
_MAC_RE = rx(
    r"(?<![a-z0-9])(?:mac ?os|macbook(?: pro| air)?|mac (?:mini|studio|pro)|imac|darwin|apple silicon|os ?x|mps"
    r"|metal performance)(?![a-z0-9])"
)
_APPLE_CHIP_RE = rx(r"(?<![a-z0-9])(?:apple )?m([1-5])(?: (?:pro|max|ultra))?(?![a-z0-9])")
_INTEL_MAC_RE = rx(r"intel mac|mac\w* (?:with )?(?:an )?intel|x86_64 darwin|intel based mac")
_WINDOWS_RE = rx(r"(?<![a-z0-9])(?:windows|wddm)(?![a-z0-9])")
_WSL_RE = rx(r"(?<![a-z0-9])(?:wsl ?2?|microsoft standard wsl2|wsl2 kernel)(?![a-z0-9])")
_LINUX_RE = rx(r"(?<![a-z0-9])(?:linux|ubuntu|debian|rhel|rocky|nixos|fedora)(?![a-z0-9])")
_BF16_RE = rx(r"(?<![a-z0-9])(?:bf ?16|bfloat ?16|brain ?float)(?![a-z0-9])")
_INT8_RE = rx(r"(?<![a-z0-9])(?:int ?8|int ?4|quanti[sz]\w*|q8)(?![a-z0-9])")
_TRAIN_RE = rx(r"(?<![a-z0-9])(?:train\w*|fine ?tun\w*|pretrain\w*)")
_INFER_RE = rx(r"(?<![a-z0-9])(?:inference|inferencing|serving|serve)(?![a-z0-9])")


def read_versions(hw: Hardware, low: str, folded: str) -> None:
    pm = _PY_RE.search(folded)
    if pm:
        hw.python = f"{pm.group(1)}.{pm.group(2)}"
    vm = _VLLM_RE.search(folded)
    if vm:
        hw.vllm = vm.group(1) or "any"
    _read_driver(hw, low, folded)
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


def _read_driver(hw: Hardware, low: str, folded: str) -> None:
    dm = nvidia_smi.DRIVER_VERSION_RE.search(low) or _DRIVER_RE.search(low) or _DRIVER_RE.search(folded)
    csv_driver = nvidia_smi.csv_driver(low)
    if csv_driver:
        hw.driver = csv_driver
    elif dm:
        hw.driver = ".".join(g for g in dm.groups() if g)
        sm = nvidia_smi.SMI_VERSION_RE.search(low)
        if sm and hw.driver.split(".")[0] != sm.group(1):
            # nvidia-smi's own version differs from the driver's: WSL or Windows reports the
            # Windows driver, which is the one that has to support the CUDA version.
            hw.wsl = True
    else:
        rm = _RDRIVER_RE.search(folded)
        if rm:
            hw.driver = rm.group(1)


def read_os(hw: Hardware, folded: str, low: str) -> None:
    if _MAC_RE.search(folded) or (_APPLE_CHIP_RE.search(folded) and "apple" in folded):
        hw.os = "macos"
        if _INTEL_MAC_RE.search(folded):
            hw.apple_silicon = False
        elif _APPLE_CHIP_RE.search(folded) or "apple silicon" in folded:
            hw.apple_silicon = True
    elif _WSL_RE.search(folded) or (hw.wsl and not _WINDOWS_RE.search(folded)):
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


def read_workload(hw: Hardware, folded: str) -> None:
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
