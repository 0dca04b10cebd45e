"""Shims for ``flox`` and ``nix`` that log what runs where (tests and benches only).

``tests/support/shims/flox`` and ``…/nix`` run this file. Nothing is really built: each machine
(a GitHub runner of the stand-in, tests/support/fake_runners.py, or the torchbot host) has a
store, a directory of output keys (``SHIM_STORE``), and a derivation is identified by its recipe:
the sha256 of ``.flox/pkgs/<package>.nix`` and of the recipes it imports (``import ./X.nix``),
read from the checkout (``SHIM_GIT_DIR`` at ``SHIM_SHA``, else the working directory). That is
stricter than Nix (a comment-only edit is a new derivation here), so a build torchbot skips is
never hidden by the shim. Realising a derivation: in the store, nothing; in a substituter (the
``extra-substituters`` of ``NIX_USER_CONF_FILES``, ``file://`` caches), ``substitute``;
otherwise ``build``, refused with exit status 1 when the recipe's ``meta.platforms`` does not
hold ``SHIM_PLATFORM`` (Nix's "a 'aarch64-linux' with features {} is required"). Every action is
one JSON line in ``SHIM_LOG``: host, platform, tool, action, package, key, commit, and, on a
runner, the branch dispatched and the platform the plan meant the job for (``target``).

- ``flox build P…``: realise each, write ``result-P`` (the closure's keys);
- ``flox publish -o ORG P``: realise (``flox publish`` builds in a clean checkout), then
  ``publish``; refused (exit 1) when ``SHIM_CATALOG_REFUSES`` (a glob) matches P;
- ``nix copy --to URL ./result-P``: ``copy``, the closure's ``<key>.narinfo`` into a file:// cache,
  and, when Nix is installed, P's real output path's ``<hash>.narinfo`` (what torchbot asks for);
- ``nix store sign …``: ``sign``. Anything else: logged and exit 0.

Standard library only: it runs as ``python3 -S``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

IMPORT = re.compile(r"import\s+\./([A-Za-z0-9._+-]+)\.nix")
PLATFORMS = re.compile(r"platforms\s*=\s*\[([^\]]*)\]")


def _read(name: str) -> str:
    path = f".flox/pkgs/{name}.nix"
    git_dir, sha = os.environ.get("SHIM_GIT_DIR"), os.environ.get("SHIM_SHA")
    if git_dir and sha:
        out = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{sha}:{path}"], capture_output=True,
                             text=True, check=False)
        if out.returncode != 0:
            raise SystemExit(f"error: no recipe {path} at {sha[:12]}")
        return out.stdout
    p = Path(path)
    if not p.is_file():
        raise SystemExit(f"error: no recipe {path}")
    return p.read_text()


def _log(action: str, package: str | None = None, key: str | None = None, **extra) -> None:
    target = os.environ.get("SHIM_LOG")
    if not target:
        return
    row = {"host": os.environ.get("SHIM_HOST", "unknown"), "platform": os.environ.get("SHIM_PLATFORM"),
           "tool": Path(sys.argv[0]).name, "action": action, "package": package, "key": key,
           "commit": os.environ.get("SHIM_SHA"), "branch": os.environ.get("SHIM_BRANCH"),
           "target": os.environ.get("SHIM_TARGET"), "t": time.time(), **extra}
    with open(target, "a") as f:  # one short write per line: lines from several processes do not mix
        f.write(json.dumps(row) + "\n")


class Machine:
    def __init__(self) -> None:
        self.store = Path(os.environ.get("SHIM_STORE") or ".shim-store")
        self.store.mkdir(parents=True, exist_ok=True)
        self.platform = os.environ.get("SHIM_PLATFORM", "x86_64-linux")
        self.keys: dict[str, str] = {}

    def substituters(self) -> list[Path]:
        out = []
        for conf in (os.environ.get("NIX_USER_CONF_FILES") or "").split(":"):
            if conf and Path(conf).is_file():
                for line in Path(conf).read_text().splitlines():
                    name, _, value = line.partition("=")
                    if name.strip() in ("substituters", "extra-substituters"):
                        out += [Path(u[len("file://"):]) for u in value.split() if u.startswith("file://")]
        return out

    def key(self, name: str) -> tuple[str, list[str]]:
        text = _read(name)
        deps = IMPORT.findall(text)
        h = hashlib.sha256(text.encode())
        for d in deps:
            h.update(self.key(d)[0].encode())
        return h.hexdigest()[:32], deps

    def realise(self, name: str) -> list[str]:
        """The closure's keys, realised in this store."""
        key, deps = self.key(name)
        closure = [k for d in deps for k in self.realise(d)]
        if (self.store / key).exists():
            return [*closure, key]
        if any((c / f"{key}.narinfo").is_file() for c in self.substituters()):
            _log("substitute", name, key)
        else:
            plats = PLATFORMS.search(_read(name))
            wanted = re.findall(r'"([^"]+)"', plats.group(1)) if plats else []
            if wanted and self.platform not in wanted:
                _log("refused", name, key, wanted=wanted)
                raise SystemExit(f"error: a '{'/'.join(wanted)}' with features {{}} is required to build {name}, "
                                 f"but I am a '{self.platform}'")
            _log("build", name, key)
        (self.store / key).write_text(name)
        return [*closure, key]


