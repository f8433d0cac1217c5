"""The fallback answer's fixed words, and how to tell them from what an answer states.

A fallback answer opens with one of its own sentences and quotes the results; `stated()` reads
past them to the withdrawn answer's kept words, `unquoted()` cuts the quotes off.
"""

from __future__ import annotations

__all__ = ["FOUND", "KEPT", "NOT_FOUND", "stated", "unquoted"]

# The fallback answer's fixed words (`stated` tells them from the withdrawn answer's).
FOUND = "What was found: "
NOT_FOUND = "What could not be found: "
KEPT = "The answer without them: "
_LEAD = "By the ranking of task "
_UNSUPPORTED = "I could not give an answer supported by the results"
_RANKED_INSTEAD = "The results rank "
_DECIDED = "by task "
_FALLBACK_OPENINGS = (_LEAD, _UNSUPPORTED, _RANKED_INSTEAD, "Yes: " + _DECIDED, "No: " + _DECIDED)


def stated(answer: str) -> str:
    """The part of an answer that states something: of a fallback answer, only its withdrawn
    answer's kept words; its own sentences (a task id, how many numbers were taken out) and
    its quotes of the results (each call as the plan wrote it, with its result) are left out."""
    if not answer.startswith(_FALLBACK_OPENINGS):
        return answer
    start = answer.find(KEPT)
    if start < 0:
        return ""
    return unquoted(answer[start + len(KEPT) :])


def unquoted(answer: str) -> str:
    """An answer without a fallback's quotes of the results ("What was found: ...")."""
    cut = [i for i in (answer.find(" " + FOUND), answer.find(" " + NOT_FOUND)) if i >= 0]
    return answer[: min(cut)] if cut else answer
