"""Each assignor driven through aiokafka's interface, the way aiokafka drives it.

One rebalance, as ``aiokafka.consumer.group_coordinator`` performs it:

1. every member calls ``assignor.metadata(topics)`` and encodes the struct (JoinGroup);
2. the leader decodes every member's bytes with ``ConsumerProtocol.METADATA.decode`` and calls
   ``assignor.assign(cluster, members)`` synchronously (with step 3's encoding, this is the
   figure that blocks the leader's event loop; everything else runs on each member's own
   process);
3. the leader encodes each answer that is not bytes yet (``sync_group_answers``: aiokafka's
   ``_on_join_leader``, on the same event loop right after ``assign()``, so timed with it as
   one figure for every assignor), and each member decodes its own and hands it to
   ``assignor.on_assignment(assignment)``.

The assignor objects live as long as a real member's: the same objects across the rebalances
of one run, so the previous assignment travels back through each member's own
``on_assignment()`` / ``metadata()``, and our leader keeps its ``StreamsProcess`` and its codec.
Every run starts a fresh group (new members), so the first rebalance starts from nothing.

A *shape* is one topic ``events`` or two copartitioned topics ``events`` + ``clicks`` of P
partitions, read by one stateful subtopology whose store ``counts`` has a changelog of P
partitions. Ours: C processes (``StreamsProcess``), T consumers each, ``num.standby.replicas`` =
standbys, endpoints ``host-c:8080``, local state that is caught up with the changelog (a standby
reports the end offset). Faust: C x T workers (Faust has one consumer per worker), each a real
``faust.App`` with the table ``counts`` and ``table_standby_replicas`` = standbys, subscribed to
the source topics and the changelog as a Faust worker is. aiokafka's round-robin and sticky: C x T
plain consumers of the source topics (they have no standbys, no tasks). "A member leaves" means
one application instance leaves: its T consumers.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocol

from assignor import AssignorConfig, StreamsProcess, Topology, TopologyBuilder
from protocol import HostInfo, ProcessId, TaskId
from protocol.shared_ids import shared_topic_partition
from simulator.shim import make_cluster

APP = "bench"
STORE = "counts"
CHANGELOG = f"{APP}-{STORE}-changelog"
END_OFFSET = 100_000
SIDES = ("ours", "faust", "roundrobin", "sticky")


@dataclass(frozen=True)
class Shape:
    """One grid point: P partitions per topic, C instances of T consumers, standby replicas."""

    partitions: int
    instances: int
    threads: int = 1
    standbys: int = 0
    topics: int = 1  # 1: events; 2: events + clicks, copartitioned
    endpoints: bool = True  # ours: each process has an endpoint, so host maps are sent

    @property
    def source_topics(self) -> list[str]:
        return ["events", "clicks"][: self.topics]

    @property
    def members(self) -> int:
        return self.instances * self.threads

    @property
    def tasks(self) -> int:
        return self.partitions

    @staticmethod
    def of(data: dict[str, Any]) -> Shape:
        return Shape(**data)


def member_id(index: int) -> str:
    """aiokafka-like member ids whose order follows the index (round-robin sorts them)."""
    return f"consumer-{index:06d}-0000"


def cluster_for(shape: Shape) -> Any:
    """aiokafka's own ``ClusterMetadata`` with the source topics and the changelog."""
    topics = dict.fromkeys(shape.source_topics, shape.partitions)
    topics[CHANGELOG] = shape.partitions
    return make_cluster(topics)


# --- one rebalance through aiokafka's interface ----------------------------------------------


@dataclass
class Round:
    """What one rebalance cost: the leader's ``assign()`` and each member's own work."""

    assign_ms: float
    member_ms: float  # mean per member: metadata() + on_assignment(), bytes included
    join_bytes: list[int]  # JoinGroup metadata bytes per member
    sync_bytes: list[int]  # SyncGroup assignment bytes per member
    peak_mib: float | None = None
    joined: dict[str, bytes] = field(default_factory=dict, repr=False)  # JoinGroup bytes
    synced: dict[str, bytes] = field(default_factory=dict, repr=False)  # SyncGroup bytes
    read: int = 0  # how many members decoded their answer and called on_assignment()
    steps_ms: dict[str, float] | None = None  # tests/bench/steps.py, when asked
    error: str = ""  # the leader answered with an error code (ours, leader-only hosting)

    def summary(self) -> dict[str, Any]:
        return {
            "assign_ms": self.assign_ms,
            "member_ms": self.member_ms,
            "join_bytes_max": max(self.join_bytes),
            "join_bytes_group": sum(self.join_bytes),
            "sync_bytes_max": max(self.sync_bytes),
            "sync_bytes_group": sum(self.sync_bytes),
            "peak_mib": self.peak_mib,
            "steps_ms": self.steps_ms,
            "error": self.error,
        }


