"""Keep Python's cyclic collector off the heap a replay did not make.

A replay of a few hundred members allocates enough long-lived containers (futures, requests,
journal events, per-member state) to trigger several *full* collections, and each full
collection walks the whole process heap: aiokafka, pydantic, the topology, everything imported,
most of which a replay never touches. On a 200 x 2 cold start that was about a third of the wall
time (``gc.callbacks`` timing: 0.10-0.12 s of 0.33 s), charged to whichever shim call happened to
allocate. ``assignor.adapter.collector.collector_paused`` does the same for one
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

During the body the young generation's threshold is also raised, from Python's 700 container
allocations to :data:`YOUNG_THRESHOLD`: a long replay's own heap is hundreds of thousands of
live objects (journal, records, futures, per-member state), and with 700 every young
collection promoted survivors that the middle and full collections then walked again and again.
A high-availability scale-out of 200 x 2 that probes every minute for an hour (61 rebalances of
400 members) spent 3.3 s of its 14.9 s CPU in the collector (1,419 young, 128 middle and 12
full collections, ``gc.callbacks`` with process time); at 100,000 it spends 0.26 s (2 young,
1 full: the end's). What is garbage is freed all the same, later: at most that many container
allocations' worth (a few MB) waits for the next collection, and the end's collection frees the
rest. The caller's thresholds are restored when the body ends.

The middle generation's threshold is raised too, from 10 young collections to
:data:`MIDDLE_THRESHOLD`. A middle collection walks every object the young ones promoted, and in
a replay almost none of them is garbage: the members' cyclic state lives until the replay ends
and dies at the end's collection. Over 200 jobs of the default mix (every 50th), the young and
middle collections inside the replays freed 1,196 objects in all, while the 1.6 M-object Faust
replay of a 127-process skewed group left 1.58 M to the end's collection; Faust's 146-process
scale-in spent 0.74 of its 7.2 CPU s in 4 middle collections that freed nothing (a flapping
group of 200: 2.4 of 14.4 s in 8). With 50, a middle collection runs only after the replay's
heap has grown by 5 M containers (young threshold x 50, a few hundred MB): nearly every replay
of the default mix ends before that, so what the young collections promote is walked once, by
the end's collection; a replay that grows beyond it still gets its middle collections, the
memory bound (the flapping group of 200 under Faust: 2 instead of 8, 0.85 instead of 2.4 s).
Over that sample the collectors' time inside replays fell from 1.3-1.5 to 0.73
CPU s (two runs each, ``gc.callbacks`` with process time) with the same peak RSS, and every row
the same.

A sweep's executor does better still by not freeing at all: it forks a child per batch
(:mod:`simulator.spark.forked`), and the child, whose heap the OS takes back whole when it
exits, replays with the collector off (:func:`freed_at_exit`). :func:`older_heap_frozen` leaves
a process with the collector off alone, so the child's replays neither collect nor pay the
end's collection; the child's memory bound is its resident size, checked between replays.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: Net container allocations between two young collections during a replay (Python's: 700).
YOUNG_THRESHOLD = 100_000
#: Young collections between two middle collections during a replay (Python's: 10): a middle
#: collection only once the replay's heap has grown by ``YOUNG_THRESHOLD x MIDDLE_THRESHOLD``
#: containers.
MIDDLE_THRESHOLD = 50

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
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), max(thresholds[1], MIDDLE_THRESHOLD),
                     *thresholds[2:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.collect()  # the replay's own garbage only: the older heap is still frozen
        gc.unfreeze()
        baseline, blocks = _after_collection[0], sys.getallocatedblocks()
        if baseline is None:
            _after_collection[0] = blocks
        elif blocks > 2 * baseline:
            gc.collect()
            _after_collection[0] = sys.getallocatedblocks()


def freed_at_exit(*, collect: bool = False) -> None:
    """Collector policy of a process that replays and then ends with ``os._exit``, so that the OS
    frees its heap at once: the cyclic collector off, unless ``collect`` (a replay too big to
    keep all its garbage until the end: collected as inline, by :func:`older_heap_frozen`)."""
    if collect:
        gc.enable()
    else:
        gc.disable()
