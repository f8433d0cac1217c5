"""Names from nowhere: a currency or a country the model brought from its own memory.

`unnamed()` reads an answer's names (capitalized words, a run of them one name, and codes)
and keeps those that neither the question nor a finished result says (accents and case
aside).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from ..plan import render_text
from ..records import TaskRecord, TaskStatus

__all__ = ["unnamed"]

# Names: capitalized words (a run of them is one name: "New Delhi") and codes ("EUR").  Words
# that open sentences or carry no name are not names; a name is grounded when the question or
# a finished result says it (accents and case aside).
_NAME_RE = re.compile(
    r"\b[A-Z][\w'’-]*[a-zà-ÿ][\w'’-]*(?:[ -](?:(?:of|de|la|da) )?[A-Z][\w'’-]+)*|\b[A-Z]{2,4}\b"
)
_NOT_NAMES = frozenset(
    """a about all almost also an and approximately are around as at be because both but by
    celsius combined density each either fahrenheit for from he her here his however i if in
    is it its kilometers kilometres km meanwhile miles my neither no none north not of on
    one only or our over people percent population roughly since she so south square east
    west that the their there these they this those thus to together total under we what
    when where which who why with yes you your since therefore area nearly two three four
    five six seven eight nine ten january february march april may june july august
    september october november december monday tuesday wednesday thursday friday saturday
    sunday utc iso ok please sorry unfortunately invalid note""".split()  # noqa: SIM905
)


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def unnamed(answer: str, question: str, records: Iterable[TaskRecord]) -> list[str]:
    """The names `answer` states (capitalized words and codes) that neither the question nor
    any finished task's result gives, each once, in order: a currency or a country the model
    brought from its own memory (`check` withdraws such an answer, as it does numbers)."""
    sources = [_fold(question)]
    for rec in records:
        if rec.status is TaskStatus.DONE:
            sources.append(_fold(render_text(rec.result)))
    text = "\n".join(sources)
    found: list[str] = []
    for match in _NAME_RE.finditer(answer):
        words = match.group(0).split()
        while words and words[0].casefold() in _NOT_NAMES:
            words.pop(0)  # "The Netherlands": the name is "Netherlands"
        name = " ".join(words)
        if len(name) < 2 or name.casefold() in _NOT_NAMES or name in found:
            continue
        if _fold(name) not in text and not all(_fold(w) in text for w in words):
            found.append(name)
    return found