#: Members besides the leader's instance that read their answer in a story's last rebalance
#: (the same sample as ours in ``leader_only``): nothing reads the group's state after it, and
#: at 1,000 members x 2 threads Faust's ``on_assignment`` of every member took 17 s a run.
LAST_ROUND_SAMPLE = 5



def sync_group_answers(answers: Mapping[str, Any]) -> list[tuple[str, bytes]]:
    """What aiokafka 0.14's ``_on_join_leader`` does with ``assign()``'s answers before it
    sends SyncGroup, on the leader's event loop: each answer that is not ``bytes`` is
    encoded, one member at a time. The bench times this with ``assign()`` for every side:
    an assignor that returns structs leaves this much more work on the loop."""
    assignment_req = []
    for member_id, assignment in answers.items():
        if not isinstance(assignment, bytes):
            assignment = assignment.encode()
        assignment_req.append((member_id, assignment))
    return assignment_req

def rebalance(
    members: Sequence[tuple[str, Any, list[str]]],
    cluster: Any,
    *,
    trace: bool = False,
    readers: int | None = None,
    known_join: Mapping[str, bytes] | None = None,
    rest_reads: Callable[[dict[str, bytes]], bool] | None = None,
) -> Round:
    """One rebalance of ``members`` (id, assignor, topics); the first member leads. Every
    member's answer is encoded; the first ``readers`` members (all when ``None``), the sample,
    call ``metadata()`` and, after the leader's ``assign()``, decode their answer and call
    ``on_assignment()``: ``member_ms`` is the mean over them.

    The other members' JoinGroup bytes come from ``known_join`` when given (bytes a member in
    the same state sent before: ``run_story`` proves it), else from their ``metadata()``; they
    read their answers when ``rest_reads(answers)`` says so (always when it is ``None`` and
    ``readers`` is ``None``): a story's last rebalance, which no later one reads, and a first
    rebalance whose answers equal a recorded run's, skip them."""
    clock = time.perf_counter
    sample = len(members) if readers is None else min(readers, len(members))
    joined: dict[str, bytes] = {}
    member_s = 0.0
    for i, (mid, assignor, topics) in enumerate(members):
        if i >= sample and known_join is not None:
            joined[mid] = known_join[mid]
            continue
        began = clock()
        metadata = assignor.metadata(topics)
        joined[mid] = metadata if isinstance(metadata, bytes) else metadata.encode()
        if i < sample:
            member_s += clock() - began
    decoded = {mid: ConsumerProtocol.METADATA.decode(data) for mid, data in joined.items()}
    leader = members[0][1]
    gc.collect()
    if trace:
        tracemalloc.start()
    started = clock()
    synced = dict(sync_group_answers(leader.assign(cluster, decoded)))
    assign_s = clock() - started
    peak = None
    if trace:
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    for mid, assignor, _ in members[:sample]:
        began = clock()
        assignor.on_assignment(ConsumerProtocol.ASSIGNMENT.decode(synced[mid]))
        member_s += clock() - began
    read = sample
    rest = members[sample:]
    if rest and (rest_reads(synced) if rest_reads is not None else readers is None):
        for mid, assignor, _ in rest:  # untimed: the sample's mean is the members' figure
            assignor.on_assignment(ConsumerProtocol.ASSIGNMENT.decode(synced[mid]))
        read = len(members)
    return Round(
        assign_ms=assign_s * 1000,
        member_ms=member_s * 1000 / sample,
        join_bytes=[len(joined[mid]) for mid, _, _ in members],
        sync_bytes=[len(synced[mid]) for mid, _, _ in members],
        peak_mib=peak,
        joined=joined,
        synced=synced,
        read=read,
    )


# --- the sides ---------------------------------------------------------------------------------

Member = tuple[str, Any, list[str]]


def topology_for(shape: Shape) -> Topology:
    """One stateful subtopology reading the source topics (copartitioned when two)."""
    builder = TopologyBuilder(APP)
    builder.add_source("source", *shape.source_topics)
    builder.add_processor("count", "source").add_state_store(STORE, "count")
    if shape.topics > 1:
        builder.copartition(*shape.source_topics)
    return builder.build()


