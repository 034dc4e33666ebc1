"""Recording a topology node by node, as Kafka's ``InternalTopologyBuilder`` does.

:class:`TopologyBuilder` hands out the subtopology ids a Java application with the same topology
would get, records the order Kafka registers source topics in (it decides the order Kafka sizes
repartition topics in) and keeps copartition groups as declared, checking them the way Kafka's
``validateCopartition`` does when the topology is built. :meth:`TopologyBuilder.build` returns
the frozen :class:`~assignor.topology.model.Topology`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from assignor.topology._java_order import JavaHashSet, string_hash
from assignor.topology.copartition import check_declared_groups, source_node_group
from assignor.topology.model import Subtopology, Topology, TopologyError, changelog_topic_name


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

        The group is kept as declared, its topics in the given order (the order Kafka would add
        them to the group's set). Groups sharing a topic are merged only at assignment, as Kafka
        does; see :mod:`assignor.topology.copartition`.
        """
        if len(topics) < 1:
            raise TopologyError("a copartition group needs at least one topic")
        self._copartition.append(tuple(topics))
        return self

    def copartition_sources(self, *sources: str) -> TopologyBuilder:
        """Kafka's own form (``copartitionSources``): every topic of these source nodes must
        have one partition count. The topics are taken in the order Kafka collects them."""
        if not sources:
            raise TopologyError("a copartition group needs at least one source")
        topics_of: dict[str, tuple[str, ...]] = {}
        for name in sources:
            node = self._nodes.get(name)
            if node is None or node.kind != "source":
                raise TopologyError(f"Copartitioned node {name} is not a source node", name)
            topics_of[name] = node.topics
        self._copartition.append(source_node_group(sources, topics_of))
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
        sources = {t for s in subtopologies for t in s.source_topics}
        for group in self._copartition:
            for topic in group:
                if topic not in sources:
                    raise TopologyError(
                        f"Copartitioned topic {topic} is not a source topic of any subtopology",
                        topic,
                    )
        check_declared_groups(self.application_id, self._copartition, repartition)
        return Topology(
            application_id=self.application_id,
            subtopologies=tuple(subtopologies),
            repartition_topics=tuple(repartition.items()),
            copartition_groups=tuple(self._copartition),
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
        sources: dict[str, None] = {}
        sinks: set[str] = set()
        stores: set[str] = set()
        # Kafka keeps a group's node names in a HashSet and registers topics walking it.
        for name in JavaHashSet(string_hash, nodes):
            node = self._nodes[name]
            if node.kind == "source":
                sources.update((t, None) for t in node.topics if t not in global_topics)
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
            repartition_source_topics=tuple(sorted(sources.keys() & repartition)),
            repartition_sink_topics=tuple(sorted(sinks & repartition)),
            nodes=tuple(nodes),
            source_topic_order=tuple(sources),
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




__all__ = ["TopologyBuilder"]
