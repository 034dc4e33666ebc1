"""Hypothesis strategies for everything the assignor meets, for your own property tests.

Needs hypothesis, which comes with the ``dev`` extra (``pip install 'streams-assignor[dev]'``);
``import assignor`` never imports this module, so applications do not need it.

Every strategy draws values through the models' validating constructors (a generated value is one
the code may legitimately receive), favours small cases so failures shrink to readable examples,
and takes parameters so that you pin what you know and let hypothesis vary the rest: each
parameter accepts a value or a strategy, and ``None`` means "anything sensible"::

    from hypothesis import given, strategies as st
    from assignor.testing import groups

    @given(groups(topology=my_topology, processes=st.integers(3, 12)))
    def test_my_app(group):
        result = assign_group(group.topology, group.assignor_config(), group.group_input())

The families, smallest first:

- protocol values: :func:`task_ids`, :func:`process_ids`, :func:`host_infos`,
  :func:`offset_sums`, :func:`subscription_infos` and :func:`assignment_infos` at every version,
  :func:`version_headers` (newer builds);
- topologies: :func:`topology_plans` (builder calls as data, replayed by :func:`build_plan`),
  :func:`topologies` (built), :func:`topology_data` (the data form), cluster metadata
  (:func:`partition_counts`, :func:`sized_topologies`);
- groups: :func:`configs` (``AssignorConfig`` entries under Kafka's names),
  :func:`process_layouts` (1-16 threads, client tags, racks, endpoints, static ids, builds and
  local state with lags), and :func:`groups`: a :class:`Group` with views for the leader's
  pipeline (:meth:`Group.group_input`) and for the simulator (:meth:`Group.scenario_data`).
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "assignor.testing needs hypothesis: pip install 'streams-assignor[dev]'"
    ) from exc

from assignor.config import AssignorConfig
from assignor.leader.pipeline import GroupInput, MemberSubscription
from assignor.topology.data_form import topology_to_data
from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.model import Topology, TopologyBuilder, TopologyError
from assignor.topology.tasks import TaskLayout, plan_tasks
from protocol import (
    LATEST_OFFSET,
    NO_FOLLOWUP_REBALANCE,
    UNKNOWN_OFFSET_SUM,
    AssignmentInfo,
    AssignorError,
    HostInfo,
    ProcessId,
    SubscriptionInfo,
    TaskId,
    TopicPartition,
    VersionHeader,
)
from protocol.codec import LATEST_VERSION, Codec

T = TypeVar("T")

# -- protocol values ----------------------------------------------------------------------------

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

_KAFKA_TOPIC_CHARS = string.ascii_letters + string.digits + "._-"
#: Any character that UTF-8 can carry (no lone surrogates).
_ANY_CHAR = st.characters(codec="utf-8")
#: No whitespace: HostInfo rejects it.
_HOST_CHAR = st.characters(exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp"))


def small_or_any(high: int, small: int = 40) -> st.SearchStrategy[int]:
    """Mostly small non-negative ints, sometimes anything up to ``high``."""
    return st.one_of(st.integers(0, small), st.integers(0, high))


def names(max_size: int = 30) -> st.SearchStrategy[str]:
    """Non-empty names: usually Kafka-legal ASCII, sometimes arbitrary Unicode."""
    return st.one_of(
        st.text(_KAFKA_TOPIC_CHARS, min_size=1, max_size=max_size),
        st.text(_ANY_CHAR, min_size=1, max_size=max_size),
    )


def topic_names() -> st.SearchStrategy[str]:
    return st.one_of(names(), st.text(_KAFKA_TOPIC_CHARS, min_size=200, max_size=249))


def topic_partitions(
    topics: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[TopicPartition]:
    return st.builds(
        TopicPartition, topic_names() if topics is None else topics, small_or_any(INT32_MAX)
    )


def task_ids(*, named: bool = False) -> st.SearchStrategy[TaskId]:
    """Task ids; with ``named`` some belong to a named topology."""
    topology = st.one_of(st.none(), names(20)) if named else st.none()
    return st.builds(
        lambda s, p, t: TaskId(s, p, topology=t),
        small_or_any(INT32_MAX, 8),
        small_or_any(INT32_MAX),
        topology,
    )


def process_ids() -> st.SearchStrategy[ProcessId]:
    return st.one_of(
        st.integers(0, 64).map(ProcessId.for_int),
        st.uuids().map(ProcessId),
    )


def host_infos() -> st.SearchStrategy[HostInfo]:
    return st.builds(
        HostInfo,
        st.one_of(
            st.from_regex(r"\A[a-z][a-z0-9-]{0,20}(\.[a-z0-9-]{1,10}){0,3}\Z"),
            st.text(_HOST_CHAR, min_size=1, max_size=255),
        ),
        st.integers(0, 65535),
    )


def offset_sums() -> st.SearchStrategy[int]:
    return st.one_of(
        st.sampled_from([LATEST_OFFSET, UNKNOWN_OFFSET_SUM, 0]),
        st.integers(0, 10**9),
        st.integers(0, INT64_MAX),
    )


def error_codes() -> st.SearchStrategy[AssignorError]:
    return st.sampled_from(list(AssignorError))


def versions(low: int = 1, high: int = LATEST_VERSION) -> st.SearchStrategy[int]:
    return st.integers(low, high)


_SUB_TASKS = {False: task_ids(named=False), True: task_ids(named=True)}
_OFFSET_SUMS = offset_sums()
_CLIENT_TAGS = st.dictionaries(names(20), st.text(_ANY_CHAR, max_size=30), max_size=5)
_RACKS = st.none() | names(20)
_INSTANCE_IDS = st.none() | st.text(_KAFKA_TOPIC_CHARS, min_size=1, max_size=249)
_ENDPOINTS = st.none() | host_infos()
_PROCESS_IDS = process_ids()


@st.composite
def subscription_infos(
    draw: st.DrawFn,
    version: st.SearchStrategy[int] | None = None,
    *,
    named: bool | None = None,
    max_tasks: int = 30,
) -> SubscriptionInfo:
    """A subscription written at a version from ``version`` (default: any the codec knows).

    ``latest_supported_version`` may exceed the codec's own: members of a newer build write old
    versions too. Named-topology tasks appear only when ``named`` is true, or (``named=None``)
    when the drawn version can carry them.
    """
    used = draw(version if version is not None else versions())
    tasks = _SUB_TASKS[used >= 3 if named is None else named]
    return SubscriptionInfo(
        version=used,
        latest_supported_version=draw(st.integers(used, used + 3)),
        process_id=draw(_PROCESS_IDS),
        user_endpoint=draw(_ENDPOINTS),
        task_offset_sums=draw(st.dictionaries(tasks, _OFFSET_SUMS, max_size=max_tasks)),
        unique_field=draw(st.integers(0, 255)),
        error_code=draw(error_codes()),
        client_tags=draw(_CLIENT_TAGS),
        rack_id=draw(_RACKS),
        group_instance_id=draw(_INSTANCE_IDS),
    )


#: Topics that recur across a message (as they do in a real group), mixed with arbitrary ones.
_COMMON_TOPICS = ("orders", "payments", "app-KSTREAM-REPARTITION-0000000003-repartition", "x")
_POOLED_TOPICS = st.one_of(st.sampled_from(_COMMON_TOPICS), topic_names())
_POOLED_PARTITIONS = topic_partitions(
    st.one_of(st.sampled_from(_COMMON_TOPICS), st.sampled_from(_COMMON_TOPICS), topic_names())
)


def host_maps(max_hosts: int = 4) -> st.SearchStrategy[dict[HostInfo, frozenset[TopicPartition]]]:
    return st.dictionaries(
        host_infos(), st.frozensets(_POOLED_PARTITIONS, max_size=8), max_size=max_hosts
    )


_HOST_MAPS = host_maps()
_NEXT_REBALANCE = st.one_of(
    st.sampled_from([0, NO_FOLLOWUP_REBALANCE]),
    st.integers(0, 2**41),
    st.integers(0, INT64_MAX),
)
_STANDBY_PARTITIONS = st.lists(_POOLED_PARTITIONS, max_size=3).map(tuple)
_TASKS = {False: task_ids(named=False), True: task_ids(named=True)}


@st.composite
def assignment_infos(
    draw: st.DrawFn,
    version: st.SearchStrategy[int] | None = None,
    *,
    named: bool | None = None,
    max_tasks: int = 12,
) -> AssignmentInfo:
    """An assignment at a version from ``version``; active and standby tasks never overlap.

    ``active_tasks`` may repeat a task (one entry per partition, as Kafka aligns them).
    """
    used = draw(version if version is not None else versions())
    tasks = _TASKS[used >= 3 if named is None else named]
    active = draw(st.lists(tasks, max_size=max_tasks))
    standby = draw(st.dictionaries(tasks, _STANDBY_PARTITIONS, max_size=max_tasks // 2))
    return AssignmentInfo(
        version=used,
        commonly_supported_version=draw(st.integers(used, used + 3)),
        active_tasks=tuple(active),
        standby_tasks={task: tps for task, tps in standby.items() if task not in active},
        partitions_by_host=draw(_HOST_MAPS),
        standby_partitions_by_host=draw(_HOST_MAPS),
        error_code=draw(error_codes()),
        next_rebalance_ms=draw(_NEXT_REBALANCE),
    )


def version_headers(low: int = 1, high: int = INT32_MAX) -> st.SearchStrategy[VersionHeader]:
    return st.integers(low, high).flatmap(
        lambda v: st.builds(
            VersionHeader,
            version=st.just(v),
            latest_supported_version=st.integers(v, min(INT32_MAX, v + 5)),
        )
    )


# -- topologies and cluster metadata ------------------------------------------------------------

APPLICATION_ID = "app"


@dataclass(frozen=True)
class Step:
    """One builder call: ``kind`` is the method, ``name`` the node or store, ``args`` the rest."""

    kind: str
    name: str
    args: tuple[str, ...] = ()
    options: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    external_topics: tuple[str, ...]
    repartition_topics: tuple[str, ...] = field(default=())


def build_plan(plan: Plan, *, reorder: Any = None) -> Topology:
    """Build the plan; ``reorder`` (a function on tuples) may permute every parent list and
    every store's processor list, which must not change the result."""
    shuffle = reorder or (lambda names: names)
    builder = TopologyBuilder(APPLICATION_ID)
    for step in plan.steps:
        options = dict(step.options)
        if step.kind == "source":
            builder.add_source(step.name, *step.args)
        elif step.kind == "processor":
            builder.add_processor(step.name, *shuffle(step.args))
        elif step.kind == "sink":
            topic, *parents = step.args
            builder.add_sink(step.name, topic, *shuffle(tuple(parents)))
        elif step.kind == "store":
            builder.add_state_store(step.name, *shuffle(step.args), **options)
        elif step.kind == "repartition":
            builder.add_repartition_topic(step.name, **options)
        elif step.kind == "copartition":
            builder.copartition(*step.args)
        else:  # pragma: no cover - a plan is made only by the strategies below
            raise AssertionError(step.kind)
    return builder.build()


