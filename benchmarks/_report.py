"""Offline reports on ``benchmarks/results.json``: targets, verdicts, comparison, chart.

Standard library only and no Spark: every function reads results as ``python -m
benchmarks`` writes them (``rows`` of dicts with ``measure``, ``ratio``, ``of`` and some
extra fields) and returns text.

* :data:`TARGETS`: the performance targets, keyed by the measure names of a default run;
  :func:`target_for` also finds the target of a name built from other sizes;
* :func:`verdict` and :func:`verdicts_text`: whether a row, or a whole run, meets them;
* :func:`compare`: two runs side by side, one line per measure;
* :func:`chart`: an SVG bar chart of every targeted row against its target.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

__all__ = ["MET_COLOUR", "MISSED_COLOUR", "TARGETS", "Target", "chart", "compare",
           "load_results", "target_for", "verdict", "verdicts_text"]

Row = Mapping[str, Any]
Results = Mapping[str, Any]


@dataclass(frozen=True)
class Target:
    """A bound on the row's ``field``: at most ``bound`` when lower is better, at least
    ``bound`` when ``higher_is_better``; values are shown with ``unit``, the target with
    ``label`` (what the field is, where the measure's name does not say it)."""

    field: str
    bound: float
    higher_is_better: bool = False
    unit: str = "x"
    label: str = ""

    def met(self, value: float) -> bool:
        """Whether ``value`` is on the right side of the bound (the bound itself meets it)."""
        return value >= self.bound if self.higher_is_better else value <= self.bound

    def __str__(self) -> str:
        bound = _with_unit(f"{self.bound:g}", self.unit)
        relation = f"{'>=' if self.higher_is_better else '<='} {bound}"
        return f"{self.label} {relation}" if self.label else relation


_ROCKSDB = " (RocksDB, changelog checkpointing)"
_SPEEDUP = Target("driver_speedup", 3, higher_is_better=True, label="speed-up")

TARGETS: dict[str, Target] = {
    "stateless step (10 rows)": Target("ratio", 1.3),
    "windowed step: data + no-data batch": Target("ratio", 3),
    "stream-stream join step (10 rows per side)": Target("ratio", 4),
    "applyInPandasWithState step (10 rows)": Target("ratio", 2.5),
    "new driver + first step + close": Target("ratio", 2.5),
    "public API: stateless step": _SPEEDUP,
    "public API: windowed step (data batch only)": _SPEEDUP,
    "bulk pipe of 100000 rows + the batch": Target("ratio", 1.2),
    f"step with 1000000 keys in state{_ROCKSDB}": Target("ratio", 2),
    "property test: 100 examples, windowed aggregation, up to 6 data batches each":
        Target("seconds", 15, unit="s"),
    "property test: 100 examples, windowed aggregation, up to 6 data batches each, with "
    "run_topology": Target("seconds", 15, unit="s"),
    "payments job: new driver + 3 steps + close": Target("ratio", 4),
    "availableNow backfill: 10000 records in 20 batches": Target("ratio", 1.1),
    "payments job: 20-test pytest suite, -n 2": Target("ratio", 1, label="time over serial"),
    "1000 stateless steps": Target("python_rss_growth_mb", 50, unit="MB", label="RSS growth"),
    "one test without Spark from the shell, with the plugin":
        Target("extra_cpu_seconds", 0.3, unit="s", label="CPU time over the run without it"),
    "one windowed test from the shell, warm JVM": Target("seconds", 2, unit="s"),
    "one windowed test from the shell, warm JVM, over its batches": Target("ratio", 1.5),
    "payments job: 20-test pytest suite, -n 2, warm JVMs":
        Target("ratio", 1, label="time over serial"),
}
"""The targets by the measure names of a default run (``--bulk-rows 100000``,
``--max-keys 1000000``, ``--long-steps 1000``, ``--property-examples 100``)."""

# Names built from other sizes, and the default name whose target they take. The RocksDB
# step is measured against its 1000-key step, which is the base and has no target; the
# property test's target is stated for 100 examples only, so it has no pattern.
_SIZED: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"bulk pipe of \d+ rows \+ the batch"), "bulk pipe of 100000 rows + the batch"),
    (re.compile(r"step with (?!1000 )\d+ keys in state" + re.escape(_ROCKSDB)),
     f"step with 1000000 keys in state{_ROCKSDB}"),
    (re.compile(r"\d+ stateless steps"), "1000 stateless steps"),
)


