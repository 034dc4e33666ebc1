"""A process's local state on disk, laid out as Kafka Streams lays out its ``state.dir``.

The leader places tasks by how far behind each process's local copy of their state is, so every
process must report, for each task it has state for, the sum of its changelog positions (the
*offset sum*). Getting that number wrong (an off-by-one, a missing partition, a stale file) sends
tasks to the wrong process and makes them restore from scratch. This module keeps the bookkeeping
in one place, in Kafka's own layout, so that a restarted process finds its tasks and reports them
exactly as the assignor expects:

- ``<root>/<application_id>/kafka-streams-process-metadata``: the process id, so a restarted
  process (static or not) keeps its identity and the leader recognises its state;
- ``<root>/<application_id>/<task>/.checkpoint``: per task, the changelog partitions and, for
  each, the **next offset to apply** (the offset of the last record applied plus one), in Kafka's
  ``OffsetCheckpoint`` text format (version ``0``, a count, then ``topic partition offset`` lines;
  ``-4`` marks a store whose position is unknown).

:meth:`StateDirectory.offset_sums` is a ready ``state()`` provider for
:class:`assignor.StreamsProcess`. Writes are atomic (a temporary file renamed over the old one),
so a crash mid-write leaves the previous checkpoint; an unreadable checkpoint is logged and
treated as "no state" (Kafka does the same), never as a reason to stop.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from protocol.ids import INT64_MAX, ProcessId, TaskId, TopicPartition

log = logging.getLogger(__name__)

CHECKPOINT_FILE: Final = ".checkpoint"
PROCESS_METADATA_FILE: Final = "kafka-streams-process-metadata"
_CHECKPOINT_VERSION: Final = 0
#: Kafka's ``OffsetCheckpoint.OFFSET_UNKNOWN``: a store whose position is not known.
OFFSET_UNKNOWN: Final = -4
#: A checkpoint lists a task's changelog partitions; a task has one per logged store.
_MAX_CHECKPOINT_LINES: Final = 100_000


class StateDirectoryError(RuntimeError):
    """The state directory cannot be used (not a directory, unwritable, another app's)."""


class StateDirectory:
    """Local state of one application instance: its process id and a checkpoint per task."""

    def __init__(self, root: str | os.PathLike[str], application_id: str) -> None:
        if not application_id or "/" in application_id or application_id in (".", ".."):
            raise StateDirectoryError(f"application id {application_id!r} cannot name a folder")
        self.path = Path(root) / application_id
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateDirectoryError(f"cannot create state directory {self.path}: {exc}") from exc

    # ------------------------------------------------------------------ identity

    def process_id(self) -> ProcessId:
        """The id stored here, or a new random one stored for the next start.

        Kafka Streams keeps the process id in the state directory for the same reason: the
        leader matches reported state to a process by this id, so a process that restarts
        under a new id looks like a stranger holding someone else's state.
        """
        file = self.path / PROCESS_METADATA_FILE
        if file.exists():
            try:
                stored = json.loads(file.read_text(encoding="utf-8"))
                return ProcessId(uuid.UUID(stored["processId"]))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("ignoring unreadable %s (%s); using a new process id", file, exc)
        process_id = ProcessId.random()
        self._write_atomically(file, json.dumps({"processId": str(process_id)}) + "\n")
        return process_id

    # ------------------------------------------------------------------ checkpoints

    def task_path(self, task: TaskId) -> Path:
        return self.path / str(task)

    def write_checkpoint(self, task: TaskId, next_offsets: Mapping[TopicPartition, int]) -> None:
        """Record, per changelog partition, the next offset to apply (last applied + 1), or
        :data:`OFFSET_UNKNOWN`."""
        for tp, offset in next_offsets.items():
            if offset < 0 and offset != OFFSET_UNKNOWN:
                raise ValueError(f"checkpoint of {task}: offset {offset} of {tp} is negative")
        lines = [str(_CHECKPOINT_VERSION), str(len(next_offsets))]
        lines += [
            f"{tp.topic} {tp.partition} {offset}" for tp, offset in sorted(next_offsets.items())
        ]
        directory = self.task_path(task)
        directory.mkdir(exist_ok=True)
        self._write_atomically(directory / CHECKPOINT_FILE, "\n".join(lines) + "\n")

    def read_checkpoint(self, task: TaskId) -> dict[TopicPartition, int] | None:
        """The task's checkpointed next offsets; ``None`` when it has no readable checkpoint."""
        file = self.task_path(task) / CHECKPOINT_FILE
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("cannot read %s (%s); treating task %s as having no state", file, exc, task)
            return None
        try:
            return _parse_checkpoint(text)
        except ValueError as exc:
            log.warning("corrupt %s (%s); treating task %s as having no state", file, exc, task)
            return None

    def tasks(self) -> list[TaskId]:
        """Tasks that have a folder here, in Kafka's task order (other entries are ignored)."""
        found: list[TaskId] = []
        for entry in self.path.iterdir():
            if not entry.is_dir():
                continue
            try:
                found.append(TaskId.parse(entry.name))
            except ValueError:
                continue
        unnamed = [t for t in found if t.topology is None]
        named = [t for t in found if t.topology is not None]
        return sorted(unnamed) + sorted(named)

    def offset_sums(self) -> dict[TaskId, int]:
        """The ``state()`` provider: per task with a checkpoint, the sum of its next offsets.

        Kafka's rules (``TaskManager.sumOfChangelogOffsets``): unknown positions are left out of
        the sum, a sum past ``Long.MAX_VALUE`` saturates there, and a task folder without a
        readable checkpoint reports nothing, so the leader sees no state rather than a wrong
        position.
        """
        sums: dict[TaskId, int] = {}
        for task in self.tasks():
            offsets = self.read_checkpoint(task)
            if offsets is not None:
                known = sum(offset for offset in offsets.values() if offset != OFFSET_UNKNOWN)
                sums[task] = min(known, INT64_MAX)
        return sums

    def wipe(self, task: TaskId) -> None:
        """Delete the task's local state (as ``KafkaStreams.cleanUp`` does for all tasks)."""
        shutil.rmtree(self.task_path(task), ignore_errors=True)

    # ------------------------------------------------------------------ files

    @staticmethod
    def _write_atomically(file: Path, text: str) -> None:
        temporary = file.with_name(file.name + ".tmp")
        try:
            with open(temporary, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, file)
        except OSError as exc:
            raise StateDirectoryError(f"cannot write {file}: {exc}") from exc


def _parse_checkpoint(text: str) -> dict[TopicPartition, int]:
    lines = text.splitlines()
    if len(lines) < 2:
        raise ValueError("shorter than its two header lines")
    if lines[0].strip() != str(_CHECKPOINT_VERSION):
        raise ValueError(f"version {lines[0].strip()!r}, expected {_CHECKPOINT_VERSION}")
    try:
        count = int(lines[1])
    except ValueError:
        raise ValueError(f"entry count {lines[1]!r} is not a number") from None
    if not 0 <= count <= _MAX_CHECKPOINT_LINES or len(lines) - 2 != count:
        raise ValueError(f"declares {count} entries but holds {len(lines) - 2}")
    offsets: dict[TopicPartition, int] = {}
    for number, line in enumerate(lines[2:], start=3):
        parts = line.split(" ")
        if len(parts) != 3:
            raise ValueError(f"line {number} is not 'topic partition offset'")
        topic, partition, offset = parts[0], int(parts[1]), int(parts[2])
        if partition < 0 or (offset < 0 and offset != OFFSET_UNKNOWN):
            raise ValueError(f"line {number} has a negative partition or offset")
        offsets[TopicPartition(topic, partition)] = offset
    return offsets
