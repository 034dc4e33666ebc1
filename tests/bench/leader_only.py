"""The leader's ``assign()`` at group sizes one process cannot host whole: only the leader's
process is real, every other member is a *light* member.

Why: hosting every member in the bench worker made each keep the group's decoded host maps (at
100,000 partitions over 1,000 members the worker reached 20 GB), and a heap of 10,000 members'
objects also made the leader's own ``assign()`` pay for garbage collections over objects that a
real leader's process does not hold. A real leader process holds its own ``StreamsProcess`` and
its own consumers; that is what stays real here:

- the leader's instance (process 1, its T consumers, one of them the leader) is built once per
  run and gets every answer exactly as aiokafka hands it over;
- every other member is a real ``StreamsPartitionAssignor`` of its own ``StreamsProcess``, so its
  JoinGroup bytes are the real ones, but the answer it reads is *light*: its own
  ``AssignmentInfo`` (same tasks, same partitions, same follow-up) with the host maps cut down to
  its own endpoint's entries. Nothing a member subscribes with depends on the other hosts'
  partitions, so its next JoinGroup bytes equal a fully fed member's
  (``tests/bench/test_bench_framework.py`` checks that at a small point);
- a sample of members (``sample``) reads the full answer, timed: the members' own cost
  (``metadata()`` + ``on_assignment()``) is the mean over that sample.

Timed: the leader's ``assign()`` and aiokafka's encoding of its answers
(``drivers.sync_group_answers``), as in ``drivers.rebalance``. Printed beside it: the
JoinGroup/SyncGroup bytes of every member and the worker's peak resident memory.
"""

from __future__ import annotations

import gc
import resource
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

from aiokafka.coordinator.protocol import ConsumerProtocol, ConsumerProtocolMemberAssignment

from tests.bench import drivers
from tests.bench.drivers import Member, Round, Shape
from tests.bench.steps import timed_steps

_VERSION = 0  # the ConsumerProtocol version aiokafka sends


