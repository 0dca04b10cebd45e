"""Secrets kept out of logs: a ``logging.Filter`` for every handler that rewrites each record's
text (its message, arguments and traceback) with ``Authorization`` headers, bearer/basic
credentials, GitHub and Slack token shapes and the configured secret values replaced by ``***``.

httpx, httpcore and slack_sdk log request headers and bodies at DEBUG (``torchbot -v``); the
filter sits on the handlers, so a record from any library is redacted before it is written.
``install()`` adds it to the root logger's handlers; ``remember(settings)`` adds the values of
the settings' secrets (the shapes catch the usual tokens even before settings are read).

May import nothing of torchbot.
"""

from __future__ import annotations

import logging
import re
import threading

MASK = "***"
_SHAPES = [
    # headers as httpcore and slack_sdk log them: (b'Authorization', b'Bearer …'), 'Authorization': '…'
    (re.compile(r"""((?:proxy-)?authorization['"]?\s*[,:=]\s*b?['"])[^'"]*""", re.I), r"\1" + MASK),
    (re.compile(r"""((?:proxy-)?authorization:\s*)[^\r\n]*""", re.I), r"\1" + MASK),
    (re.compile(r"\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=:-]{6,}", re.I), r"\1\2" + MASK),
    # a token or secret passed as a field (slack_sdk's body_params, form bodies, URLs)
    (re.compile(r"""(['"]?\b(?:token|client_secret|signing_secret|api_token|password)['"]?\s*[:=]\s*b?['"]?)"""
                r"""[^'"\s,&}]+""", re.I), r"\1" + MASK),
    # the shapes of GitHub's and Slack's tokens wherever they appear
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9_]{6,}|github_pat_[A-Za-z0-9_]{6,})"), MASK),
    (re.compile(r"\bx(?:ox[abposre]|app)-[A-Za-z0-9-]{6,}"), MASK),
]
_values: set[str] = set()
_lock = threading.Lock()


def remember(settings) -> None:
    """Redact the values of ``settings``' secrets (every SecretStr field) from now on."""
    found = set()
    for name in type(settings).model_fields:
        value = getattr(settings, name, None)
        get = getattr(value, "get_secret_value", None)
        if get is not None:
            raw = get()
            found |= {raw, *raw.split()} if isinstance(raw, str) else set()
    with _lock:
        _values.update(v for v in found if len(v) >= 8)


def redact(text: str) -> str:
    for value in sorted(_values, key=len, reverse=True):
        text = text.replace(value, MASK)
    for pattern, repl in _SHAPES:
        text = pattern.sub(repl, text)
    return text


class RedactSecrets(logging.Filter):
    """Rewrites a record's text with secrets masked (never drops a record)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001  (a record whose arguments do not format: leave it to logging)
            return True
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def install(logger: logging.Logger | None = None) -> None:
    """The filter on every handler of ``logger`` (the root logger), once each."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactSecrets) for f in handler.filters):
            handler.addFilter(RedactSecrets())
