"""What became of each mutant, and the score.

A mutant is **killed** when a test that built its topology fails with it, **survives**
when every such test passes, is **invalid** when Spark (or the driver) refuses the
changed query, when it starts or in its first batch (an update-mode session window, an
outer join without a watermark, ``MULTIPLE_EVENT_TIME_COLUMNS``...), and is
**unreached** when its tests no longer made the call it changes (a test that builds
its topology only sometimes), and ends in **error** when its test failed for the
harness (:class:`~pyspark_streamtest.errors.SparkInfrastructureError`: an overloaded
machine, a lost channel), which says nothing of the mutant. Invalid, unreached and
error mutants are not counted: the score is killed / (killed + survived).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import (
    SparkInfrastructureError,
    StreamingQueryFailedError,
    TopologyError,
    hide_our_frames,
)
from ._sites import Mutant

__tracebackhide__ = hide_our_frames

Status = Literal["killed", "survived", "invalid", "unreached", "error"]
_RANK: dict[str, int] = {"killed": 4, "invalid": 3, "error": 2, "survived": 1, "unreached": 0}

# Texts of Spark's refusals of a query, as a failed batch's cause carries them.
_REFUSALS = (
    "AnalysisException", "UNSUPPORTED_", "MULTIPLE_EVENT_TIME_COLUMNS",
    "IllegalArgumentException", "UnsupportedOperationException", "STREAMING_OUTPUT_MODE",
    "NON_TIME_WINDOW_NOT_SUPPORTED", "requirement failed",
)


@dataclass
class MutantResult:
    """One mutant's fate: ``status``, the tests that ran it (in order), the test that
    killed it or saw it refused (``by``), the first line of that failure (``reason``)
    and the seconds its tests took."""

    mutant: Mutant
    status: Status
    tests: list[str] = field(default_factory=list)
    by: str | None = None
    reason: str = ""
    seconds: float = 0.0

    def merged(self, other: MutantResult) -> MutantResult:
        """This mutant as two processes saw it (each ran its own tests): killed if
        either killed it."""
        first, second = (self, other) if _RANK[self.status] >= _RANK[other.status] else (
            other, self)
        tests = first.tests + [t for t in second.tests if t not in first.tests]
        return MutantResult(first.mutant, first.status, tests, first.by, first.reason,
                            self.seconds + other.seconds)

    def to_json(self) -> dict[str, Any]:
        """JSON values (the report's and the xdist workers' form)."""
        return {**self.mutant.to_json(), "status": self.status, "tests": self.tests,
                "by": self.by, "reason": self.reason, "seconds": round(self.seconds, 3)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MutantResult:
        """The inverse of :meth:`to_json`."""
        return cls(Mutant.from_json(data), data["status"], list(data["tests"]), data["by"],
                   data["reason"], float(data["seconds"]))


def classify(error: BaseException | None) -> tuple[Status, str]:
    """``error`` if ``error`` (or what caused it) is the harness failing, ``invalid`` if
    it is Spark or the driver refusing the query, else ``killed``; and the failure's
    first line (for a failed batch Spark refused, the line of Spark's error that says
    why)."""
    for link in _chain(error):
        if isinstance(link, SparkInfrastructureError):
            return "error", _first_line(link)
        if isinstance(link, TopologyError) or _is_refusal(link):
            return "invalid", _first_line(link)
        if isinstance(link, StreamingQueryFailedError):
            refusal = next((line.strip() for line in link.cause.splitlines()
                            if any(text in line for text in _REFUSALS)), None)
            if refusal is not None:
                return "invalid", f"{type(link).__name__}: {refusal}"[:300]
    return "killed", _first_line(error) if error is not None else "the test failed"


def _is_refusal(error: BaseException) -> bool:
    try:
        from pyspark.errors import AnalysisException, IllegalArgumentException
    except ImportError:  # pragma: no cover (every supported PySpark has them)
        return False
    return isinstance(error, (AnalysisException, IllegalArgumentException))


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


@dataclass(frozen=True)
class Score:
    """Counts over some results, and the score (None when nothing counted)."""

    made: int
    killed: int
    survived: int
    invalid: int
    unreached: int
    errors: int = 0

    @property
    def percent(self) -> float | None:
        """killed / (killed + survived), in percent."""
        counted = self.killed + self.survived
        return None if counted == 0 else 100.0 * self.killed / counted

    @classmethod
    def of(cls, results: Iterable[MutantResult]) -> Score:
        """The counts of ``results``."""
        statuses = [r.status for r in results]
        return cls(len(statuses), statuses.count("killed"), statuses.count("survived"),
                   statuses.count("invalid"), statuses.count("unreached"),
                   statuses.count("error"))


def merge(results: Iterable[MutantResult]) -> list[MutantResult]:
    """One result per mutant (see :meth:`MutantResult.merged`), in site order."""
    by_id: dict[str, MutantResult] = {}
    for result in results:
        key = result.mutant.id
        by_id[key] = by_id[key].merged(result) if key in by_id else result
    return sorted(by_id.values(), key=lambda r: r.mutant)