@st.composite
def topology_plans(
    draw: st.DrawFn,
    *,
    max_sources: int = 5,
    max_processors: int = 8,
    max_repartitions: int = 3,
    enforce: bool = True,
    copartition: bool = True,
) -> Plan:
    """A random but valid plan: every store is used, every repartition topic written and read."""
    steps: list[Step] = []
    upstream: list[str] = []  # sources and processors: what a child may name as parent
    processors: list[str] = []
    external: list[str] = []
    source_topics: list[str] = []

    def add_source(topics: tuple[str, ...]) -> None:
        name = f"source-{len(steps)}"
        steps.append(Step("source", name, topics))
        upstream.append(name)
        source_topics.extend(topics)

    for index in range(draw(st.integers(1, max_sources))):
        topics = tuple(f"in-{index}-{k}" for k in range(draw(st.integers(1, 2))))
        external.extend(topics)
        add_source(topics)

    repartitions: list[str] = []
    for index in range(draw(st.integers(0, max_processors))):
        parents = draw(st.lists(st.sampled_from(upstream), min_size=1, max_size=3, unique=True))
        name = f"processor-{index}"
        steps.append(Step("processor", name, tuple(parents)))
        upstream.append(name)
        processors.append(name)
        action = draw(st.sampled_from(["none", "none", "sink", "repartition", "store"]))
        if action == "sink":
            steps.append(Step("sink", f"sink-{index}", (f"out-{index}", name)))
        elif action == "repartition" and len(repartitions) < max_repartitions:
            topic = f"{APPLICATION_ID}-rep-{len(repartitions)}-repartition"
            repartitions.append(topic)
            steps.append(Step("sink", f"sink-{index}", (topic, name)))
            add_source((topic,))
            if enforce and draw(st.booleans()) and draw(st.booleans()):
                count = draw(st.integers(1, 6))
                steps.append(Step("repartition", topic, (), (("partitions", count),)))
        elif action == "store":
            users = draw(st.lists(st.sampled_from(processors), min_size=1, max_size=3, unique=True))
            logged = draw(st.booleans()) or draw(st.booleans())
            steps.append(Step("store", f"store-{index}", tuple(users), (("logged", logged),)))

    if copartition and len(source_topics) >= 2:
        for _ in range(draw(st.integers(0, 2))):
            group = draw(
                st.lists(st.sampled_from(source_topics), min_size=2, max_size=3, unique=True)
            )
            steps.append(Step("copartition", "", tuple(group)))
    plan = Plan(tuple(steps), tuple(external), tuple(repartitions))
    try:
        build_plan(plan)
    except TopologyError:
        # only a join of repartition topics with different enforced counts is refused at
        # build time; keep the plan without its joins
        plan = Plan(
            tuple(s for s in steps if s.kind != "copartition"),
            plan.external_topics,
            plan.repartition_topics,
        )
    return plan


