"""A pipeline's registration, as the driver explains it: where its spec is, and why
Spark refused its definitions."""

from __future__ import annotations

import os
import traceback
from pathlib import Path

from .._spark.jvm import java_error_text
from ..errors import InvalidArgumentTypeError, PipelineDefinitionError, hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["definition_problem", "spec_path"]

_SPEC_NAMES = ("spark-pipeline.yml", "spark-pipeline.yaml")
_WATERMARK_HINT = (
    " If the missing table is a dataset of this pipeline read with "
    "spark.readStream.table(...).withWatermark(...): Spark Connect analyses a watermark "
    "as it is declared, before the dataset exists, so the engine cannot register it; "
    "declare the flow in SQL instead (SELECT ... FROM STREAM name WATERMARK ts DELAY OF "
    "INTERVAL 10 MINUTES), which the engine analyses with the graph.")


def spec_path(spec: str | os.PathLike[str]) -> Path:
    """The spec file of ``spec`` (the file, or the folder that holds it)."""
    if not isinstance(spec, (str, os.PathLike)):
        raise InvalidArgumentTypeError(
            f"spec is the path of a spark-pipeline.yml or of its folder, got "
            f"{type(spec).__name__}")
    path = Path(spec).resolve()
    if path.is_dir():
        for name in _SPEC_NAMES:
            if (path / name).is_file():
                return path / name
        raise PipelineDefinitionError(
            f"no spark-pipeline.yml (or .yaml) in {path}; pass the spec file's path, or "
            "the folder that holds it")
    if not path.is_file():
        raise PipelineDefinitionError(f"pipeline spec {path} does not exist")
    return path


def definition_problem(spec: Path, error: BaseException) -> str:
    """Why ``spec``'s definitions were refused: the error's first line, the file and
    line of the pipeline where it was raised, and the fix where one is known."""
    text = java_error_text(error).strip().splitlines()
    first = text[0] if text else type(error).__name__
    root = spec.parent
    where = ""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if Path(frame.filename).resolve().is_relative_to(root):
            where = f" in {Path(frame.filename).relative_to(root)}:{frame.lineno}"
            break
    kind = type(error).__name__
    message = (f"pipeline {spec} could not be registered{where}: "
               f"{first if first.startswith(kind) else f'{kind}: {first}'}")
    if "TABLE_OR_VIEW_NOT_FOUND" in first:
        message += _WATERMARK_HINT
    return message
