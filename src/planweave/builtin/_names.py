"""Forgiving name matching shared by the country and city tools."""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
from collections.abc import Iterable

# Letters NFKD does not decompose into a base letter plus accents.
_FOLD = str.maketrans(
    {
        "ø": "o",
        "Ø": "O",
        "ł": "l",
        "Ł": "L",
        "đ": "d",
        "Đ": "D",
        "ð": "d",
        "Ð": "D",
        "æ": "ae",
        "Æ": "AE",
        "œ": "oe",
        "Œ": "OE",
        "ß": "ss",
        "ı": "i",
        "þ": "th",
        "Þ": "Th",
        "’": "'",
        "‘": "'",
        "ʻ": "'",
        "ʼ": "'",
    }
)
# Words written both ways in place names; both sides of a comparison use the short form.
_WORDS = {"saint": "st", "sainte": "ste", "mount": "mt", "fort": "ft"}
_WORDS_RE = re.compile(r"\b(?:saint|sainte|mount|fort)\b")
_THE_RE = re.compile(r"^the (?=\S)")
_DROP_RE = re.compile(r"[.'`]")
# Combining marks (accents) left over after NFKD decomposition.
_COMBINING_RE = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
_SPACE_RE = re.compile(r"[\W_]+")

# Common names and spellings the data sets lack, as ISO 3166-1 alpha-2 codes (keys normalized).
COUNTRY_ALIASES: dict[str, str] = {
    "america": "US",
    "united states of america": "US",
    "us": "US",
    "usa": "US",
    "britain": "GB",
    "great britain": "GB",
    "uk": "GB",
    "united kingdom of great britain and northern ireland": "GB",
    "holland": "NL",
    "netherlands": "NL",
    "czechia": "CZ",
    "czech": "CZ",
    "ivory coast": "CI",
    "cote divoire": "CI",
    "north macedonia": "MK",
    "macedonia": "MK",
    "eswatini": "SZ",
    "swaziland": "SZ",
    "burma": "MM",
    "myanmar": "MM",
    "turkiye": "TR",
    "vatican": "VA",
    "vatican city": "VA",
    "holy see": "VA",
    "viet nam": "VN",
    "uae": "AE",
    "emirates": "AE",
    "republic of korea": "KR",
    "dprk": "KP",
    "timor leste": "TL",
    "east timor": "TL",
    "cabo verde": "CV",
    "cape verde": "CV",
    "russian federation": "RU",
    "drc": "CD",
    "dr congo": "CD",
    "congo kinshasa": "CD",
    "congo brazzaville": "CG",
    "bosnia": "BA",
    "lao pdr": "LA",
    "syrian arab republic": "SY",
    "iran islamic republic of": "IR",
    "persia": "IR",
    "bahamas": "BS",
    "gambia": "GM",
    "palestine": "PS",
    "state of palestine": "PS",
    "macau": "MO",
    "macao": "MO",
    "brunei darussalam": "BN",
    "micronesia": "FM",
    "st kitts": "KN",
    "trinidad": "TT",
    "sao tome": "ST",
    "british virgin islands": "VG",
    "us virgin islands": "VI",
    "reunion": "RE",
    "curacao": "CW",
    "aland": "AX",
    "aland islands": "AX",
    "falklands": "FK",
}


def normalize(text: str) -> str:
    """A comparison key: no accents, case or punctuation, `the` dropped, `Saint` == `St.`."""
    if not text.isascii():
        text = _COMBINING_RE.sub("", unicodedata.normalize("NFKD", text.translate(_FOLD)))
    text = _DROP_RE.sub("", text.casefold().replace("&", " and "))
    text = _THE_RE.sub("", _SPACE_RE.sub(" ", text).strip())
    return _WORDS_RE.sub(lambda m: _WORDS[m.group()], text)


class NameIndex:
    """Normalized names and spellings -> a canonical name.

    Keys added first win, so add the most authoritative spellings (official names) first and
    looser ones (alternate spellings, codes, translations) after.
    """

    def __init__(self) -> None:
        self._keys: dict[str, str] = {}
        self._suggest: dict[str, str] = {}

    def add(self, spelling: str, canonical: str, *, suggest: bool = True) -> None:
        key = normalize(spelling)
        if not key:
            return
        self._keys.setdefault(key, canonical)
        if suggest and len(key) >= 4:
            self._suggest.setdefault(key, canonical)

    def get(self, name: str) -> str | None:
        return self._keys.get(normalize(name))

    def suggestions(self, name: str, n: int = 3) -> list[str]:
        """Canonical names whose spellings look like `name`, best first."""
        return close_matches(normalize(name), self._suggest, n)


def close_matches(key: str, candidates: dict[str, str], n: int = 3) -> list[str]:
    """Distinct values of `candidates` whose keys are close to `key`, best first.

    Keys that contain `key` as whole words come first ("Korea" -> "South Korea"), then
    difflib's close matches.
    """
    found: list[str] = []
    if len(key) >= 4:
        word = re.compile(rf"\b{re.escape(key)}\b")
        found.extend(
            value for k, value in sorted(candidates.items()) if k != key and word.search(k)
        )
    found.extend(
        candidates[match]
        for match in difflib.get_close_matches(key, candidates, n=n * 3, cutoff=0.7)
    )
    return list(dict.fromkeys(found))[:n]


def did_you_mean(options: Iterable[str]) -> str:
    """`; did you mean A, B or C?`, or the empty string when there is nothing to offer."""
    items = list(options)
    if not items:
        return ""
    if len(items) == 1:
        return f"; did you mean {items[0]}?"
    return f"; did you mean {', '.join(items[:-1])} or {items[-1]}?"


def quoted(name: str) -> str:
    """`name` as a plan writes it in a call: double quotes, escapes, non-ASCII kept."""
    return json.dumps(name, ensure_ascii=False)
