"""Faust's ``PartitionAssignor`` (faust-streaming) as a peer in the engine's scenarios.

Faust ships as the optional ``bench`` extra (also in ``dev``, so the tests and CI have it);
nothing here imports it until a scenario asks for the ``faust`` assignor. Each simulated consumer
runs a real ``faust.assignor.PartitionAssignor`` over a real ``faust.App`` holding one table per
changelog of the topology, called by the shim exactly as aiokafka calls it, bytes included.

Faust's model, and what it cannot say about a scenario (:func:`faust_limits`, recorded in the
scenario row's note rather than forced):

- a Faust worker has one consumer: a process of N threads runs here as N workers, each with its
  own URL (the capacity is the same; the assignor does not know they share a host);
- no client-tag awareness (Kafka's ``rack.aware.assignment.tags``): tags are ignored (a process's
  rack is where it runs, which Faust's model has too: losing a rack still crashes its workers);
- no protocol versions or version probing: an upgrade is a plain restart;
- no local-state report and no warm-ups: it is sticky to each worker's previous assignment only;
- a table's changelog is ``<app id>-<table>-changelog``: a changelog named otherwise (a source
  topic reused as changelog) is not a Faust table, so nothing stands by for it.

A worker subscribes to the source topics and the changelogs, as a Faust worker does; Faust groups
topics of equal partition count subscribed by the same workers as copartitioned. Its assignment
carries, in compressed JSON user data, actives and standbys per topic: the active source
partitions give task ownership (a task is owned when one member holds all its partitions, as for
every partition-level peer), a standby changelog partition gives the task a standby.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assignor.topology.model import Topology
from assignor.topology.tasks import TaskLayout
from protocol.ids import TaskId, TopicPartition
from simulator.scenarios import Scenario, UpgradeEvent

#: The engine's name for Faust's assignor.
FAUST = "faust"
_SUFFIX = "-changelog"
#: One real faust.App per (application id, tables): creating one costs most of a second.
_APPS: dict[tuple[str, tuple[str, ...]], Any] = {}


def _tables(topology: Topology) -> dict[str, str]:
    """Changelog topic -> Faust table name, for the changelogs Faust can name."""
    prefix = f"{topology.application_id}-"
    names: dict[str, str] = {}
    for sub in topology.subtopologies:
        for topic in sub.changelog_topics:
            if topic.startswith(prefix) and topic.endswith(_SUFFIX):
                names[topic] = topic[len(prefix):-len(_SUFFIX)]
    return names


def _app(topology: Topology) -> Any:
    tables = tuple(sorted(set(_tables(topology).values())))
    key = (topology.application_id, tables)
    app = _APPS.get(key)
    if app is None:
        try:
            import faust
        except ImportError as exc:  # pragma: no cover - the dev extra installs it
            raise RuntimeError(
                "the faust assignor needs faust-streaming: pip install 'streams-assignor[bench]'"
            ) from exc
        app = faust.App(topology.application_id, broker="kafka://127.0.0.1:9")
        for table in tables:
            app.Table(table, default=int)
        _APPS[key] = app
    return app


def prepare_app(topology: Topology) -> None:
    """Build and keep ``topology``'s app now: an executor that forks a child per batch
    (:mod:`simulator.spark.forked`) builds it once, before the fork, rather than in every
    child, whose heap (and cache) dies with it."""
    _app(topology)


class _RouterIndex:
    """One of Faust's two router indexes, partition -> worker URL (``_tps_url`` from the
    changelog distribution, ``_external_tps_url`` from the external topics'), built when read.

    Why: a Faust member's ``on_assignment`` stores the whole group's two distributions, and
    their setters rebuild both indexes at once, one entry per partition of the group, in every
    member at every rebalance: a fifth of a Faust replay's CPU (every 10th Faust job of the
    default mix, 200 jobs: 11.8 s with them, 9.4 s without, medians of three alternated runs),
    where only Faust's web router reads them (``key_store`` and ``external_key_store``, for
    requests the simulated workers never serve). Here the distribution's setter keeps the
    value and forgets the index, and a read of the index has Faust's own setter build it from
    the kept value, so whoever asks gets what Faust would have built. Nothing a member sends
    (its ``metadata()`` writes the distributions themselves) or decides reads the indexes: the
    rows are the same (``tests/simulator/test_faust.py``). The bench (``tests/bench``) runs
    Faust's class as it ships."""

    def __init__(self, faust_distribution: property) -> None:
        read, store = faust_distribution.fget, faust_distribution.fset
        if read is None or store is None:
            raise TypeError("Faust's distribution property has no getter or setter")
        self._read, self._store = read, store
        self._slot = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_built{name}"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        built = instance.__dict__.get(self._slot)
        if built is None:
            # Faust's setter stores the distribution and the index (through ``__set__``)
            self._store(instance, self._read(instance))
            built = instance.__dict__[self._slot]
        return built

    def __set__(self, instance: Any, value: Any) -> None:
        instance.__dict__[self._slot] = value

    def distribution(self, field: str) -> property:
        """The distribution's property: Faust's getter; a setter that stores the value in
        ``field`` (Faust's own attribute) and forgets this index until it is read."""
        def keep(instance: Any, value: Any) -> None:
            setattr(instance, field, value)
            # (the slot read now: this runs in the class body, before ``__set_name__``)
            instance.__dict__.pop(self._slot, None)

        return property(self._read, keep)


