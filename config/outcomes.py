"""The kinds a release record's rows hold, as enums (pure; imports nothing of torchbot): what a
bump did with a pin group (:class:`BumpKind`), why (:class:`ReasonKind`), and where its pull
request stands (:class:`PrState`), why a build-torchvision PR waits for its pair (:class:`PairWait`,
worded by ``PAIR_WORDS`` for every view and the PR's ``torchbot/pair`` status). Stages set them;
views word them; nothing reads them back out of a sentence."""

from __future__ import annotations

from enum import StrEnum


class BumpKind(StrEnum):
    BUMPED = "bumped"
    KEPT_PROMISE = "kept-promise"
    CURRENT = "current"
    HELD = "held"
    SKIPPED = "skipped"


class ReasonKind(StrEnum):
    """Why a group's bump went as it did."""

    NONE = ""  # bumped to the tracked head, or already there
    PATCH_LEVEL = "patch-level"  # bumped; the head's torch differs from the promise at patch level
    PROMISE_KEPT = "promise-kept"  # moved to the newest commit that keeps the promised PyTorch line
    MOVED_BY_HAND = "moved-by-hand"  # a deliberate move a person asked for (--pytorch, --torch-src, a revision)
    BREAKS_PROMISE = "breaks-promise"  # held: the head (and every newer commit) leaves the promised line
    CUDA_MISSING = "cuda-missing"  # held: a CUDA package set the recipes use is missing there
    REFUSED = "refused"  # held: another guard refused it
    NIXPKGS_UNANSWERED = "nixpkgs-unanswered"  # held: a fact nixpkgs would not give
    UNREADABLE = "unreadable"  # held: the branch's recipes could not be read
    HASH_FAILED = "hash-failed"  # held: the new pin's tarball could not be hashed
    WITH_GROUP_BEFORE = "with-group-before"  # held: an earlier group of its branch was held
    NOT_DELIVERED = "not-delivered"  # held: the commits could not be delivered (push, pull request)
    NO_PINS = "no-pins"  # skipped: no pinned recipes
    VLLM = "vllm-certified"  # skipped: pinned to vLLM's nixpkgs by design
    NOT_SELECTED = "not-selected"  # skipped: not among the groups asked for
    CHANNEL_BEHIND = "channel-behind"  # current: the tracked head is older than the pin (a rollback)
    LEFT_ALONE = "left-alone"  # skipped: a person's decision stands (paused, closed unmerged, edited by hand)


class PrState(StrEnum):
    NONE = ""
    OPEN = "open"
    MERGED = "merged"
    CLOSED = "closed"  # closed without merging (``closed_by`` says who, when known)
    CONFLICT = "conflict"  # open, and GitHub cannot merge it


class PairWait(StrEnum):
    """Why a build-torchvision bump pull request is not merged though its builds passed: its
    build-pytorch pair (the bump PR of the same branch to the same target pin) has not merged."""

    NONE = ""
    BUILDING = "pair-building"  # the pair is open and not all built yet (or not built at all)
    FAILED = "pair-failed"  # a build of the pair failed at its head
    CLOSED = "pair-closed"  # a person closed the pair without merging
    NOT_MERGED = "pair-not-merged"  # the pair passed but is not merged (automerge off, refused, a conflict)


PAIR_WORDS = {  # PairWait, as a build-torchvision PR's line and its torchbot/pair status say it
    PairWait.BUILDING: "is not built yet",
    PairWait.FAILED: "failed to build",
    PairWait.CLOSED: "was closed without merging",
    PairWait.NOT_MERGED: "passed and is not merged",
}
