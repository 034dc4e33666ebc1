"""An application's processor topology, reduced to what the leader needs to make tasks.

The leader never runs processors; it needs only the *subtopologies* (groups of nodes that must
run together because records or state flow between them), the topics each one reads, writes and
logs to, and which source topics a join needs co-partitioned. :class:`TopologyBuilder` records
nodes the way Kafka's ``InternalTopologyBuilder`` does, so the subtopology ids it hands out are
the ids a Java application with the same topology would use; :class:`Topology` is the frozen
result, which the data form (:mod:`assignor.topology.data_form`) can also produce.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

CHANGELOG_SUFFIX = "-changelog"


class TopologyError(ValueError):
    """An invalid topology, found while building it or reading its data form.

    ``node`` names the node (or store, or topic) at fault when there is one, so a caller can point
    at the line of the application that added it.
    """

    def __init__(self, message: str, node: str | None = None) -> None:
        super().__init__(message)
        self.node = node


def changelog_topic_name(application_id: str, store: str) -> str:
    """Kafka's name for a logged store's changelog: ``<application.id>-<store>-changelog``."""
    return f"{application_id}-{store}{CHANGELOG_SUFFIX}"


@dataclass(frozen=True, slots=True)
class Subtopology:
    """One node group: the unit a task is made of, one task per input partition number.

    Topic tuples are sorted, so two descriptions of the same subtopology compare equal whatever
    order their topics were declared in. ``nodes`` is informative only (the data form may omit
    it) and takes no part in equality.
    """

    id: int
    source_topics: tuple[str, ...]
    sink_topics: tuple[str, ...] = ()
    changelog_topics: tuple[str, ...] = ()
    stores: tuple[str, ...] = ()
    repartition_source_topics: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    nodes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def is_stateful(self) -> bool:
        """Kafka counts a task as stateful when its subtopology logs at least one store."""
        return bool(self.changelog_topics)

    @property
    def external_source_topics(self) -> tuple[str, ...]:
        """Source topics the application does not create: they must exist in the cluster."""
        internal = set(self.repartition_source_topics)
        return tuple(t for t in self.source_topics if t not in internal)

    @property
    def source_changelog_topics(self) -> tuple[str, ...]:
        """Changelogs that are also source topics (a table read straight from its topic).

        They exist already, so the leader never sizes them.
        """
        sources = set(self.source_topics)
        return tuple(t for t in self.changelog_topics if t in sources)

    @property
    def created_changelog_topics(self) -> tuple[str, ...]:
        """Changelogs the application creates, sized to this subtopology's task count."""
        sources = set(self.source_topics)
        return tuple(t for t in self.changelog_topics if t not in sources)


@dataclass(frozen=True, slots=True)
class Topology:
    """What the leader knows of an application's topology; build it with :class:`TopologyBuilder`
    or :meth:`from_data`.

    ``repartition_topics`` maps each repartition topic to its enforced partition count, or None
    when the leader must compute it. ``copartition_groups`` are disjoint, each a sorted tuple, in
    sorted order.
    """

    application_id: str
    subtopologies: tuple[Subtopology, ...]
    repartition_topics: tuple[tuple[str, int | None], ...] = ()
    copartition_groups: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "subtopologies", tuple(sorted(self.subtopologies, key=lambda s: s.id))
        )
        object.__setattr__(self, "repartition_topics", tuple(sorted(self.repartition_topics)))
        object.__setattr__(
            self,
            "copartition_groups",
            tuple(sorted(tuple(sorted(set(g))) for g in self.copartition_groups if g)),
        )

    @property
    def enforced_partitions(self) -> dict[str, int | None]:
        """Repartition topic -> its enforced partition count (None: computed by the leader)."""
        return dict(self.repartition_topics)

    @property
    def source_topics(self) -> frozenset[str]:
        return frozenset(t for s in self.subtopologies for t in s.source_topics)

    @property
    def external_source_topics(self) -> frozenset[str]:
        """Every source topic that must exist in the cluster before tasks can be made."""
        internal = {t for t, _ in self.repartition_topics}
        return frozenset(t for t in self.source_topics if t not in internal)

    @property
    def changelog_topics(self) -> frozenset[str]:
        return frozenset(t for s in self.subtopologies for t in s.changelog_topics)

    def subtopology(self, subtopology_id: int) -> Subtopology:
        for sub in self.subtopologies:
            if sub.id == subtopology_id:
                return sub
        raise KeyError(subtopology_id)

    def to_data(self) -> dict[str, Any]:
        """The plain-dict form (JSON-ready); see :mod:`assignor.topology.data_form`."""
        from assignor.topology.data_form import topology_to_data

        return topology_to_data(self)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Topology:
        """Read and validate the plain-dict form; raise :class:`TopologyError` saying where."""
        from assignor.topology.data_form import topology_from_data

        return topology_from_data(data)


