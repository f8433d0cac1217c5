"""`convert_units`: unit conversion with `pint`."""

from __future__ import annotations

import difflib
import math
import re
import tokenize
from typing import Any

from ..errors import ToolFailed
from ..tools import tool
from ._common import load_once, missing
from ._currencies import CURRENCY_NAMES

__all__ = ["MAX_UNIT_LENGTH", "MAX_UNIT_POWER", "convert_units"]

MAX_UNIT_LENGTH = 100
MAX_UNIT_POWER = 12  # "kibibyte**1000000000" would make pint compute a billion-digit number
# A number raised to a power ("9**9**9", "(9)**99") would make pint compute a huge integer.
_NUMBER_POWER_RE = re.compile(r"\d\s*\)*\s*(\*\*|\^)")
# pint reads superscripts as powers ("9⁹⁹⁹⁹" is 9**9999): spelled out before the check.
_SUPERSCRIPT_RUN_RE = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+")
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")


def _powers_spelled_out(unit: str) -> str:
    return _SUPERSCRIPT_RUN_RE.sub(lambda m: "**" + m.group().translate(_SUPERSCRIPTS), unit)


# What people (and models) write first, read the way they mean it.  pint reads "km2" as an
# undefined name, "sq. km" as an undefined "sq", and "degrees fahrenheit" as an angle times a
# temperature *difference*: a wrong number, not an error.
_TEMPERATURE_RE = re.compile(
    r"^(?:°|º|deg(?:ree)?s?\.?)?\s*(fahrenheit|celsius|centigrade|kelvin|f|c|k)$", re.IGNORECASE
)
_TEMPERATURES = {"fahrenheit": "degF", "celsius": "degC", "centigrade": "degC", "kelvin": "K"}
_TEMPERATURE_LETTERS = {"f": "degF", "c": "degC", "k": "K"}
_SQUARE_RE = re.compile(r"\bsq(?:\.\s*|\s+)(?=[a-z])", re.IGNORECASE)
_CUBIC_RE = re.compile(r"\bcu(?:\.\s*|\s+)(?=[a-z])", re.IGNORECASE)
# A unit name written with its power as a plain digit ("km2", "m3", "ft2"), not after "**"/"^".
_DIGIT_POWER_RE = re.compile(r"(?<![\w*^])([a-zA-Zµμ]+)([23])\b")
_ALIASES = {
    "sqft": "ft**2",
    "sqm": "m**2",
    "sqmi": "mi**2",
    "sqkm": "km**2",
    "kmh": "km/h",
    "kmph": "km/h",
    "kms": "km",
    "metric ton": "metric_ton",
    "metric tons": "metric_ton",
    "metric tonne": "metric_ton",
    "nautical mile": "nautical_mile",
    "nautical miles": "nautical_mile",
    "mpg": "mile/gallon",
    "us mpg": "mile/gallon",
    "mpg us": "mile/gallon",
    "mpg (us)": "mile/gallon",
    "miles per gallon": "mile/gallon",
    "imperial mpg": "mile/imperial_gallon",
    "uk mpg": "mile/imperial_gallon",
    "mpg (imperial)": "mile/imperial_gallon",
    "mpg (uk)": "mile/imperial_gallon",
    "fl oz": "fluid_ounce",
    "fluid ounce": "fluid_ounce",
    "fluid ounces": "fluid_ounce",
}
ACCEPTED = (
    "symbols or names: km, mi, m, ft, km2 or km² or 'sq km', mi2 or 'square miles', ha, acre, "
    "m3, L, gal, kg, lb, t, km/h, mph, m/s, knot, mpg, L/100km, degC or °C or celsius, degF "
    "or °F or fahrenheit, K, s, min, h, day, year; a difference of temperatures: delta_degC, "
    "delta_degF"
)
# A difference of temperatures (a swing, a gap) as people write it: "delta °C", "°F difference".
_DELTA_RE = re.compile(r"^(?:delta[ _]?|Δ\s*)(.+)$|^(.+?)\s+(?:difference|change|delta)$", re.I)


_MONEY_SIGNS = {"€": "EUR", "£": "GBP", "$": "USD", "¥": "JPY"}
_MONEY_SIGN_RE = re.compile(r"\s*(?:US\$|[€£$¥])\s*")


def _money(unit: str) -> str:
    """Currency signs as their codes ("€/L" is "EUR/L", "US$" is "USD")."""
    signed = _MONEY_SIGN_RE.sub(lambda m: f" {_MONEY_SIGNS[m.group().strip()[-1]]} ", unit)
    return " ".join(signed.split())


