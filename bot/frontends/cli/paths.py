"""`torchbot paths`: where torchbot keeps its own files (state DB, audit log, build logs, the
recipe-facts cache, the record of created branches) and which setting moves each."""

from __future__ import annotations

import json

EXAMPLES = """examples:
  torchbot paths                               each file, the setting that moves it, whether it exists
  torchbot paths --json"""


def register(sub) -> None:
    p = sub.add_parser("paths", help="where torchbot keeps its state DB, audit log, logs, cache and created branches",
                       epilog=EXAMPLES)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_paths, check_files=False)


def _paths(args, ctx) -> int:
    from config.paths import locations
    from config.results import MessageResult

    rows = locations(ctx.settings)
    width = max(len(r["what"]) for r in rows)
    text = "\n".join(f"{r['what']:<{width}}  {r['where']}  ({r['variable']}; {r['state']})" for r in rows)
    result = MessageResult(text, data={"paths": rows})
    print(json.dumps(result.to_dict(), indent=2) if args.json else result.text())
    return 0