def _rss_mib() -> float:
    """The worker's peak resident memory so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _light_answer(leader: Any, member_id: str, member: Any) -> ConsumerProtocolMemberAssignment:
    """``member_id``'s answer with the host maps cut to its own endpoint's entries."""
    result = leader.last_leader.result.members[member_id]
    info = result.info
    own = member.process.endpoint
    active_hosts, standby_hosts = info.partitions_by_host, info.standby_partitions_by_host
    # One look-up each: at 10,000 hosts a scan per member would be 10^8 steps per rebalance.
    light = info.model_copy(update={
        "partitions_by_host": {own: active_hosts[own]} if own in active_hosts else {},
        "standby_partitions_by_host": (
            {own: standby_hosts[own]} if own in standby_hosts else {}
        ),
    })
    grouped: dict[str, list[int]] = {}
    for tp in result.partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    by_topic = [(topic, sorted(numbers)) for topic, numbers in sorted(grouped.items())]
    data = member.process.codec.encode_assignment(light, version=info.version)
    return ConsumerProtocolMemberAssignment(_VERSION, by_topic, data)


def leader_rebalance(
    leader_members: list[Member],
    others: list[Member],
    cluster: Any,
    *,
    sample: int,
    trace: bool = False,
    steps: bool = False,
) -> Round:
    """One rebalance: every member's JoinGroup, the leader's timed ``assign()``, then the
    leader's process reads its answers in full, a sample of the others reads theirs in full
    (timed), and the rest read light answers (untimed)."""
    clock = time.perf_counter
    members = leader_members + others
    joined: dict[str, bytes] = {}
    member_s = 0.0
    for i, (mid, assignor, topics) in enumerate(members):
        began = clock()
        joined[mid] = assignor.metadata(topics).encode()
        if i < len(leader_members) + sample:
            member_s += clock() - began
    decoded = {mid: ConsumerProtocol.METADATA.decode(data) for mid, data in joined.items()}
    leader = leader_members[0][1]
    gc.collect()
    if trace:
        tracemalloc.start()
    spent: dict[str, float] | None = None
    started = clock()
    if steps:  # wrapped steps cost a little: this run's assign_ms is not a figure
        with timed_steps() as spent:
            answers = dict(drivers.sync_group_answers(leader.assign(cluster, decoded)))
    else:
        answers = dict(drivers.sync_group_answers(leader.assign(cluster, decoded)))
    assign_s = clock() - started
    peak = None
    if trace:
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    sync_bytes = [len(answers[mid]) for mid, _, _ in members]
    decided = leader.last_leader.result
    error = "" if decided.error.value == 0 else f"{decided.error.name}: {decided.detail}"

    full = len(leader_members) + sample
    for i, (mid, assignor, _) in enumerate(members):
        if i < full:
            data = answers[mid]
            began = clock()
            assignor.on_assignment(ConsumerProtocol.ASSIGNMENT.decode(data))
            member_s += clock() - began
        else:
            assignor.on_assignment(_light_answer(leader, mid, assignor))
    del answers
    return Round(
        assign_ms=assign_s * 1000,
        member_ms=member_s * 1000 / max(min(full, len(members)), 1),
        join_bytes=[len(joined[mid]) for mid, _, _ in members],
        sync_bytes=sync_bytes,
        peak_mib=peak,
        joined=joined,
        steps_ms=spent,
        error=error,
    )


def leader_rounds(
    shape: Shape,
    *,
    leave: bool = True,
    stable: bool = False,
    sample: int = 5,
    trace: bool = False,
    steps: bool = False,
    standby_offset: int = drivers.END_OFFSET,
) -> Iterator[tuple[str, Round]]:
    """A fresh group's first rebalance, then the second (after the last instance leaves, or
    with everyone when ``leave`` is false, as Kafka's scale test), then with ``stable`` a third
    with the second's members; one round at a time, so a caller can stop between rounds."""
    cluster = drivers.cluster_for(shape)
    instances = drivers.ours(shape, drivers.topology_for(shape), standby_offset=standby_offset)
    leader_members, rest = instances[0], [m for group in instances[1:] for m in group]

    def rebalance(others: list[Member]) -> Round:
        return leader_rebalance(
            leader_members, others, cluster, sample=sample, trace=trace, steps=steps
        )

    yield "first", rebalance(rest)
    if leave and len(instances) == 1:
        return
    remaining = [m for group in instances[1:-1] for m in group] if leave else rest
    yield "second", rebalance(remaining)
    if stable:
        yield "stable", rebalance(remaining)


def run_leader_story(shape: Shape, **options: Any) -> dict[str, Any]:
    """Every round of :func:`leader_rounds`; each round's figures and the peak memory."""
    out: dict[str, Any] = {name: r.summary() for name, r in leader_rounds(shape, **options)}
    out["rss_mib"] = _rss_mib()
    return out


OPS: dict[str, Callable[..., Any]] = {}


def op(fn: Callable[..., Any]) -> Callable[..., Any]:
    OPS[fn.__name__] = fn
    return fn


_open: list[Iterator[tuple[str, Round]]] = []


@op
def leader_open(shape: dict[str, Any], **options: Any) -> None:
    """Start a story to be run round by round with ``leader_next`` (one open at a time)."""
    _open.clear()
    _open.append(leader_rounds(Shape.of(shape), **options))


@op
def leader_next() -> dict[str, Any] | None:
    """The open story's next round (``None`` when it has no more), with the peak memory."""
    for name, result in _open[0] if _open else ():
        return {"name": name, **result.summary(), "rss_mib": _rss_mib()}
    _open.clear()
    return None


@op
def leader_story(
    shape: dict[str, Any],
    leave: bool = True,
    stable: bool = False,
    sample: int = 5,
    trace: bool = False,
    steps: bool = False,
    standby_offset: int = drivers.END_OFFSET,
) -> dict[str, Any]:
    return run_leader_story(
        Shape.of(shape),
        leave=leave,
        stable=stable,
        sample=sample,
        trace=trace,
        steps=steps,
        standby_offset=standby_offset,
    )
