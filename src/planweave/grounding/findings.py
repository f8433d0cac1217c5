"""What the checks found in one answer, and what the run says when it is withdrawn.

`check()` runs every check over an answer and returns its `Findings`: the withdrawal event, the
note that asks the joiner (or a ReAct step) again (`grounding_note()`) and, when it answered from
nowhere twice, the run's fallback answer (`fallback_answer()`): its last answer with what no
result gives taken out, then what was found and what was not, in the results' own words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..events import AnswerUngrounded
from ..records import TaskRecord, TaskStatus
from .lists import overcounted
from .names import unnamed
from .numerals import _NUMBER_RE
from .phrases import (
    _DECIDED,
    _LEAD,
    _RANKED_INSTEAD,
    _UNSUPPORTED,
    FOUND,
    KEPT,
    NOT_FOUND,
    stated,
)
from .rankings import Misnamed, misnamed, ranked
from .sources import _lacking, ungrounded
from .yesno import Contradicted, contradicted

__all__ = ["Findings", "check", "fallback_answer", "grounding_note"]


def grounding_note(
    answer: str,
    missing: list[str],
    *,
    react: bool = False,
    wrong: Misnamed | None = None,
    names: Sequence[str] = (),
    opposite: Contradicted | None = None,
    among: int | None = None,
) -> str:
    """What the joiner (or a ReAct step) is told when its answer stated numbers or `names`
    from nowhere, (`wrong`) named another than a ranking's answer, (`opposite`) said yes
    where a comparison's result says no, or (`among`) gave no count of the names the
    question counts among."""
    if among is not None and not missing and not names and wrong is None and opposite is None:
        return (
            f"Your answer ({answer[:300]!r}) {_uncounted(among)}. Answer again: say how many "
            f"of them the results show, and which."
        )
    if opposite is not None:
        told = (
            f"Your answer ({answer[:300]!r}) {opposite.text()}. Answer again: the comparison's "
            f"result decides, so begin with {opposite.expected}"
        )
        if missing or names:
            told += ", and state only numbers and names that the question or a result gives"
        return told + "."
    if not missing and not names and wrong is not None:
        return (
            f"Your answer ({answer[:300]!r}) {wrong.text()}. Answer again, naming "
            f"{wrong.expected} first, as the results give it."
        )
    stated_here = []
    if missing:
        stated_here.append("states " + ", ".join(missing))
    if names:
        stated_here.append("names " + ", ".join(names))
    listed = " and ".join(stated_here)
    compute = "call a tool (the calculator) to do it" if react else "Replan to do it with a tool"
    # The answer may quote a result by its task's (or action's) id, `${N}`, filled in as the
    # run ends: no digit to retype.
    copy = (
        f"writing ${{<id>}} where {'an action' if react else 'a task'}'s result goes (it is "
        "filled in), or copying numbers exactly as the results give them"
    )
    also = f" Also, {wrong.text()}: name {wrong.expected} first." if wrong is not None else ""
    return (
        f"Your answer ({answer[:300]!r}) {listed}, which no result and not the question "
        f"gives. Answer again, {copy} (you may round them), naming only what the question or "
        f"a result names; if a number must first be "
        f"computed, compared or counted, {compute}; if the results do not tell, say what could "
        f"not be found.{also}"
    )


# A placeholder left in an answer: `${<id>}`, `${17819054 / 2}` (never a filled-in result).
_PLACEHOLDER_RE = re.compile(r"\$\{[^}\n]{0,200}\}?")


def fallback_answer(
    records: Iterable[TaskRecord],
    missing: list[str],
    answer: str | None = None,
    limit: int = 300,
    *,
    wrong: Misnamed | None = None,
    leader: tuple[int, str] | None = None,
    names: Sequence[str] = (),
    opposite: Contradicted | None = None,
    among: int | None = None,
) -> str:
    """The run's answer when the joiner twice stated numbers from nowhere: its last answer with
    those numbers taken out (its names and words may still answer the question), then what was
    found and what was not, in the results' own words.  `leader` (task id, name) is what a
    ranking among the results gives where the question asks: it is said first."""
    found, failed = _results(records, limit)
    # The unsupported numbers are not repeated (the answer_ungrounded event has them): an
    # answer states no number that no result gives, not even to disown it.
    parts, keep = _why_withdrawn(missing, wrong, leader, names, opposite, among)
    if answer and keep:
        parts.append(f"{KEPT}{_kept(answer, missing, names)}")
    if found:
        parts.append(FOUND + "; ".join(found) + ".")
    if failed:
        parts.append(NOT_FOUND + "; ".join(failed) + ".")
    return " ".join(parts)


def _results(records: Iterable[TaskRecord], limit: int) -> tuple[list[str], list[str]]:
    """Each task's call and what it gave (at most `limit` characters), those that worked and
    those that did not; the join is left out."""
    found: list[str] = []
    failed: list[str] = []
    for rec in records:
        if rec.task.is_join:
            continue
        line = f"{rec.task.call_text()} -> {rec.observation(limit)}"
        (found if rec.status is TaskStatus.DONE else failed).append(line)
    return found, failed


def _why_withdrawn(
    missing: list[str],
    wrong: Misnamed | None,
    leader: tuple[int, str] | None,
    names: Sequence[str],
    opposite: Contradicted | None,
    among: int | None,
) -> tuple[list[str], bool]:
    """What the fallback answer says first (why the answer was withdrawn, and what a tool
    decided), and whether the answer's own words are kept after it."""
    if opposite is not None:
        # What the comparison decided is the answer; the joiner's words said the opposite.
        return [
            f"{opposite.expected}: {_DECIDED}{opposite.task_id}, {opposite.call} gives "
            f"{opposite.given} (the answer given said {opposite.said}, so it was withdrawn)."
        ], False
    if wrong is not None and not missing and not names:
        # The answer's words are the problem: only the results speak.
        return [
            f"{_RANKED_INSTEAD}{wrong.expected} where the question asks (task "
            f"{wrong.task_id}); the answer given named {wrong.named} instead, so it was withdrawn."
        ], False
    if among is not None and not missing and not names:
        # Its number counts something else: it is not kept.
        return [f"{_UNSUPPORTED}: {_uncounted(among)}, so it was withdrawn."], False
    counted = [
        f"{n} {word}{'s' if n > 1 else ''}"
        for n, word in ((len(missing), "number"), (len(names), "name"))
        if n
    ]
    parts = [f"{_UNSUPPORTED}: it stated {' and '.join(counted)} that no result gives."]
    if leader is not None:
        # What a tool decided answers a "which" question even when the prose did not hold.
        parts.insert(0, f"{_LEAD}{leader[0]}, the answer is {leader[1]}.")
    # If it named the wrong one too, its words are not kept.
    return parts, wrong is None