def ours(shape: Shape, topology: Topology, standby_offset: int = END_OFFSET) -> list[list[Member]]:
    """A fresh group of ours: per instance, its T members (one ``StreamsProcess`` each)."""
    config = AssignorConfig.model_validate({"num.standby.replicas": shape.standbys})
    # Keyed as the adapter's ChangelogOffsetsReader keys them: by the shared instances.
    ends = {shared_topic_partition(CHANGELOG, p): END_OFFSET for p in range(shape.partitions)}
    topics = sorted(topology.source_topics)
    instances: list[list[Member]] = []
    for c in range(shape.instances):
        holder: list[StreamsProcess] = []

        def local_state(holder: list[StreamsProcess] = holder) -> dict[TaskId, int]:
            # Caught-up local state for every task this instance holds (actives report -2).
            process = holder[0]
            held: set[TaskId] = set()
            for tasks in process.standby_tasks().values():
                held.update(tasks)
            return dict.fromkeys(held, standby_offset)

        process = StreamsProcess(
            topology,
            config,
            process_id=ProcessId.for_int(c + 1),
            endpoint=HostInfo(f"host-{c}", 8080) if shape.endpoints else None,
            state=local_state,
        )
        holder.append(process)
        if c == 0:
            # Only the leader reads them, and each process copies the map: at 100,000
            # partitions over 1,000 instances, copies everywhere took 5 GB.
            process.set_changelog_end_offsets(ends)
        instances.append(
            [
                (member_id(c * shape.threads + t), process.new_assignor(), topics)
                for t in range(shape.threads)
            ]
        )
    return instances


_FAUST_APPS: dict[int, Any] = {}


def _faust_app(index: int) -> Any:
    """Worker ``index``'s real ``faust.App`` with the table ``counts`` (kept: apps are costly)."""
    app = _FAUST_APPS.get(index)
    if app is None:
        import faust

        app = faust.App(
            APP, broker="kafka://127.0.0.1:9", web_host=f"worker-{index}", web_port=6066
        )
        app.Table(STORE, default=int)
        _FAUST_APPS[index] = app
    return app


def faust(shape: Shape) -> list[list[Member]]:
    """A fresh Faust group: a new ``PartitionAssignor`` per worker, as a starting worker has."""
    from faust.assignor.partition_assignor import PartitionAssignor

    topics = [*shape.source_topics, CHANGELOG]
    instances: list[list[Member]] = []
    for c in range(shape.instances):
        group = []
        for t in range(shape.threads):
            index = c * shape.threads + t
            app = _faust_app(index)
            assert CHANGELOG in app.tables.changelog_topics
            assignor = PartitionAssignor(app, replicas=shape.standbys)
            group.append((member_id(index), assignor, topics))
        instances.append(group)
    return instances


def roundrobin(shape: Shape) -> list[list[Member]]:
    topics = list(shape.source_topics)
    return [
        [(member_id(c * shape.threads + t), RoundRobinPartitionAssignor, topics)
         for t in range(shape.threads)]
        for c in range(shape.instances)
    ]


def sticky(shape: Shape) -> list[list[Member]]:
    """aiokafka's sticky keeps its state on the class (aiokafka #1175), so each member gets its
    own subclass, as each would in its own process; its result depends on PYTHONHASHSEED."""
    topics = list(shape.source_topics)
    instances = []
    for c in range(shape.instances):
        group = []
        for t in range(shape.threads):
            index = c * shape.threads + t
            own = type(
                f"Sticky{index}",
                (StickyPartitionAssignor,),
                {"member_assignment": None, "generation": StickyPartitionAssignor.generation},
            )
            group.append((member_id(index), own, topics))
        instances.append(group)
    return instances


def new_group(side: str, shape: Shape, **options: Any) -> list[list[Member]]:
    if side == "ours":
        return ours(shape, topology_for(shape), **options)
    if side == "faust":
        return faust(shape)
    if side == "roundrobin":
        return roundrobin(shape)
    if side == "sticky":
        return sticky(shape)
    raise ValueError(f"unknown side {side!r}")


@dataclass
class _Kept:
    """A run's member-side results at one point, kept by the worker for the point's later runs:
    every member's first-rebalance answer, the JoinGroup bytes it then sent in the second, and
    the members themselves (see ``story_rounds``)."""

    first_answers: dict[str, bytes]
    second_join: dict[str, bytes]
    members: list[Member]


#: The last point's record only: (side, shape) -> what its last fully read run left.
_KEPT: dict[tuple[str, Shape], _Kept] = {}


