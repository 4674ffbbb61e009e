"""The timeline picture: what is drawn for records, late drops, windows and watermarks."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone

import pytest

from pyspark_streamtest import BatchRecord, LateRecord, TestRecord
from pyspark_streamtest.reporting.picture import timeline_svg, write_timeline_picture

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
NS = "{http://www.w3.org/2000/svg}"


def s(seconds):
    return T0 + timedelta(seconds=seconds)


def batch(batch_id, at, wm, wm_after, inputs=(), outputs=(), late=()):
    return BatchRecord(
        output="counts", batch_id=batch_id, processing_time=s(at), watermark=wm,
        watermark_after=wm_after,
        input_records=tuple(TestRecord({"user": u}, s(t), topic="clicks") for u, t in inputs),
        output_records=tuple(TestRecord(v, topic="counts", batch_id=batch_id) for v in outputs),
        num_input_rows=len(inputs), num_rows_dropped_by_watermark=len(late),
        num_state_rows_total=0,
        late_records=tuple(LateRecord(TestRecord({"user": u}, s(t), topic="clicks"), batch_id,
                                      wm or T0) for u, t in late),
    )


HISTORY = [
    batch(0, 1, datetime(1970, 1, 1, tzinfo=timezone.utc), s(-8), inputs=[("a", 1), ("b", 2)]),
    batch(1, 2, s(-8), s(17), inputs=[("c", 27)]),
    batch(2, 3, s(17), s(17), outputs=[{"window": {"start": s(0), "end": s(10)}, "user": "a",
                                        "count": 1},
                                       {"window": {"start": s(0), "end": s(10)}, "user": "b",
                                        "count": 1}]),
    batch(3, 4, s(17), s(17), inputs=[("d", 5)], late=[("d", 5)]),
]


def shapes(svg):
    root = ET.fromstring(svg)
    return root, list(root.iter())


def test_every_record_late_drop_window_and_watermark_is_drawn():
    root, elements = shapes(timeline_svg(HISTORY, title="clicks <per> user"))
    assert root.tag == f"{NS}svg"
    circles = [e for e in elements if e.tag == f"{NS}circle"]
    assert len(circles) == 4 + 1  # four records read, one legend dot
    crosses = [e for e in elements if e.tag == f"{NS}path" and e.get("stroke") == "#d62728"
               and e.get("stroke-width") == "2.5"]
    assert len(crosses) == 1 + 1  # the late record, and its legend entry
    texts = [e.text for e in elements if e.tag == f"{NS}text"]
    assert "clicks <per> user" in texts  # escaped in the file, read back intact
    assert {"user=a count=1", "user=b count=1"} <= set(texts)
    assert {"0", "1", "2", "3", "batch"} <= set(texts)  # batch ids over their columns
    assert "watermark of 'counts'" in texts
    watermark = [e for e in elements if e.tag == f"{NS}path" and e.get("stroke") == "#444444"]
    solid = [e for e in watermark if e.get("stroke-dasharray") is None]
    # the epoch watermark of batch 0 ("nothing seen yet") is not drawn: 3 batches, 5 points
    assert solid[0].get("d").count("L") == 4


def test_the_window_bar_spans_the_window_in_event_time():
    _, elements = shapes(timeline_svg(HISTORY))
    bars = [e for e in elements if e.tag == f"{NS}rect" and e.get("fill") == "#2ca02c"
            and float(e.get("height")) > 20]
    assert len(bars) == 2
    assert bars[0].get("y") == bars[1].get("y")  # both rows: the same window, same column


def test_the_same_batches_draw_the_same_picture():
    assert timeline_svg(HISTORY) == timeline_svg(list(HISTORY))


def test_svg_is_written_and_other_suffixes_refused(tmp_path):
    written = write_timeline_picture(HISTORY, tmp_path / "sub" / "t.svg")
    assert (tmp_path / "sub" / "t.svg").read_text().startswith("<svg")
    assert written.endswith("t.svg")
    with pytest.raises(ValueError, match=r"must end in \.svg or \.png"):
        write_timeline_picture(HISTORY, tmp_path / "t.jpg")


def test_png_is_drawn_with_matplotlib_or_refused_clearly(tmp_path):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs matplotlib"):
            write_timeline_picture(HISTORY, tmp_path / "t.png")
        return
    write_timeline_picture(HISTORY, tmp_path / "t.png")
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_empty_history_still_draws_axes():
    root, _ = shapes(timeline_svg([]))
    assert root.get("width") == "960"


def _circles(svg):
    _, elements = shapes(svg)
    return [(float(e.get("cx")), float(e.get("cy"))) for e in elements if e.tag == f"{NS}circle"]


def test_records_stand_at_the_event_time_the_query_evaluated_not_their_timestamp():
    from dataclasses import replace

    read = batch(0, 1, T0, s(0), inputs=[("a", 1), ("b", 1)])  # Kafka timestamp 1 s for both
    evaluated = replace(read, input_event_times=(s(50), None))   # a: parsed 50 s; b: filtered
    plain = _circles(timeline_svg([read]))
    drawn = _circles(timeline_svg([evaluated]))
    assert len(plain) == 2 + 1 and len(drawn) == 1 + 1          # b is not drawn, legend dot
    assert drawn[0][1] < plain[0][1]                             # a stands higher: later


def test_batches_run_at_one_processing_time_stand_side_by_side():
    history = [batch(i, 1, T0, s(0), inputs=[("a", i)]) for i in range(3)]
    xs = sorted(x for x, _ in _circles(timeline_svg(history))[:3])
    assert xs[0] < xs[1] < xs[2]


def test_dropped_windows_are_red_bars_and_long_labels_fit_the_plot():
    late = LateRecord(TestRecord({"user": "d"}, s(5), topic="clicks"), 1, s(17),
                      dropped_windows=((s(0), s(10)),))
    wide = {"window": {"start": s(20), "end": s(30)}, "user": "x" * 300}
    history = [replace_late(batch(1, 1, s(17), s(17), inputs=[("d", 5)], outputs=[wide]), late)]
    _, elements = shapes(timeline_svg(history))
    bars = [e for e in elements if e.tag == f"{NS}rect" and e.get("fill") == "#d62728"]
    assert len(bars) == 1 + 1  # the window [0, 10), and its legend entry
    label = next(e.text for e in elements if e.tag == f"{NS}text" and e.text.startswith("user=x"))
    assert label.endswith("\u2026") and len(label) < 120


def replace_late(record, late):
    from dataclasses import replace

    return replace(record, late_records=(late,))


def test_a_window_is_a_faint_band_from_the_batch_that_opened_it_to_its_emission():
    _, elements = shapes(timeline_svg(HISTORY))  # [0, 10) opened by batch 0, emitted by 2
    bands = [e for e in elements if e.tag == f"{NS}rect" and e.get("fill") == "#607d8b"]
    assert len(bands) == 2 + 1  # [0, 10), [20, 30) still open, and the legend entry
    band, green = bands[0], next(e for e in elements if e.tag == f"{NS}rect"
                                 and e.get("fill") == "#2ca02c" and e.get("fill-opacity"))
    assert float(band.get("width")) > 0 and band.get("height") == green.get("height")
    texts = [e.text for e in elements if e.tag == f"{NS}text"]
    assert "window open until emitted" in texts


def test_a_window_still_open_after_the_last_batch_reaches_the_right_edge():
    """[20, 30) holds record c (batch 1) and is never emitted: the emitted [0, 10) shows a
    10 s tumbling grid, so its band runs from batch 1 to the plot's right edge. Record d
    (late, dropped) opens nothing."""
    _, elements = shapes(timeline_svg(HISTORY))
    bands = [e for e in elements if e.tag == f"{NS}rect" and e.get("fill") == "#607d8b"]
    emitted, still_open = bands[0], bands[1]
    right = float(still_open.get("x")) + float(still_open.get("width"))
    assert right > float(emitted.get("x")) + float(emitted.get("width"))
    dots = [float(e.get("cx")) for e in elements  # the records (the legend's has no opacity)
            if e.tag == f"{NS}circle" and e.get("fill-opacity")]
    assert right > max(dots) + 20  # past the last batch's column, to the plot's edge
    # sliding windows (starts not on multiples of the length) draw no still-open band
    sliding = [HISTORY[0], HISTORY[1], batch(2, 3, s(17), s(17), outputs=[
        {"window": {"start": s(-5), "end": s(5)}, "user": "a", "count": 1},
        {"window": {"start": s(0), "end": s(10)}, "user": "a", "count": 1}])]
    _, elements = shapes(timeline_svg(sliding))
    bands = [e for e in elements if e.tag == f"{NS}rect" and e.get("fill") == "#607d8b"]
    assert len(bands) == 2 + 1  # the two emitted windows' bands and the legend entry
