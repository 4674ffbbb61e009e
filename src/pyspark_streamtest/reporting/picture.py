"""The batch timeline as a picture: event time against processing time.

Each micro-batch is a column at its processing time (x). In it:

* every input record the batch read is a dot at its event time (y), one colour per input:
  where the query computes the event time (parsed from a Kafka value), the one its
  ``withWatermark`` column holds (:attr:`~pyspark_streamtest.BatchRecord.input_event_times`,
  evaluated by the driver on the picture's first read while the driver is open), else
  the record's timestamp;
* records a stateful operator dropped as late are red crosses (where the driver knows
  them exactly: :attr:`~pyspark_streamtest.BatchRecord.late_records`, evaluated the
  same way);
* every row the batch emitted with a window (a ``start``/``end`` struct) is a green bar
  spanning the window's event time, labelled with the row's other fields (cut to fit);
  a faint grey band shows the window open, from the first batch that read a record in
  it to the batch that emitted it (to the right edge for a window still open after the
  last batch, drawn where the emitted windows show one tumbling grid); rows without a
  window are green triangles along the top; windows records were dropped from are faint
  red bars;
* the watermark each batch ran with is a step line (dashed after the last batch: the
  watermark the next batch will use), one per output with a watermark.

:func:`timeline_svg` needs nothing beyond the standard library; :func:`write_timeline_picture`
writes ``.svg`` always and ``.png`` where matplotlib is installed. The picture depends
only on the batches (no clock, paths or random ids), so it is the same on every run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from xml.sax.saxutils import escape

from ..core.records import BatchRecord, TestRecord
from ..core.stable import stable_json
from ..core.time import from_ms, to_ms
from ..errors import InvalidArgumentError, hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["timeline_svg", "write_timeline_picture"]

_WIDTH, _HEIGHT = 960, 560
_LEFT, _RIGHT, _TOP, _BOTTOM = 90, 210, 48, 56
_INPUT_COLOURS = ("#1f77b4", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")
_WATERMARK_COLOURS = ("#444444", "#d62728", "#2ca02c")
_EMIT = "#2ca02c"
_LATE = "#d62728"
_OPEN = "#607d8b"


@dataclass(frozen=True)
class _Shape:
    """One drawing primitive, in pixels: ``kind`` is circle, cross, rect, line, path,
    triangle or text."""

    kind: str
    x: float
    y: float
    w: float = 0.0
    h: float = 0.0
    colour: str = "#000000"
    text: str = ""
    points: tuple[tuple[float, float], ...] = ()
    dashed: bool = False
    size: float = 11.0
    anchor: str = "start"
    opacity: float = 1.0


def _window(value: Any) -> tuple[datetime, datetime] | None:
    if not isinstance(value, Mapping):
        return None
    for field in value.values():
        if (isinstance(field, Mapping) and isinstance(field.get("start"), datetime)
                and isinstance(field.get("end"), datetime)):
            return field["start"], field["end"]
    return None


def _label(value: Any) -> str:
    if not isinstance(value, Mapping):
        return stable_json(value)
    rest = {k: v for k, v in value.items()
            if not (isinstance(v, Mapping) and "start" in v and "end" in v)}
    return " ".join(f"{k}={stable_json(v).strip(chr(34))}" for k, v in rest.items())


def _clock(ms: int, span_ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    if span_ms >= 2 * 86_400_000:
        return moment.strftime("%m-%d %H:%M")
    text = moment.strftime("%H:%M:%S")
    return text + (f".{ms % 1000:03d}" if span_ms < 5000 else "")


def _ticks(low: int, high: int, count: int = 6) -> list[int]:
    span = max(1, high - low)
    steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000,
             60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000,
             21_600_000, 43_200_000, 86_400_000]
    step = next((s for s in steps if span / s <= count), steps[-1] * (span // steps[-1] + 1))
    first = -(-low // step) * step
    return list(range(first, high + 1, step))


def _event_times(batch: BatchRecord) -> list[tuple[TestRecord, datetime | None]]:
    """Each input record with the event time its query uses: evaluated by the driver
    where the query computes it, else the record's timestamp."""
    times = batch.input_event_times
    if times is None or len(times) != len(batch.input_records):
        return [(record, record.timestamp) for record in batch.input_records]
    return list(zip(batch.input_records, times, strict=True))


