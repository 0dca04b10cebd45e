"""Pending plans as data: what a shown plan expects not to move, how to make it again, and
what to say when a Confirm cannot apply it. Pure functions over a plan's ``to_dict()``
(no Slack, git or database here; ``bot.frontends.chat`` stores the rows in the state DB)."""

from __future__ import annotations

from datetime import datetime

from config.errors import UsageError


def expected_refs(command: str, plan: dict) -> dict[str, str]:
    """name -> value of everything the plan was made from that must still hold at Confirm."""
    if command == "bump":
        tips = plan.get("tips") or {b["branch"]: b.get("tip") or "" for b in plan.get("branches", [])}
        out = {f"branch {name}": tip for name, tip in tips.items()}
        # every moving pin group's target: a channel that moved since the plan is not silently taken
        out.update({f"pin of {b['branch']} at {(b.get('old_pin') or '')[:7]}": b.get("new_pin") or ""
                    for b in plan.get("branches", []) if b.get("new_pin")})
        for c in plan.get("companions", []):  # the paired build-torchvision branches (--with-companions)
            out.update({f"branch {c['repo']}:{b['branch']}": b.get("tip") or "" for b in c.get("branches", [])})
        out["nixpkgs"] = plan.get("new_rev") or ""
        return out
    if command == "build":
        return {f"branch {plan.get('branch')}": plan.get("commit") or ""}
    if command == "publish":
        rows = sorted(f"{r['package']}@{(r.get('pin') or 'unpinned')[:12]}" for r in plan.get("publish", []))
        return {"to publish": " ".join(rows)}
    return {}


# the CLI's bump-pins options that make sense in chat: flag -> (planner option, what its value is)
_BUMP_VALUE_FLAGS = {"--pytorch": ("pytorch", "X.Y.Z"), "--torch-src": ("torch_src", "REV,HASH"),
                     "--cuda": ("cuda", "A.B"), "--from-pin": ("from_pin", "OLD"), "--channel": ("channel", "CHANNEL")}
_BUMP_SWITCHES = {"--with-companions": "with_companions", "--force": "force"}


def bump_options(args: list[str]) -> tuple[list[str], dict]:
    """``/bump`` words -> (positional words, planner options): ``--with-companions``, ``--force``,
    ``--pytorch X.Y.Z``, ``--torch-src REV,HASH``, ``--cuda A.B``, ``--from-pin OLD``, ``--channel C``
    (``--flag=value`` works too)."""
    rest: list[str] = []
    opts: dict = {}
    words = iter(args)
    for word in words:
        flag, eq, value = word.partition("=")
        if word in _BUMP_SWITCHES:
            opts[_BUMP_SWITCHES[word]] = True
        elif flag in _BUMP_VALUE_FLAGS:
            key, what = _BUMP_VALUE_FLAGS[flag]
            value = value if eq else next(words, "")
            if not value or value.startswith("--"):
                raise UsageError(f"/bump {flag} needs a value ({what}).")
            opts[key] = value
        elif word.startswith("--"):
            known = ", ".join([*_BUMP_SWITCHES, *_BUMP_VALUE_FLAGS])
            raise UsageError(f"/bump does not take {word}; it takes {known}.")
        else:
            rest.append(word)
    return rest, opts


def replay_args(command: str, args: list[str], plan: dict) -> list[str]:
    """The arguments that make the same plan again: a bump pins the nixpkgs revision it
    resolved, so a channel that moved since is not silently taken (a source move on the current
    pin keeps its flags and no revision)."""
    if command == "bump" and args and plan.get("new_rev"):
        rest, opts = bump_options(args)
        flags = [flag for flag, key in _BUMP_SWITCHES.items() if opts.get(key)]
        flags += [w for flag, (key, _) in _BUMP_VALUE_FLAGS.items() if key in opts for w in (flag, opts[key])]
        if len(rest) < 2 and plan.get("source") == "current pin":
            return [rest[0], *flags]
        return [rest[0], plan["new_rev"], *flags]
    return list(args)


def moved(then: dict[str, str], now: dict[str, str]) -> list[str]:
    """Sentences naming what changed between the plan and now (empty: nothing moved)."""
    out = []
    for name in sorted(set(then) | set(now)):
        old, new = then.get(name), now.get(name)
        if old == new:
            continue
        if name == "to publish":
            before, after = set((old or "").split()), set((new or "").split())
            parts = [f"+{x}" for x in sorted(after - before)] + [f"-{x}" for x in sorted(before - after)]
            out.append("the variants waiting to publish changed (" + ", ".join(parts) + ")")
        elif old is None:
            out.append(f"{name} is now part of it (at {new[:12]})")
        elif new is None:
            out.append(f"{name} is no longer part of it")
        else:
            out.append(f"{name} moved from {old[:12]} to {new[:12]}")
    return out


def _hhmm(when: datetime | None) -> str:
    return when.strftime("%Y-%m-%d %H:%M UTC") if when else "an earlier time"


def refusal(outcome: str, state: str | None, command: str, args: list[str], *, owner: str = "",
            expires: datetime | None = None, handled: datetime | None = None, ttl_seconds: int = 0) -> str:
    """What a Confirm (or Cancel) that cannot proceed answers."""
    again = f"/{command} {' '.join(args)}".strip()
    if outcome == "unknown":
        return "That plan is not known here (it may have been cleaned up); run the command again for a new plan."
    if outcome == "expired" or state == "expired":
        mins = max(1, ttl_seconds // 60)
        return f"That plan expired at {_hhmm(expires)} (plans last {mins} min). Run {again} again for a new one."
    if outcome == "not_owner":
        return f"Only the admin who asked ({owner}) can confirm this plan."
    verb = {"confirmed": "confirmed", "cancelled": "cancelled"}.get(state or "", "handled")
    return f"That plan was already {verb} at {_hhmm(handled)}; nothing more was done."


def refused_moved(command: str, args: list[str], changes: list[str]) -> str:
    return (f"Refused /{command} {' '.join(args)}: since the plan was shown, " + "; ".join(changes)
            + f". Nothing was changed. Run /{command} {' '.join(args)} again for a new plan.")


def nothing_to_do(command: str, plan: dict) -> bool:
    """True when confirming the plan would change nothing (no Confirm button then)."""
    if command == "bump":
        def moves(b: dict) -> bool:
            torch = b.get("pytorch") or {}
            return not b.get("up_to_date") or (bool(torch.get("new")) and torch.get("new") != torch.get("old"))
        return not any(moves(b) and b.get("files_changed") for b in plan.get("branches", []))
    if command == "build":
        return not plan.get("build")
    if command == "publish":
        return not plan.get("publish")
    return False
