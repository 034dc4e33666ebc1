"""What the leader decided in one generation, read back inside its ``assign()``.

For our assignor, from the ``LeaderResult`` it kept (tasks, version, warm-ups, follow-up); for
aiokafka's peers, from the partitions they answered. The records a decision makes active tasks
restore are counted against the state model at the instant of the decision.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assignor.adapter.streams_assignor import StreamsPartitionAssignor
from assignor.topology.tasks import TaskLayout
from protocol.ids import TaskId, TopicPartition, trusted_topic_partition
from simulator.faust_peer import FAUST, faust_tasks, read_faust_assignment
from simulator.metrics import Ownership, Thread, ownership_from_partitions
from simulator.state import StateModel


@dataclass(slots=True)
class Decision:
    """What the leader decided in one generation (recorded inside ``assign()``)."""

    generation: int
    leader: Thread
    ownership: Ownership
    assignor: str
    protocol_version: int | None
    warmups: int
    followup: str
    assign_wall_ms: float
    restore_records: int
    members: int
    processes: int
    #: the tasks that existed when the leader decided (partitions may be added later)
    tasks: tuple[TaskId, ...]


def read_decision(
    inner: Any,
    generation: int,
    threads: Mapping[str, Thread],
    answers: Mapping[str, Any],
    *,
    leader: Thread,
    default_assignor: str,
    elapsed_ms: float,
    layout: TaskLayout,
    state: StateModel,
    previous: Ownership | None,
) -> Decision:
    """The decision of the leader's assignor ``inner`` for the members ``threads`` (member id
    -> thread), which answered ``answers``; ``previous`` is the last stable ownership."""
    assignor: str = default_assignor
    version: int | None = None
    warmups, followup = 0, ""
    if isinstance(inner, StreamsPartitionAssignor) and inner.last_leader is not None:
        result = inner.last_leader.result
        active = {m: frozenset(r.info.active_tasks) for m, r in result.members.items()}
        standby = {m: frozenset(r.info.standby_tasks) for m, r in result.members.items()}
        parts = {m: frozenset(r.partitions) for m, r in result.members.items()}
        ownership = Ownership(active, standby, parts, dict(threads))
        assignor = result.assignor or "error"
        version = result.used_version
        if result.task_assignment is not None:
            warmups = sum(len(w) for w in result.task_assignment.warmups.values())
        followup = result.followup
    else:
        parts_of: dict[str, list[TopicPartition]] = {}
        standbys: dict[str, frozenset[TaskId]] = {}
        encoded: Mapping[str, Any] = getattr(inner, "last_assignments", {})
        for member_id, answer in answers.items():
            if getattr(inner, "name", None) == FAUST:
                known = encoded.get(member_id)  # Faust's own, before it encoded them
                parts_of[member_id], standbys[member_id] = (
                    faust_tasks(known, layout) if known is not None
                    else read_faust_assignment(answer, layout))
                continue
            partitions = answer.partitions() if hasattr(answer, "partitions") else []
            # partitions of the cluster's own metadata, decoded by aiokafka: already valid, so
            # built without pydantic's validation (10% of a large peer replay otherwise)
            parts_of[member_id] = [trusted_topic_partition(topic, p) for topic, p in partitions]
        ownership = ownership_from_partitions(parts_of, layout.tasks, threads)
        if standbys:
            ownership = dataclasses.replace(ownership, standby=standbys)
    before = previous.active_process() if previous is not None else {}
    # a task that stays on its process restores nothing: asked first, since in a probing round
    # nearly every task stays (the changelog's end is a lookup per task)
    restore = state.restore_needed(
        (task, process) for task, process in ownership.active_process().items()
        if before.get(task) != process)
    return Decision(
        generation=generation,
        leader=leader,
        ownership=ownership,
        assignor=assignor,
        protocol_version=version,
        warmups=warmups,
        followup=followup,
        assign_wall_ms=elapsed_ms,
        restore_records=restore,
        members=len(threads),
        processes=len({process for process, _ in threads.values()}),
        tasks=tuple(layout.tasks),
    )


__all__ = ["Decision", "read_decision"]