def _open_windows(
    batches: Sequence[BatchRecord], xs: Sequence[float],
    placed: Sequence[list[tuple[TestRecord, datetime | None]]],
) -> list[tuple[tuple[datetime, datetime], float, float | None]]:
    """Per window an output emitted: the window, and the x of the first batch of that
    output that read a record inside it and of the batch that first emitted it. Then the
    windows still open after the last batch (x None), see :func:`_still_open`."""
    found: list[tuple[tuple[datetime, datetime], float, float | None]] = []
    seen: set[tuple[str, tuple[datetime, datetime]]] = set()
    for index, batch in enumerate(batches):
        for window in dict.fromkeys(w for r in batch.output_records if (w := _window(r.value))):
            if (batch.output, window) in seen:
                continue  # update mode emits a window again: it opened once
            seen.add((batch.output, window))
            first = next((xs[i] for i in range(index + 1) if batches[i].output == batch.output
                          and any(t is not None and window[0] <= t < window[1]
                                  for _, t in placed[i])), None)
            if first is not None and first < xs[index]:
                found.append((window, first, xs[index]))
    for output in dict.fromkeys(b.output for b in batches):
        found.extend(_still_open(batches, xs, placed, output,
                                 {w for o, w in seen if o == output}))
    return found


def _still_open(
    batches: Sequence[BatchRecord], xs: Sequence[float],
    placed: Sequence[list[tuple[TestRecord, datetime | None]]], output: str,
    emitted: set[tuple[datetime, datetime]],
) -> list[tuple[tuple[datetime, datetime], float, float | None]]:
    """The windows ``output`` holds open at the end: only where the windows it emitted
    are one tumbling grid (one length, every start a multiple of it since the epoch),
    so that the window of a record it read and kept is known; then each such window no
    batch emitted, from the first batch that read a record in it. Sliding, offset and
    session windows, or an output that emitted no window, draw none."""
    lengths = {to_ms(end) - to_ms(start) for start, end in emitted}
    if len(lengths) != 1:
        return []
    size = lengths.pop()
    if size <= 0 or any(to_ms(start) % size for start, _ in emitted):
        return []
    opened: dict[tuple[datetime, datetime], float] = {}
    for index, batch in enumerate(batches):
        if batch.output != output:
            continue
        dropped = [late.record for late in batch.late_records or ()]
        for record, when in placed[index]:
            if when is None or record in dropped:
                continue
            start = to_ms(when) - to_ms(when) % size
            window = (from_ms(start), from_ms(start + size))
            if window not in emitted:
                opened.setdefault(window, xs[index])
    return [(window, first, None) for window, first in opened.items()]


