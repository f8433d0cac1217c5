"""Right answers from the embedded model on question shapes nobody tuned for.

16 templates over the built-in tools (countries, cities, units, arithmetic: lookups,
comparisons, extremes of three, sums, differences, ratios, shares, averages, counts,
conversions), gold answers computed by the built-in tools themselves from their data.  A fixed
40 % of the questions (`--part heldout`: every question whose index in its template is 3 or 4
modulo 5) is held out: never look at it when changing prompts, examples or tools; tune on
`--part tune`.  Numbers are scored within 2 %, names by normalized match (for "which" questions
the gold name must come before the other candidates where both appear).  "strict" scores the
same answers without a fallback answer's quotes of the results (a fallback lists what every
tool gave, so a gold number among them would count): only what the answer itself says.
Every answer is also checked offline by the grounding check (`planweave.grounding.ungrounded`)
over the run's own results ("unnamed": a name, `planweave.grounding.unnamed`, likewise):
"ungrounded" counts answers stating a number no result and not the
question gives (of a fallback answer, only the withdrawn answer's kept words are statements).

    PYTHONPATH=src python benchmarks/answer_eval.py --part heldout --modes compiled react \\
        --models qwen2.5-coder-1.5b --per-template 10

`--suite shapes` runs the other suite (benchmarks/shapes/): 49 other templates in eight
categories, split *by template* into a tune half and a held-out half (`--part`), with scorers
for yes/no, counts and lists too; its JSON adds accuracy per category and per template.
`--suite shapes --part fresh` runs its third part, templates written after the prompts were
frozen (benchmarks/shapes/fresh.py), `--part fresh2` a second such batch by another hand
(benchmarks/shapes/fresh2.py), `--part fresh3` a third (benchmarks/shapes/fresh3.py),
`--part fresh4` a fourth (benchmarks/shapes/fresh4.py), `--part fresh5` a fifth
(benchmarks/shapes/fresh5.py), `--part fresh6` a sixth (benchmarks/shapes/fresh6.py),
`--part fresh7` a seventh (benchmarks/shapes/fresh7.py), `--part fresh8` an eighth
(benchmarks/shapes/fresh8.py), `--part fresh9` a ninth (benchmarks/shapes/fresh9.py) and
`--part fresh10` a tenth (benchmarks/shapes/fresh10.py);
`--part all` is still the two halves without any of them.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planweave import Budget, Runtime
from planweave.builtin import builtin_tools
from planweave.events import AnswerUngrounded, LLMCallFinished
from planweave.grounding import numbers, stated, ungrounded, unnamed, unquoted
from planweave.tools import ToolRegistry

if TYPE_CHECKING:
    from benchmarks.shapes import ShapeQuestion

COUNTRIES = [
    "France", "Germany", "Italy", "Spain", "Portugal", "Netherlands", "Belgium", "Austria",
    "Poland", "Sweden", "Norway", "Denmark", "Finland", "Greece", "Ireland", "Switzerland",
    "Japan", "Brazil", "Canada", "Mexico", "Egypt", "Kenya", "India", "Australia",
]  # fmt: skip
CITIES = [
    "Lyon", "Munich", "Milan", "Barcelona", "Porto", "Rotterdam", "Antwerp", "Krakow",
    "Gothenburg", "Bergen", "Aarhus", "Tampere", "Thessaloniki", "Cork", "Zurich", "Osaka",
    "Toronto", "Seville", "Graz", "Nagoya", "Vancouver", "Hamburg", "Marseille",
]  # fmt: skip
SQ_MI_PER_KM2 = 1 / 2.589988110336


@dataclass
class Question:
    template: str
    text: str
    gold: str | float
    names: tuple[str, ...]
    heldout: bool


class Data:
    """The built-in tools' own answers: the gold is what a perfect plan would compute."""

    def __init__(self) -> None:
        self.tools = ToolRegistry(builtin_tools())

    def country(self, name: str) -> dict[str, Any]:
        return self.tools["country_info"].invoke({"name": name})  # type: ignore[no-any-return]

    def city(self, name: str) -> dict[str, Any]:
        return self.tools["city_info"].invoke({"name": name})  # type: ignore[no-any-return]


Maker = Callable[[random.Random, Data], tuple[str, str | float, tuple[str, ...]]]