def _spelled(unit: str, temperature: bool) -> str:
    """`unit` in pint's spelling: aliases, "sq"/"cu", digit powers and temperature names.

    A bare "F", "C" or "K" is a temperature only when `temperature` says the conversion is
    between temperatures (otherwise it is pint's farad, coulomb, kelvin)."""
    text = _money(" ".join(unit.split()))
    key = text.lower()
    if key in _ALIASES:
        return _ALIASES[key]
    delta = _DELTA_RE.match(text)
    if delta:
        inner = (delta.group(1) or delta.group(2)).strip()
        if _is_temperature(inner):
            return "delta_" + _spelled(inner, True)
    match = _TEMPERATURE_RE.match(text)
    if match:
        word = match.group(1).lower()
        if word in _TEMPERATURES:
            return _TEMPERATURES[word]
        if temperature or match.group(0) != match.group(1):  # "°F", "deg C": a temperature
            return _TEMPERATURE_LETTERS[word]
    text = _SQUARE_RE.sub("square ", text)
    text = _CUBIC_RE.sub("cubic ", text)
    return _DIGIT_POWER_RE.sub(r"\1**\2", text)


def _is_delta(units: Any) -> bool:
    return any(name.startswith("delta_") for name in units._units)


def _is_temperature(unit: str) -> bool:
    match = _TEMPERATURE_RE.match(" ".join(unit.split()))
    return match is not None


@load_once
def _registry() -> Any:
    try:
        import pint
    except ImportError:
        raise missing("pint") from None
    registry: Any = pint.UnitRegistry()
    # Money as units of its own, one dimension per currency: a price per litre converts to a
    # price per gallon ("1.59 €/L"), never one currency to another (rates change daily).
    for code in CURRENCY_NAMES:
        if code not in registry:
            registry.define(f"{code} = [currency_{code}]")
    return registry


def _dimension(dims: Any) -> str:
    text = str(dims).replace("[", "").replace("]", "")
    return text or "a plain number"


# "L/100km", "kWh/100 mi": a quantity per a number of units, as fuel use is written (pint
# reads "L/100km" as litres over 100 times km).
_PER_AMOUNT_RE = re.compile(r"(?:/|\bper\b)\s*(\(?)\s*(\d+(?:\.\d+)?)\s*(?=[^\W\d_])")


def _per_amount(unit: str) -> tuple[str, float]:
    """`unit` without the number it is per ("L/100km" is "L/km" per 100), and that number."""
    match = _PER_AMOUNT_RE.search(unit)
    if match is None:
        return unit, 1.0
    amount = float(match.group(2))
    if not 0 < amount < 1e12:
        raise ToolFailed(f"cannot read the unit {unit!r}: per {match.group(2)} of what?")
    return unit[: match.start()] + "/" + match.group(1) + unit[match.end() :], amount


def _units(registry: Any, text: str, temperature: bool = False) -> tuple[Any, float]:
    """`text` as pint's units, and the number of them it is per (100 for "L/100km")."""
    import pint

    unit = text.strip()
    if not unit:
        raise ToolFailed("a unit is empty")
    if len(unit) > MAX_UNIT_LENGTH:
        raise ToolFailed(f"the unit {unit[:20]!r}... is too long")
    if _NUMBER_POWER_RE.search(_powers_spelled_out(unit)):
        raise ToolFailed(f"{unit!r} is not a unit: numbers may not be raised to powers")
    spelled, per = _per_amount(unit)
    try:
        parsed = registry.parse_units(_spelled(spelled, temperature))
    except pint.UndefinedUnitError:
        options = difflib.get_close_matches(unit, list(registry), n=3, cutoff=0.75)
        hint = f"did you mean {' or '.join(options)}? " if options else ""
        raise ToolFailed(f"unknown unit {unit!r}; {hint}write {ACCEPTED}") from None
    except pint.DefinitionSyntaxError:
        raise ToolFailed(f"cannot read the unit {unit!r}") from None
    except ValueError:
        raise ToolFailed(f"{unit!r} is not a unit; put the number in `value`") from None
    # pint's parser fails on malformed input ("m/", "()", "km/(h*0)") with whatever its
    # internals raise, assertions and arithmetic errors included: all mean a bad unit.
    except (
        AssertionError,
        ArithmeticError,
        TypeError,
        SyntaxError,
        AttributeError,
        KeyError,
        IndexError,
        tokenize.TokenError,
        pint.PintError,
    ):
        raise ToolFailed(f"cannot read the unit {unit!r}") from None
    for name, power in parsed._units.items():
        if not abs(power) <= MAX_UNIT_POWER:
            raise ToolFailed(
                f"the unit {unit!r} raises {name} to the power {power:g}; "
                f"at most {MAX_UNIT_POWER} is allowed"
            )
    return parsed, per


