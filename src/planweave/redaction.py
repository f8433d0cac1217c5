"""Text that is safe to store and print: known secrets masked, lone surrogates replaced.

An endpoint may echo the API key in an error body, a tool may put a token in its exception: the
error tree (`errors.PlanweaveError`) passes its message and every field it serializes through
`redact`, so the journal, events, `--json` and the terminal never show them.  Known secrets are
the keys backends are configured with (`add_secret`) and the values of environment variables
whose names contain API_KEY, TOKEN, SECRET or PASSWORD.  An endpoint's URL may hold a
credential of its own (`http://user:pass@host/v1?api-key=...`): `redact_url` masks it wherever a
URL is stored or shown, and `redact_endpoints` does so for the URLs of a run's settings.
A tool may also return a secret: `redact_value` masks the strings of a result where it is
stored (the journal) or shown (`--json`, the terminal, what the joiner reads), while the
run's tasks still get the value itself.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = [
    "MASK",
    "add_secret",
    "encodable",
    "mask_userinfo",
    "redact",
    "redact_endpoints",
    "redact_url",
    "redact_value",
]

MASK = "[redacted]"

# Shorter values (flags, "1", "true") would mask ordinary words everywhere.
_MIN_LENGTH = 8
_SECRET_NAME = re.compile(r"API_?KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
# Query parameters whose value may be a credential (api-key, access_token, sig, X-Amz-Signature).
_SECRET_PARAM = re.compile(
    r"key|token|secret|passw|auth|sig|credential|session|bearer", re.IGNORECASE
)
# NAME=VALUE pairs in a query or a fragment, whichever of & ; # ? separates them.
_PAIR = re.compile(r"(^|[?&;#])([^=&;#?]+)=([^&;#]*)")

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
    return encodable(_masked(text, [_spellings(secret) for secret in _known()]))


def redact_value(value: Any) -> Any:
    """A copy of `value` (a result in its JSON form: the journal's, `--json`'s) with every
    known secret masked in its strings, dict keys included, inside lists and dicts; other
    values as they are.  `value` itself when no secret is known."""
    patterns = [_spellings(secret) for secret in _known()]
    if not patterns:
        return value
    try:
        return _masked(value, patterns)
    except RecursionError:  # a list nested thousands deep: shown as nothing of it
        return MASK


def _masked(value: Any, patterns: list[re.Pattern[str]]) -> Any:
    """`value` with the secrets `patterns` find masked in its strings (the one masking step
    `redact` and `redact_value` share)."""
    if isinstance(value, str):
        for pattern in patterns:
            value = pattern.sub(MASK, value)
        return value
    if isinstance(value, dict):
        return {_masked(k, patterns): _masked(v, patterns) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v, patterns) for v in value]
    return value


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


def mask_userinfo(url: str) -> str:
    """`url` with everything between its `://` and its last `@` as MASK: the user and
    password, however malformed (an unencoded `/`, `?`, `#`, `[` or `@` in a password), are
    never left in it; text without `://` ... `@` is returned as it is."""
    head, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    return f"{head}://{MASK}@{rest.rpartition('@')[2]}"


def _mask_pair(m: re.Match[str]) -> str:
    lead, name, _ = m.groups()
    return f"{lead}{name}={MASK}" if _SECRET_PARAM.search(unquote(name)) else m.group()


def redact_url(url: str) -> str:
    """`url` without what may be a credential in it: the user and password before its host
    become MASK, and so does the value of every query parameter named like a key, token,
    secret, password, signature or session; known secrets are masked as `redact` does.  Text
    that is not a URL with a host is only `redact`ed; a malformed one (`urlsplit` refuses it)
    has everything between `://` and its last `@` masked (`mask_userinfo`), and its query's
    credentials."""
    try:
        parts = urlsplit(url)
    except ValueError:
        head, sep, query = mask_userinfo(url).partition("?")
        return redact(head + sep + _PAIR.sub(_mask_pair, query))
    if not parts.scheme or not parts.netloc:
        return redact(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
    query, fragment = _PAIR.sub(_mask_pair, parts.query), _PAIR.sub(_mask_pair, parts.fragment)
    return redact(urlunsplit((parts.scheme, netloc, parts.path, query, fragment)))


def redact_endpoints(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A run's settings (`RunSettings.to_dict()`'s form, or an older journal's) with their URLs
    through `redact_url`: the endpoint (`base_url`) and the MCP servers reached over HTTP.
    (A command line is no URL and is only `redact`ed.)  Everything a run's settings are stored
    or shown as passes through here."""
    shown = dict(settings)
    if isinstance(shown.get("base_url"), str):
        shown["base_url"] = redact_url(shown["base_url"])
    if isinstance(shown.get("mcp"), list | tuple):
        shown["mcp"] = [redact_url(s) if isinstance(s, str) else s for s in shown["mcp"]]
    return shown
