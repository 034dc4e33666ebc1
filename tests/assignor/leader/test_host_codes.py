"""The leader's host-map sets built with the plan's codes: the same sets as from the partitions,
carrying exactly the numbers per topic the writer would read from them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assignor import TopologyBuilder
from assignor.leader import task_table
from assignor.leader.cache import planned_tasks
from assignor.leader.encode import _FEW_TASKS, _host_set
from assignor.testing import sized_topologies
from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.model import Topology
from protocol.host_partitions import HostPartitions, topic_runs


@given(sized_topologies(max_partitions=12), st.data())
def test_host_sets_from_codes(case: tuple[Topology, dict[str, int]], data: st.DataObject) -> None:
    topology, counts = case
    sized = size_internal_topics(topology, counts)
    if not isinstance(sized, InternalTopics):
        return
    planned = planned_tasks(topology, sized.source_partitions)
    layout = planned.layout
    tasks = data.draw(st.frozensets(st.sampled_from(list(layout.tasks))))
    plain = frozenset(tp for task in tasks for tp in layout.tasks[task])
    if planned.table is None:  # only a plan whose tasks differ in width has none
        assert len(set(map(len, layout.tasks.values()))) > 1
        return
    made = _host_set(tasks, layout, planned.partitions_by_id, planned.table)
    assert made == plain
    if len(tasks) <= _FEW_TASKS:  # a few tasks: read from their partitions directly
        assert type(made) is frozenset
    else:
        assert type(made) is HostPartitions
        assert made.runs == topic_runs(frozenset(made))  # what the writer would have read
    assert _host_set(tasks, layout, planned.partitions_by_id, None) == plain


@pytest.mark.parametrize("cap", [0, 10_000])
def test_partition_sets_with_and_without_the_tasks_sets(
    cap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``TaskTable.partition_set`` holds the tasks' partitions, whether the plan keeps each
    task's set (a union of them) or not (not asked yet, or over ``MAX_SET_TASKS``)."""
    monkeypatch.setattr(task_table, "MAX_SET_TASKS", cap)
    builder = TopologyBuilder("app")
    builder.add_source("source", "events", "clicks")
    builder.add_processor("count", "source").add_state_store("counts", "count")
    builder.copartition("events", "clicks")
    planned = planned_tasks(builder.build(), {"events": 30, "clicks": 30})
    table = planned.table
    assert table is not None
    places = list(range(0, 30, 4))
    expected = frozenset(table.partitions_of(places))
    assert frozenset(table.partition_set(places)) == expected  # no sets kept yet
    table.keep_sets()
    assert len(table.sets) == (30 if cap else 0)
    assert frozenset(table.partition_set(places)) == expected