def flox(args: list[str]) -> int:
    m = Machine()
    if args[:1] == ["build"]:
        for name in args[1:]:
            Path(f"result-{name}").write_text("\n".join(m.realise(name)) + "\n")
        return 0
    if args[:1] == ["publish"]:
        name = args[-1]
        m.realise(name)
        refuses = os.environ.get("SHIM_CATALOG_REFUSES")
        if refuses and fnmatch.fnmatchcase(name, refuses):
            _log("publish-refused", name)
            print(f"error: the catalog refused the upload of {name}", file=sys.stderr)
            return 1
        _log("publish", name, m.key(name)[0])
        return 0
    _log(" ".join(args[:1]) or "flox")
    return 0


def _out_path(name: str) -> str | None:
    """The real output path of recipe ``name`` at ``SHIM_SHA`` (``nix-instantiate``, read-only),
    when Nix is installed, evaluated as Nix on this runner's platform (``SHIM_PLATFORM``) does:
    the store path a real cache would hold after ``nix copy``."""
    import shutil
    import tempfile

    git_dir, sha, tool = os.environ.get("SHIM_GIT_DIR"), os.environ.get("SHIM_SHA"), shutil.which("nix-instantiate")
    if not (git_dir and sha and tool):
        return None
    with tempfile.TemporaryDirectory() as d:
        tar = subprocess.run(["git", f"--git-dir={git_dir}", "archive", sha, ".flox"], capture_output=True, check=False)
        subprocess.run(["tar", "-x", "-C", d], input=tar.stdout, capture_output=True, check=False)
        recipe = f"{d}/.flox/pkgs/{name}.nix"
        expr = f"let r = import {recipe}; in (if builtins.isFunction r then r {{ }} else r).outPath"
        system = ["--option", "system", os.environ["SHIM_PLATFORM"]] if os.environ.get("SHIM_PLATFORM") else []
        proc = subprocess.run([tool, "--readonly-mode", "--eval", "--json", *system, "-E", expr], capture_output=True,
                              text=True, check=False, stdin=subprocess.DEVNULL)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def nix(args: list[str]) -> int:
    if args[:1] == ["copy"] and "--to" in args:
        url = args[args.index("--to") + 1]
        keys = Path(args[-1]).read_text().split()
        if url.startswith("file://"):
            cache = Path(url[len("file://"):].split("?", 1)[0])
            cache.mkdir(parents=True, exist_ok=True)
            (cache / "nix-cache-info").write_text("StoreDir: /nix/store\n")
            for k in keys:
                (cache / f"{k}.narinfo").write_text(f"StorePath: /nix/store/{k}\n")
            out = _out_path(Path(args[-1]).name.removeprefix("result-"))
            if out:  # what a real ``nix copy`` writes: the output path's narinfo, which torchbot asks for
                (cache / (out.rsplit("/", 1)[-1].split("-", 1)[0] + ".narinfo")).write_text(f"StorePath: {out}\n")
        _log("copy", Path(args[-1]).name.removeprefix("result-"), keys[-1] if keys else None, to=url)
        return 0
    _log(" ".join(args[:2]) or "nix")
    return 0


if __name__ == "__main__":
    tool, rest = sys.argv[1], sys.argv[2:]
    sys.argv[0] = tool
    raise SystemExit((flox if tool == "flox" else nix)(rest))
