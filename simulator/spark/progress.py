"""Progress of a sweep on the terminal: a bar on a TTY, a plain line now and then otherwise.

The driver learns how many jobs finished from a Spark accumulator (executors add 1 per replay; the
driver sees the sum when each task ends), read by a small thread while the job runs on the main
thread. Shows jobs done, rate and time left.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

#: How often the bar redraws / a plain line is printed (seconds).
TTY_INTERVAL_S = 0.5
PLAIN_INTERVAL_S = 10.0
BAR_WIDTH = 30


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    minutes, secs = divmod(seconds, 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def line(done: int, total: int, elapsed_s: float, *, bar: bool,
         work_share: float | None = None) -> str:
    """One progress line: ``[####......] 120/400 replays  8.1/s  left 35s``.

    Time left is reckoned from ``work_share`` (the share of the estimated work done) when given,
    else from the count: the sweep runs its biggest groups first, so early on a count says hours
    when most of the work is in fact behind it.
    """
    rate = done / elapsed_s if elapsed_s > 0 else 0.0
    share = work_share if work_share is not None else done / max(1, total)
    left = _duration(elapsed_s * (1 - share) / share) if share > 0 else "?"
    text = f"{done}/{total} replays  {rate:.1f}/s  elapsed {_duration(elapsed_s)}  left {left}"
    if not bar:
        return text
    filled = BAR_WIDTH * done // max(1, total)
    return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {text}"


@contextmanager
def progress(total: int, read_done: Callable[[], int],
             read_share: Callable[[], float] | None = None,
             stream: TextIO | None = None) -> Iterator[None]:
    """Report ``read_done()`` out of ``total`` (and ``read_share()`` of the work) until the
    block ends, then one final line."""
    out = stream if stream is not None else sys.stderr
    tty = out.isatty()
    interval = TTY_INTERVAL_S if tty else PLAIN_INTERVAL_S
    started = time.monotonic()
    stop = threading.Event()

    def show(final: bool = False) -> None:
        share = None if read_share is None else min(1.0, read_share())
        text = line(min(total, read_done()), total, time.monotonic() - started, bar=tty,
                    work_share=share)
        if tty:
            out.write("\r" + text + ("\n" if final else ""))
        else:
            out.write(text + "\n")
        out.flush()

    def loop() -> None:
        # bounded by the block: stop is set when it ends, and each wait is `interval` at most
        while not stop.wait(interval):
            show()

    thread = threading.Thread(target=loop, name="sweep-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5.0)
        show(final=True)


__all__ = ["line", "progress"]