def _kept(answer: str, missing: list[str], names: Sequence[str]) -> str:
    """The answer's words (its first 1000 characters) with placeholders, the `missing` numbers
    and the unsupported `names` shown as [?]."""
    # Whole numbers as written are taken out, not their text wherever it occurs ("1" is
    # in "1,371,498").
    gone = set(missing)
    kept = _PLACEHOLDER_RE.sub("[?]", answer[:1000])
    kept = _NUMBER_RE.sub(lambda m: "[?]" if m.group(0) in gone else m.group(0), kept)
    for name in names:
        kept = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", "[?]", kept)
    return kept.strip()


@dataclass(frozen=True, slots=True)
class Findings:
    """What the check found in one answer: the numbers from nowhere and a misnamed ranking;
    the withdrawal event, the note asking again and the fallback answer all read it."""

    answer: str
    numbers: list[str]
    wrong: Misnamed | None
    leader: tuple[int, str] | None = None  # a ranking's answer to the question, if any
    names: list[str] = field(default_factory=list)
    opposite: Contradicted | None = None
    among: int | None = None  # the question counts among this many names; no count was given
    lacking: list[str] = field(default_factory=list)  # of `numbers`, those no result's digits

    @property
    def ok(self) -> bool:
        return (
            not self.numbers
            and not self.names
            and self.wrong is None
            and self.opposite is None
            and self.among is None
        )

    def withdrawn(self, *, retry: bool) -> AnswerUngrounded:
        return AnswerUngrounded(
            answer=self.answer,
            numbers=self.numbers,
            retry=retry,
            misnamed=(
                self.opposite.text()
                if self.opposite is not None
                else self.wrong.text()
                if self.wrong is not None
                else _uncounted(self.among)
                if self.among is not None
                else None
            ),
            names=self.names,
        )

    @property
    def missing_facts(self) -> bool:
        """The answer states numbers that no result gives, nor a result's digits mistyped:
        the results lack something (a lookup or a calculation no task made).  A placeholder
        left in it, a retyped number or a name from memory is the joiner's slip."""
        return bool(self.lacking) and not any(n.startswith("${") for n in self.names)

    def replan_reason(self) -> str:
        """Why the next round is planned, for the planner: what the withdrawn answer stated
        from nowhere, and what to plan for it."""
        return (
            f"an answer was written ({self.answer[:200]!r}) but no result gives the numbers "
            f"{', '.join(self.lacking)}: the results do not answer the question yet. Plan "
            "only what is missing: the next lookup (a tool whose argument is an earlier "
            "result, $<id>) or the calculation that gives it; reuse $<id> of the tasks that "
            "worked."
        )

    def note(self, *, react: bool = False) -> str:
        return grounding_note(
            self.answer,
            self.numbers,
            react=react,
            wrong=self.wrong,
            names=self.names,
            opposite=self.opposite,
            among=self.among,
        )

    def fallback(self, records: Iterable[TaskRecord]) -> str:
        return fallback_answer(
            records,
            self.numbers,
            self.answer,
            wrong=self.wrong,
            leader=self.leader,
            names=self.names,
            opposite=self.opposite,
            among=self.among,
        )


def _uncounted(among: int) -> str:
    return (
        f"it gives no count of the {among} names the question counts among (a count of them "
        f"is at most {among})"
    )


def check(answer: str, question: str, records: Iterable[TaskRecord]) -> Findings:
    """The checks of `answer`: numbers (`ungrounded`), names (`unnamed`), a ranking's name
    (`misnamed`), a yes/no a comparison decided (`contradicted`) and a count among the
    question's names (`overcounted`)."""
    records = list(records)
    missing = ungrounded(answer, question, records)
    names = unnamed(stated(answer), question, records)
    # A placeholder still in the filled answer (`${<id>}` copied from the rule, an expression
    # `${17819054 / 2}`) quotes no result: it is words from nowhere like an unknown name.
    names += [p for p in dict.fromkeys(_PLACEHOLDER_RE.findall(answer)) if p not in names]
    wrong = misnamed(answer, question, records)
    leader = ranked(question, records) if missing or names or wrong else None
    opposite = contradicted(answer, question, records)
    among = overcounted(answer, question)
    lacking = _lacking(missing, question, records) if missing else []
    return Findings(answer, missing, wrong, leader, names, opposite, among, lacking)
