"""A member's standby entries from the plan's packed bytes are the bytes the answer writer packs
from the tasks themselves, in task order; what the plan cannot tell is left to the writer."""

from __future__ import annotations

import random

import msgpack
import pytest

from assignor import TopologyBuilder
from assignor.leader.cache import PlannedTasks, planned_tasks
from assignor.leader.encode import partitions_of
from assignor.leader.packed_standby import (
    MAX_KEPT_DICTIONARIES,
    active_packed,
    standby_map,
    standby_packed,
)
from protocol import TaskId
from protocol._answer_ints import standby_entries
from protocol.codec import LATEST_VERSION
from protocol.messages import NAMED_TOPOLOGY_VERSION


def _plan(topics: int, partitions: int = 40) -> PlannedTasks:
    names = ["events", "clicks", "views"][:topics]
    builder = TopologyBuilder("app")
    builder.add_source("source", *names)
    builder.add_processor("count", "source").add_state_store("counts", "count")
    if topics > 1:
        builder.copartition(*names)
    return planned_tasks(builder.build(), dict.fromkeys(names, partitions))


def _written(planned: PlannedTasks, standby: list[TaskId], active: tuple[TaskId, ...],
             index: dict[str, int], version: int) -> bytes:
    """What the writer packs from the tasks (its own path, without the plan's bytes)."""
    found = partitions_of(standby, planned.layout, planned.partitions_by_id)
    named = version >= NAMED_TOPOLOGY_VERSION
    entries = standby_entries(standby_map(standby, found), active, index, named)
    return bytes(msgpack.packb(entries))


@pytest.mark.parametrize("topics", [1, 2, 3])
@pytest.mark.parametrize("named", [False, True])
def test_the_plans_bytes_are_the_writers(topics: int, named: bool) -> None:
    planned = _plan(topics)
    tasks = list(planned.layout.tasks)
    # topic dictionaries as host maps name them: the plan's topics in any order, plus others
    names = sorted({tp.topic for parts in planned.layout.tasks.values() for tp in parts})
    draw = random.Random(topics * 2 + named)
    version = LATEST_VERSION if named else 2
    for _ in range(30):
        order = [*names, "other"]
        draw.shuffle(order)
        index = {topic: at for at, topic in enumerate(order)}
        mine = draw.sample(tasks, draw.randint(2, len(tasks) // 2))  # in no particular order
        rest = [t for t in tasks if t not in mine]
        active = tuple(draw.sample(rest, draw.randint(0, len(rest))))
        packed = standby_packed(planned, mine, active, index, named)
        assert packed is not None
        assert packed == _written(planned, mine, active, index, version)
    assert len(planned.packed_standby) <= MAX_KEPT_DICTIONARIES


def test_what_the_plan_cannot_tell_is_left_to_the_writer() -> None:
    planned = _plan(1)
    tasks = list(planned.layout.tasks)
    index = {"events": 0}
    assert standby_packed(planned, tasks[:3], (), index, False) is not None
    # a task both standby and active, one task only, a topic the maps do not name, no index
    assert standby_packed(planned, tasks[:3], (tasks[1],), index, False) is None
    assert standby_packed(planned, tasks[:1], (), index, False) is None
    assert standby_packed(planned, [tasks[0], tasks[1], tasks[0]], (), index, False) is None
    assert standby_packed(planned, tasks[:3], (), {"clicks": 0}, False) is None
    assert standby_packed(planned, tasks[:3], (), None, False) is None
    # a named task, a task without its rank, a task of no partition of this plan
    named = [TaskId(0, 1, topology="t"), TaskId(0, 2, topology="t")]
    assert standby_packed(planned, named, (), index, False) is None
    bare = [TaskId(0, p) for p in (1, 2)]
    for task in bare:  # every built task keeps its rank: these drop theirs
        object.__delattr__(task, "_rank")
    assert standby_packed(planned, bare, (), index, False) is None
    assert standby_packed(planned, [TaskId(0, 1), TaskId(0, 999)], (), index, False) is None


@pytest.mark.parametrize("names", [["events", "clicks"], ["clicks", "events"],
                                   ["views", "events", "clicks"]])
def test_standby_maps_list_each_tasks_partitions_sorted(names: list[str]) -> None:
    """With the plan's sorted tuples (a permutation of its columns, or its own tuples when
    already in order), a member's standby map is the one sorting each task's partitions."""
    builder = TopologyBuilder("app")
    builder.add_source("source", *names)
    builder.add_processor("count", "source").add_state_store("counts", "count")
    builder.copartition(*names)
    planned = planned_tasks(builder.build(), dict.fromkeys(names, 12))
    assert planned.sorted_by_id is not None
    tasks = list(planned.layout.tasks)
    mine = tasks[::3]
    found = partitions_of(mine, planned.layout, planned.partitions_by_id)
    expected = {task: tuple(sorted(parts)) for task, parts in zip(mine, found, strict=True)}
    made = standby_map(mine, found, planned)
    assert made == expected
    assert list(made) == mine
    # a task that is not one of the plan's objects: sorted one by one, the same map
    copies = [TaskId(t.subtopology, t.partition) for t in mine]
    assert standby_map(copies, found, planned) == expected


@pytest.mark.parametrize("topics", [1, 2])
@pytest.mark.parametrize("named", [False, True])
def test_the_plans_active_bytes_are_the_writers(topics: int, named: bool) -> None:
    planned = _plan(topics)
    tasks = list(planned.layout.tasks)
    draw = random.Random(topics * 2 + named)
    for _ in range(20):
        mine = tuple(draw.sample(tasks, draw.randint(2, len(tasks)))) * topics
        ints = [[0, t.subtopology, t.partition] if named else [t.subtopology, t.partition]
                for t in mine]
        expected = bytes(msgpack.packb([i for row in ints for i in row]))
        assert active_packed(planned, mine, named) == expected
    assert active_packed(planned, (TaskId(0, 1), TaskId(0, 2)), named) is None  # not the plan's