def target_for(measure: str) -> Target | None:
    """The target of a measure name: its own entry in :data:`TARGETS`, or that of the
    default name it differs from only in the bulk rows, the (non-base) RocksDB key count
    or the long-run steps; ``None`` for a measure without a target."""
    if measure in TARGETS:
        return TARGETS[measure]
    for pattern, key in _SIZED:
        if pattern.fullmatch(measure):
            return TARGETS[key]
    return None


def _value(row: Row, target: Target | None) -> float | None:
    """The row's figure: the target's field, or ``ratio`` without a target; ``None`` when
    the row lacks it (results of an older benchmark)."""
    value = row.get(target.field if target else "ratio")
    return float(value) if isinstance(value, (int, float)) else None


def verdict(row: Row) -> tuple[Target, bool] | None:
    """The row's target and whether the row meets it; ``None`` when the measure has no
    target or the row lacks the target's field."""
    target = target_for(row["measure"])
    value = None if target is None else _value(row, target)
    if target is None or value is None:
        return None
    return target, target.met(value)


def _with_unit(number: str, unit: str) -> str:
    return f"{number}x" if unit == "x" else f"{number} {unit}"


def _show(value: float, unit: str) -> str:
    """``value`` as the benchmark rounds it (two decimals for ratios, else one) with its
    unit."""
    return _with_unit(f"{value:.{2 if unit == 'x' else 1}f}", unit)


def _fit(text: str, chars: int) -> str:
    """``text`` cut to ``chars`` characters, the cut marked with an ellipsis."""
    return text if len(text) <= chars else text[: chars - 1] + "\u2026"


def load_results(path: str) -> dict[str, Any]:
    """The results file at ``path`` as written by ``python -m benchmarks``."""
    with open(path) as source:
        results: dict[str, Any] = json.load(source)
    return results


# --- verdicts -----------------------------------------------------------------------------------
def _targeted(results: Results) -> list[tuple[Row, tuple[Target, bool]]]:
    """The rows of a run that have a verdict, in order, each with it."""
    return [(row, found) for row in results["rows"] if (found := verdict(row)) is not None]


def verdicts_text(results: Results) -> str:
    """A count of met and missed targets, then one line per targeted row: met or MISSED,
    the measure, its value and the target."""
    targeted = _targeted(results)
    missed = sum(not met for _, (_, met) in targeted)
    lines = [f"targets: {len(targeted) - missed} met, {missed} missed"]
    for row, (target, met) in targeted:
        value = _show(float(row[target.field]), target.unit)
        lines.append(f"  {'met' if met else 'MISSED':<6} {_fit(row['measure'], 60):<60} "
                     f"{value:>9}  {target}")
    return "\n".join(lines)


# --- comparison ---------------------------------------------------------------------------------
_NAME, _NUMBER, _CHANGE = 37, 9, 8  # at most 100 characters with the longest target


def _machine(results: Results) -> tuple[str, str, str]:
    """Floor in ms, PySpark version and CPU count of a run, ``?`` where unknown."""
    machine = results.get("machine", {})
    return (str(results.get("floor_ms", "?")), str(machine.get("pyspark", "?")),
            str(machine.get("cpus", "?")))


def _header(base: Results, new: Results) -> str:
    (base_floor, base_spark, base_cpus), (new_floor, new_spark, new_cpus) = (
        _machine(base), _machine(new))
    return (f"base -> new: floor {base_floor} -> {new_floor} ms, PySpark {base_spark} -> "
            f"{new_spark}, CPUs {base_cpus} -> {new_cpus}")


def _line(measure: str, base: str, new: str, change: str, direction: str, target: str) -> str:
    return (f"{_fit(measure, _NAME):<{_NAME}} {base:>{_NUMBER}} {new:>{_NUMBER}} "
            f"{change:>{_CHANGE}} {direction:<6} {target}").rstrip()


def _change(target: Target | None, base: float, new: float) -> tuple[str, str]:
    """The change from ``base`` to ``new`` in percent of ``base`` and whether it is better
    or worse (lower is better unless the target says higher)."""
    percent = "n/a" if base == 0 else f"{(new - base) / abs(base) * 100:+.1f}%"
    if new == base:
        return percent, "same"
    higher_is_better = target is not None and target.higher_is_better
    return percent, "better" if (new > base) == higher_is_better else "worse"


