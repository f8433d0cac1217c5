"""The grounding check: every number an answer states must come from the results or the question,
and what a tool decided (a ranking, a yes or no) the answer must not contradict.

A small model asked to answer from tool results still copies digits wrong, states numbers and
names no tool returned, or says the opposite of what a comparison decided.  `check()` runs every
check over one answer; an answer it finds wrong is withdrawn (`Findings`).  One module a check:

    numerals   numbers as people write them (`numbers`)
    sources    numbers from nowhere (`ungrounded`)
    names      names from nowhere (`unnamed`)
    rankings   a ranking's name (`misnamed`)
    yesno      a yes or no a comparison decided (`contradicted`)
    lists      the question's lists of names (`held_names`, `overcounted`)
    phrases    the fallback answer's fixed words (`stated`, `unquoted`)
    findings   what one answer's checks found, and what the run says of it
"""

from __future__ import annotations

from .findings import Findings, check, fallback_answer, grounding_note
from .lists import held_names
from .lists import overcounted as overcounted
from .names import unnamed
from .numerals import Number, numbers
from .phrases import stated as stated
from .phrases import unquoted as unquoted
from .rankings import Misnamed, misnamed
from .sources import ungrounded
from .yesno import Contradicted, contradicted

__all__ = [
    "Contradicted",
    "Findings",
    "Misnamed",
    "Number",
    "check",
    "contradicted",
    "fallback_answer",
    "grounding_note",
    "held_names",
    "misnamed",
    "numbers",
    "ungrounded",
    "unnamed",
]
