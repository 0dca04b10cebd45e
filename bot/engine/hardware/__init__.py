"""Free text and pasted command output -> typed hardware facts (``Hardware``).

One module per input kind: ``gpus`` (GPU and system names in words, counts, compute
capabilities), ``cpus`` (CPU model names and flags stated in words; ``cpu_table`` reads model
numbers from the tables of ``config/data/cpu_models``), ``instances`` (cloud
instances and families), ``nvidia_smi`` (pasted ``nvidia-smi`` CSV and tables), ``cpuinfo``
(pasted ``lscpu`` / ``/proc/cpuinfo``), ``words`` (versions, driver, OS, workload), ``retract``
(a part the message takes back), ``machines`` (several machines: the one asked about); ``read``
puts them together; ``matchers`` compiles the catalog's names once; ``facts`` holds the types.

What looks like a GPU, CPU or instance name but is not known is kept in ``unknown_*`` so the
answer can say so instead of dropping it. Pure: the only inputs are the text and the catalog
(whose microarchitecture flags come from archspec's database). Every regular
expression is linear (no nested quantifiers), and input beyond ``MAX_INPUT`` characters is not
read. May import config and ``bot.engine.fuzzy``.
"""

from bot.engine.hardware.facts import GpuSeen, Hardware, fold
from bot.engine.hardware.read import parse

__all__ = ["GpuSeen", "Hardware", "fold", "parse"]