_CURRENCY_DIM_RE = re.compile(r"currency_\w+")


def _mismatch(exc: Any, from_unit: str, to_unit: str, delta: bool) -> ToolFailed:
    """The refusal of a conversion between dimensions that differ, saying what would work:
    `delta` when one side is a difference of temperatures and the other is not."""
    what = f"cannot convert {from_unit.strip()} to {to_unit.strip()}"
    if delta:
        return ToolFailed(
            f"{what}: a difference of temperatures (delta_degC, delta_degF) converts only to "
            "another difference, a temperature (degC, degF) only to another temperature"
        )
    currencies = [set(_CURRENCY_DIM_RE.findall(str(d))) for d in (exc.dim1, exc.dim2)]
    if all(currencies) and currencies[0] != currencies[1]:
        return ToolFailed(
            f"{what}: convert_units keeps a currency as it is (a price per litre to one per "
            "gallon, EUR/L to EUR/gal); it has no exchange rates"
        )
    return ToolFailed(f"{what} ({_dimension(exc.dim1)} vs {_dimension(exc.dim2)})")


def _reciprocal(quantity: Any, target: Any) -> bool:
    """Whether `quantity` converts to `target` only upside down (mpg to L/100km): both a
    ratio of units (never a metre to 1/m), of dimensions each the other's inverse."""
    for units in (quantity._units, target._units):
        powers = list(units.values())
        if not (any(p > 0 for p in powers) and any(p < 0 for p in powers)):
            return False  # a ratio has a unit over another (never m*s, never 1/m)
    dims, wanted = quantity.dimensionality, target.dimensionality
    return bool(dims) and dims != wanted and dims == 1 / wanted


@tool(isolate=True, pure=True)
def convert_units(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a quantity between units: 5 km to mi, 300 km2 to mi2, 20 celsius to fahrenheit;
    a difference of temperatures (a swing, a gap) from delta_degC to delta_degF; mpg to
    L/100km.

    A price per litre converts to one per gallon (EUR/L to EUR/gal), never to another
    currency.  Understands symbols and names (km, km2 or km² or "sq km", mi2 or "square
    miles", kg, lb, celsius or degC or °C, fahrenheit or degF or °F, km/h, mph, ...).  A
    temperature is a point on a scale (20 °C is 68 °F); a difference between two of them is
    not (a swing of 20 °C is 36 °F): convert it with delta_degC, delta_degF.  The result is
    rounded to 12 significant digits (temperatures also to 10 decimal places).

    Args:
        value: the number to convert
        from_unit: its unit
        to_unit: the unit wanted
    """
    if not math.isfinite(value):
        raise ToolFailed(f"the value to convert is not a finite number: {value}")
    registry = _registry()
    import pint

    # "F" to "C" is Fahrenheit to Celsius when both sides read as temperatures.
    temperature = _is_temperature(from_unit) and _is_temperature(to_unit)
    source, source_per = _units(registry, from_unit, temperature)
    target, target_per = _units(registry, to_unit, temperature)
    try:
        quantity = registry.Quantity(value / source_per, source)
        if _reciprocal(quantity, registry.Quantity(1, target)):
            # Fuel economy: miles per gallon and litres per 100 km measure the same thing
            # upside down (25 mpg is 9.41 L/100km); so do pace and speed.
            quantity = 1 / quantity
        result = float(quantity.to(target).magnitude) * target_per
        offset = not all(
            getattr(q, "_is_multiplicative", True) for q in (quantity, registry.Quantity(1, target))
        )
    except pint.DimensionalityError as exc:
        raise _mismatch(exc, from_unit, to_unit, _is_delta(source) != _is_delta(target)) from None
    except pint.OffsetUnitCalculusError as exc:
        raise ToolFailed(
            f"cannot convert {from_unit.strip()} to {to_unit.strip()}: {exc}"
        ) from None
    except (OverflowError, ZeroDivisionError):
        raise ToolFailed(f"the conversion of {from_unit!r} to {to_unit!r} overflows") from None
    except (AssertionError, pint.PintError) as exc:
        raise ToolFailed(
            f"cannot convert {from_unit.strip()} to {to_unit.strip()}: {exc}"
        ) from None
    if not math.isfinite(result):
        raise ToolFailed(f"the conversion of {value} {from_unit} to {to_unit} is not finite")
    if offset:  # temperatures: 32 degF is 0 degC, not 5.7e-14
        result = round(result, 10)
    return float(f"{result:.12g}")
