"""release.pins.hashes (pure): sha256 written into a recipe's fetchTarball, layout kept."""

from __future__ import annotations

import subprocess

from release.pins.hashes import set_tarball_hash, tarball_hashes, tarball_url
from tests.support.fixtures_pins import NEW, PIN_A

H1 = "1wci290hngzd2nm6s2m0dk09if8jn6074qx8zg72pac51rp6g3c7"
H2 = "0" * 52
URL = "https://github.com/NixOS/nixpkgs/archive/{}.tar.gz"

MULTILINE = f"""let
  nixpkgs_pinned = import (builtins.fetchTarball {{
    url = "{URL.format(NEW)}";
  }}) {{ config = {{ allowUnfree = true; }}; }};
in nixpkgs_pinned.hello
"""


def parses(text: str, tmp_path) -> bool:
    f = tmp_path / "r.nix"
    f.write_text(text)
    return subprocess.run(["nix-instantiate", "--parse", str(f)], check=False, capture_output=True).returncode == 0


def test_hash_goes_on_the_line_after_url_with_its_indent(tmp_path):
    out = set_tarball_hash(MULTILINE, NEW, H1)
    assert f'    url = "{URL.format(NEW)}";\n    sha256 = "{H1}";\n  }}) {{' in out
    assert tarball_hashes(MULTILINE, NEW) == [None] and tarball_hashes(out, NEW) == [H1]
    assert set_tarball_hash(out, NEW, H1) == out  # idempotent
    assert parses(out, tmp_path)


def test_an_existing_hash_is_replaced_not_duplicated(tmp_path):
    old = set_tarball_hash(MULTILINE, NEW, H2)
    out = set_tarball_hash(old, NEW, H1)
    assert out == set_tarball_hash(MULTILINE, NEW, H1) and H2 not in out
    sri = MULTILINE.replace(";\n  }})", ';\n    hash = "sha256-AAAA";\n  })')
    assert 'hash = "sha256-AAAA"' not in set_tarball_hash(sri, NEW, H1)
    assert set_tarball_hash(sri, NEW, H1).count(f'sha256 = "{H1}";') == 1


def test_one_line_and_string_forms(tmp_path):
    one = f'import (builtins.fetchTarball {{ url = "{URL.format(NEW)}"; }}) {{}}\n'
    assert set_tarball_hash(one, NEW, H1) == (
        f'import (builtins.fetchTarball {{ url = "{URL.format(NEW)}"; sha256 = "{H1}"; }}) {{}}\n')
    string = f'import (builtins.fetchTarball "{URL.format(NEW)}") {{}}\n'
    out = set_tarball_hash(string, NEW, H1)
    assert out == f'import (builtins.fetchTarball {{ url = "{URL.format(NEW)}"; sha256 = "{H1}"; }}) {{}}\n'
    assert parses(out, tmp_path) and tarball_hashes(string, NEW) == [None]


def test_other_revisions_are_untouched():
    two = MULTILINE + MULTILINE.replace(NEW, PIN_A)
    out = set_tarball_hash(two, NEW, H1)
    assert tarball_hashes(out, NEW) == [H1] and tarball_hashes(out, PIN_A) == [None]


def test_tarball_url_from_the_setting():
    assert tarball_url("http://127.0.0.1:8/archive", NEW) == f"http://127.0.0.1:8/archive/{NEW}.tar.gz"
    assert tarball_url("https://github.com/NixOS/nixpkgs/archive/", NEW) == URL.format(NEW)
