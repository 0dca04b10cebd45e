"""Figures for issue 3: render every recipe of every branch, `release init` of all eight
branches into a new repository, and reading the catalog back from it.

Goals on this machine: render < 0.5 s, init < 15 s, read-back < 2 s.
Run: .venv/bin/python bench/recipes.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._home import isolate

isolate()  # torchbot's own files go to a temporary home, never the real one

from config.catalog_data import branch_to_dict, load_catalog  # noqa: E402
from release.recipes import render  # noqa: E402
from release.recipes.init import init_repository  # noqa: E402
from release.recipes.repos import catalog_from_repository  # noqa: E402

RUNS = 5


def cold_reader() -> None:
    """Forget what the reader has read (in process and on disk): every read is a cold one."""
    import os

    from release.recipes import buildchain, reader, repos

    os.environ["TORCHBOT_CACHE_DIR"] = "off"
    reader._FACTS.clear()
    reader._BRANCHES.clear()
    reader._DISK.clear()
    repos._STATE.clear()
    buildchain._PKGSETS.clear()


def timed(fn):
    t = time.perf_counter()
    value = fn()
    return time.perf_counter() - t, value


def main() -> int:
    catalog = load_catalog()
    first, files = timed(lambda: render.render_all(catalog))  # includes template compilation
    renders = [timed(lambda: render.render_all(catalog))[0] for _ in range(RUNS)]
    n_recipes = sum(1 for b in files.values() for p in b if p.endswith(".nix"))
    n_bytes = sum(len(t) for b in files.values() for t in b.values())

    inits, reads, reruns = [], [], []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "build-pytorch"
            t_init, _ = timed(lambda path=path: init_repository(path, catalog, None, "bench", "bench@example.com"))
            inits.append(t_init)
            t_rerun, again = timed(lambda path=path: init_repository(path, catalog, None, "bench", "bench@example.com"))
            assert again.up_to_date
            reruns.append(t_rerun)
            cold_reader()
            t_read, back = timed(lambda path=path: catalog_from_repository(path, catalog))
            reads.append(t_read)
            for name, b in catalog.branches.items():
                assert branch_to_dict(back.branches[name]) == branch_to_dict(b)
                assert back.branches[name].variants == b.variants

    def fmt(xs):
        return f"median {statistics.median(xs):.3f} s (min {min(xs):.3f}, max {max(xs):.3f})"

    print(f"catalog: {len(catalog.branches)} branches, {n_recipes} recipes, {n_bytes / 1e6:.2f} MB of files")
    print(f"render all recipes + READMEs + manifests: first (cold templates) {first:.3f} s; "
          f"{fmt(renders)}   goal < 0.5 s")
    print(f"release init, all 8 branches, new repository: {fmt(inits)}   goal < 15 s")
    print(f"release init re-run (up to date): {fmt(reruns)}")
    print(f"read the catalog back from the repository: {fmt(reads)}   goal < 2 s  (round trip exact)")
    ok = statistics.median(renders) < 0.5 and statistics.median(inits) < 15 and statistics.median(reads) < 2
    print("all goals met" if ok else "GOAL MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
