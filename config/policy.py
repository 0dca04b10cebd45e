"""The release's rules that several stages and views share, each in one place (pure; imports
nothing of torchbot):

- branch kinds: a vLLM-certified branch (bumped by hand, pinned to vLLM's nixpkgs), a bump
  pull request's head branch (``bump/<branch>-<rev>``: never a branch of the release);
- the nixpkgs channel or branch a release branch tracks (``TORCHBOT_BUMP_TRACKS``, else the
  default channel);
- build-state buckets: a build's recorded state -> what the views count it as;
- a repository's GitHub name (``owner/name``), from its remote's URL or the settings.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fnmatch import fnmatchcase

# -- branch kinds -------------------------------------------------------------------------------

BUMP_PREFIX = "bump/"
BUMP_HEADS = ("bump/*",)  # patterns of bump pull requests' head branches


def is_vllm_branch(name: str, vllm: str | None = None) -> bool:
    """A vLLM-certified branch: the catalog says which vLLM (``vllm``), or its name says vllm."""
    return bool(vllm) or "vllm" in name


def is_bump_head(name: str) -> bool:
    """A bump pull request's head branch (``bump/<branch>-<rev>``), never a release branch."""
    return name.startswith(BUMP_PREFIX)


def bump_head_prefix(branch: str) -> str:
    """The head-branch prefix of ``branch``'s bump pull requests."""
    return f"{BUMP_PREFIX}{branch}-"


def is_release_branch(name: str) -> bool:
    return bool(name) and name != "HEAD" and not is_bump_head(name)


# -- tracked channels --------------------------------------------------------------------------


def tracked(settings) -> Callable[[str], str]:
    """branch -> the channel or nixpkgs branch it follows: the first TORCHBOT_BUMP_TRACKS pattern
    that matches it, else TORCHBOT_DEFAULT_CHANNEL."""
    patterns = dict(getattr(settings, "bump_tracks", None) or {})
    default = settings.default_channel

    def channel(branch: str) -> str:
        return next((c for p, c in patterns.items() if fnmatchcase(branch, p)), default)

    return channel


# -- build-state buckets -----------------------------------------------------------------------

BUILT, FAILED, RUNNING, NOT_BUILT = "built", "failed", "running", "not built"
BUCKETS = (BUILT, FAILED, RUNNING, NOT_BUILT)
_BUCKET = {"succeeded": BUILT, "failed": FAILED, "interrupted": FAILED, "queued": RUNNING, "running": RUNNING}


def bucket(state: str | None) -> str:
    """A build's recorded state (``release.state.STATES``) -> built | failed | running | not built."""
    return _BUCKET.get(state or "", NOT_BUILT)


# -- GitHub names ------------------------------------------------------------------------------

_GITHUB_URL = re.compile(r"github\.com[:/]([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?$")


def github_name_of_url(url: str) -> str | None:
    """``owner/name`` a remote URL names on github.com (https, ssh or a local path ending so),
    else None."""
    m = _GITHUB_URL.search((url or "").strip())
    return m[1] if m else None


def github_name(settings, *, first: bool, remote_url: str = "") -> str | None:
    """``owner/name`` of a managed repository's pull requests and issues: TORCHBOT_GITHUB_REPO for
    the first configured repository, else what its remote's URL names on github.com."""
    if first:
        return settings.github_repo or None
    return github_name_of_url(remote_url)
