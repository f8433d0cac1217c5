"""Plots of the benchmark results: oracle.png (median latency per question shape and contestant,
with the critical-path limit) and overhead.png (per-task cost and the ratio to asyncio.gather).

    python -m benchmarks.plot [--results benchmarks/results]

Needs matplotlib: pip install -e '.[bench]'.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("the benchmark plots need matplotlib: pip install -e '.[bench]'") from exc

RESULTS = Path("benchmarks/results")


def _ordered(values: list[Any]) -> list[Any]:
    """Distinct values in order of first appearance."""
    return list(dict.fromkeys(values))


def plot_oracle(rows: list[dict[str, Any]], out: Path) -> Path:
    """Grouped bars: median wall time per shape and contestant; a black tick marks the median
    critical-path limit of the shape (absent where it is undefined, as for replans)."""
    kinds = sorted({r["kind"] for r in rows})
    contestants = _ordered([r["contestant"] for r in rows])
    width = 0.8 / max(1, len(contestants))
    fig, ax = plt.subplots(
        figsize=(max(7.0, 1.4 * len(kinds) * (1 + 0.15 * len(contestants))), 4.5)
    )
    for j, name in enumerate(contestants):
        heights = []
        for kind in kinds:
            walls = [r["wall_s"] for r in rows if r["kind"] == kind and r["contestant"] == name]
            heights.append(statistics.median(walls) if walls else 0.0)
        xs = [i - 0.4 + width * (j + 0.5) for i in range(len(kinds))]
        ax.bar(xs, heights, width, label=name)
    for i, kind in enumerate(kinds):
        limits = {r["question"]: r["limit_s"] for r in rows if r["kind"] == kind and r["limit_s"]}
        if limits:
            ax.hlines(statistics.median(limits.values()), i - 0.45, i + 0.45, colors="black")
    ax.plot([], [], color="black", label="critical-path limit")
    ax.set_xticks(range(len(kinds)), kinds)
    ax.set_ylabel("median seconds per question")
    ax.set_title("Oracle LLM: latency per question shape")
    ax.legend(fontsize="small")
    return _save(fig, out)


def plot_overhead(result: dict[str, Any], out: Path) -> Path:
    """Per DAG shape and size: planweave's schedule+run and parse cost per task next to
    asyncio.gather, and the ratio of schedule+run to gather, with the targets as dashed lines."""
    rows = result["rows"]
    labels = [f"{r['shape']}\n{r['n']:,}" for r in rows]
    xs = range(len(rows))
    fig, (cost, ratio) = plt.subplots(1, 2, figsize=(max(9.0, 1.6 * len(rows)), 4.5))
    width = 0.27
    for k, (key, name) in enumerate(
        [("parse_us", "parse"), ("schedule_us", "schedule+run"), ("gather_us", "asyncio.gather")]
    ):
        cost.bar([x + (k - 1) * width for x in xs], [r[key] for r in rows], width, label=name)
    targets = result.get("targets", {})
    if "schedule_us" in targets:
        cost.axhline(
            targets["schedule_us"], color="black", linestyle="--", label="target (schedule+run)"
        )
    cost.set_xticks(list(xs), labels)
    cost.set_ylabel("µs per task")
    cost.set_title("Cost per no-op task")
    cost.legend(fontsize="small")
    ratio.bar(list(xs), [r["x_gather"] for r in rows], 0.6, color="tab:orange")
    if "x_gather" in targets:
        ratio.axhline(targets["x_gather"], color="black", linestyle="--", label="target")
        ratio.legend(fontsize="small")
    ratio.set_xticks(list(xs), labels)
    ratio.set_ylabel("schedule+run / asyncio.gather")
    ratio.set_title("Ratio to asyncio.gather")
    return _save(fig, out)


def _save(fig: Any, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def plot_all(oracle: Path | None, overhead: Path | None) -> list[Path]:
    """Plot the oracle and overhead results (JSON files; a missing one is skipped), each to a
    PNG next to it."""
    written = []
    if oracle is not None and oracle.exists():
        rows = json.loads(oracle.read_text())["rows"]
        written.append(plot_oracle(rows, oracle.with_suffix(".png")))
    if overhead is not None and overhead.exists():
        result = json.loads(overhead.read_text())
        written.append(plot_overhead(result, overhead.with_suffix(".png")))
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    for path in plot_all(args.results / "oracle.json", args.results / "overhead.json"):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