def _pop(d: Data, c: str) -> int:
    return int(d.country(c)["population"])


def _area(d: Data, c: str) -> int:
    return int(d.country(c)["area_km2"])


def _population(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    a = r.choice(COUNTRIES)
    return f"What is the population of {a}?", float(_pop(d, a)), (a,)


def _capital(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    a = r.choice(COUNTRIES)
    # The country is no rival answer: "Kenya's capital is Nairobi" names it first, rightly.
    return f"What is the capital of {a}?", str(d.country(a)["capital"]), ()


def _more_people(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    a, b = r.sample(COUNTRIES, 2)
    gold = a if _pop(d, a) > _pop(d, b) else b
    return f"Which has more people, {a} or {b}?", gold, (a, b)


def _denser(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    a, b = r.sample(COUNTRIES, 2)
    gold = a if _pop(d, a) / _area(d, a) > _pop(d, b) / _area(d, b) else b
    return f"Which is more densely populated, {a} or {b}?", gold, (a, b)


def _combined(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    a, b = r.sample(COUNTRIES, 2)
    text = f"What is the combined population of {a} and {b}?"
    return text, float(_pop(d, a) + _pop(d, b)), (a, b)


def _square_miles(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    a = r.choice(COUNTRIES)
    return f"How large is {a} in square miles?", _area(d, a) * SQ_MI_PER_KM2, (a,)


def _difference(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    a, b = sorted(r.sample(COUNTRIES, 2), key=lambda c: -_pop(d, c))
    text = f"How many more people live in {a} than in {b}?"
    return text, float(_pop(d, a) - _pop(d, b)), (a, b)


def _ratio(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    a, b = sorted(r.sample(COUNTRIES, 2), key=lambda c: -_area(d, c))
    text = f"How many times larger is the area of {a} than the area of {b}?"
    return text, _area(d, a) / _area(d, b), (a, b)


def _share(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    a, b = r.sample(COUNTRIES, 2)
    text = f"What percentage of the combined population of {a} and {b} lives in {a}?"
    return text, 100 * _pop(d, a) / (_pop(d, a) + _pop(d, b)), (a, b)


def _largest_of_three(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    three = r.sample(COUNTRIES, 3)
    gold = max(three, key=lambda c: _area(d, c))
    return (
        f"Which of {three[0]}, {three[1]} and {three[2]} has the largest area?",
        gold,
        tuple(three),
    )


def _least_of_three(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    three = r.sample(COUNTRIES, 3)
    gold = min(three, key=lambda c: _pop(d, c))
    text = f"Which of {three[0]}, {three[1]} and {three[2]} has the fewest people?"
    return text, gold, tuple(three)


def _average(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    three = r.sample(COUNTRIES, 3)
    text = f"What is the average population of {three[0]}, {three[1]} and {three[2]}?"
    return text, statistics.fmean(_pop(d, c) for c in three), tuple(three)


def _neighbours(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    a = r.choice([c for c in COUNTRIES if d.country(c)["neighbours"]])
    return f"How many countries border {a}?", float(len(d.country(a)["neighbours"])), (a,)


def _further_north(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    a, b = r.sample(CITIES, 2)
    gold = a if d.city(a)["latitude"] > d.city(b)["latitude"] else b
    return f"Which city is further north, {a} or {b}?", gold, (a, b)


def _city_population(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    a = r.choice(CITIES)
    return f"How many people live in the city of {a}?", float(d.city(a)["population"]), (a,)


def _fahrenheit(r: random.Random, d: Data) -> tuple[str, str | float, tuple[str, ...]]:
    t = r.choice([41, 50, 59, 68, 77, 86, 95, 104, 113, 122, 131, 140])
    return f"What is {t} degrees Fahrenheit in Celsius?", (t - 32) / 1.8, ()


TEMPLATES: dict[str, Maker] = {
    "population": _population,
    "capital": _capital,
    "more_people": _more_people,
    "denser": _denser,
    "combined": _combined,
    "square_miles": _square_miles,
    "difference": _difference,
    "area_ratio": _ratio,
    "share": _share,
    "largest_of_three": _largest_of_three,
    "least_of_three": _least_of_three,
    "average": _average,
    "neighbours": _neighbours,
    "further_north": _further_north,
    "city_population": _city_population,
    "fahrenheit": _fahrenheit,
}


def questions(per_template: int, seed: int) -> list[Question]:
    data = Data()
    out = []
    for name, make in TEMPLATES.items():
        rng = random.Random(f"{seed}:{name}")
        seen: set[str] = set()
        i = tries = 0
        while i < per_template and tries < 100 * per_template:  # a template may run out
            tries += 1
            text, gold, names = make(rng, data)
            if text in seen:
                continue
            seen.add(text)
            out.append(Question(name, text, gold, names, heldout=i % 5 in (3, 4)))
            i += 1
    return out


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return " ".join(text.lower().split())


def correct(q: Question, answer: str | None) -> bool:
    if not answer:
        return False
    if isinstance(q.gold, float):
        return any(abs(n.value - q.gold) <= 0.02 * abs(q.gold) + 1e-9 for n in numbers(answer))
    low, gold = _norm(answer), _norm(q.gold)
    if gold not in low:
        return False
    others = [_norm(n) for n in q.names if _norm(n) != gold]
    return all(o not in low or low.index(gold) < low.index(o) for o in others)


def score(q: Question | ShapeQuestion, answer: str | None) -> bool:
    """Whether `answer` is right: the names suite's `correct`, or a shapes question's scorer."""
    return correct(q, answer) if isinstance(q, Question) else q.score(answer)


def answered(answer: str | None) -> str | None:
    """The answer without a fallback answer's quotes of the results ("What was found: ...",
    every result as a tool gave it): what `strict` scores.  A fallback's lead (the ranking's
    answer) and the withdrawn answer's kept words stay."""
    return unquoted(answer) if answer else answer


def run_config(
    model: str,
    mode: str,
    qs: Sequence[Question | ShapeQuestion],
    grounding: bool | None,
    wall_s: float,
    threads: int | None = None,
    plan_answers: bool | None = None,
    similar: int | None = None,
) -> dict[str, Any]:
    from planweave.llm.local import LocalLLM

    llm = LocalLLM(model, n_threads=threads)
    llm.load()
    runtime = Runtime(
        builtin_tools(),
        llm,
        mode=mode,  # type: ignore[arg-type]
        grounding=grounding,
        budget=Budget(wall_s=wall_s),
        plan_answers=plan_answers,
        **({} if similar is None else {"similar_examples": similar}),
    )
    rows = []
    for q in qs:
        began = time.monotonic()
        try:
            result = runtime.run(q.text)
        except Exception as exc:  # a failed run counts, as a wrong answer
            result = getattr(exc, "result", None)
        wall = time.monotonic() - began
        events = result.events if result is not None else []
        answer = result.answer if result is not None else None
        records = result.tasks if result is not None else []
        calls = [e for e in events if isinstance(e, LLMCallFinished)]
        rows.append(
            {
                "question": q.text,
                "template": q.template,
                **({} if isinstance(q, Question) else {"class": q.category, "part": q.part}),
                "heldout": q.heldout,
                "gold": q.gold if isinstance(q, Question) else asdict(q.gold),  # type: ignore[call-overload]
                "answer": answer,
                "correct": score(q, answer),
                "strict": score(q, answered(answer)),
                "wall_s": round(wall, 2),
                "llm_calls": len(calls),
                "withdrawn": sum(isinstance(e, AnswerUngrounded) for e in events),
                "ungrounded": ungrounded(stated(answer or ""), q.text, records),
                "unnamed": unnamed(stated(answer or ""), q.text, records),
                # What the run did, for reading failures by class: each task's call and result.
                "tasks": [f"{r.task.call_text()} -> {r.observation(200)}" for r in records],
            }
        )
        row = rows[-1]
        print(
            f"  [{model} {mode}] {q.text} -> {answer!r} {'OK' if row['correct'] else 'WRONG'}"
            f" ({wall:.1f}s){' UNGROUNDED ' + str(row['ungrounded']) if row['ungrounded'] else ''}"
            f"{' UNNAMED ' + str(row['unnamed']) if row['unnamed'] else ''}",
            flush=True,
        )
    return {"model": model, "mode": mode, "grounding": runtime.compiled.grounding, "rows": rows}


def part_of(row: dict[str, Any]) -> str:
    """The part a row's question is of: a shapes row says so (runs before the fresh batch did
    not), else it is the held-out part or the tune part."""
    return str(row.get("part") or ("heldout" if row["heldout"] else "tune"))


def summary(result: dict[str, Any], part: str) -> dict[str, Any] | None:
    rows = [r for r in result["rows"] if part == "all" or part_of(r) == part]
    return measures(rows) if rows else None


def measures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    walls = sorted(r["wall_s"] for r in rows)
    return {
        "n": len(rows),
        "accuracy": sum(r["correct"] for r in rows) / len(rows),
        "strict": sum(r.get("strict", r["correct"]) for r in rows) / len(rows),
        "median_s": statistics.median(walls),
        "p90_s": walls[min(len(walls) - 1, int(0.9 * len(walls)))],
        "llm_calls": statistics.fmean(r["llm_calls"] for r in rows),
        "ungrounded": sum(bool(r["ungrounded"]) for r in rows),
        "unnamed": sum(bool(r.get("unnamed")) for r in rows),
        "withdrawn": sum(r["withdrawn"] > 0 for r in rows),
    }


def breakdown(result: dict[str, Any]) -> dict[str, Any]:
    """A shapes run's measures over all its rows, per category and per template."""

    def by(key: str) -> dict[str, Any]:
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in result["rows"]:
            groups.setdefault(row[key], []).append(row)
        return {name: measures(rows) for name, rows in sorted(groups.items())}

    return {"all": measures(result["rows"]), "by_class": by("class"), "by_template": by("template")}


def print_table(results: list[dict[str, Any]]) -> None:
    print(
        "\n| model | mode | grounding | part | n | accuracy | strict | median s | p90 s "
        "| LLM calls | answers with ungrounded numbers | withdrawn |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        for part in (
            "tune",
            "heldout",
            "fresh",
            "fresh2",
            "fresh3",
            "fresh4",
            "fresh5",
            "fresh6",
            "fresh7",
            "fresh8",
            "fresh9",
            "fresh10",
            "all",
        ):
            s = summary(r, part)
            if s is None:
                continue
            print(
                f"| {r['model']} | {r['mode']} | {'on' if r['grounding'] else 'off'} | {part} "
                f"| {s['n']} | {s['accuracy']:.0%} | {s['strict']:.0%} | {s['median_s']:.1f} "
                f"| {s['p90_s']:.1f} "
                f"| {s['llm_calls']:.1f} | {s['ungrounded']} | {s['withdrawn']} |"
            )
    categories = sorted({row["class"] for r in results for row in r["rows"] if "class" in row})
    if categories:
        print("\n| class | " + " | ".join(f"{r['model']} {r['mode']}" for r in results) + " |")
        print("|---|" + "---|" * len(results))
        for c in categories:
            cells = []
            for r in results:
                rows = [row for row in r["rows"] if row.get("class") == c]
                cells.append(f"{sum(x['correct'] for x in rows)}/{len(rows)}")
            print(f"| {c} | " + " | ".join(cells) + " |")
    templates = sorted({row["template"] for r in results for row in r["rows"]})
    print("\n| template | " + " | ".join(f"{r['model']} {r['mode']}" for r in results) + " |")
    print("|---|" + "---|" * len(results))
    for t in templates:
        cells = []
        for r in results:
            rows = [row for row in r["rows"] if row["template"] == t]
            cells.append(f"{sum(x['correct'] for x in rows)}/{len(rows)}")
        print(f"| {t} | " + " | ".join(cells) + " |")


def rescore(saved: Path, out: Path) -> None:
    """Score a saved run's answers with today's questions and scoring (same seed and size)."""
    data = json.loads(saved.read_text())
    saved_args = data["args"]
    suite = saved_args.get("suite", "names")
    by_text = {
        q.text: q
        for q in suite_questions(
            suite, saved_args.get("part", "all"), saved_args["per_template"], saved_args["seed"]
        )
    }
    for result in data["results"]:
        for row in result["rows"]:
            row["correct"] = score(by_text[row["question"]], row["answer"])
            row["strict"] = score(by_text[row["question"]], answered(row["answer"]))
        if suite == "shapes":
            result["summary"] = breakdown(result)
    data["questions"] = [asdict(by_text[q["text"]]) for q in data["questions"]]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1))
    print_table(data["results"])


def suite_questions(
    suite: str, part: str, per_template: int, seed: int
) -> Sequence[Question | ShapeQuestion]:
    """The questions of a suite; of the names suite all of them (its parts are split by name
    inside every template), of the shapes suite only the templates of `part`."""
    if suite == "names":
        return questions(per_template, seed)
    from benchmarks import shapes

    return shapes.questions(part, per_template, seed, Data())  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--suite",
        choices=["names", "shapes"],
        default="names",
        help="names: the 16 templates, held out by name; shapes: 49 others, held out by template",
    )
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-1.5b"])
    parser.add_argument("--modes", nargs="+", default=["compiled", "react"])
    parser.add_argument(
        "--part",
        choices=[
            "tune",
            "heldout",
            "fresh",
            "fresh2",
            "fresh3",
            "fresh4",
            "fresh5",
            "fresh6",
            "fresh7",
            "fresh8",
            "fresh9",
            "fresh10",
            "all",
        ],
        default="tune",
        help="all: tune and heldout; fresh to fresh10 (shapes suite only): the batches "
        "written after the prompts were frozen",
    )
    parser.add_argument("--per-template", type=int, default=10)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--grounding", choices=["default", "on", "off"], default="default")
    parser.add_argument("--wall", type=float, default=180.0, help="budget per question, s")
    parser.add_argument(
        "--plan-answers",
        choices=["default", "on", "off"],
        default="default",
        help='let a plan end with its answer, join("...${N}...") (default: off when embedded)',
    )
    parser.add_argument(
        "--similar-examples",
        type=int,
        help="worked plans of the tools' bank shown per question (default: the runtime's)",
    )
    parser.add_argument(
        "--threads", type=int, help="llama.cpp threads (default: every core); times then differ"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/answer_eval.json"))
    parser.add_argument("--list", action="store_true", help="print the questions and stop")
    parser.add_argument("--templates", nargs="+", help="only these")
    parser.add_argument("--classes", nargs="+", help="only these categories (shapes suite)")
    parser.add_argument(
        "--rescore", type=Path, help="score a saved run's answers again (today's scoring) and stop"
    )
    args = parser.parse_args()
    fresh = (
        "fresh", "fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7", "fresh8", "fresh9",
        "fresh10",
    )  # fmt: skip
    if args.part in fresh and args.suite != "shapes" and not args.rescore:
        parser.error(f"--part {args.part} needs --suite shapes")
    if args.rescore:
        rescore(args.rescore, args.out)
        return
    qs = suite_questions(args.suite, args.part, args.per_template, args.seed)
    known = {q.template for q in qs}
    if unknown := set(args.templates or ()) - known:
        parser.error(f"no such templates in {args.suite} ({args.part}): {sorted(unknown)}")
    if args.classes and args.suite != "shapes":
        parser.error("--classes needs --suite shapes")
    if unknown := set(args.classes or ()) - {getattr(q, "category", None) for q in qs}:
        parser.error(f"no such classes: {sorted(unknown)}")
    # The shapes suite's questions are already those of the part; the names suite's are split.
    chosen = [
        q
        for q in qs
        if args.suite == "shapes" or args.part == "all" or q.heldout == (args.part == "heldout")
    ]
    chosen = [q for q in chosen if not args.templates or q.template in args.templates]
    chosen = [q for q in chosen if not args.classes or getattr(q, "category", None) in args.classes]
    if args.list:
        for q in chosen:
            part = getattr(q, "part", "") or ("heldout" if q.heldout else "tune")
            print(f"{q.template:18} {part[0].upper()} {q.text} -> {q.gold}")
        print(f"{len(chosen)} of {len(qs)} questions")
        return
    grounding = {"default": None, "on": True, "off": False}[args.grounding]
    plan_answers = {"default": None, "on": True, "off": False}[args.plan_answers]
    results = [
        run_config(
            model,
            mode,
            chosen,
            grounding,
            args.wall,
            args.threads,
            plan_answers,
            args.similar_examples,
        )
        for model in args.models
        for mode in args.modes
    ]
    if args.suite == "shapes":
        for result in results:
            result["summary"] = breakdown(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "args": {**vars(args), "out": str(args.out)},
                "questions": [asdict(q) for q in chosen],
                "results": results,
            },
            indent=1,
        )
    )
    print_table(results)


if __name__ == "__main__":
    # Run as a script, the shapes suite is found as `benchmarks.shapes` from the repository root.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
