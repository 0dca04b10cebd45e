"""`torchbot release init` and `torchbot release render` (registrar; no heavy imports at
module level)."""

from __future__ import annotations

import json
import sys


def register(verbs) -> None:
    p = verbs.add_parser("init", help="create the multi-branch build-pytorch repository from the catalog")
    p.add_argument("path", help="directory for the repository (new, empty, or an existing build-pytorch repository)")
    p.add_argument("--branch", action="append", dest="branches", metavar="NAME",
                   help="only this catalog branch (repeatable; default: every branch)")
    p.add_argument("--force", action="store_true",
                   help="write into a repository with recipes and history torchbot did not make (refused otherwise, "
                        "saying what would be replaced)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_init)

    r = verbs.add_parser("render", help="print the generated recipe of a package, or write a branch's files")
    r.add_argument("branch", help="catalog branch")
    r.add_argument("package", nargs="?", help="package to print (default: list the branch's files)")
    r.add_argument("--out", help="write every file of the branch under this directory")
    r.set_defaults(func=_render)


def _init(args, ctx) -> int:
    from config.catalog_data import load_catalog
    from release.recipes.init import init_repository

    settings = ctx.settings
    result = init_repository(
        args.path, load_catalog(), args.branches, settings.git_author_name, settings.git_author_email,
        force=args.force,
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result.text())
    return result.exit_code


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
        for path, text in files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        print(f"Wrote {len(files)} files of {args.branch} under {root}.")
    else:
        for path in files:
            print(path)
    return 0