def _compare_line(measure: str, base: Row | None, new: Row | None) -> str:
    """One measure of both runs; ``base`` or ``new`` is ``None`` for a row of one run."""
    target = target_for(measure)
    unit = target.unit if target else "x"
    base_value = None if base is None else _value(base, target)
    new_value = None if new is None else _value(new, target)
    found = None if new is None else verdict(new)
    verdict_text = "" if found is None else f"{found[0]} {'met' if found[1] else 'missed'}"
    if base is None or new is None:
        change, direction = ("new" if base is None else "gone"), ""
    elif base_value is None or new_value is None:
        change, direction = "n/a", ""
    else:
        change, direction = _change(target, base_value, new_value)
    return _line(measure, "-" if base_value is None else _show(base_value, unit),
                 "-" if new_value is None else _show(new_value, unit), change, direction,
                 verdict_text)


def compare(base: Results, new: Results) -> str:
    """Two runs as a table: a header with both runs' floors and machines, then one line
    per measure of either run (base's order, then measures only the new run has) with
    the base and new value (the target's field, else ``ratio``), the change in percent,
    better/worse, and the new run's target met/missed; a measure of one run only shows
    ``new`` or ``gone`` as its change."""
    base_rows = {row["measure"]: row for row in base["rows"]}
    new_rows = {row["measure"]: row for row in new["rows"]}
    measures = [*base_rows, *(m for m in new_rows if m not in base_rows)]
    columns = _line("measure", "base", "new", "change", "", "target (new run)")
    return "\n".join([_header(base, new), columns, "-" * len(columns),
                      *(_compare_line(m, base_rows.get(m), new_rows.get(m))
                        for m in measures)])


# --- chart --------------------------------------------------------------------------------------
MET_COLOUR, MISSED_COLOUR = "#2ca02c", "#d62728"
_LABEL_CHARS = 48
_BAR_X, _BAR_WIDTH, _SCALE = 320.0, 360.0, 3.0  # the bar area shows 0 to 3x the target
_TARGET_X = _BAR_X + _BAR_WIDTH / _SCALE
_TOP, _ROW_HEIGHT, _BAR_HEIGHT, _WIDTH = 52, 22, 14, 900


def _text(x: float, y: float, text: str, size: int = 11, anchor: str = "start",
          colour: str = "#000000") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'fill="{colour}">{escape(text)}</text>')


def _bar(index: int, row: Row, target: Target, met: bool) -> list[str]:
    """The row's label, its bar (value / target on a linear scale, cut at the area's end;
    at least 2 px so a value at or below zero still shows its colour) and its value."""
    value = float(row[target.field])
    y = _TOP + index * _ROW_HEIGHT
    width = max(2.0, min(_SCALE, value / target.bound) * _BAR_WIDTH / _SCALE)
    tooltip = f"{row['measure']}: {_show(value, target.unit)}, target {target}"
    return [
        _text(8, y + 11, _fit(row["measure"], _LABEL_CHARS)),
        f'<rect x="{_BAR_X:.1f}" y="{y:.1f}" width="{width:.1f}" height="{_BAR_HEIGHT}" '
        f'fill="{MET_COLOUR if met else MISSED_COLOUR}"><title>{escape(tooltip)}</title></rect>',
        _text(_BAR_X + _BAR_WIDTH + 10, y + 11, f"{_show(value, target.unit)} ({target})"),
    ]


def chart(results: Results) -> str:
    """An SVG document: one horizontal bar per row with a target, its length the value
    divided by the target so every target sits on one vertical line (0 to 3x the target,
    longer values cut at the end), green when met and red when missed; the measure at the
    left, the value with its unit and the target at the right."""
    targeted = _targeted(results)
    height = _TOP + len(targeted) * _ROW_HEIGHT + 12
    floor, spark, cpus = _machine(results)
    body = [
        _text(8, 20, f"benchmarks against their targets: PySpark {spark}, {cpus} CPUs, "
                     f"floor {floor} ms", size=14),
        _text(8, 38, "bar = value / target (the dashed line); lower is better, except "
                     "for speed-ups", colour="#555555"),
        _text(_TARGET_X, _TOP - 4, "target", anchor="middle", colour="#555555"),
        *(part for index, (row, (target, met)) in enumerate(targeted)
          for part in _bar(index, row, target, met)),
        f'<path d="M{_TARGET_X:.1f},{_TOP - 2}L{_TARGET_X:.1f},{height - 8}" fill="none" '
        f'stroke="#444444" stroke-width="1.5" stroke-dasharray="4,3"/>',
    ]
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
            f'viewBox="0 0 {_WIDTH} {height}" font-family="DejaVu Sans, Arial, sans-serif">\n'
            + "\n".join(body) + "\n</svg>\n")
