"""`torchbot completion bash|zsh|fish`: a shell completion script, and the hidden helper the
scripts call (as gh and cobra do): ``torchbot __complete words -- WORD...`` prints the
candidates for the last word, read from the same argparse tree ``--help`` shows (commands,
options, choices), with branch names for ``--branch``/``--from`` and a branch positional;
``torchbot __complete branches`` prints the branches of TORCHBOT_REPO_PATH (local and the
remote's). Nothing here is imported on ``ask``'s path."""

from __future__ import annotations

import argparse
import sys

SHELLS = ("bash", "zsh", "fish")
BRANCH_DESTS = {"branch", "branches", "from_branch"}  # options and positionals that take a branch name

INSTALL = """examples (install once; a new shell then completes torchbot):
  torchbot completion bash > ~/.local/share/bash-completion/completions/torchbot
  torchbot completion zsh > "${fpath[1]}/_torchbot"     (or: source <(torchbot completion zsh) in ~/.zshrc)
  torchbot completion fish > ~/.config/fish/completions/torchbot.fish"""

BASH = r"""# bash completion for torchbot (`torchbot completion bash`)
_torchbot() {
    local IFS=$'\n'
    COMPREPLY=($(torchbot __complete words -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _torchbot torchbot
"""

ZSH = r"""#compdef torchbot
# zsh completion for torchbot (`torchbot completion zsh`)
_torchbot() {
  local -a candidates
  candidates=("${(@f)$(torchbot __complete words -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  candidates=(${candidates:#})
  if (( ${#candidates} )); then
    compadd -a candidates
  else
    _files
  fi
}
if [[ "${funcstack[1]}" == "_torchbot" ]]; then
  _torchbot "$@"
else
  compdef _torchbot torchbot
fi
"""

FISH = r"""# fish completion for torchbot (`torchbot completion fish`)
function __torchbot_complete
    set -l before (commandline -opc)
    set -e before[1]
    set -l current (commandline -ct)
    set -l out (torchbot __complete words -- $before "$current" 2>/dev/null)
    if test (count $out) -eq 0
        __fish_complete_path (commandline -ct)
    else
        printf '%s\n' $out
    end
end
complete -c torchbot -f -a '(__torchbot_complete)'
"""

SCRIPTS = {"bash": BASH, "zsh": ZSH, "fish": FISH}


def register(sub) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh or fish)",
                       description="Print a completion script for your shell: commands, options, their\n"
                                   "choices, and branch names read from TORCHBOT_REPO_PATH.", epilog=INSTALL)
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in: bash, zsh or fish")
    p.set_defaults(func=_script, no_settings=True, check_files=False)


def _script(args, ctx) -> int:
    sys.stdout.write(SCRIPTS[args.shell])
    return 0


# -- the hidden helper ---------------------------------------------------------------------

def complete(words: list[str], build_parser) -> int:
    """``__complete branches`` or ``__complete words -- W1 ... CURRENT``: candidates, one a line;
    nothing (the shell then completes file names) when a value is free text or a path."""
    what, rest = (words[0], words[1:]) if words else ("words", [])
    if rest[:1] == ["--"]:
        rest = rest[1:]
    try:
        out = branches() if what == "branches" else candidates(build_parser(), rest)
    except Exception:  # noqa: BLE001  a completion never prints a traceback into the user's prompt
        out = []
    sys.stdout.write("".join(f"{c}\n" for c in out))
    return 0


def _value_options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {o: a for a in parser._actions for o in a.option_strings if a.nargs != 0}


def _children(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            shown = {a.dest for a in action._choices_actions}
            return {n: p for n, p in action.choices.items() if n in shown}
    return {}


def candidates(parser: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """What may follow ``words[:-1]`` and start with ``words[-1]``."""
    *done, current = words or [""]
    expecting: argparse.Action | None = None
    positionals, repo = 0, None
    for w in done:
        if expecting is not None:
            repo = w if expecting.dest == "repo" else repo
            expecting = None
            continue
        children = _children(parser)
        if w in children:
            parser, positionals = children[w], 0
        elif w.startswith("-"):
            expecting = _value_options(parser).get(w.partition("=")[0]) if "=" not in w else None
        else:
            positionals += 1
    if expecting is not None:
        return [c for c in _values(expecting, repo) if c.startswith(current)]
    if current.startswith("-"):
        opts = [o for a in parser._actions for o in a.option_strings if a.help != argparse.SUPPRESS]
        return sorted(o for o in opts if o.startswith(current))
    names = list(_children(parser))
    if names:
        return [n for n in names if n.startswith(current)]
    slots = [a for a in parser._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]
    if positionals < len(slots):
        return [c for c in _values(slots[positionals], repo) if c.startswith(current)]
    return []


def _values(action: argparse.Action, repo: str | None = None) -> list[str]:
    if action.choices:
        return [str(c) for c in action.choices]
    if action.dest in BRANCH_DESTS:
        return branches(repo)
    return []


def branches(repo: str | None = None) -> list[str]:
    """The branch names of ``repo`` (a --repo on the command line) or TORCHBOT_REPO_PATH: local
    ones and the remote's (without its prefix)."""
    from config.settings import load_settings
    from release.branches.commands import branch_names
    from release.context import Context

    return branch_names(Context(load_settings()), repo)
