"""`torchbot release init` and `torchbot release render` (registrar; no heavy imports at
module level)."""

from __future__ import annotations

import json
import sys

INIT_EXAMPLES = """examples:
  torchbot release init ./build-pytorch --dry-run          the branches and files it would write
  torchbot release init ./build-pytorch --branch main      create (or bring up to date) main only"""

RENDER_EXAMPLES = """examples:
  torchbot release render main                                         the files main would have
  torchbot release render main pytorch-python313-cuda12_8-sm90-avx512  one generated recipe
  torchbot release render main --out /tmp/main --dry-run               what --out would write"""


def register(verbs) -> None:
    p = verbs.add_parser("init", help="create the multi-branch build-pytorch repository from the catalog",
                         epilog=INIT_EXAMPLES)
    p.add_argument("path", help="directory for the repository (new, empty, or an existing build-pytorch repository)")
    p.add_argument("--branch", action="append", dest="branches", metavar="NAME",
                   help="only this catalog branch (repeatable; default: every branch)")
    p.add_argument("--dry-run", action="store_true",
                   help="render every branch and say what would be written; create and commit nothing")
    p.add_argument("--force", action="store_true",
                   help="write into a repository with recipes and history torchbot did not make (refused otherwise, "
                        "saying what would be replaced)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_init)

    r = verbs.add_parser("render", help="print the generated recipe of a package, or write a branch's files",
                         epilog=RENDER_EXAMPLES)
    r.add_argument("branch", help="catalog branch")
    r.add_argument("package", nargs="?", help="package to print (default: list the branch's files)")
    r.add_argument("--out", metavar="DIR", help="write every file of the branch under this directory")
    r.add_argument("--dry-run", action="store_true", help="with --out: list the files it would write; write nothing")
    r.set_defaults(func=_render)


def _init(args, ctx) -> int:
    from config.catalog_data import load_catalog
    from release.recipes.init import init_repository

    settings = ctx.settings
    if args.dry_run:
        return _init_dry_run(args)
    result = init_repository(
        args.path, load_catalog(), args.branches, settings.git_author_name, settings.git_author_email,
        force=args.force,
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result.text())
    return result.exit_code


def _init_dry_run(args) -> int:
    from config.catalog_data import load_catalog
    from release.recipes.init import plan_init

    rendered = plan_init(load_catalog(), args.branches)
    if args.json:
        print(json.dumps({"ok": True, "path": args.path, "dry_run": True,
                          "branches": {n: sorted(f) for n, f in rendered.items()}}, indent=2))
        return 0
    print(f"Would write {len(rendered)} branches into {args.path}:")
    print("\n".join(f"  {name}: {len(files)} files" for name, files in rendered.items()))
    print("Dry run: nothing was written.")
    return 0


def _render(args, ctx) -> int:
    from pathlib import Path

    from config.catalog_data import load_catalog
    from config.errors import RefusedError
    from release.recipes.render import render_branch, render_recipe

    catalog = load_catalog()
    if args.package:
        sys.stdout.write(render_recipe(catalog, catalog.branch(args.branch), args.package))
        return 0
    files = render_branch(catalog, args.branch)
    if args.out:
        root = Path(args.out)
        if root.exists() and not root.is_dir():
            raise RefusedError(f"{root} is not a directory.")
        if args.dry_run:
            print("\n".join(str(root / path) for path in files))
            print(f"Dry run: would write {len(files)} files of {args.branch} under {root}; nothing was written.")
            return 0
        for path, text in files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        print(f"Wrote {len(files)} files of {args.branch} under {root}.")
    else:
        for path in files:
            print(path)
    return 0