def _fit(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "\u2026"


def _scene(batches: Sequence[BatchRecord], title: str) -> list[_Shape]:
    times = [to_ms(b.processing_time) for b in batches]
    events: list[int] = []
    placed = [_event_times(batch) for batch in batches]
    for batch, records in zip(batches, placed, strict=True):
        events.extend(to_ms(t) for _, t in records if t is not None)
        for record in batch.output_records:
            window = _window(record.value)
            if window:
                events.extend(to_ms(t) for t in window)
        for mark in (batch.watermark, batch.watermark_after):
            if mark is not None and to_ms(mark) > 0:
                events.append(to_ms(mark))
    x_low, x_high = (min(times), max(times)) if times else (0, 1000)
    x_pad = max(500, (x_high - x_low) // 20)
    x_low, x_high = x_low - x_pad, x_high + x_pad
    events = [e for e in events if e > 0] or [x_low, x_high]
    y_low, y_high = min(events), max(events)
    y_pad = max(500, (y_high - y_low) // 15)
    y_low, y_high = y_low - y_pad, y_high + y_pad
    plot_w, plot_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM

    def px(ms: int) -> float:
        return _LEFT + (ms - x_low) * plot_w / (x_high - x_low)

    # batches run at one processing time (process_all_available) stand side by side
    spread: list[float] = []
    step = min(28.0, plot_w / max(1, len(batches)))
    for index, moment in enumerate(times):
        same = [i for i, t in enumerate(times) if t == moment]
        spread.append(px(moment) + (same.index(index) - (len(same) - 1) / 2) * step)

    def py(ms: int) -> float:
        clamped = min(max(ms, y_low), y_high)
        return _TOP + plot_h - (clamped - y_low) * plot_h / (y_high - y_low)

    shapes = [
        _Shape("rect", 0, 0, _WIDTH, _HEIGHT, "#ffffff"),
        _Shape("text", _WIDTH / 2, 26, text=title, size=15, anchor="middle"),
        _Shape("rect", _LEFT, _TOP, plot_w, plot_h, "#fafafa"),
    ]
    # batches all run at one instant stand side by side: that instant is the only tick
    for tick in _ticks(x_low, x_high) if len(set(times)) > 1 else times[:1]:
        shapes.append(_Shape("line", 0, 0, colour="#e0e0e0",
                             points=((px(tick), _TOP), (px(tick), _TOP + plot_h))))
        shapes.append(_Shape("text", px(tick), _TOP + plot_h + 18,
                             text=_clock(tick, x_high - x_low), size=10, anchor="middle"))
    for tick in _ticks(y_low, y_high):
        shapes.append(_Shape("line", 0, 0, colour="#e0e0e0",
                             points=((_LEFT, py(tick)), (_LEFT + plot_w, py(tick)))))
        shapes.append(_Shape("text", _LEFT - 6, py(tick) + 4,
                             text=_clock(tick, y_high - y_low), size=10, anchor="end"))
    shapes.append(_Shape("text", _LEFT + plot_w / 2, _HEIGHT - 14,
                         text="processing time (one column per micro-batch)", size=12,
                         anchor="middle"))
    shapes.append(_Shape("text", 16, _TOP + plot_h / 2, text="event time", size=12,
                         anchor="middle", w=-90))
    # batch columns and their ids
    single_output = len({b.output for b in batches}) == 1
    for batch, at in zip(batches, spread, strict=True):
        shapes.append(_Shape("line", 0, 0, colour="#c8c8c8", dashed=True,
                             points=((at, _TOP), (at, _TOP + plot_h))))
        if single_output:
            shapes.append(_Shape("text", at, _TOP - 6, text=str(batch.batch_id), size=9,
                                 anchor="middle", colour="#777777"))
    if single_output and batches:
        shapes.append(_Shape("text", _LEFT - 6, _TOP - 6, text="batch", size=9, anchor="end",
                             colour="#777777"))
    # watermarks, one step line per output
    x_of = {id(batch): x for batch, x in zip(batches, spread, strict=True)}
    outputs = list(dict.fromkeys(b.output for b in batches if b.watermark is not None))
    for index, output in enumerate(outputs):
        # the epoch is Spark's "no event time seen yet", not a time to draw
        own = [b for b in batches if b.output == output and b.watermark is not None
               and to_ms(b.watermark) > 0]
        colour = _WATERMARK_COLOURS[index % len(_WATERMARK_COLOURS)]
        points: list[tuple[float, float]] = []
        for batch in own:
            assert batch.watermark is not None
            x, y = x_of[id(batch)], py(to_ms(batch.watermark))
            if points:
                points.append((x, points[-1][1]))
            points.append((x, y))
        if points:
            shapes.append(_Shape("path", 0, 0, colour=colour, points=tuple(points)))
            last = own[-1]
            if last.watermark_after is not None:
                end = px(x_high)
                after = py(to_ms(last.watermark_after))
                shapes.append(_Shape("path", 0, 0, colour=colour, dashed=True,
                                     points=(points[-1], (points[-1][0], after), (end, after))))
    # open windows: from the first batch that read a record of the window to the batch
    # that emitted it, a faint band over the window's event time
    bar = max(4.0, min(14.0, plot_w / max(1, len(batches)) / 3))
    for window, first_x, emit_x in _open_windows(batches, spread, placed):
        if emit_x is None:  # still open after the last batch: to the plot's right edge
            emit_x = px(x_high)
        # clipped to the plot: a still-open window may reach past every time plotted
        top = max(float(_TOP), py(to_ms(window[1])))
        bottom = min(float(_TOP + plot_h), py(to_ms(window[0])))
        shapes.append(_Shape("rect", first_x - bar / 2, top, emit_x - first_x, bottom - top,
                             _OPEN, opacity=0.12))
    # emitted rows
    labelled = sum(len(b.output_records) for b in batches) <= 24
    for batch, at in zip(batches, spread, strict=True):
        loose = 0
        stacked: dict[tuple[datetime, datetime], int] = {}
        for record in batch.output_records:
            window = _window(record.value)
            if window is None:
                loose += 1
                shapes.append(_Shape("triangle", at, _TOP + 8 + 9 * (loose - 1), w=5,
                                     colour=_EMIT))
                continue
            top, bottom = py(to_ms(window[1])), py(to_ms(window[0]))
            shapes.append(_Shape("rect", at - bar / 2, top, bar, bottom - top, _EMIT,
                                 opacity=0.35))
            if labelled:
                row = stacked[window] = stacked.get(window, -1) + 1
                room = int((_LEFT + plot_w - at - bar) / 5.6)  # characters up to the legend
                shapes.append(_Shape("text", at + bar / 2 + 3, top + 11 + 12 * row,
                                     text=_fit(_label(record.value), room), size=10,
                                     colour="#1b5e20"))
    # input records, then late ones on top
    inputs = list(dict.fromkeys(r.topic for b in batches for r in b.input_records))
    for batch, at, records in zip(batches, spread, placed, strict=True):
        event_time = {id(record): t for record, t in records}
        dropped = {w for late in batch.late_records or () for w in late.dropped_windows}
        for window in sorted(dropped):
            top, bottom = py(to_ms(window[1])), py(to_ms(window[0]))
            shapes.append(_Shape("rect", at - bar / 2, top, bar, bottom - top, _LATE,
                                 opacity=0.2))
        for record, t in records:
            if t is None:
                continue
            colour = _INPUT_COLOURS[inputs.index(record.topic) % len(_INPUT_COLOURS)]
            shapes.append(_Shape("circle", at, py(to_ms(t)), w=4.5, colour=colour,
                                 opacity=0.85))
        for late in batch.late_records or ():
            t = event_time.get(id(late.record), late.record.timestamp)
            if t is not None:
                shapes.append(_Shape("cross", at, py(to_ms(t)), w=7, colour=_LATE))
    # legend
    x0, y0 = _WIDTH - _RIGHT + 16, _TOP + 8
    entries: list[tuple[str, str, str]] = [("circle", c, f"record in '{name}'") for name, c in
                                           zip(inputs, _INPUT_COLOURS, strict=False)]
    entries.append(("cross", _LATE, "dropped as late"))
    if any(late.dropped_windows for b in batches for late in b.late_records or ()):
        entries.append(("rect-late", _LATE, "window it was dropped from"))
    entries.extend(("line", _WATERMARK_COLOURS[i % len(_WATERMARK_COLOURS)],
                    f"watermark of '{name}'") for i, name in enumerate(outputs))
    if _open_windows(batches, spread, placed):
        entries.append(("rect-open", _OPEN, "window open until emitted"))
    entries.append(("rect", _EMIT, "emitted window row"))
    entries.append(("triangle", _EMIT, "emitted row, no window"))
    for index, (kind, colour, text) in enumerate(entries):
        y = y0 + 20 * index
        if kind == "line":
            shapes.append(_Shape("line", 0, 0, colour=colour,
                                 points=((x0 - 6, y), (x0 + 8, y))))
        elif kind.startswith("rect"):
            opacity = {"rect-late": 0.2, "rect-open": 0.12}.get(kind, 0.35)
            shapes.append(_Shape("rect", x0 - 3, y - 7, 7, 14, colour, opacity=opacity))
        else:
            shapes.append(_Shape(kind, x0, y, w=5 if kind != "cross" else 6, colour=colour))
        # the legend column is _RIGHT - 32 px wide: about 6.2 px a character at size 11
        shapes.append(_Shape("text", x0 + 16, y + 4, text=_fit(text, 28), size=11))
    return shapes


def _svg_shape(shape: _Shape) -> str:
    fill = f'fill="{shape.colour}"'
    if shape.opacity != 1.0:
        fill += f' fill-opacity="{shape.opacity}"'
    if shape.kind == "rect":
        return (f'<rect x="{shape.x:.1f}" y="{shape.y:.1f}" width="{shape.w:.1f}" '
                f'height="{shape.h:.1f}" {fill}/>')
    if shape.kind == "circle":
        return f'<circle cx="{shape.x:.1f}" cy="{shape.y:.1f}" r="{shape.w}" {fill}/>'
    if shape.kind == "triangle":
        s = shape.w
        return (f'<polygon points="{shape.x - s:.1f},{shape.y - s:.1f} {shape.x + s:.1f},'
                f'{shape.y - s:.1f} {shape.x:.1f},{shape.y + s:.1f}" {fill}/>')
    if shape.kind == "cross":
        s = shape.w
        return (f'<path d="M{shape.x - s:.1f},{shape.y - s:.1f}L{shape.x + s:.1f},'
                f'{shape.y + s:.1f}M{shape.x - s:.1f},{shape.y + s:.1f}L{shape.x + s:.1f},'
                f'{shape.y - s:.1f}" stroke="{shape.colour}" stroke-width="2.5"/>')
    if shape.kind in ("line", "path"):
        d = "M" + "L".join(f"{x:.1f},{y:.1f}" for x, y in shape.points)
        dash = ' stroke-dasharray="5,4"' if shape.dashed else ""
        width = "2" if shape.kind == "path" else "1"
        return f'<path d="{d}" fill="none" stroke="{shape.colour}" stroke-width="{width}"{dash}/>'
    rotate = f' transform="rotate(-90 {shape.x:.1f} {shape.y:.1f})"' if shape.w else ""
    return (f'<text x="{shape.x:.1f}" y="{shape.y:.1f}" font-size="{shape.size}" '
            f'text-anchor="{shape.anchor}" fill="{shape.colour}"{rotate}>'
            f'{escape(shape.text)}</text>')


def timeline_svg(batches: Iterable[BatchRecord], *, title: str = "batch timeline") -> str:
    """The picture (see the module doc) as SVG text."""
    shapes = _scene(tuple(batches), title)
    body = "\n".join(_svg_shape(s) for s in shapes)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
            f'viewBox="0 0 {_WIDTH} {_HEIGHT}" font-family="DejaVu Sans, Arial, sans-serif">\n'
            f"{body}\n</svg>\n")


def _png(shapes: list[_Shape], path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import patches
        from matplotlib import pyplot as plt
    except ImportError:
        raise ImportError("writing a PNG timeline needs matplotlib (pip install matplotlib); "
                          "write .svg instead, which needs nothing") from None
    figure = plt.figure(figsize=(_WIDTH / 100, _HEIGHT / 100), dpi=100)
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(0, _WIDTH)
    axes.set_ylim(_HEIGHT, 0)
    axes.axis("off")
    for shape in shapes:
        alpha = shape.opacity
        if shape.kind == "rect":
            axes.add_patch(patches.Rectangle((shape.x, shape.y), shape.w, shape.h,
                                             color=shape.colour, alpha=alpha, linewidth=0))
        elif shape.kind == "circle":
            axes.add_patch(patches.Circle((shape.x, shape.y), shape.w, color=shape.colour,
                                          alpha=alpha))
        elif shape.kind == "triangle":
            s = shape.w
            axes.add_patch(patches.Polygon(
                [(shape.x - s, shape.y - s), (shape.x + s, shape.y - s), (shape.x, shape.y + s)],
                color=shape.colour))
        elif shape.kind == "cross":
            s = shape.w
            axes.plot([shape.x - s, shape.x + s], [shape.y - s, shape.y + s], color=shape.colour,
                      linewidth=2.5)
            axes.plot([shape.x - s, shape.x + s], [shape.y + s, shape.y - s], color=shape.colour,
                      linewidth=2.5)
        elif shape.kind in ("line", "path"):
            xs, ys = zip(*shape.points, strict=True)
            axes.plot(xs, ys, color=shape.colour, linewidth=2 if shape.kind == "path" else 1,
                      linestyle="--" if shape.dashed else "-")
        else:
            axes.text(shape.x, shape.y, shape.text, fontsize=shape.size * 0.75,
                      color=shape.colour, rotation=90 if shape.w else 0,
                      ha={"start": "left", "middle": "center", "end": "right"}[shape.anchor],
                      va="baseline")
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write_timeline_picture(
    batches: Iterable[BatchRecord], path: str | os.PathLike[str], *,
    title: str = "batch timeline",
) -> str:
    """Write the picture to ``path``: SVG for ``.svg``, PNG for ``.png`` (needs
    matplotlib; ``ImportError`` saying so otherwise). Makes missing folders; returns the
    path written."""
    target = os.fspath(path)
    suffix = os.path.splitext(target)[1].lower()
    if suffix not in (".svg", ".png"):
        raise InvalidArgumentError(f"picture path {target!r} must end in .svg or .png")
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    if suffix == ".svg":
        with open(target, "w", encoding="utf-8", newline="\n") as out:
            out.write(timeline_svg(batches, title=title))
    else:
        _png(_scene(tuple(batches), title), target)
    return target
