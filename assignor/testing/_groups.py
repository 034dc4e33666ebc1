"""Strategies for configs, process layouts and whole groups (pipeline and simulator views)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypothesis import strategies as st

from assignor.config import AssignorConfig
from assignor.leader.model import GroupInput, MemberSubscription
from assignor.testing._topologies import partition_counts, topologies
from assignor.topology.data_form import topology_to_data
from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.model import Topology
from assignor.topology.tasks import TaskLayout, plan_tasks
from protocol import (
    LATEST_OFFSET,
    HostInfo,
    ProcessId,
    SubscriptionInfo,
    TaskId,
    TopicPartition,
)
from protocol.codec import LATEST_VERSION, Codec

T = TypeVar("T")

# -- configs, process layouts, whole groups -----------------------------------------------------

#: The task assignors a config may name (``internal.task.assignor.class``).
TASK_ASSIGNORS = ("high_availability", "legacy_sticky", "fallback_prior")
#: Client tag keys and values the layouts draw from: few, so tag-aware placement has choices.
TAG_KEYS = ("zone", "cluster")
TAG_VALUES = ("a", "b", "c")


def pinned(value: T | st.SearchStrategy[T]) -> st.SearchStrategy[T]:
    """A strategy for a parameter given either as a value or as a strategy."""
    return value if isinstance(value, st.SearchStrategy) else st.just(value)


def configs(
    *,
    standbys: int | st.SearchStrategy[int] | None = None,
    assignor: str | st.SearchStrategy[str] | None = None,
    recovery_lag: int | st.SearchStrategy[int] | None = None,
    warmups: int | st.SearchStrategy[int] | None = None,
    tags: Sequence[str] | st.SearchStrategy[Sequence[str]] | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """``AssignorConfig`` entries under Kafka Streams' names (a dict, as a user writes them).

    The probing interval is the minimum (60 s) so probing rebalances come quickly in virtual
    time; ``tags`` are the ``rack.aware.assignment.tags`` (every :func:`process_layouts` process
    carries every key of :data:`TAG_KEYS`, so any subset is valid).
    """

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        entries: dict[str, Any] = {
            "num.standby.replicas": draw(
                pinned(standbys) if standbys is not None else st.integers(0, 2)
            ),
            "internal.task.assignor.class": draw(
                pinned(assignor) if assignor is not None else st.sampled_from(TASK_ASSIGNORS[:2])
            ),
            "acceptable.recovery.lag": draw(
                pinned(recovery_lag)
                if recovery_lag is not None
                else st.sampled_from([10_000, 0, 100, 2**63 - 1])
            ),
            "max.warmup.replicas": draw(
                pinned(warmups) if warmups is not None else st.integers(1, 3)
            ),
            "probing.rebalance.interval.ms": 60_000,
        }
        chosen = draw(
            pinned(tags)
            if tags is not None
            else st.lists(st.sampled_from(TAG_KEYS), unique=True, max_size=2)
        )
        if chosen:
            entries["rack.aware.assignment.tags"] = list(chosen)
        AssignorConfig.model_validate(entries)  # a bad pinned value fails here, by its key
        return entries

    return build()


@dataclass(frozen=True)
class ProcessLayout:
    """One application instance: its consumers (stream threads) and what it has on disk.

    ``lags`` is the local state per stateful task, in records behind the changelog's end
    (``0`` = caught up); ``previous_active`` the tasks it ran as active before this rebalance
    (reported as ``-2``, Kafka's "running"). ``build`` is the newest subscription version its
    codec reads, ``version`` the one it writes (``version <= build``).
    """

    name: str
    process_id: ProcessId
    threads: int = 1
    tags: Mapping[str, str] = field(default_factory=dict)
    rack: str | None = None
    endpoint: HostInfo | None = None
    static: bool = False
    build: int = LATEST_VERSION
    version: int = LATEST_VERSION
    lags: Mapping[TaskId, int] = field(default_factory=dict)
    previous_active: frozenset[TaskId] = frozenset()

    def members(self) -> list[str]:
        """Its consumers' names, ``<name>-<thread>`` (also their ``group.instance.id``)."""
        return [f"{self.name}-{thread}" for thread in range(self.threads)]

    def subscriptions(self, end_sums: Mapping[TaskId, int]) -> dict[str, SubscriptionInfo]:
        """What each consumer sends, as ``StreamsProcess`` builds it: previous actives dealt
        round-robin to the threads as ``-2``, every other local state once, on thread 0."""
        active = sorted(self.previous_active)
        subscriptions: dict[str, SubscriptionInfo] = {}
        for thread, member in enumerate(self.members()):
            sums: dict[TaskId, int] = {
                task: LATEST_OFFSET for task in active[thread :: self.threads]
            }
            if thread == 0:
                for task, lag in self.lags.items():
                    if task not in self.previous_active:
                        sums[task] = max(0, end_sums.get(task, 0) - lag)
            subscriptions[member] = SubscriptionInfo(
                version=self.version,
                latest_supported_version=self.build,
                process_id=self.process_id,
                user_endpoint=self.endpoint,
                task_offset_sums=sums,
                client_tags=dict(self.tags) if self.version >= 3 else {},
                rack_id=self.rack if self.version >= 3 else None,
                group_instance_id=member if self.static and self.version >= 3 else None,
            )
        return subscriptions

    def spec_data(self) -> dict[str, Any]:
        """The simulator's ``ProcessSpec`` data (``simulator.scenarios``) for this process."""
        data: dict[str, Any] = {
            "name": self.name,
            "threads": self.threads,
            "tags": dict(self.tags),
            "static": self.static,
            "protocol_version": self.build,
            "initial_state": {str(task): lag for task, lag in sorted(self.lags.items())},
        }
        if self.rack is not None:
            data["rack"] = self.rack
        if self.endpoint is not None:
            data["endpoint"] = f"{self.endpoint.host}:{self.endpoint.port}"
        return data


def process_layouts(
    count: int | st.SearchStrategy[int] | None = None,
    *,
    threads: int | st.SearchStrategy[int] | None = None,
    stateful: Sequence[TaskId] = (),
    static: bool | st.SearchStrategy[bool] | None = None,
    builds: int | st.SearchStrategy[int] | None = None,
    lags: bool = True,
) -> st.SearchStrategy[list[ProcessLayout]]:
    """``count`` processes (default 1-4) named ``p0, p1, ...`` with distinct process ids.

    Threads default to 1-16 (shrinking to 1); every process carries every key of
    :data:`TAG_KEYS`; endpoints, racks and static membership are drawn unless pinned. With
    ``lags`` and ``stateful`` tasks, each process holds local state for some of them, caught up
    or behind, and previous actives are dealt so no task was active on two processes.
    """
    thread_counts = (
        pinned(threads) if threads is not None else st.one_of(st.integers(1, 2), st.integers(1, 16))
    )

    @st.composite
    def build(draw: st.DrawFn) -> list[ProcessLayout]:
        total = draw(pinned(count) if count is not None else st.integers(1, 4))
        layouts: list[ProcessLayout] = []
        ran: set[TaskId] = set()
        for index in range(total):
            newest = draw(
                pinned(builds)
                if builds is not None
                else st.sampled_from([LATEST_VERSION, *range(1, LATEST_VERSION)])
            )
            state: dict[TaskId, int] = {}
            previous: set[TaskId] = set()
            if lags and stateful:
                held = draw(
                    st.lists(st.sampled_from(list(stateful)), unique=True, max_size=len(stateful))
                )
                for task in held:
                    state[task] = draw(st.sampled_from([0, 0, 50, 20_000]))
                    if state[task] == 0 and task not in ran and draw(st.booleans()):
                        previous.add(task)
                        ran.add(task)
            layouts.append(
                ProcessLayout(
                    name=f"p{index}",
                    process_id=ProcessId.for_int(index + 1),
                    threads=draw(thread_counts),
                    tags={key: draw(st.sampled_from(TAG_VALUES)) for key in TAG_KEYS},
                    rack=draw(st.none() | st.sampled_from(TAG_VALUES)),
                    endpoint=HostInfo(f"host-{index}", 9000) if draw(st.booleans()) else None,
                    static=draw(pinned(static) if static is not None else st.booleans()),
                    build=newest,
                    version=newest,
                    lags=state,
                    previous_active=frozenset(previous),
                )
            )
        return layouts

    return build()


@dataclass(frozen=True)
class Group:
    """A whole consumer group at one rebalance: the application, the cluster, the processes.

    ``end_sums`` is each stateful task's changelog end-offset sum; the lags of the processes are
    measured against it.
    """

    topology: Topology
    partitions: Mapping[str, int]
    config: Mapping[str, Any]
    processes: tuple[ProcessLayout, ...]
    layout: TaskLayout
    internal: InternalTopics
    end_sums: Mapping[TaskId, int]

    def assignor_config(self) -> AssignorConfig:
        return AssignorConfig.model_validate(dict(self.config))

    def cluster(self) -> dict[str, int]:
        """Every topic's partition count: sources, repartition and changelog topics."""
        counts = dict(self.internal.source_partitions)
        counts.update(self.layout.changelog_counts)
        return counts

    def subscriptions(self) -> dict[str, SubscriptionInfo]:
        """Member name -> what it sends (see :meth:`ProcessLayout.subscriptions`)."""
        found: dict[str, SubscriptionInfo] = {}
        for process in self.processes:
            found.update(process.subscriptions(self.end_sums))
        return found

    def changelog_end_offsets(self) -> dict[TopicPartition, int]:
        """End offsets per changelog partition whose sums per task are :attr:`end_sums`."""
        offsets: dict[TopicPartition, int] = {}
        for task, partitions in self.layout.changelogs.items():
            for index, tp in enumerate(partitions):
                offsets[tp] = self.end_sums.get(task, 0) if index == 0 else 0
        return offsets

    def member_bytes(self) -> dict[str, bytes]:
        """Each member's user data, encoded by its own build's codec."""
        builds = {m: p.build for p in self.processes for m in p.members()}
        return {
            member: Codec(builds[member]).encode_subscription(info)
            for member, info in self.subscriptions().items()
        }

    def group_input(
        self, now_ms: int = 0, *, extra: Mapping[str, bytes] | None = None
    ) -> GroupInput:
        """The leader's input for ``assign_group``; ``extra`` adds members with raw bytes."""
        topics = tuple(sorted(self.topology.source_topics))
        members = {m: MemberSubscription(topics, data) for m, data in self.member_bytes().items()}
        for member, data in (extra or {}).items():
            members[member] = MemberSubscription(topics, data)
        return GroupInput(
            members=members,
            partition_counts=self.cluster(),
            changelog_end_offsets=self.changelog_end_offsets(),
            now_ms=now_ms,
        )

    def scenario_data(self, name: str = "property", seed: int = 0) -> dict[str, Any]:
        """The simulator's scenario data (``simulator.scenarios.scenario_from_data``)."""
        return {
            "name": name,
            "seed": seed,
            "topology": topology_to_data(self.topology),
            "partitions": dict(self.partitions),
            "processes": [p.spec_data() for p in self.processes],
            "config": {k: v for k, v in self.config.items() if k != "internal.task.assignor.class"},
            "assignor": self.config.get("internal.task.assignor.class", "high_availability"),
        }


@st.composite
def groups(
    draw: st.DrawFn,
    *,
    topology: Topology | st.SearchStrategy[Topology] | None = None,
    partitions: Mapping[str, int] | st.SearchStrategy[Mapping[str, int]] | None = None,
    processes: int | st.SearchStrategy[int] | None = None,
    threads: int | st.SearchStrategy[int] | None = None,
    config: Mapping[str, Any] | st.SearchStrategy[Mapping[str, Any]] | None = None,
    builds: int | st.SearchStrategy[int] | None = None,
    static: bool | st.SearchStrategy[bool] | None = None,
    end_sum: int | st.SearchStrategy[int] | None = None,
    max_partitions: int = 6,
) -> Group:
    """A group whose topics all exist and whose internal topics can be sized.

    ``topology`` defaults to :func:`topologies`; ``partitions`` (external source topic ->
    count) to :func:`partition_counts`; ``processes`` is how many (default 1-4); ``config`` to
    :func:`configs`. Draws that cannot be sized (a copartitioned join of unequal topics) are
    retried with equal counts, and rejected only if that fails too.
    """
    chosen = draw(
        pinned(topology) if topology is not None else topologies(max_sources=3, max_processors=5)
    )
    external = sorted(chosen.external_source_topics)
    counts = dict(
        draw(
            pinned(partitions)
            if partitions is not None
            else partition_counts(external, max_partitions=max_partitions)
        )
    )
    sizing = size_internal_topics(chosen, counts)
    if not isinstance(sizing, InternalTopics) and partitions is None:
        counts = dict.fromkeys(external, counts[external[0]]) if external else counts
        sizing = size_internal_topics(chosen, counts)
    if not isinstance(sizing, InternalTopics):
        from hypothesis import reject

        reject()
    assert isinstance(sizing, InternalTopics)
    layout = plan_tasks(chosen, sizing.source_partitions)
    stateful = sorted(layout.stateful)
    layouts = draw(
        process_layouts(processes, threads=threads, stateful=stateful, static=static, builds=builds)
    )
    entries = dict(draw(pinned(config) if config is not None else configs()))
    total = draw(pinned(end_sum) if end_sum is not None else st.just(100_000))
    return Group(
        topology=chosen,
        partitions=counts,
        config=entries,
        processes=tuple(layouts),
        layout=layout,
        internal=sizing,
        end_sums=dict.fromkeys(stateful, total),
    )
