"""A scenario as data: the group, its state dynamics and a timeline of events, in a file.

A platform engineer describes their application once (topology, partitions, processes, assignor
and its config, group timeouts, how fast state grows and restores) and a timeline of what happens
to it (joins, crashes, restarts, pauses, upgrades, added partitions, a lost rack). The replay
(:mod:`simulator.engine`) turns one :class:`Scenario` into rows. The model is pydantic so that a
file written by hand fails with the path of the bad field
(``ScenarioError: rolling.toml: events[2].restart.down_s: ...``), as ``python -m assignor`` does.

Files are TOML (read with ``tomllib``) or JSON, chosen by extension. TOML has no null, so in the
topology's ``repartition_topics`` a count of ``0`` means "no enforced count" (null in JSON); the
writer does the same. Times in a scenario are seconds of virtual time from the start of the run;
durations in the group timeouts keep Kafka's millisecond config names.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from assignor.config import AssignorConfig
from assignor.topology.data_form import topology_from_data, topology_to_data
from assignor.topology.model import Topology, TopologyError
from protocol.codec import LATEST_VERSION, SUPPORTED_VERSIONS
from protocol.ids import TaskId

#: The assignors a scenario may name: ours (the task assignor is chosen by the config's
#: ``internal.task.assignor.class``, these names set it), aiokafka's partition assignors and
#: Faust's (``simulator.faust_peer``).
OUR_ASSIGNORS = ("high_availability", "legacy_sticky", "fallback_prior")
PEER_ASSIGNORS = ("roundrobin", "sticky", "faust")
#: Peers whose result may depend on Python's hash seed (aiokafka's sticky iterates sets of
#: strings; Faust groups topics and members in sets of strings, though no run has shown a
#: difference yet): the command line pins it for them (``simulator.cli``), the sweep always does.
HASH_SEEDED = ("sticky", "faust")
AssignorName = Literal["high_availability", "legacy_sticky", "fallback_prior", "roundrobin",
                       "sticky", "faust"]


class ScenarioError(ValueError):
    """A scenario that cannot be used; the message names the file and the field at fault."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ProcessSpec(_Strict):
    """One application instance (Kafka's ``KafkaStreams``): its threads share one process id."""

    name: Annotated[str, Field(min_length=1, max_length=100)]
    threads: Annotated[int, Field(ge=1, le=64)] = 1
    #: ``client.tag.<key>`` values (rack-aware standby placement reads them)
    tags: dict[str, str] = Field(default_factory=dict)
    #: the rack (zone) this process runs in; a ``lose_tag`` event with key ``rack`` matches it
    rack: str | None = None
    #: ``host:port`` for interactive queries; ``None`` = no endpoint
    endpoint: str | None = None
    #: static membership: ``group.instance.id`` = the process name (threads get ``-<i>``)
    static: bool = False
    #: the newest subscription version this process's build speaks (version probing below it)
    protocol_version: int = LATEST_VERSION
    #: local state at start: ``"empty"``, ``"caught_up"`` (every stateful task current),
    #: ``"settled"`` (every task current until the process's first assignment, then only what
    #: it kept: :meth:`simulator.state.StateModel.add_process`), or task id -> records behind
    initial_state: (Literal["empty", "caught_up", "settled"]
                    | dict[str, Annotated[int, Field(ge=0)]]) = "empty"
    #: ``False``: the process exists in the scenario but only starts at a ``join`` event
    start: bool = True

    @field_validator("protocol_version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value not in SUPPORTED_VERSIONS:
            raise ValueError(f"must be one of {list(SUPPORTED_VERSIONS)}, not {value}")
        return value

    @field_validator("initial_state")
    @classmethod
    def _task_ids(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for task in value:
                try:
                    TaskId.parse(task)
                except ValueError as exc:
                    raise ValueError(f"{task!r} is not a task id like '1_0'") from exc
        return value

    @field_validator("endpoint")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        if value is not None:
            host, _, port = value.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"must be host:port, not {value!r}")
        return value


class GroupTimeouts(_Strict):
    """Consumer and broker group settings, under Kafka's names, in milliseconds."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    session_timeout_ms: Annotated[int, Field(ge=6000, le=1_800_000)] = Field(
        45_000, alias="session.timeout.ms")
    rebalance_timeout_ms: Annotated[int, Field(ge=1000)] = Field(
        300_000, alias="rebalance.timeout.ms")
    initial_rebalance_delay_ms: Annotated[int, Field(ge=0)] = Field(
        3000, alias="group.initial.rebalance.delay.ms")
    heartbeat_interval_ms: Annotated[int, Field(ge=100)] = Field(
        3000, alias="heartbeat.interval.ms")

    @model_validator(mode="after")
    def _heartbeat_below_session(self) -> GroupTimeouts:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat.interval.ms must be below session.timeout.ms")
        return self


class StateDynamics(_Strict):
    """How local state moves, in records and records per second of virtual time."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    #: records each stateful task writes to its changelog per second while it is processed
    write_rate: Annotated[float, Field(ge=0)] = 100.0
    #: records one stream thread restores per second (shared by the tasks it restores)
    restore_rate: Annotated[float, Field(ge=1)] = 10_000.0
    #: records a standby (or warm-up) stays behind its changelog's end at best
    standby_trail: Annotated[float, Field(ge=0)] = 100.0
    #: records in every stateful task's changelog when the run starts
    initial_records: Annotated[int, Field(ge=0)] = 100_000
    #: Kafka Streams' ``state.cleanup.delay.ms``: a process deletes the local state of a task it
    #: has not held for this long, checked every such delay (``simulator.state_cleaner``)
    state_cleanup_delay_ms: Annotated[int, Field(ge=1)] = Field(
        600_000, alias="state.cleanup.delay.ms")


class Bounds(_Strict):
    """Where a run stops if the group has not become stable: recorded as non-convergence."""

    #: virtual seconds after the last event of the timeline
    settle_s: Annotated[float, Field(gt=0)] = 3600.0
    #: generations in the whole run
    max_rebalances: Annotated[int, Field(ge=1)] = 200


class _EventBase(_Strict):
    #: virtual seconds from the start of the run
    at: Annotated[float, Field(ge=0)]


class JoinEvent(_EventBase):
    """A process (declared with ``start = false``, or one that left) starts and joins."""

    kind: Literal["join"] = "join"
    process: str


class LeaveEvent(_EventBase):
    """A process shuts down cleanly: LeaveGroup for dynamic members (static ones stay silent)."""

    kind: Literal["leave"] = "leave"
    process: str


class CrashEvent(_EventBase):
    """A process dies without a word; the session timeout finds it. Disk survives unless wiped."""

    kind: Literal["crash"] = "crash"
    process: str
    wipe: bool = False


class RestartEvent(_EventBase):
    """A process stops and comes back ``down_s`` later, with its disk or wiped.

    ``graceful``: a clean shutdown (LeaveGroup if dynamic) rather than a kill. A static member
    back within the session timeout takes its old place without a rebalance.
    """

    kind: Literal["restart"] = "restart"
    process: str
    down_s: Annotated[float, Field(ge=0)] = 10.0
    wipe: bool = False
    graceful: bool = True


class PauseEvent(_EventBase):
    """A process stalls (GC pause, frozen host) for ``duration_s``: no heartbeats, no
    processing, then it resumes with its memory and disk as they were."""

    kind: Literal["pause"] = "pause"
    process: str
    duration_s: Annotated[float, Field(gt=0)]


class UpgradeEvent(_EventBase):
    """A rolling-upgrade step: the process restarts with a build that speaks ``version``."""

    kind: Literal["upgrade"] = "upgrade"
    process: str
    version: int
    down_s: Annotated[float, Field(ge=0)] = 5.0

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value not in SUPPORTED_VERSIONS:
            raise ValueError(f"must be one of {list(SUPPORTED_VERSIONS)}, not {value}")
        return value


class AddPartitionsEvent(_EventBase):
    """Source topics grow (``topics``: topic -> new partition count, all at once, so both sides
    of a copartitioned join can grow together); internal topics are resized with them (as an
    operator running ``ensure_internal_topics`` would) and the group rebalances."""

    kind: Literal["add_partitions"] = "add_partitions"
    topics: dict[str, Annotated[int, Field(ge=1)]]


class LoseTagEvent(_EventBase):
    """Every process whose tag ``key`` (or rack, for key ``rack``) equals ``value`` crashes."""

    kind: Literal["lose_tag"] = "lose_tag"
    key: str
    value: str
    wipe: bool = False


class RejoinEvent(_EventBase):
    """A running process's consumers rejoin with nothing else changed.

    ``by = "member"``: its assignor asked (aiokafka's ``request_rejoin()``, what a follow-up or
    an endpoint change does). ``by = "coordinator"``: an operator removed its members from the
    group (Admin's ``removeMembersFromConsumerGroup``); the group rebalances without them, and
    they learn it from a heartbeat's ``UNKNOWN_MEMBER_ID`` and join again as new members."""

    kind: Literal["rejoin"] = "rejoin"
    process: str
    by: Literal["member", "coordinator"] = "member"


Event = Annotated[
    JoinEvent | LeaveEvent | CrashEvent | RestartEvent | PauseEvent | UpgradeEvent
    | AddPartitionsEvent | LoseTagEvent | RejoinEvent,
    Field(discriminator="kind"),
]
EVENT_KINDS = ("join", "leave", "crash", "restart", "pause", "upgrade", "add_partitions",
               "lose_tag", "rejoin")


class Scenario(_Strict):
    """Everything one replay needs; the same scenario gives the same rows."""

    name: Annotated[str, Field(min_length=1)]
    #: seeds the virtual clock (member ids) and everything random in the run
    seed: int = 0
    #: the topology in its data form (``assignor.topology.data_form``)
    topology: dict[str, Any]
    #: source topic -> partitions (repartition and changelog topics are derived)
    partitions: dict[str, Annotated[int, Field(ge=1)]]
    processes: Annotated[list[ProcessSpec], Field(min_length=1)]
    assignor: AssignorName = "high_availability"
    #: the AssignorConfig under Kafka Streams' names (``num.standby.replicas``...)
    config: dict[str, Any] = Field(default_factory=dict)
    timeouts: GroupTimeouts = Field(default_factory=GroupTimeouts)
    dynamics: StateDynamics = Field(default_factory=StateDynamics)
    bounds: Bounds = Field(default_factory=Bounds)
    events: list[Event] = Field(default_factory=list)
    #: for families: how the scenario was made (``{"family": ..., "params": ..., "seed": ...}``)
    origin: dict[str, Any] = Field(default_factory=dict)

    @field_validator("topology", mode="before")
    @classmethod
    def _topology_form(cls, value: Any) -> Any:
        if isinstance(value, Topology):
            return topology_to_data(value)
        if isinstance(value, Mapping) and isinstance(value.get("repartition_topics"), Mapping):
            value = dict(value)
            value["repartition_topics"] = {
                topic: (None if count == 0 else count)
                for topic, count in value["repartition_topics"].items()
            }
        return value

    @field_validator("topology")
    @classmethod
    def _valid_topology(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            return topology_to_data(topology_from_data(value))  # canonical: round-trips exactly
        except TopologyError as exc:
            raise ValueError(str(exc)) from exc

    @field_validator("config")
    @classmethod
    def _valid_config(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            AssignorConfig.model_validate(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"{where}: {first['msg']}") from exc
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        topology = self.build_topology()
        missing = sorted(topology.external_source_topics - set(self.partitions))
        if missing:
            raise ValueError(f"partitions: no count for source topic(s) {missing}")
        extra = sorted(set(self.partitions) - topology.external_source_topics)
        if extra:
            raise ValueError(f"partitions: {extra} are not source topics of the topology")
        names = [p.name for p in self.processes]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"processes: names {dupes} are used twice")
        known = set(names)
        for index, event in enumerate(self.events):
            process = getattr(event, "process", None)
            if process is not None and process not in known:
                raise ValueError(f"events[{index}].process: no process named {process!r}")
            if isinstance(event, AddPartitionsEvent):
                for topic in event.topics:
                    if topic not in self.partitions:
                        raise ValueError(f"events[{index}].topics: {topic!r} is not a source "
                                         "topic")
        return self

    # -- derived views -------------------------------------------------------------------------
    def build_topology(self) -> Topology:
        return topology_from_data(self.topology)

    def assignor_config(self, process: ProcessSpec | None = None) -> AssignorConfig:
        """The config a process runs with: the scenario's, its task assignor, its own tags."""
        entries = dict(self.config)
        if self.assignor in OUR_ASSIGNORS:
            entries["internal.task.assignor.class"] = self.assignor
        if process is not None and process.tags:
            entries["client_tags"] = dict(process.tags)
        return AssignorConfig.model_validate(entries)

    def process(self, name: str) -> ProcessSpec:
        for spec in self.processes:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def to_data(self) -> dict[str, Any]:
        """The plain form (JSON-ready; ``save`` writes it)."""
        data = self.model_dump(mode="json", by_alias=True)
        return data


# -- files --------------------------------------------------------------------------------------

def scenario_from_data(data: Any, *, source: str = "scenario") -> Scenario:
    """Validate plain data; a failure names ``source`` and the path of the first bad field."""
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ScenarioError(f"{source}: {_path(first['loc'])}: {first['msg']}") from exc


def load_scenario(path: str | Path) -> Scenario:
    """Read a ``.toml`` or ``.json`` scenario file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        if path.suffix == ".toml":
            data: Any = tomllib.loads(text)
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            raise ScenarioError(f"{path}: a scenario file ends in .toml or .json")
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ScenarioError(f"{path}: not valid {path.suffix[1:].upper()}: {exc}") from exc
    return scenario_from_data(data, source=str(path))


def save_scenario(scenario: Scenario, path: str | Path) -> None:
    """Write ``scenario`` as TOML or JSON (by extension); ``load_scenario`` reads it back."""
    path = Path(path)
    data = scenario.to_data()
    if path.suffix == ".json":
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    elif path.suffix == ".toml":
        topology = data["topology"]
        topology["repartition_topics"] = {
            topic: (0 if count is None else count)
            for topic, count in topology["repartition_topics"].items()
        }
        path.write_text(to_toml(data), encoding="utf-8")
    else:
        raise ScenarioError(f"{path}: a scenario file ends in .toml or .json")


def _path(loc: tuple[int | str, ...]) -> str:
    """pydantic's location as a path a person reads: ``events[2].restart.down_s``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "scenario"


# -- a TOML writer for the plain form (the standard library only reads TOML) ------------------

def to_toml(data: Mapping[str, Any]) -> str:
    """TOML for JSON-like data without nulls (``None`` entries are left out)."""
    lines: list[str] = []
    _toml_table(data, (), lines)
    return "\n".join(lines).strip() + "\n"


def _toml_table(data: Mapping[str, Any], prefix: tuple[str, ...], lines: list[str]) -> None:
    tables: list[tuple[str, Any]] = []
    for key, value in data.items():
        if value is None:
            continue
        if _is_table(value):
            tables.append((key, value))
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    for key, value in tables:
        path = (*prefix, key)
        dotted = ".".join(_toml_key(part) for part in path)
        if isinstance(value, list):
            for item in value:
                lines.extend(["", f"[[{dotted}]]"])
                _toml_table(item, path, lines)
        else:
            lines.extend(["", f"[{dotted}]"])
            _toml_table(value, path, lines)


def _is_table(value: Any) -> bool:
    """A mapping holding structure, or a list of mappings, goes in its own section."""
    if isinstance(value, Mapping):
        return any(isinstance(v, Mapping | list) for v in value.values())
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _toml_key(key: str) -> str:
    bare = key.replace("_", "").replace("-", "").isalnum() and key.isascii()
    return key if bare else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        items = (f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items() if v is not None)
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


__all__ = [
    "EVENT_KINDS",
    "HASH_SEEDED",
    "OUR_ASSIGNORS",
    "PEER_ASSIGNORS",
    "AddPartitionsEvent",
    "Bounds",
    "CrashEvent",
    "Event",
    "GroupTimeouts",
    "JoinEvent",
    "LeaveEvent",
    "LoseTagEvent",
    "PauseEvent",
    "ProcessSpec",
    "RejoinEvent",
    "RestartEvent",
    "Scenario",
    "ScenarioError",
    "StateDynamics",
    "UpgradeEvent",
    "load_scenario",
    "save_scenario",
    "scenario_from_data",
]
