"""Independent Spark jobs of the driver, submitted together from threads.

Why: after the replays the sweep ran its small Spark jobs one after the other (three Parquet
writes, then the summary's seven aggregations). Each small job leaves the cores idle while
the driver plans it, the scheduler starts its few tasks and the output is committed; jobs
submitted together from threads fill those gaps, and Spark runs concurrent jobs of one session
as it runs one (same plans, same data, same results: only the wall clock changes). (The
violations CSV beside the report's plots saved nothing measurable: both are mostly the driver's
Python, under one interpreter lock.)

Every call is bounded (one Spark job, or a few), the threads are joined before returning, and the
first exception (the calling thread's first, then in submission order) is raised in the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

#: Most jobs in flight at once: beyond a few, they only queue in Spark's scheduler.
MAX_THREADS = 4


def together(*calls: Callable[[], Any]) -> list[Any]:
    """Run ``calls`` at once and return their results in order: the first in the calling
    thread (so that driver-side work such as matplotlib's stays in the main thread), the others
    in threads (at most :data:`MAX_THREADS` at once); every call has ended when this returns or
    raises."""
    if len(calls) <= 1:
        return [call() for call in calls]
    first, *rest = calls
    with ThreadPoolExecutor(max_workers=min(MAX_THREADS, len(rest)),
                            thread_name_prefix="sweep-job") as pool:
        futures = [pool.submit(call) for call in rest]
        # (leaving the ``with`` waits for every future, also when a call raises)
        return [first(), *(future.result() for future in futures)]


__all__ = ["MAX_THREADS", "together"]
