"""A scenario's task layout, kept for the next replay of the same shape (``simulator.layout``)."""

from __future__ import annotations

import dataclasses

from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.tasks import plan_tasks
from simulator import layout as layout_module
from simulator.families import generate
from simulator.layout import cluster_layout


def _fresh(topology, partitions):  # type: ignore[no-untyped-def]
    sizing = size_internal_topics(topology, partitions)
    assert isinstance(sizing, InternalTopics)
    return plan_tasks(topology, sizing.source_partitions)


def test_a_shape_planned_again_is_the_kept_layout_and_equals_a_fresh_plan() -> None:
    scenario = generate("cold_start", {"processes": 4, "partitions": 24}, seed=1)
    partitions = dict(scenario.partitions)
    first, cluster, problem = cluster_layout(scenario.build_topology(), partitions, None,
                                             scenario=scenario.name)
    again, cluster_again, _ = cluster_layout(scenario.build_topology(), dict(partitions), None,
                                             scenario=scenario.name)
    assert problem == "" and again is first and cluster_again is not cluster
    assert again == _fresh(scenario.build_topology(), partitions)
    assert cluster_again.topics() == cluster.topics()


def test_other_counts_or_another_source_order_are_planned_anew() -> None:
    scenario = generate("cold_start", {"processes": 4, "partitions": 24}, seed=1)
    topology, partitions = scenario.build_topology(), dict(scenario.partitions)
    first, _, _ = cluster_layout(topology, partitions, None, scenario=scenario.name)
    grown = {topic: count + 1 for topic, count in partitions.items()}
    other, _, _ = cluster_layout(topology, grown, None, scenario=scenario.name)
    assert other is not first and other == _fresh(topology, grown)
    # equal topologies whose subtopologies list their sources in another order: sizing reads
    # that order and equality does not, so the kept layout is not theirs
    subs = tuple(dataclasses.replace(sub, source_topic_order=tuple(reversed(sub.source_topics)))
                 for sub in topology.subtopologies)
    reordered = dataclasses.replace(topology, subtopologies=subs)
    cluster_layout(topology, partitions, None, scenario=scenario.name)
    kept = layout_module._KEPT[0][1]
    assert reordered == topology
    assert cluster_layout(reordered, partitions, None, scenario=scenario.name)[0] is not kept
