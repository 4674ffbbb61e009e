"""The mutation report: on the terminal, as JSON and as JUnit XML. It renders results
and decides nothing."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import hide_our_frames
from ._duration_texts import Duration, durations_in, parse_duration
from .results import MutantResult, Score

__tracebackhide__ = hide_our_frames

_WIDTH = 88  # a survivor's hint is wrapped to this width on the terminal

_HINTS = {
    "watermark": "no test checks when the watermark closes a window, drops a late record "
                 "or lets state go",
    "window": "no test puts a record at a window's edge, where a window of another size "
              "would count it elsewhere",
    "session gap": "no test pipes two records just inside and just outside the session gap",
    "join bound": "no test pipes a pair of records at the edge of the join's time range",
    "join strictness": "no test pipes a pair of records exactly on the join's bound",
    "join type": "no test checks what becomes of a row that finds no match",
    "output mode": "no test checks when rows come out (append: once, when final; update: "
                   "at every change)",
    "dedup key": "no test pipes two records that differ only in the dropped key",
    "dedup kind": "no test checks how long a duplicate's key is remembered",
    "trigger": "no test checks which records share a micro-batch",
    "filter": "no test pipes a record exactly on the filter's boundary",
    "timeout": "no test checks when a state's timeout fires",
    "ttl": "no test checks when a state's TTL lets it go",
    "timer": "no test checks when a timer fires",
}


def hint(result: MutantResult) -> str:
    """What the survivor says about the tests, in a few words: in the mutant's own
    values where they are durations it can read (a watermark delay, a window's size or
    slide, a session gap, an interval of a join's range, a trigger), else by kind."""
    mutant = result.mutant
    general = _HINTS.get(mutant.kind, "no test tells the two apart")
    pair = _changed_durations(mutant)
    if pair is None:
        return general
    before, after = pair
    low, high = sorted((before, after), key=lambda d: d.micros)
    start, end, other = _clocks(0, before.micros, after.micros)
    key = "window duration" if mutant.site.part == "windowDuration" else mutant.kind
    return _VALUED_HINTS[key].format(
        was=_amount(before), now=_amount(after), start=start, end=end, other=other,
        band=f"between {_amount(low)} and {_amount(high)}")


_VALUED_HINTS = {
    "watermark": "no test tells a delay of {was} from {now}: none pipes a record {band} "
                 "older than the newest of an earlier batch (late with the shorter delay, "
                 "on time with the longer), nor checks when a window closes or state goes",
    "window duration": "no test tells window [{start}, {end}) from [{start}, {other}): none "
                       "pipes a record {band} after a window's start, nor checks when a "
                       "window closes",
    "window": "no test tells a slide of {was} from {now}: none checks which windows a "
              "record falls in",
    "session gap": "no test tells a gap of {was} from {now}: none pipes two records {band} "
                   "apart (one session with the longer gap, two with the shorter)",
    "join bound": "no test tells an interval of {was} from {now}: none pipes a pair of "
                  "records {band} apart, at the edge of the range (inside it with one, "
                  "outside it with the other)",
    "trigger": "no test tells a trigger of {was} from {now}: none checks which records "
               "share a micro-batch",
}
"""A survivor's hint where its durations could be read (:func:`_changed_durations`),
by kind (a window's duration apart from its slide)."""


def _changed_durations(mutant: Any) -> tuple[Duration, Duration] | None:
    """The duration the mutant changes and the new one, read from the call as written
    and the replacement: the one piece that differs where both name the same number of
    durations (an ``expr`` text with several intervals), else None."""
    if mutant.kind in ("watermark", "session gap", "trigger", "window"):
        # the call's argument of this site, and the new value
        after = parse_duration(mutant.replacement.removeprefix("duration ")
                               .removeprefix("slide ").strip('"'))
        quoted = [parse_duration(piece) for piece in mutant.original.split('"')[1::2]]
        candidates = [d for d in quoted if d is not None]
        if mutant.kind == "window" and len(candidates) >= 2:
            before: Duration | None = candidates[1 if mutant.site.part == "slideDuration" else 0]
        else:
            before = candidates[-1] if candidates else None
        if before is None or after is None:
            return None
        return before, after
    if mutant.kind == "join bound":
        old, new = durations_in(mutant.original), durations_in(mutant.replacement)
        if len(old) != len(new):
            return None
        changed = [(a, b) for a, b in zip(old, new, strict=True) if a.micros != b.micros]
        return changed[0] if len(changed) == 1 else None
    return None


def _amount(duration: Duration) -> str:
    """``10 seconds``; ``0 seconds`` for a zero (written in the original's unit)."""
    if duration.micros == 0:
        return f"0 {duration.unit}s"
    return duration.render()


def _clocks(*values: int) -> list[str]:
    """Times after a window's start as a clock reads them, all to the precision the
    finest needs: ``00:10``, ``00:00:30``, ``00:00:00.500``, ``26:00``."""
    seconds = any(v % 60_000_000 for v in values)
    fraction = 3 if not any(v % 1_000 for v in values) else 6
    fractions = any(v % 1_000_000 for v in values)
    out = []
    for micros in values:
        whole, rest = divmod(micros, 1_000_000)
        minutes, second = divmod(whole, 60)
        hours, minute = divmod(minutes, 60)
        text = f"{hours:02d}:{minute:02d}"
        if seconds:
            text += f":{second:02d}"
        if fractions:
            text += "." + f"{rest:06d}"[:fraction]
        out.append(text)
    return out


@dataclass(frozen=True)
class RunFacts:
    """What the run was: mutants found before the sample, the sample's size and seed,
    the seconds the mutants' tests took (summed as pytest measured them) and the
    mutation phase's wall time, per process summed."""

    found: int
    sampled: int | None
    seed: int
    test_seconds: float
    phase_seconds: float
    min_score: float | None = None
    found_by_topology: Mapping[str, int] = field(default_factory=dict)
    """Mutants found per topology, before the sample."""


def _score_text(score: Score) -> str:
    percent = score.percent
    shown = "no mutant counted" if percent is None else f"score {percent:.1f} %"
    extra = (f", {score.unreached} unreached" if score.unreached else "") + (
        f", {score.errors} in error" if score.errors else "")
    return (f"{score.made} mutants, {score.invalid} invalid{extra}, {score.killed} killed, "
            f"{score.survived} survived: {shown}")


def terminal_lines(results: Sequence[MutantResult], facts: RunFacts, *,
                   verbose: bool = False) -> list[str]:
    """The report as lines: per topology its score and survivors, then the run's."""
    lines: list[str] = []
    topologies: dict[str, list[MutantResult]] = {}
    for result in results:
        topologies.setdefault(result.mutant.site.topology, []).append(result)
    calls: dict[tuple[str, int, str], set[int]] = {}
    for result in results:
        site = result.mutant.site
        calls.setdefault((site.file, site.line, site.api), set()).add(site.occurrence)
    for topology, group in topologies.items():
        found = facts.found_by_topology.get(topology, len(group))
        sampled = f" (a sample of {len(group)} of {found})" if found > len(group) else ""
        lines.append(f"{topology}{sampled}: {_score_text(Score.of(group))}")
        for result in group:
            if result.status == "survived" or (verbose and result.status != "killed"):
                site = result.mutant.site
                several = len(calls[(site.file, site.line, site.api)]) > 1
                lines.extend(_mutant_lines(result, site.occurrence if several else None))
    overall = Score.of(results)
    sample = (f" (a sample of {facts.sampled} of {facts.found}, seed {facts.seed})"
              if facts.sampled is not None and facts.sampled < facts.found else "")
    lines.append(f"overall{sample}: {_score_text(overall)}"
                 + (f" (minimum {facts.min_score:g} %)" if facts.min_score is not None
                    else ""))
    if facts.test_seconds:
        lines.append(f"cost: the mutants' tests took {facts.test_seconds:.1f} s, the mutation "
                     f"phase {facts.phase_seconds:.1f} s: "
                     f"{facts.phase_seconds / facts.test_seconds:.2f}x")
    return lines


def _mutant_lines(result: MutantResult, call: int | None = None) -> list[str]:
    """A mutant's lines; ``call``: which call of the same line in one build it changes,
    where the line makes several (a helper called for each query)."""
    mutant = result.mutant
    where = mutant.site.where + (f" (call {call})" if call is not None else "")
    out = [f"  {result.status:<9} {where}  {mutant.description}"]
    if mutant.code:
        out.append(f"            code: {mutant.code}")
    names = [t.rsplit("::", 1)[-1] for t in result.tests]
    tests = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    tests = tests or "none"
    out.append(f"            tests: {tests}")
    if result.status == "survived":
        out.extend(textwrap.wrap(hint(result), width=_WIDTH, initial_indent=" " * 12,
                                 subsequent_indent=" " * 12, break_on_hyphens=False))
    elif result.reason:
        out.append(f"            {result.reason}")
    return out


def to_json(results: Sequence[MutantResult], facts: RunFacts) -> str:
    """The report as a JSON document: every mutant with its fate, and the scores."""
    overall = Score.of(results)
    document: dict[str, Any] = {
        "score": overall.percent,
        "counts": vars(overall),
        "found": facts.found, "sampled": facts.sampled, "seed": facts.seed,
        "found_by_topology": dict(facts.found_by_topology),
        "min_score": facts.min_score,
        "test_seconds": round(facts.test_seconds, 3),
        "phase_seconds": round(facts.phase_seconds, 3),
        "mutants": [dict(r.to_json(), hint=hint(r) if r.status == "survived" else None)
                    for r in results],
    }
    return json.dumps(document, indent=2, sort_keys=True)


def to_junit(results: Sequence[MutantResult], facts: RunFacts) -> str:
    """The report as JUnit XML: a test case per mutant (classname: its topology); a
    survivor is a failure, an invalid or unreached mutant is skipped. The suite's
    properties carry the run's score (``none`` when nothing was counted), how many
    mutants were found and run, the seed and the minimum score, for a CI page to show
    beside the cases."""
    score = Score.of(results)
    suite = ET.Element("testsuite", name="streamtest-mutation", tests=str(score.made),
                       failures=str(score.survived),
                       skipped=str(score.invalid + score.unreached),
                       errors=str(score.errors), time=f"{sum(r.seconds for r in results):.3f}")
    properties = ET.SubElement(suite, "properties")
    for name, value in (
            ("score", "none" if score.percent is None else f"{score.percent:.1f}"),
            ("found", facts.found),
            ("run", facts.found if facts.sampled is None else facts.sampled),
            ("seed", facts.seed),
            ("min_score", "none" if facts.min_score is None else f"{facts.min_score:g}")):
        ET.SubElement(properties, "property", name=name, value=str(value))
    for result in results:
        mutant = result.mutant
        case = ET.SubElement(suite, "testcase", classname=mutant.site.topology,
                             name=f"{mutant.site.where} {mutant.description}",
                             time=f"{result.seconds:.3f}")
        tests = ", ".join(result.tests)
        if result.status == "survived":
            failure = ET.SubElement(case, "failure", message=f"survived: {hint(result)}")
            failure.text = f"{mutant.code}\ntests: {tests}"
        elif result.status == "error":
            ET.SubElement(case, "error", message=f"error: {result.reason}")
        elif result.status in ("invalid", "unreached"):
            ET.SubElement(case, "skipped", message=f"{result.status}: {result.reason}")
        else:
            ET.SubElement(case, "system-out").text = f"killed by {result.by}: {result.reason}"
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)
