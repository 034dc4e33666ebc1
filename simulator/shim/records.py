"""What a run of the shim leaves behind: one record per generation and a log of events.

The simulator and the tests read these instead of poking at the coordinator's state, and a person
reads their ``repr`` when a test fails, so both print as short, aligned text.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

#: An event's ``member`` or ``detail`` as logged: the text, or ``(function, *arguments)`` that
#: builds it when the journal is read (a replay never reads its journal, and building some
#: texts, a JoinGroup's description above all, cost more than the rest of logging it).
Text = str | tuple[Any, ...]


class Event(NamedTuple):
    """One thing that happened: a request, a response with an error, a timeout, a state change."""

    time: float
    group: str
    kind: str
    member: str
    detail: str

    def __repr__(self) -> str:
        who = f" {self.member}" if self.member else ""
        what = f": {self.detail}" if self.detail else ""
        return f"{self.time:10.3f}s [{self.group}] {self.kind}{who}{what}"


_new_event = tuple.__new__


def _text(text: Text) -> str:
    if isinstance(text, str):
        return text
    function, *arguments = text
    return str(function(*arguments))


@dataclass(frozen=True, slots=True, eq=True)
class RebalanceRecord:
    """One generation of one group, from the start of its join phase to its end.

    ``outcome`` is ``"stable"`` when the leader's assignment reached the group, ``"aborted"`` when
    a new rebalance began before that, ``"empty"`` when the generation had no members. Times are
    on the shim's clock, in seconds; ``metadata`` holds what each member sent for the selected
    protocol and ``assignments`` what each received.
    """

    group_id: str
    generation: int
    outcome: str
    protocol: str | None
    leader: str | None
    members: tuple[str, ...]
    static_members: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    reasons: tuple[str, ...] = ()
    started_at: float = 0.0
    joined_at: float = 0.0
    ended_at: float = 0.0
    metadata: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))
    assignments: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))
    sent_bytes: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    received_bytes: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def join_ms(self) -> float:
        return (self.joined_at - self.started_at) * 1000.0

    @property
    def sync_ms(self) -> float:
        return (self.ended_at - self.joined_at) * 1000.0

    @property
    def total_ms(self) -> float:
        return (self.ended_at - self.started_at) * 1000.0

    def summary(self) -> str:
        """One line: generation, outcome, size, leader, phase times."""
        return (
            f"gen {self.generation} {self.outcome} [{self.group_id}] {len(self.members)} members, "
            f"protocol {self.protocol!r}, leader {self.leader}, join {self.join_ms:.1f} ms, "
            f"sync {self.sync_ms:.1f} ms"
        )

    def __repr__(self) -> str:
        lines = [f"RebalanceRecord({self.summary()}"]
        if self.reasons:
            lines.append("  because: " + "; ".join(self.reasons))
        lines.append(f"  from {self.started_at:.3f}s, joined {self.joined_at:.3f}s, "
                     f"ended {self.ended_at:.3f}s")
        for member in self.members:
            tags = []
            if member == self.leader:
                tags.append("leader")
            if member in self.static_members:
                tags.append(f"instance {self.static_members[member]}")
            tag = f" ({', '.join(tags)})" if tags else ""
            lines.append(
                f"  {member}{tag}: sent {self.sent_bytes.get(member, 0)} B, "
                f"received {self.received_bytes.get(member, 0)} B, "
                f"metadata {len(self.metadata.get(member, b''))} B, "
                f"assignment {len(self.assignments.get(member, b''))} B"
            )
        return "\n".join(lines) + ")"


# An event costs about 175-215 bytes (measured with tracemalloc): the default ring holds at most
# some 20 MB of a run's latest events.
DEFAULT_MAX_EVENTS = 100_000


class Journal:
    """The event log and the rebalance records of one run, shared by coordinator and members.

    Events are kept as logged, their texts built when ``events`` is first read after them
    (``Text``: the arguments of a deferred text are values that do not change afterwards).
    The event log is bounded by default: a ring of the latest ``max_events`` events
    (``DEFAULT_MAX_EVENTS``), because a simulation of hours logs a few events per request and would
    otherwise grow without limit; ``dropped`` counts the events the ring let go. Pass
    ``max_events=None`` to keep every event. Records are all kept: one per generation is what the
    simulator reads.
    """

    def __init__(self, *, max_events: int | None = DEFAULT_MAX_EVENTS) -> None:
        if max_events is not None and max_events < 0:
            raise ValueError(f"max_events must be None or at least 0, not {max_events}")
        self.max_events = max_events
        self._events: deque[Event] = deque(maxlen=max_events)
        #: logged since ``events`` was last read, texts not yet built (the same ring bound)
        self._logged: deque[tuple[float, str, str, Text, Text]] = deque(maxlen=max_events)
        self.records: list[RebalanceRecord] = []
        self.logged = 0

    @property
    def events(self) -> deque[Event]:
        """The latest events (at most ``max_events``), oldest first."""
        logged = self._logged
        if logged:
            events = self._events
            for time, group, kind, member, detail in logged:
                if type(member) is not str:
                    member = _text(member)
                if type(detail) is not str:
                    detail = _text(detail)
                events.append(_new_event(Event, (time, group, kind, member, detail)))
            logged.clear()
        return self._events

    @property
    def dropped(self) -> int:
        """Events logged but no longer held (pushed out of the ring)."""
        return self.logged - len(self.events)

    def log(self, time: float, group: str, kind: str, member: Text = "", detail: Text = ""
            ) -> None:
        # (the members' and the coordinator's ``_log`` do these two steps inline)
        self.logged += 1
        # a plain tuple: the Event (and any deferred text) is built when ``events`` is read
        self._logged.append((time, group, kind, member, detail))

    def add(self, record: RebalanceRecord) -> None:
        self.records.append(record)

    def records_for(self, group_id: str) -> list[RebalanceRecord]:
        return [record for record in self.records if record.group_id == group_id]

    def stable(self, group_id: str) -> list[RebalanceRecord]:
        """The generations of ``group_id`` whose assignment reached the members."""
        return [r for r in self.records if r.group_id == group_id and r.outcome == "stable"]

    def kinds(self, kind: str) -> Iterator[Event]:
        return (event for event in self.events if event.kind == kind)

    def text(self, last: int | None = None) -> str:
        """The event log as text, one event per line (only the ``last`` ones if given)."""
        events = list(self.events)
        if last is not None:
            events = events[-last:]
        return "\n".join(repr(event) for event in events)

    def __repr__(self) -> str:
        dropped = f", {self.dropped} dropped" if self.dropped else ""
        head = f"Journal({len(self.events)} events{dropped}, {len(self.records)} generations)"
        gens = "\n".join("  " + record.summary() for record in self.records[-10:])
        return "\n".join(part for part in (head, gens, self.text(last=20)) if part)
