"""Keep Python's cyclic collector off the heap a replay did not make.

A replay of a few hundred members allocates enough long-lived containers (futures, requests,
journal events, per-member state) to trigger several *full* collections, and each full
collection walks the whole process heap: aiokafka, pydantic, the topology, everything imported,
most of which a replay never touches. On a 200 x 2 cold start that was about a third of the wall
time (``gc.callbacks`` timing: 0.10-0.12 s of 0.33 s), charged to whichever shim call happened to
allocate. ``assignor.adapter.streams_assignor.collector_paused`` does the same for one
``assign()``; here the older heap is frozen (``gc.freeze``, constant time) for the replay, so
collections still run, on the replay's own objects only.

When the replay ends, one collection of its own objects (the older heap still frozen) frees
its cyclic garbage, so a worker running replay after replay does not pile it up in the old heap
(without it, a 25 x 2 rolling restart left some 34,000 blocks behind per replay, and a later
replay paid a 0.1 s full collection for them). Garbage that was already waiting in the frozen
part is collected later instead of during the replay: once the heap has doubled since the last
collection made here, one full collection runs between replays, amortized, as Python's own rule
for full collections is. The policy
changes when memory is freed, never what a replay computes. Left alone when the collector is
off or something else froze the heap (an application's own policy).
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: Memory blocks in use after the last full collection this module ran (None: none yet);
#: ``sys.getallocatedblocks`` is a cheap proxy for the heap's size (``gc.get_freeze_count``
#: walks the list it counts).
_after_collection: list[int | None] = [None]


@contextmanager
def older_heap_frozen() -> Iterator[None]:
    """Freeze the heap as it is for the body's duration (see the module docstring)."""
    if not gc.isenabled() or gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.collect()  # the replay's own garbage only: the older heap is still frozen
        gc.unfreeze()
        baseline, blocks = _after_collection[0], sys.getallocatedblocks()
        if baseline is None:
            _after_collection[0] = blocks
        elif blocks > 2 * baseline:
            gc.collect()
            _after_collection[0] = sys.getallocatedblocks()
