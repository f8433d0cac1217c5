"""`current_datetime`: the current date and time in a time zone (zoneinfo)."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from ..errors import ToolFailed
from ..tools import tool
from ._names import close_matches, did_you_mean, normalize

__all__ = ["current_datetime", "find_timezone"]

_UTC_NAMES = {"utc", "z", "gmt", "zulu", "universal"}


@functools.cache
def _zones() -> tuple[dict[str, str], dict[str, str]]:
    """Normalized zone names -> IANA names, and normalized last parts ("new york") -> names."""
    zones = sorted(available_timezones())
    full = {normalize(z): z for z in zones}
    cities: dict[str, str] = {}
    for zone in zones:  # canonical "Region/City" zones first so they win the city keys
        if "/" in zone and not zone.startswith(("Etc/", "SystemV/", "US/")):
            cities.setdefault(normalize(zone.rsplit("/", 1)[1]), zone)
    return full, cities


def find_timezone(name: str) -> tzinfo:
    """The tzinfo `name` means: an IANA name in any case ("europe/paris"), the city part of one
    ("Tokyo", "New York"), or UTC/GMT/Z. Raises ToolFailed with suggestions otherwise."""
    text = name.strip()
    if normalize(text) in _UTC_NAMES or text in ("+00:00", "±00:00"):
        return UTC
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        pass
    full, cities = _zones()
    key = normalize(text)
    zone = full.get(key) or cities.get(key)
    if zone is not None:
        try:
            return ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    options = close_matches(key, {**cities, **full})
    raise ToolFailed(f"unknown time zone {name!r}{did_you_mean(options)}")


@tool
def current_datetime(timezone: str = "UTC") -> str:
    """The current date and time in a time zone, as ISO 8601 text.

    Args:
        timezone: an IANA time zone such as "Europe/Paris", or a city such as "Tokyo"
    """
    return datetime.now(find_timezone(timezone)).isoformat(timespec="seconds")
