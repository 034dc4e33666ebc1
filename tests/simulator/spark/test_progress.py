"""The progress line: counts, rate, time left from the share of the work; plain lines off a TTY."""

from __future__ import annotations

import io

from simulator.spark.progress import line, progress


def test_a_line_shows_count_rate_and_time_left_from_the_work_share() -> None:
    text = line(10, 100, 20.0, bar=False, work_share=0.5)
    assert text.startswith("10/100 replays  0.5/s") and text.endswith("left 20s")
    assert line(0, 100, 5.0, bar=False).endswith("left ?")
    assert line(50, 100, 60.0, bar=True).startswith("[" + "#" * 15 + "." * 15 + "] 50/100")


def test_off_a_terminal_the_block_ends_with_one_plain_final_line() -> None:
    out = io.StringIO()
    with progress(4, lambda: 4, lambda: 1.0, stream=out):
        pass
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("4/4 replays") and "\r" not in out.getvalue()
