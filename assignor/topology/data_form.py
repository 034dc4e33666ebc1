"""A topology as plain data (dicts, lists, strings, ints), both directions.

The simulator and the command line describe applications in JSON rather than in code, and the
Java conformance harness reports Kafka's own subtopologies the same way. The form::

    {
      "application_id": "shop",
      "subtopologies": [
        {"id": 0, "source_topics": ["orders"], "sink_topics": ["shop-by-user"],
         "changelog_topics": [], "stores": []},
        {"id": 1, "source_topics": ["shop-by-user"], "sink_topics": [],
         "changelog_topics": ["shop-totals-changelog"], "stores": ["totals"]}
      ],
      "repartition_topics": {"shop-by-user": null},
      "copartition_groups": []
    }

``repartition_topics`` maps each repartition topic to its enforced partition count or null;
every other topic is external. ``source_topics`` is listed in the order Kafka's builder registers
the topics and ``copartition_groups`` as declared (neither merged nor sorted), each group's topics
in the order Kafka adds them: Kafka's repartition sizing and copartition merging walk hash tables
whose order depends on them when names share a hash bucket. ``sink_topics``,
``changelog_topics``, ``stores``, ``nodes``, ``repartition_topics`` and ``copartition_groups``
may be left out. Reading checks every field and
raises :class:`~assignor.topology.model.TopologyError` with the path of the first bad one
(``subtopologies[1].source_topics[0]``); a valid form gives the same :class:`Topology` the
builder would.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from assignor.topology.copartition import check_declared_groups
from assignor.topology.model import Subtopology, Topology, TopologyError
from protocol.ids import INT32_MAX

_TOP_KEYS = {"application_id", "subtopologies", "repartition_topics", "copartition_groups"}
_SUB_KEYS = {"id", "source_topics", "sink_topics", "changelog_topics", "stores", "nodes"}


def topology_to_data(topology: Topology) -> dict[str, Any]:
    """The plain form of ``topology``; ``json.dumps`` takes it as is."""
    subtopologies = []
    for sub in topology.subtopologies:
        entry: dict[str, Any] = {
            "id": sub.id,
            "source_topics": list(sub.ordered_source_topics),
            "sink_topics": list(sub.sink_topics),
            "changelog_topics": list(sub.changelog_topics),
            "stores": list(sub.stores),
        }
        if sub.nodes:
            entry["nodes"] = list(sub.nodes)
        subtopologies.append(entry)
    return {
        "application_id": topology.application_id,
        "subtopologies": subtopologies,
        "repartition_topics": dict(topology.repartition_topics),
        "copartition_groups": [list(g) for g in topology.copartition_groups],
    }


def topology_to_json(topology: Topology, *, indent: int | None = 2) -> str:
    return json.dumps(topology_to_data(topology), indent=indent)


def topology_from_json(text: str) -> Topology:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TopologyError(f"topology is not valid JSON: {exc}") from exc
    return topology_from_data(data)


def topology_from_data(data: Any) -> Topology:
    """Validate the plain form and build the frozen model."""
    top = _mapping(data, "topology", _TOP_KEYS)
    application_id = top.get("application_id")
    if not isinstance(application_id, str) or not application_id:
        raise TopologyError("application_id: must be a non-empty string")

    raw_subs = top.get("subtopologies")
    if not isinstance(raw_subs, list):
        raise TopologyError("subtopologies: must be a list")
    subs = [_read_subtopology(raw, f"subtopologies[{i}]") for i, raw in enumerate(raw_subs)]
    _check_unique_ownership(subs)

    repartition = _read_repartition(top.get("repartition_topics", {}), subs)
    repartition_names = set(repartition)
    subs = [_with_repartition(sub, repartition_names) for sub in subs]

    groups = _read_copartition(top.get("copartition_groups", []), subs)
    check_declared_groups(application_id, groups, repartition)
    return Topology(
        application_id=application_id,
        subtopologies=tuple(subs),
        repartition_topics=tuple(repartition.items()),
        copartition_groups=tuple(groups),
    )


def _read_subtopology(raw: Any, where: str) -> Subtopology:
    entry = _mapping(raw, where, _SUB_KEYS)
    sub_id = entry.get("id")
    if not isinstance(sub_id, int) or isinstance(sub_id, bool) or not 0 <= sub_id <= INT32_MAX:
        raise TopologyError(f"{where}.id: must be an integer from 0 to 2^31-1, not {sub_id!r}")
    ordered = _names(entry.get("source_topics"), f"{where}.source_topics", keep_order=True)
    sources = tuple(sorted(ordered))
    if not sources:
        raise TopologyError(
            f"{where}.source_topics: a subtopology reads at least one topic", str(sub_id)
        )
    return Subtopology(
        id=sub_id,
        source_topics=sources,
        sink_topics=_names(entry.get("sink_topics", []), f"{where}.sink_topics"),
        changelog_topics=_names(entry.get("changelog_topics", []), f"{where}.changelog_topics"),
        stores=_names(entry.get("stores", []), f"{where}.stores"),
        nodes=tuple(_names(entry.get("nodes", []), f"{where}.nodes", keep_order=True)),
        source_topic_order=ordered,
    )


def _check_unique_ownership(subs: Sequence[Subtopology]) -> None:
    """An id, a source topic, a store or a changelog belongs to one subtopology only."""
    for what, attr in (
        ("id", "id"),
        ("source topic", "source_topics"),
        ("store", "stores"),
        ("changelog topic", "changelog_topics"),
    ):
        owner: dict[Any, int] = {}
        for index, sub in enumerate(subs):
            values = (sub.id,) if attr == "id" else getattr(sub, attr)
            for value in values:
                if value in owner:
                    raise TopologyError(
                        f"subtopologies[{index}]: {what} {value!r} already belongs to "
                        f"subtopologies[{owner[value]}]",
                        str(value),
                    )
                owner[value] = index


def _read_repartition(raw: Any, subs: Sequence[Subtopology]) -> dict[str, int | None]:
    if not isinstance(raw, Mapping):
        raise TopologyError("repartition_topics: must map topic names to a count or null")
    read = {t for s in subs for t in s.source_topics}
    written = {t for s in subs for t in s.sink_topics}
    result: dict[str, int | None] = {}
    for topic, count in raw.items():
        where = f"repartition_topics[{topic!r}]"
        if not isinstance(topic, str) or not topic:
            raise TopologyError(f"{where}: topic name must be a non-empty string")
        if count is not None and (
            not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= INT32_MAX
        ):
            raise TopologyError(f"{where}: count must be null or a positive integer", topic)
        if topic not in read or topic not in written:
            raise TopologyError(
                f"{where}: a repartition topic must be a sink topic of one subtopology and a "
                f"source topic of another",
                topic,
            )
        result[topic] = count
    return result


def _with_repartition(sub: Subtopology, repartition: set[str]) -> Subtopology:
    return Subtopology(
        id=sub.id,
        source_topics=sub.source_topics,
        sink_topics=sub.sink_topics,
        changelog_topics=sub.changelog_topics,
        stores=sub.stores,
        repartition_source_topics=tuple(t for t in sub.source_topics if t in repartition),
        repartition_sink_topics=tuple(t for t in sub.sink_topics if t in repartition),
        nodes=sub.nodes,
        source_topic_order=sub.source_topic_order,
    )


def _read_copartition(raw: Any, subs: Sequence[Subtopology]) -> list[tuple[str, ...]]:
    if not isinstance(raw, list):
        raise TopologyError("copartition_groups: must be a list of lists of topics")
    sources = {t for s in subs for t in s.source_topics}
    groups = []
    for index, group in enumerate(raw):
        where = f"copartition_groups[{index}]"
        topics = _names(group, where, keep_order=True)
        if not topics:
            raise TopologyError(f"{where}: a copartition group names at least one topic")
        for topic in topics:
            if topic not in sources:
                raise TopologyError(
                    f"{where}: topic {topic!r} is not a source topic of any subtopology", topic
                )
        groups.append(topics)
    return groups


def _mapping(raw: Any, where: str, allowed: set[str]) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise TopologyError(f"{where}: must be an object, not {type(raw).__name__}")
    unknown = sorted(str(k) for k in raw if k not in allowed)
    if unknown:
        raise TopologyError(
            f"{where}: unknown field(s) {', '.join(unknown)}; expected some of "
            f"{', '.join(sorted(allowed))}"
        )
    return raw


def _names(raw: Any, where: str, *, keep_order: bool = False) -> tuple[str, ...]:
    if not isinstance(raw, list | tuple):
        raise TopologyError(f"{where}: must be a list of names, not {type(raw).__name__}")
    seen: set[str] = set()
    for index, name in enumerate(raw):
        if not isinstance(name, str) or not name:
            raise TopologyError(f"{where}[{index}]: must be a non-empty string, not {name!r}")
        if name in seen:
            raise TopologyError(f"{where}[{index}]: {name!r} is listed twice", name)
        seen.add(name)
    return tuple(raw) if keep_order else tuple(sorted(raw))


__all__ = ["topology_from_data", "topology_from_json", "topology_to_data", "topology_to_json"]