class _UnionFind:
    """Kafka's ``QuickUnion`` over node names: the root of a set is its first-added member's
    representative, so results do not depend on hashing."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}

    def add(self, item: str) -> None:
        self._parent[item] = item

    def root(self, item: str) -> str:
        parent = self._parent
        node = item
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    def unite(self, item: str, *others: str) -> None:
        for other in others:
            a, b = self.root(item), self.root(other)
            if a != b:
                self._parent[b] = a


@dataclass(slots=True)
class _Node:
    kind: str  # "source", "processor", "sink", "global-source", "global-processor"
    parents: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    stores: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Store:
    logged: bool
    changelog_topic: str | None
    processors: list[str] = field(default_factory=list)
    is_global: bool = False


class TopologyBuilder:
    """Records sources, processors, sinks and stores in the order the application adds them.

    Parents must be added before their children (as in Kafka), so a node graph can never have a
    cycle; naming a node as its own parent is rejected as one. Mistakes raise
    :class:`TopologyError` at once, naming the node; what can only be judged on the whole
    topology (a store no processor uses, a repartition declaration nobody reads) is checked by
    :meth:`build`.
    """

    def __init__(self, application_id: str) -> None:
        if not application_id:
            raise TopologyError("application id must not be empty")
        self.application_id = application_id
        self._nodes: dict[str, _Node] = {}
        self._stores: dict[str, _Store] = {}
        self._grouper = _UnionFind()
        self._source_topic_owner: dict[str, str] = {}
        self._repartition: dict[str, int | None] = {}
        self._copartition: list[tuple[str, ...]] = []

    # -- nodes -------------------------------------------------------------------------------

    def add_source(self, name: str, *topics: str) -> TopologyBuilder:
        """A node reading ``topics``; each topic may be read by one source only."""
        self._check_new_name(name)
        if not topics:
            raise TopologyError(f"Source {name} has no topics; a source reads at least one", name)
        self._claim_topics(name, topics)
        self._nodes[name] = _Node("source", topics=tuple(topics))
        self._grouper.add(name)
        return self

    def add_processor(self, name: str, *parents: str) -> TopologyBuilder:
        """A node fed by ``parents`` (sources or processors, added before it)."""
        self._check_new_name(name)
        self._check_parents(name, parents)
        self._nodes[name] = _Node("processor", parents=tuple(parents))
        self._grouper.add(name)
        self._grouper.unite(name, *parents)
        return self

    def add_sink(self, name: str, topic: str, *parents: str) -> TopologyBuilder:
        """A node writing to ``topic``; when a source of this application reads the same topic,
        the topic is a repartition topic."""
        self._check_new_name(name)
        if not topic:
            raise TopologyError(f"Sink {name} has no topic", name)
        self._check_parents(name, parents)
        self._nodes[name] = _Node("sink", parents=tuple(parents), topics=(topic,))
        self._grouper.add(name)
        self._grouper.unite(name, *parents)
        return self

    # -- state -------------------------------------------------------------------------------

    def add_state_store(
        self,
        store: str,
        *processors: str,
        logged: bool = True,
        changelog_topic: str | None = None,
    ) -> TopologyBuilder:
        """A store used by ``processors``; every processor sharing a store joins one subtopology.

        A logged store gets the changelog ``<application.id>-<store>-changelog`` unless
        ``changelog_topic`` names another (e.g. the source topic of a table, which then serves
        as its changelog). Processors may also be connected later with
        :meth:`connect_processor_and_stores`.
        """
        if not store:
            raise TopologyError("state store name must not be empty")
        if store in self._stores:
            raise TopologyError(f"A state store named {store} has already been added", store)
        if changelog_topic is not None and not logged:
            raise TopologyError(
                f"State store {store} is not logged, so it cannot have changelog topic "
                f"{changelog_topic}",
                store,
            )
        self._stores[store] = _Store(logged=logged, changelog_topic=changelog_topic)
        for processor in processors:
            self._connect(processor, store)
        return self

    def connect_processor_and_stores(self, processor: str, *stores: str) -> TopologyBuilder:
        """Let ``processor`` use stores added earlier (Kafka's
        ``connectProcessorAndStateStores``)."""
        if not stores:
            raise TopologyError(f"Processor {processor} is connected to no stores", processor)
        for store in stores:
            self._connect(processor, store)
        return self

    def add_global_store(
        self, store: str, source: str, topic: str, processor: str
    ) -> TopologyBuilder:
        """A store replicated in full on every instance, fed from ``topic``.

        Its nodes form a group of their own that consumes a subtopology id, as in Kafka, but
        makes no tasks: the following subtopologies' ids skip a number.
        """
        if store in self._stores:
            raise TopologyError(f"A state store named {store} has already been added", store)
        self._check_new_name(source)
        if processor == source:
            raise TopologyError(
                f"Processor {processor} names itself as its parent; a topology has no cycles",
                processor,
            )
        self._check_new_name(processor)
        if not topic:
            raise TopologyError(f"Source {source} has no topics; a source reads at least one")
        self._claim_topics(source, (topic,))
        self._nodes[source] = _Node("global-source", topics=(topic,))
        self._nodes[processor] = _Node("global-processor", parents=(source,), stores=[store])
        self._stores[store] = _Store(
            logged=False, changelog_topic=None, processors=[processor], is_global=True
        )
        self._grouper.add(source)
        self._grouper.add(processor)
        self._grouper.unite(processor, source)
        return self

    # -- topics ------------------------------------------------------------------------------

    def add_repartition_topic(self, topic: str, partitions: int | None = None) -> TopologyBuilder:
        """Declare ``topic`` a repartition topic, optionally with an enforced partition count
        (Kafka's ``Repartitioned.withNumberOfPartitions``).

        Undeclared topics that a sink writes and a source reads are repartition topics too,
        with a computed count.
        """
        if not topic:
            raise TopologyError("repartition topic name must not be empty")
        if partitions is not None and partitions < 1:
            raise TopologyError(
                f"Repartition topic {topic} must have at least one partition, not {partitions}",
                topic,
            )
        self._repartition[topic] = partitions
        return self

    def copartition(self, *topics: str) -> TopologyBuilder:
        """Require ``topics`` (source topics) to have equal partition counts, as a join does.

        Groups that share a topic merge.
        """
        if len(topics) < 1:
            raise TopologyError("a copartition group needs at least one topic")
        self._copartition.append(tuple(topics))
        return self

    # -- build -------------------------------------------------------------------------------

    def build(self) -> Topology:
        """Group the nodes into subtopologies and freeze the result."""
        for store_name, store in self._stores.items():
            if not store.processors:
                raise TopologyError(
                    f"State store {store_name} is not connected to any processor", store_name
                )
        sink_topics = {n.topics[0] for n in self._nodes.values() if n.kind == "sink"}
        read_topics = set(self._source_topic_owner)
        global_topics = {
            t for n in self._nodes.values() if n.kind == "global-source" for t in n.topics
        }
        repartition: dict[str, int | None] = {
            t: None for t in sorted(sink_topics & read_topics) if t not in global_topics
        }
        for topic, count in self._repartition.items():
            if topic not in read_topics or topic not in sink_topics or topic in global_topics:
                raise TopologyError(
                    f"Repartition topic {topic} must be written by a sink and read by a source "
                    f"of this application",
                    topic,
                )
            repartition[topic] = count

        subtopologies = self._make_subtopologies(set(repartition), global_topics)
        groups = merge_copartition_groups(self._copartition)
        sources = {t for s in subtopologies for t in s.source_topics}
        for group in groups:
            for topic in group:
                if topic not in sources:
                    raise TopologyError(
                        f"Copartitioned topic {topic} is not a source topic of any subtopology",
                        topic,
                    )
            check_enforced_copartition(group, repartition)
        return Topology(
            application_id=self.application_id,
            subtopologies=tuple(subtopologies),
            repartition_topics=tuple(repartition.items()),
            copartition_groups=tuple(groups),
        )

    def _make_subtopologies(
        self, repartition: set[str], global_topics: set[str]
    ) -> list[Subtopology]:
        # Ids are handed out in the order each group's first node was added, to every group
        # (global ones included), exactly as Kafka's makeNodeGroups does.
        members: dict[str, list[str]] = {}
        for name in self._nodes:
            members.setdefault(self._grouper.root(name), []).append(name)
        result = []
        for group_id, nodes in enumerate(members.values()):
            sub = self._subtopology(group_id, nodes, repartition, global_topics)
            if sub is not None:
                result.append(sub)
        return result

    def _subtopology(
        self, group_id: int, nodes: list[str], repartition: set[str], global_topics: set[str]
    ) -> Subtopology | None:
        sources: set[str] = set()
        sinks: set[str] = set()
        stores: set[str] = set()
        for name in nodes:
            node = self._nodes[name]
            if node.kind == "source":
                sources.update(t for t in node.topics if t not in global_topics)
            elif node.kind == "sink":
                sinks.add(node.topics[0])
            elif node.kind == "processor":
                stores.update(node.stores)
        if not sources:
            return None
        changelogs = set()
        for store_name in stores:
            store = self._stores[store_name]
            if store.logged:
                changelogs.add(
                    store.changelog_topic or changelog_topic_name(self.application_id, store_name)
                )
        return Subtopology(
            id=group_id,
            source_topics=tuple(sorted(sources)),
            sink_topics=tuple(sorted(sinks)),
            changelog_topics=tuple(sorted(changelogs)),
            stores=tuple(sorted(stores)),
            repartition_source_topics=tuple(sorted(sources & repartition)),
            repartition_sink_topics=tuple(sorted(sinks & repartition)),
            nodes=tuple(nodes),
        )

    # -- checks ------------------------------------------------------------------------------

    def _check_new_name(self, name: str) -> None:
        if not name:
            raise TopologyError("node name must not be empty")
        if name in self._nodes:
            raise TopologyError(f"Processor {name} is already added", name)

    def _check_parents(self, name: str, parents: tuple[str, ...]) -> None:
        if not parents:
            raise TopologyError(f"Processor {name} has no parent; name at least one", name)
        for parent in parents:
            if parent == name:
                raise TopologyError(
                    f"Processor {name} names itself as its parent; a topology has no cycles",
                    name,
                )
            node = self._nodes.get(parent)
            if node is None:
                raise TopologyError(
                    f"Parent node {parent} of {name} is unknown; add parents before children",
                    name,
                )
            if node.kind == "sink":
                raise TopologyError(f"Sink {parent} cannot be the parent of {name}", name)
            if node.kind.startswith("global"):
                raise TopologyError(
                    f"Node {parent} belongs to a global store and cannot be the parent of {name}",
                    name,
                )

    def _claim_topics(self, name: str, topics: Iterable[str]) -> None:
        seen: set[str] = set()
        for topic in topics:
            if not topic:
                raise TopologyError(f"Source {name} has an empty topic name", name)
            owner = self._source_topic_owner.get(topic)
            if owner is not None or topic in seen:
                raise TopologyError(
                    f"Topic {topic} of source {name} has already been registered by another "
                    f"source ({owner or name})",
                    name,
                )
            seen.add(topic)
        for topic in seen:
            self._source_topic_owner[topic] = name

    def _connect(self, processor: str, store: str) -> None:
        record = self._stores.get(store)
        if record is None:
            raise TopologyError(f"State store {store} is not added yet", store)
        if record.is_global:
            raise TopologyError(
                f"Global state store {store} is available to every processor; do not connect "
                f"it to {processor}",
                processor,
            )
        node = self._nodes.get(processor)
        if node is None:
            raise TopologyError(f"Processor {processor} is not added yet", processor)
        if node.kind != "processor":
            raise TopologyError(
                f"State store {store} cannot be connected to {node.kind} {processor}; only "
                f"processors use stores",
                processor,
            )
        if processor in record.processors:
            return
        if record.processors:
            self._grouper.unite(record.processors[0], processor)
        record.processors.append(processor)
        node.stores.append(store)


def merge_copartition_groups(groups: Iterable[Iterable[str]]) -> list[tuple[str, ...]]:
    """Merge groups that share a topic (the transitive closure Kafka intends)."""
    merged: list[set[str]] = []
    for group in groups:
        current = set(group)
        keep = []
        for existing in merged:
            if existing & current:
                current |= existing
            else:
                keep.append(existing)
        keep.append(current)
        merged = keep
    return sorted(tuple(sorted(g)) for g in merged)


def check_enforced_copartition(
    group: tuple[str, ...], repartition: Mapping[str, int | None]
) -> None:
    """Kafka's ``validateCopartition``: a group made only of repartition topics with enforced
    counts must agree on the count before the application even starts."""
    counts = {t: repartition.get(t) for t in group}
    if any(c is None for c in counts.values()):
        return
    if len(set(counts.values())) > 1:
        raise TopologyError(
            "Invalid topology: Following topics do not have the same number of partitions: "
            f"[{java_map(counts)}]",
            group[0],
        )


def java_map(counts: Mapping[str, Any]) -> str:
    """A sorted map printed as Java's ``TreeMap.toString`` does: ``{a=1, b=2}``."""
    return "{" + ", ".join(f"{k}={counts[k]}" for k in sorted(counts)) + "}"


__all__ = [
    "Subtopology",
    "Topology",
    "TopologyBuilder",
    "TopologyError",
    "changelog_topic_name",
    "check_enforced_copartition",
    "java_map",
    "merge_copartition_groups",
]
