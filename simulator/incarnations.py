"""How a simulated process's ``StreamsProcess`` is built at each start (an *incarnation*).

What a real application hands Kafka Streams at start-up, here taken from the scenario: its
process id (derived from ``group.instance.id`` for a static process, as the adapter does; else
one per disk, since Kafka Streams keeps it in the state directory and a wiped disk gets a new
one), its validated config, its endpoint and protocol version, and the world's providers (local
state, changelog end offsets, the virtual clock). A group starts hundreds of processes, and most
share one config: it is validated once per distinct set of client tags, not once per process.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Mapping

from assignor.adapter.process import EndOffsetsReader, StreamsProcess, derive_process_id
from assignor.config import AssignorConfig
from assignor.topology.model import Topology
from protocol.codec import Codec
from protocol.ids import HostInfo, ProcessId, TaskId, trusted_model
from simulator.hosting import SimulatedProcess
from simulator.scenarios import ProcessSpec, Scenario

#: Namespace of the process ids of dynamic simulated processes (static ones use the adapter's).
SIM_NAMESPACE = uuid.UUID("0b5e6c1e-7d4a-5c57-8a8e-51a1c0de0013")
_NAMESPACE_BYTES = SIM_NAMESPACE.bytes
_UUID_NEW = object.__new__
_UUID_SET = object.__setattr__
#: :func:`sim_uuid5` by name, kept (a UUID is immutable): a bench or a sweep's worker replays the
#: same seed's processes again and again, and the SHA-1 and bit work of 200 ids was about 0.4 ms
#: of a cold start's engine time. Emptied when full.
_KEPT_UUIDS: dict[str, uuid.UUID] = {}
_KEPT_UUIDS_LIMIT = 65_536


def sim_uuid5(name: str) -> uuid.UUID:
    """``uuid.uuid5(SIM_NAMESPACE, name)``: the same SHA-1, version and variant bits, stored as
    ``uuid.UUID.__init__`` stores them, without its argument checks or the import ``uuid5`` does
    per call (a cold start of 200 processes spent more on its process ids than on their
    ``StreamsProcess`` objects)."""
    value = int.from_bytes(hashlib.sha1(_NAMESPACE_BYTES + name.encode()).digest()[:16], "big")
    value = (value & ~(0xC000 << 48)) | (0x8000 << 48)  # RFC 4122 variant
    value = (value & ~(0xF000 << 64)) | (5 << 76)  # version 5
    made: uuid.UUID = _UUID_NEW(uuid.UUID)
    _UUID_SET(made, "int", value)
    _UUID_SET(made, "is_safe", uuid.SafeUUID.unknown)
    return made


class Incarnations:
    """Builds the ``StreamsProcess`` of each start of each process of one replay."""

    def __init__(
        self,
        scenario: Scenario,
        topology: Topology,
        *,
        offset_sums: Callable[[str], Mapping[TaskId, int]],
        read_end_offsets: EndOffsetsReader,
        clock_ms: Callable[[], int],
    ) -> None:
        self._scenario = scenario
        self._topology = topology
        self._offset_sums = offset_sums
        self._read_end_offsets = read_end_offsets
        self._clock_ms = clock_ms
        self._configs: dict[tuple[tuple[str, str], ...], AssignorConfig] = {}

    def process_id(self, sim: SimulatedProcess) -> ProcessId:
        application = self._topology.application_id
        if sim.spec.static:  # the adapter's ``derive_process_id``, its UUID kept by name too
            # (a rolling restart of 100 static processes derived 200: uuid5 and validation)
            key = f"\x01{application}\x00{sim.name}"
        else:
            key = f"{self._scenario.seed}\x00{sim.name}\x00{sim.disk_generation}"
        made = _KEPT_UUIDS.get(key)
        if made is None:
            if len(_KEPT_UUIDS) >= _KEPT_UUIDS_LIMIT:
                _KEPT_UUIDS.clear()
            made = _KEPT_UUIDS[key] = (
                derive_process_id(application, sim.name).uuid
                if sim.spec.static else sim_uuid5(key))
        # a valid UUID by construction: the decoder's trusted path, without pydantic's checks (a
        # ProcessId of its own per process: it keeps its hash and sort key once computed)
        return trusted_model(ProcessId, {"uuid": made})

    def config(self, spec: ProcessSpec) -> AssignorConfig:
        """The process's validated config (frozen), shared by the processes whose client tags
        are the same: validating it per process cost more at a cold start than ``assign()``."""
        key = tuple(spec.tags.items())
        config = self._configs.get(key)
        if config is None:
            config = self._configs[key] = self._scenario.assignor_config(spec)
        return config

    def build(self, sim: SimulatedProcess) -> StreamsProcess:
        """A fresh ``StreamsProcess`` for ``sim`` as it is now (version, disk generation)."""
        spec, name = sim.spec, sim.name
        endpoint = None
        if spec.endpoint is not None:
            host, _, port = spec.endpoint.rpartition(":")
            endpoint = HostInfo(host, int(port))
        offset_sums = self._offset_sums
        return StreamsProcess(
            self._topology,
            self.config(spec),
            process_id=self.process_id(sim),
            group_instance_id=name if spec.static else None,
            endpoint=endpoint,
            state=lambda: offset_sums(name),
            codec=Codec(sim.version),
            end_offsets_reader=self._read_end_offsets,
            clock_ms=self._clock_ms,
        )


__all__ = ["SIM_NAMESPACE", "Incarnations", "sim_uuid5"]
