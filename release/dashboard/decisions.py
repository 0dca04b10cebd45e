"""A person's decision about a branch's bump pull requests, as the dashboard shows it (pure;
imports nothing of torchbot): what ``release.state.decisions`` keeps, worded for its views. The
words of a build-torchvision PR waiting for its build-pytorch pair are ``config.outcomes.PAIR_WORDS``
(the PR's commit status says them too)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Decision:
    """A person's decision about a branch's bump pull requests that torchbot respects
    (``release.state.decisions``), while it still holds."""

    kind: str  # closed-unmerged | edited | merge-refused | paused
    number: int | None = None
    head: str | None = None  # closed-unmerged, edited: the PR's head branch; merge-refused: the head commit
    by: str | None = None
    at: str | None = None  # ISO
    note: str = ""  # merge-refused: GitHub's words; paused: the reason

    def text(self) -> str:
        who = f" by {self.by}" if self.by else ""
        when = f" on {self.at[:10]}" if self.at else ""
        if self.kind == "closed-unmerged":
            return (f"PR #{self.number} closed{who}{when} without merging: its nixpkgs is not proposed again "
                    "(a newer one is)")
        if self.kind == "edited":
            return (f"PR #{self.number} holds commits torchbot did not make ({self.by or 'someone'}): torchbot no "
                    "longer updates it; merge or close it")
        if self.kind == "merge-refused":
            return (f"GitHub refused to merge PR #{self.number} at {(self.head or '')[:7]}{when}: "
                    f"{self.note or 'no reason given'}")
        return f"bumps paused{who}{when}" + (f" ({self.note})" if self.note else "") + "; no new PR until resumed"


