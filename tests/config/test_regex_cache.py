"""Compiled regular expressions kept between processes (config/regex_cache.py): a pattern from the
cache matches exactly as ``re.compile`` of it does, the file is written at exit, and an unreadable
or foreign file only costs the compile."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PATTERNS = [r"(?P<gpu>h100|a100)(?:\s+x(?P<n>\d+))?", r"(?<![a-z0-9])xeon ?platinum ?(\d{4}[a-z+]*)", r"[a-z]+"]
TEXTS = ["8x H100 x8 and an a100", "dual xeon platinum 8480+ xeonplatinum 8570", "no match 123", ""]

PROBE = """
import json, re, sys
from config import regex_cache
from config.regex_cache import rx
patterns = json.loads(sys.argv[1]); texts = json.loads(sys.argv[2])
known = all((p, int(re.I)) in regex_cache._entries() for p in patterns)  # read from the file
out = []
for p in patterns:
    c = rx(p, re.I)
    out.append([[m.span(), m.groups(), m.groupdict()] for t in texts for m in c.finditer(t)])
print(json.dumps({"hits": out, "known": known}))
"""


def probe(cache_dir):
    import json

    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
    env["TORCHBOT_CACHE_DIR"] = str(cache_dir)
    r = subprocess.run([sys.executable, "-c", PROBE, json.dumps(PATTERNS), json.dumps(TEXTS)], cwd=ROOT, env=env,
                       capture_output=True, text=True, check=True, timeout=60)
    return json.loads(r.stdout)


def expected():
    return [[[list(m.span()), list(m.groups()), m.groupdict()] for t in TEXTS for m in re.compile(p, re.I).finditer(t)]
            for p in PATTERNS]


def test_a_cached_pattern_matches_as_re_compile_does(tmp_path):
    first = probe(tmp_path)
    assert not first["known"]
    assert len(list(tmp_path.glob("regex-*.pickle"))) == 1  # written at exit
    second = probe(tmp_path)
    assert second["known"]  # the programs came from the file
    assert first["hits"] == second["hits"] == expected()


def test_a_corrupt_or_foreign_file_is_compiled_again(tmp_path):
    probe(tmp_path)
    (path,) = tmp_path.glob("regex-*.pickle")
    path.write_bytes(b"not a pickle")
    again = probe(tmp_path)
    assert not again["known"] and again["hits"] == expected()
    import pickle

    path.write_bytes(pickle.dumps(("another python", {})))
    assert probe(tmp_path)["hits"] == expected()


def test_no_cache_directory_means_plain_compiles(tmp_path):
    assert probe("off")["hits"] == expected()
    assert not list(tmp_path.iterdir())
