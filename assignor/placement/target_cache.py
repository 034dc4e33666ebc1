"""The balanced target of the high-availability assignor, kept from one rebalance to the next.

KIP-441's first two steps (stateful actives dealt round-robin and balanced, then standbys placed
and balanced) look at no lag and no previous owner: they depend only on the clients (their
``ProcessId`` order, thread counts and, with rack awareness, tags), the tasks, which of them are
stateful, and the standby configuration. A group that probes every minute while warm-ups
catch up (dozens of rounds in a row, nobody joining or leaving) recomputes the same target each
time; with rack-aware standbys that was a sixth of a simulated replay's CPU. This module keeps
the last target and its inputs, and hands a copy of it to a workspace whose inputs are equal.

Exactness: the key is every input the two steps read (``Workspace``'s ``pids``, ``capacity``,
``tasks``, ``stateful``, the clients' tags when tags are configured, the replica count and tag
names), compared by value with ``==`` against the one kept entry, never hashed (a ``TaskId``
hashes in Python). The snapshot is everything the steps write (each client's active and standby
sets, counts, keys and the ``touched`` log, whose entries the movement queue reads). The log
lines the steps emit (the standby shortfall, rack-aware fallbacks) are recorded on a miss and
emitted again on a hit, so a cached rebalance logs what a fresh one logs; the standby logger's
effective level is part of the key, so a record it dropped then is not missing later.

Bounded: one entry (the last target) per :class:`TargetCache`; a miss replaces it. The leader
holds one in its ``LeaderCache`` and hands it to the assignor it builds for each rebalance;
without one (``HighAvailabilityTaskAssignor()``, the conformance harness, the CLI) the target is
computed afresh, so the placement itself keeps no state.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from assignor.placement import standby as _standby_module
from assignor.placement.numbering import Numbering
from assignor.placement.workspace import Workspace

_SORT_KEY = attrgetter("sort_key")
_LOG = _standby_module.log

Said = tuple[int, str, tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class _Target:
    key: tuple[Any, ...]
    active: tuple[frozenset[int], ...]
    standby: tuple[frozenset[int], ...]
    count: tuple[int, ...]
    keys: tuple[tuple[float, int], ...]
    touched: tuple[int, ...]
    said: tuple[Said, ...]


class _Recorder:
    """A logger filter that notes what the standby logger emits on this thread while a target
    is computed, letting every record through (a filter, not a handler: adding one takes no
    lock and builds no lock, and a miss is paid in every rebalance that changes membership)."""

    __slots__ = ("said", "thread")

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.said: list[Said] = []

    def __call__(self, record: logging.LogRecord) -> bool:
        if record.thread == self.thread:
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            self.said.append((record.levelno, str(record.msg), args))
        return True


def _key(ws: Workspace, replicas: int, rack_tags: tuple[str, ...]) -> tuple[Any, ...]:
    tags: tuple[tuple[tuple[str, str], ...], ...] = ()
    if replicas and rack_tags:
        tags = tuple(tuple(c.client_tags.items()) for c in ws.clients)
    return (
        tuple(map(_SORT_KEY, ws.pids)),
        tuple(ws.capacity),
        tuple(ws.tasks),
        tuple(ws.stateful),
        replicas,
        rack_tags,
        tags,
        _LOG.getEffectiveLevel(),
        _LOG.disabled,
        logging.root.manager.disable,
    )


class TargetCache:
    """The last balanced target and its inputs (one per leader; aiokafka calls ``assign()``
    from one event loop)."""

    __slots__ = ("_last", "numbering")

    def __init__(self) -> None:
        self._last: _Target | None = None
        #: the leader's last numbering of its tasks, for its workspaces (kept here, with the
        #: target, because both live as long as the leader and are handed to the assignor)
        self.numbering = Numbering()

    def place(
        self,
        ws: Workspace,
        replicas: int,
        rack_tags: tuple[str, ...],
        compute: Callable[[Workspace], None],
    ) -> bool:
        """Put the balanced target on the fresh workspace ``ws``: a copy of the kept one when
        the inputs equal its key, else ``compute(ws)`` (which is then kept). Returns whether it
        was a copy. ``ws`` must not have been assigned anything yet."""
        if ws.touched or any(ws.count):
            raise ValueError("the balanced target goes on a fresh workspace")
        key = _key(ws, replicas, rack_tags)
        kept = self._last
        if kept is not None and kept.key == key:
            ws.active[:] = [set(s) for s in kept.active]
            ws.standby[:] = [set(s) for s in kept.standby]
            ws.count[:] = kept.count
            ws.keys[:] = kept.keys
            ws.touched.extend(kept.touched)
            for level, message, args in kept.said:
                _LOG.log(level, message, *args)
            return True
        recorder = _Recorder()
        _LOG.addFilter(recorder)
        try:
            compute(ws)
        finally:
            _LOG.removeFilter(recorder)
        self._last = _Target(
            key,
            tuple(map(frozenset, ws.active)),
            tuple(map(frozenset, ws.standby)),
            tuple(ws.count),
            tuple(ws.keys),
            tuple(ws.touched),
            tuple(recorder.said),
        )
        return False


__all__ = ["TargetCache"]