def faust_assignor(topology: Topology, worker: str, replicas: int) -> Any:
    """A new ``PartitionAssignor`` for worker ``worker`` (a starting worker's: no history),
    standing ``replicas`` standbys by, as ``table_standby_replicas`` sets."""
    from faust.assignor.partition_assignor import PartitionAssignor
    from yarl import URL

    url = URL(f"http://{worker}:6066")

    class WorkerAssignor(PartitionAssignor):
        """The worker's own web URL: Faust names its workers by it (``canonical_url``); as
        leader, it keeps the assignments it encodes (``last_assignments``) for the engine; its
        router indexes are built when read (:class:`_RouterIndex`)."""

        last_assignments: Mapping[str, Any] = {}
        _tps_url = _RouterIndex(vars(PartitionAssignor)["changelog_distribution"])
        _external_tps_url = _RouterIndex(vars(PartitionAssignor)["external_topic_distribution"])
        changelog_distribution = _tps_url.distribution("_changelog_distribution")
        external_topic_distribution = _external_tps_url.distribution(
            "_external_topic_distribution"
        )

        @property
        def _url(self) -> URL:
            return url

        def _protocol_assignments(self, assignments: Any, *args: Any) -> Any:
            self.last_assignments = dict(assignments)
            return super()._protocol_assignments(assignments, *args)

    return WorkerAssignor(_app(topology), replicas=replicas)


def faust_topics(topology: Topology) -> list[str]:
    """What a Faust worker subscribes to: the source topics and its tables' changelogs."""
    return sorted({*topology.source_topics, *_tables(topology)})


def read_faust_assignment(
    assignment: Any, layout: TaskLayout
) -> tuple[list[TopicPartition], frozenset[TaskId]]:
    """One member's Faust assignment, decoded from its user data (:func:`faust_tasks`)."""
    from faust.assignor.client_assignment import ClientMetadata
    from faust.assignor.partition_assignor import PartitionAssignor

    metadata = ClientMetadata.loads(PartitionAssignor._decompress(assignment.user_data))
    return faust_tasks(metadata.assignment, layout)


def faust_tasks(
    assignment: Any, layout: TaskLayout
) -> tuple[list[TopicPartition], frozenset[TaskId]]:
    """What a Faust ``ClientAssignment`` means here: its active task partitions, and the tasks
    it stands by for (from the standby changelog partitions).

    The engine reads it where it is already decoded (the leader's before encoding, a member's
    after Faust's own ``on_assignment``): Faust's user data carries the whole group's
    changelog distribution, so decoding it again per member cost O(members) each, a quarter of
    a large Faust replay."""
    sources, task_of = _faust_index(layout)
    active = [sources[(topic, p)] for topic, parts in assignment.actives.items()
              for p in parts if (topic, p) in sources]
    standby = frozenset(task_of[(topic, p)] for topic, parts in assignment.standbys.items()
                        for p in parts if (topic, p) in task_of)
    return sorted(active), standby


#: The last layout's source partitions and changelog partitions -> task, keyed by plain
#: ``(topic, partition)`` tuples as Faust's JSON gives them: building a validated
#: ``TopicPartition`` per partition of every member's assignment only to look it up was most
#: of this module's time in a Faust replay. One entry: every member of a replay reads the same
#: layout, and a worker replays scenarios in turn.
_INDEX: list[tuple[TaskLayout, dict[tuple[str, int], TopicPartition],
                   dict[tuple[str, int], TaskId]]] = []


def _faust_index(
    layout: TaskLayout,
) -> tuple[dict[tuple[str, int], TopicPartition], dict[tuple[str, int], TaskId]]:
    if not _INDEX or _INDEX[0][0] is not layout:
        sources = {(tp.topic, tp.partition): tp for tps in layout.tasks.values() for tp in tps}
        task_of = {(tp.topic, tp.partition): task
                   for task, tps in layout.changelogs.items() for tp in tps}
        _INDEX[:] = [(layout, sources, task_of)]
    return _INDEX[0][1], _INDEX[0][2]


def faust_limits(scenario: Scenario) -> list[str]:
    """What of the scenario Faust's model cannot express (empty if nothing): the row's note."""
    topology, specs = scenario.build_topology(), scenario.processes
    limits: list[str] = []
    most = max((s.threads for s in specs), default=1)
    if most > 1:
        limits.append(f"faust: one consumer per worker, processes of up to {most} threads run "
                      "as that many workers")
    if any(s.tags for s in specs):
        limits.append("faust: no client-tag awareness, tags ignored")
    upgrades = any(isinstance(e, UpgradeEvent) for e in scenario.events)
    if upgrades or len({s.protocol_version for s in specs}) > 1:
        limits.append("faust: no protocol versions, upgrades are plain restarts")
    named = set(_tables(topology))
    unnamed = sorted({t for s in topology.subtopologies for t in s.changelog_topics} - named)
    if unnamed:
        limits.append(f"faust: changelogs {', '.join(unnamed)} are not Faust tables "
                      "(<app>-<table>-changelog), no standbys for them")
    return limits


__all__ = [
    "FAUST", "faust_assignor", "faust_limits", "faust_tasks", "faust_topics", "prepare_app",
    "read_faust_assignment",
]
