"""An application's processor topology, reduced to what the leader needs to make tasks.

The leader never runs processors; it needs only the *subtopologies* (groups of nodes that must
run together because records or state flow between them), the topics each one reads, writes and
logs to, and which source topics a join needs co-partitioned. :class:`TopologyBuilder` records
nodes the way Kafka's ``InternalTopologyBuilder`` does, so the subtopology ids it hands out are
the ids a Java application with the same topology would use; :class:`Topology` is the frozen
result, which the data form (:mod:`assignor.topology.data_form`) can also produce.

This module is the frozen model only; it imports nothing else of the package, so the builder
(:mod:`assignor.topology.builder`), the copartition rules (:mod:`assignor.topology.copartition`)
and the data form can all import it without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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

    ``source_topic_order`` lists the source topics in the order Kafka's builder registers them
    (its node group's ``HashSet`` of node names, then each source's topic list). Kafka sizes
    repartition topics in an order that depends on it when two of them share a hash bucket, so
    the builder records it; when empty, sorted order stands in. It takes no part in equality.
    """

    id: int
    source_topics: tuple[str, ...]
    sink_topics: tuple[str, ...] = ()
    changelog_topics: tuple[str, ...] = ()
    stores: tuple[str, ...] = ()
    repartition_source_topics: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    nodes: tuple[str, ...] = field(default=(), compare=False)
    source_topic_order: tuple[str, ...] = field(default=(), compare=False)

    @property
    def ordered_source_topics(self) -> tuple[str, ...]:
        """Source topics in Kafka's registration order (sorted when it is not known)."""
        return self.source_topic_order or self.source_topics

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
    when the leader must compute it. ``copartition_groups`` are the groups as declared, in
    declaration order, each with its topics in the order Kafka adds them to the group's
    ``HashSet``: they are neither merged nor sorted, because Kafka checks each declared group on
    its own when the topology is built and merges them only at assignment, in an order-dependent
    way (see :mod:`assignor.topology.copartition`).
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
            tuple(tuple(dict.fromkeys(g)) for g in self.copartition_groups if g),
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


__all__ = ["CHANGELOG_SUFFIX", "Subtopology", "Topology", "TopologyError", "changelog_topic_name"]
