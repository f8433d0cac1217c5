"""Text that is safe to store and print: known secrets masked, lone surrogates replaced.

An endpoint may echo the API key in an error body, a tool may put a token in its exception: the
error tree (`errors.PlanweaveError`) passes its message and every field it serializes through
`redact`, so the journal, events, `--json` and the terminal never show them.  Known secrets are
the keys backends are configured with (`add_secret`) and the values of environment variables
whose names contain API_KEY, TOKEN, SECRET or PASSWORD.
"""

from __future__ import annotations

import os
import re
import threading

__all__ = ["MASK", "add_secret", "encodable", "redact"]

MASK = "[redacted]"

# Shorter values (flags, "1", "true") would mask ordinary words everywhere.
_MIN_LENGTH = 8
_SECRET_NAME = re.compile(r"API_?KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)

_configured: set[str] = set()
_lock = threading.Lock()


def add_secret(value: str | None) -> None:
    """Mask `value` in every error text from now on (for keys not taken from the environment)."""
    if value and len(value) >= _MIN_LENGTH:
        with _lock:
            _configured.add(value)


def _known() -> list[str]:
    with _lock:
        found = set(_configured)
    found.update(
        value
        for name, value in os.environ.items()
        if len(value) >= _MIN_LENGTH and _SECRET_NAME.search(name)
    )
    # Longest first, so a secret that contains another is masked whole.
    return sorted(found, key=len, reverse=True)


def redact(text: str) -> str:
    """`text` with every known secret replaced by MASK, and any lone surrogate (which no encoder
    takes: an endpoint's error body may hold one) by U+FFFD, so it can be stored and printed.
    A secret is found however an echo spells it: in any letter case, and with any of its
    characters URL-encoded (%2D), JSON-escaped (\u002d) or hex-escaped (\x2d)."""
    for secret in _known():
        text = _spellings(secret).sub(MASK, text)
    return encodable(text)


_patterns: dict[str, re.Pattern[str]] = {}


def _spellings(secret: str) -> re.Pattern[str]:
    pattern = _patterns.get(secret)
    if pattern is None:
        parts = []
        for char in secret:
            code = ord(char)
            forms = [re.escape(char)]
            if code < 0x100:
                forms += [f"%{code:02x}", f"\\\\x{code:02x}"]
            forms.append(f"\\\\u{code:04x}")
            parts.append("(?:" + "|".join(forms) + ")")
        pattern = _patterns[secret] = re.compile("".join(parts), re.IGNORECASE)
    return pattern


def encodable(text: str) -> str:
    """`text` with surrogate pairs joined and lone surrogates replaced by U+FFFD."""
    if text.isascii():
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