def topologies(**kwargs: Any) -> st.SearchStrategy[Topology]:
    return topology_plans(**kwargs).map(build_plan)


def partition_counts(
    topics: Sequence[str], *, max_partitions: int = 8
) -> st.SearchStrategy[dict[str, int]]:
    """Cluster metadata for ``topics``: each gets 1..max_partitions partitions."""
    return st.fixed_dictionaries({topic: st.integers(1, max_partitions) for topic in topics})


@st.composite
def sized_topologies(
    draw: st.DrawFn, /, *, max_partitions: int = 8, **kwargs: Any
) -> tuple[Topology, dict[str, int]]:
    """A topology and metadata in which every external source topic exists."""
    topology = draw(topologies(**kwargs))
    counts = draw(
        partition_counts(sorted(topology.external_source_topics), max_partitions=max_partitions)
    )
    return topology, counts


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
            "num.standby.replicas": draw(pinned(standbys) if standbys is not None
                                         else st.integers(0, 2)),
            "internal.task.assignor.class": draw(pinned(assignor) if assignor is not None
                                                 else st.sampled_from(TASK_ASSIGNORS[:2])),
            "acceptable.recovery.lag": draw(
                pinned(recovery_lag) if recovery_lag is not None
                else st.sampled_from([10_000, 0, 100, 2**63 - 1])),
            "max.warmup.replicas": draw(pinned(warmups) if warmups is not None
                                        else st.integers(1, 3)),
            "probing.rebalance.interval.ms": 60_000,
        }
        chosen = draw(pinned(tags) if tags is not None
                      else st.lists(st.sampled_from(TAG_KEYS), unique=True, max_size=2))
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
            sums: dict[TaskId, int] = {task: LATEST_OFFSET
                                       for task in active[thread :: self.threads]}
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
    thread_counts = (pinned(threads) if threads is not None
                     else st.one_of(st.integers(1, 2), st.integers(1, 16)))

    @st.composite
    def build(draw: st.DrawFn) -> list[ProcessLayout]:
        total = draw(pinned(count) if count is not None else st.integers(1, 4))
        layouts: list[ProcessLayout] = []
        ran: set[TaskId] = set()
        for index in range(total):
            newest = draw(pinned(builds) if builds is not None
                          else st.sampled_from([LATEST_VERSION, *range(1, LATEST_VERSION)]))
            state: dict[TaskId, int] = {}
            previous: set[TaskId] = set()
            if lags and stateful:
                held = draw(st.lists(st.sampled_from(list(stateful)), unique=True,
                                     max_size=len(stateful)))
                for task in held:
                    state[task] = draw(st.sampled_from([0, 0, 50, 20_000]))
                    if state[task] == 0 and task not in ran and draw(st.booleans()):
                        previous.add(task)
                        ran.add(task)
            layouts.append(ProcessLayout(
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
            ))
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
        return {member: Codec(builds[member]).encode_subscription(info)
                for member, info in self.subscriptions().items()}

    def group_input(self, now_ms: int = 0, *, extra: Mapping[str, bytes] | None = None
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
            "config": {k: v for k, v in self.config.items()
                       if k != "internal.task.assignor.class"},
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
    chosen = draw(pinned(topology) if topology is not None
                  else topologies(max_sources=3, max_processors=5))
    external = sorted(chosen.external_source_topics)
    counts = dict(draw(pinned(partitions) if partitions is not None
                       else partition_counts(external, max_partitions=max_partitions)))
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
    layouts = draw(process_layouts(processes, threads=threads, stateful=stateful,
                                   static=static, builds=builds))
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


def topology_data(**kwargs: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Topologies in their JSON-ready data form (``Topology.from_data`` reads them back)."""
    return topologies(**kwargs).map(topology_to_data)


__all__ = [
    "APPLICATION_ID",
    "INT32_MAX",
    "INT64_MAX",
    "TAG_KEYS",
    "TAG_VALUES",
    "TASK_ASSIGNORS",
    "Group",
    "Plan",
    "ProcessLayout",
    "Step",
    "assignment_infos",
    "build_plan",
    "configs",
    "error_codes",
    "groups",
    "host_infos",
    "host_maps",
    "names",
    "offset_sums",
    "partition_counts",
    "pinned",
    "process_ids",
    "process_layouts",
    "sized_topologies",
    "small_or_any",
    "subscription_infos",
    "task_ids",
    "topic_names",
    "topic_partitions",
    "topologies",
    "topology_data",
    "topology_plans",
    "version_headers",
    "versions",
]
