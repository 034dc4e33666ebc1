"""Each stateful task's changelog end-offset sum: the one-changelog plan read in C must give
what the task-by-task definition gives, and fall back to it for anything else."""

from __future__ import annotations

import logging

import pytest

from assignor.leader.pipeline import changelog_end_sums
from assignor.placement.lags import LONG_MAX, end_offset_sum
from assignor.topology.builder import TopologyBuilder
from assignor.topology.tasks import TaskLayout, plan_tasks
from protocol.ids import TaskId, TopicPartition


def _by_definition(
    layout: TaskLayout, offsets: dict[TopicPartition, int]
) -> dict[TaskId, int] | None:
    """Kafka's sum per stateful task, over all of its changelog partitions."""
    sums = {}
    for task in layout.stateful:
        parts = layout.changelogs.get(task, ())
        if any(tp not in offsets for tp in parts):
            return None
        sums[task] = end_offset_sum(offsets[tp] for tp in parts)
    return sums


def _layout(stores: int, partitions: int = 40) -> TaskLayout:
    builder = TopologyBuilder("sums")
    builder.add_source("in", "events").add_processor("p", "in")
    for n in range(stores):
        builder.add_state_store(f"store{n}", "p")
    builder.add_source("plain", "clicks").add_processor("q", "plain")  # stateless tasks too
    return plan_tasks(builder.build(), {"events": partitions, "clicks": 3})


def _offsets(layout: TaskLayout) -> dict[TopicPartition, int]:
    return {
        tp: 1000 + 7 * tp.partition + len(tp.topic)
        for parts in layout.changelogs.values()
        for tp in parts
    }


@pytest.mark.parametrize("stores", [1, 2])
def test_sums_are_the_definitions(stores: int) -> None:
    layout = _layout(stores)
    offsets = _offsets(layout)
    sums = changelog_end_sums(layout, offsets)
    assert sums == _by_definition(layout, offsets)
    assert sums is not None and len(sums) == 40
    first = next(iter(layout.changelogs))
    assert sums[first] == sum(offsets[tp] for tp in layout.changelogs[first])


def test_an_offset_past_a_long_saturates_as_kafka_does() -> None:
    layout = _layout(1)
    offsets = _offsets(layout)
    (big,) = layout.changelogs[TaskId(0, 3)]
    offsets[big] = LONG_MAX + 5
    sums = changelog_end_sums(layout, offsets)
    assert sums == _by_definition(layout, offsets)
    assert sums is not None and sums[TaskId(0, 3)] == LONG_MAX


def test_a_missing_offset_makes_lags_unknown(caplog: pytest.LogCaptureFixture) -> None:
    layout = _layout(1)
    offsets = _offsets(layout)
    del offsets[TopicPartition("sums-store0-changelog", 17)]
    with caplog.at_level(logging.WARNING):
        assert changelog_end_sums(layout, offsets) is None
    assert "sums-store0-changelog-17" in caplog.text


def test_a_negative_offset_is_refused() -> None:
    layout = _layout(1)
    offsets = _offsets(layout)
    offsets[TopicPartition("sums-store0-changelog", 9)] = -1
    with pytest.raises(ValueError, match="negative"):
        changelog_end_sums(layout, offsets)


def test_a_layout_whose_changelogs_miss_a_stateful_task_gives_it_zero() -> None:
    """A hand-made layout (no plan makes one) where a stateful task has no changelog entry:
    its sum is the empty sum, as task by task."""
    layout = _layout(1, partitions=5)
    changelogs = dict(layout.changelogs)
    del changelogs[TaskId(0, 4)]
    odd = TaskLayout(layout.tasks, layout.stateful, changelogs, layout.changelog_counts)
    offsets = _offsets(layout)
    sums = changelog_end_sums(odd, offsets)
    assert sums == _by_definition(odd, offsets)
    assert sums is not None and sums[TaskId(0, 4)] == 0
