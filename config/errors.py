"""torchbot's exceptions: each carries a sentence fit to show a user as is.

Shared by bot/ and release/ (hence here, in the foundation package); imports nothing of torchbot."""

from __future__ import annotations


class TorchbotError(Exception):
    """Base class. ``str(err)`` is the user-facing message; ``exit_code`` for the CLI."""

    exit_code = 1

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class UsageError(TorchbotError):
    """The command line or chat command was malformed."""

    exit_code = 2


class NotFoundError(UsageError):
    """A name the user gave (a branch, a package, a job) is not there: bad input, exit 2 like
    any other usage mistake, the same in every command."""


class CatalogError(TorchbotError):
    """The catalog data is inconsistent or a name is not in it."""


class ValidationError(TorchbotError):
    """A requested change is impossible or unsafe (e.g. a matrix the hardware cannot have)."""


class RefusedError(TorchbotError):
    """An operation was refused on purpose (a guard fired); nothing was changed."""


class ExternalError(TorchbotError):
    """An external system (git remote, HTTP API, build tool) failed; nothing was changed."""


class UnknownThere(ExternalError):
    """An external system answered, and does not have what was asked (a commit nixpkgs lacks):
    that fact only, not the system, is missing."""


class PromiseRefused(RefusedError):
    """A bump refused because the new pin's torch leaves the PyTorch line the branch promises."""


class CudaMissing(RefusedError):
    """A bump refused because a CUDA package set the recipes use is missing at the new pin."""


class PermissionDenied(TorchbotError):
    """The user may not run this command here."""


class ConfigError(TorchbotError):
    """A setting is missing or wrong; the message names the ``TORCHBOT_`` variable."""

    exit_code = 2


class NotInCatalogError(NotFoundError, CatalogError):
    """A branch or package name the catalog does not hold: bad input (exit 2), and a catalog
    error to code that catches those."""

