"""Python's cyclic garbage collector around the leader's ``assign()``.

``assign()`` runs synchronously on aiokafka's event loop and allocates a few containers per task
and member. Two costs of the collector land inside it, and neither frees anything:

- **Automatic passes mid-decision.** Each walks the young generation and now and then the whole
  application's heap, not just the leader's objects (a third of ``assign()`` at 10,000
  consumers in ``make bench``). So the collector is paused for the call (reference counting
  still frees almost everything) and its previous state restored, also when the call raises.
- **The young pass the pause defers.** What the call leaves behind lives until the next
  rebalance: the leader's record (its inputs, the task assignment, every member's answer) and
  the answers themselves. With the collector back on, the next allocation starts a young
  collection that walks all of it (586 containers holding 28,000 references to tasks and
  partitions at 1,000 tasks over 10 processes of 2 threads with a standby: 0.8 ms), and a
  middle collection walks it again later, before it reaches the oldest generation, where it
  belongs. So, when nothing else is frozen, the call's survivors are moved to the oldest
  generation at once: ``gc.freeze()`` then ``gc.unfreeze()``, two list splices in constant
  time that leave every tracked object in the oldest generation and the young count at zero
  (CPython's ``gc_freeze_impl`` / ``gc_unfreeze_impl``). The full collections still walk them
  and free any cycle among them, as they would have; only the two walks that could not free
  anything are skipped.

The splice would also thaw whatever an application froze on purpose (``gc.freeze()`` before
forking workers, or the simulator's replay policy, ``simulator.heap``), so it is done only while
the permanent generation is empty. ``gc.get_freeze_count()`` answers that in constant time when
it is empty but walks every frozen object otherwise (3 ms for a 44,000-object heap), so once a
process has been seen with frozen objects it is never asked again there: from then on the pause
is restored as a plain ``gc.enable()``, the young pass included, as before.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Whether something else has frozen objects in this process (seen once: never asked again,
#: since asking walks them; see the module docstring).
_others_froze: list[bool] = [False]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Hold the collector off for the body, then restore it with the body's survivors moved to
    the oldest generation (see the module docstring). A collector that was off stays off and
    nothing is moved."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            promote_young()
            gc.enable()


def promote_young() -> bool:
    """Move every object of the young and middle generations to the oldest one without a
    collection, unless something else has frozen objects; whether it did."""
    if _others_froze[0]:
        return False
    if gc.get_freeze_count():
        _others_froze[0] = True
        return False
    gc.freeze()
    gc.unfreeze()
    return True


__all__ = ["collector_paused", "promote_young"]
