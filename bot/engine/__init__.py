"""The answer engine: reads hardware from words and pasted output and picks a variant.

- ``hardware``: text -> ``Hardware`` facts, one module per input kind (free-text GPU and CPU
  names, cloud instances, pasted ``nvidia-smi``, pasted ``lscpu`` / ``/proc/cpuinfo``, the
  constraint words: versions, OS, workload).
- ``select``: the selection rules: ``recommend`` and its paths by hardware; ``cpu_isa`` (which
  ISA builds a CPU runs), ``branches`` (which branch and CUDA group, and why).
- ``companions``: torchvision / torchaudio answers paired with the PyTorch answer.
- ``fuzzy``: typo readings of the question's keywords.
- ``intents``: what a chat message asks for in words (help, pins, status, "bump main"), from
  ``config/data/chat_intents.toml``; and whether a message names hardware at all.
- ``answer``: the ``Answer`` result object (the JSON contract of ``torchbot ask --json``).
- ``host``: the one adapter, this machine's NVML / ``nvidia-smi`` / ``/proc`` as pasteable text.

Import rule: may import ``config`` only (never ``release``, never ``bot.frontends``); ``host``
imports nothing of torchbot.
"""