def run_story(
    side: str, shape: Shape, *, trace: bool = False, stable: bool = False, reuse: bool = True
) -> dict[str, Any]:
    """One warm run: a fresh group's first rebalance, then the second after the last instance
    leaves (and, with ``stable``, a third in which nothing changes: a probing rebalance).
    The leader's instance and ``LAST_ROUND_SAMPLE`` members are the sample: they always call
    ``metadata()`` and read their answers, timed (``member_ms``). The last rebalance's answers
    are read by the sample only (no later rebalance reads them). ``members_read`` says how
    many members read their first answer (all, or the sample when the run reused a record)."""
    rounds = story_rounds(side, shape, trace=trace, stable=stable, reuse=reuse)
    return {name: r.summary() for name, r in rounds.items()} | {
        "members_read": rounds["first"].read}


def story_rounds(
    side: str, shape: Shape, *, trace: bool = False, stable: bool = False, reuse: bool = True
) -> dict[str, Round]:
    """:func:`run_story`'s rounds. With ``reuse`` (not with ``stable``), a run whose first
    answers are byte for byte those of a run recorded at the same point in this worker skips
    the other members' reading of them and sends, in the second rebalance, the JoinGroup bytes
    those members sent then: each member starts fresh, the same way, and reads the same bytes,
    so it would send the same bytes (Faust's members each decode the group's whole assignment:
    at 1,000 instances x 2 consumers their reading was 16 s of a 55 s round, the leader's two
    ``assign()`` calls, the figures, 23 s). The sample still does its own work every run, and
    its bytes are checked against the record. The leader's ``assign()`` sees the same bytes
    either way (``tests/bench/test_bench_framework.py`` compares both ways), and in the second
    rebalance the same heap: the record keeps the recorded run's members alive, holding the
    state this run's members would hold had they read (Faust's: the group's decoded assignment
    each), so the collector's full passes inside the timed call are those of a fully read run
    (at 1,000 x 1,000 Faust's second ``assign()`` ran 2 of them either way, 11 without the kept
    members: a smaller heap reaches the full-pass threshold more often). In the first
    rebalance those members are extra (a fully read run holds no state yet); a larger heap
    only delays full passes, and Faust's first ``assign()`` ran none either way there. Hence
    one record at a time, the last point's: a point's first run after another point's records
    anew, and another point's record does not weigh on this one's collector."""
    cluster = cluster_for(shape)
    instances = new_group(side, shape)
    everyone = [m for group in instances for m in group]
    remaining = [m for group in instances[:-1] for m in group]
    sample = shape.threads + LAST_ROUND_SAMPLE
    if not remaining or stable or not reuse:
        rounds = {"first": rebalance(everyone, cluster, trace=trace,
                                     readers=None if remaining else sample)}
        if remaining:
            rounds["second"] = rebalance(remaining, cluster, trace=trace,
                                         readers=None if stable else sample)
            if stable:
                rounds["stable"] = rebalance(remaining, cluster, trace=trace, readers=sample)
        return rounds
    key = (side, shape)
    kept = _KEPT.get(key)
    if kept is None:
        _KEPT.clear()  # another point's members: a run of this point would not hold them
    reused: list[bool] = []

    def rest_reads(answers: dict[str, bytes]) -> bool:
        reused.append(kept is not None and answers == kept.first_answers)
        return not reused[0]

    first = rebalance(everyone, cluster, trace=trace, readers=sample, rest_reads=rest_reads)
    # No members outside the sample (a group of at most T + 5 members): nothing to reuse.
    known = kept.second_join if kept is not None and reused and reused[0] else None
    second = rebalance(remaining, cluster, trace=trace, readers=sample, known_join=known)
    if known is None:
        _KEPT.clear()
        _KEPT[key] = _Kept(first.synced, second.joined, everyone)
    else:
        own = {mid: second.joined[mid] for mid, _, _ in remaining[:sample]}
        if own != {mid: known[mid] for mid in own}:
            raise RuntimeError(f"{side} at {shape}: the sample's JoinGroup bytes differ from "
                               "the recorded run's: reusing the others' would be wrong")
    return {"first": first, "second": second}


OPS: dict[str, Callable[..., Any]] = {}


def op(fn: Callable[..., Any]) -> Callable[..., Any]:
    OPS[fn.__name__] = fn
    return fn


@op
def story(side: str, shape: dict[str, Any], trace: bool = False, stable: bool = False) -> Any:
    return run_story(side, Shape.of(shape), trace=trace, stable=stable)


@op
def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("streams-assignor", "aiokafka", "faust-streaming", "mode-streaming", "orjson",
                 "msgpack", "pydantic"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    import os
    import sys

    found["python"] = sys.version.split()[0]
    found["PYTHONHASHSEED"] = os.environ.get("PYTHONHASHSEED", "random")
    return found
