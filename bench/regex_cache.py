"""What config/regex_cache.py saves: the CPU time (user + sys) of one `torchbot ask` process with
the cache as it is, and with ``rx`` replaced by a plain ``re.compile`` before any torchbot module
takes it, interleaved in the same run so both see the same machine load (median of ``--rounds``,
after two warm-up runs of each so every other cache is written).

The cache stays only while its saving is more than a few milliseconds (issue 35): it hands a
compiled program to CPython's private ``_sre`` (``re._parser``/``re._compiler``).

    .venv/bin/python bench/regex_cache.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._home import isolate  # noqa: E402

isolate()
QUESTION = "which build for an RTX 4090 and a Ryzen 9 7950X on Ubuntu 24.04 with driver 550"
PLAIN = "import re, config.regex_cache as c; c.rx = lambda p, f=0: re.compile(p, int(f))\n"
ASK = f"import sys; from bot.frontends.cli.main import main; sys.exit(main(['ask', {QUESTION!r}]))"


def cpu_ms(plain: bool) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", (PLAIN if plain else "") + ASK], cwd=ROOT, env=env, capture_output=True,
                   check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    rounds = p.parse_args().rounds
    for plain in (False, True, False, True):
        cpu_ms(plain)
    cached, plain = [], []
    for _ in range(rounds):
        cached.append(cpu_ms(False))
        plain.append(cpu_ms(True))
    a, b = statistics.median(cached), statistics.median(plain)
    print(f"torchbot ask, CPU ms (median of {rounds}, interleaved): regex_cache {a:.1f}, plain re.compile {b:.1f}; "
          f"the cache saves {b - a:.1f} ms ({(b - a) / b:.0%})")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
