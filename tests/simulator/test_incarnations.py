"""The process ids of dynamic simulated processes: what ``uuid.uuid5`` gives, built faster."""

from __future__ import annotations

import random
import uuid

from assignor.adapter.process import derive_process_id
from protocol.ids import ProcessId
from simulator.families import generate
from simulator.incarnations import SIM_NAMESPACE, Incarnations, sim_uuid5


def test_sim_uuid5_is_the_uuid_modules_uuid5() -> None:
    rng = random.Random(5)
    names = ["", "a", "0\x00p-0\x000", "\u00e9\U0001f600"]
    names += ["".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randrange(40)))
              for _ in range(2000)]
    for name in names:
        made, expected = sim_uuid5(name), uuid.uuid5(SIM_NAMESPACE, name)
        assert made == expected and str(made) == str(expected) and hash(made) == hash(expected)
        assert (made.version, made.variant, made.is_safe) == (5, uuid.RFC_4122,
                                                             uuid.SafeUUID.unknown)


def test_a_dynamic_process_id_equals_the_validated_one() -> None:
    scenario = generate("cold_start", {"processes": 3}, seed=4)
    incarnations = Incarnations(scenario, scenario.build_topology(), offset_sums=lambda _: {},
                                read_end_offsets=None,  # type: ignore[arg-type]
                                clock_ms=lambda: 0)

    class Sim:  # the two fields process_id reads
        def __init__(self, spec: object) -> None:
            self.spec, self.name, self.disk_generation = spec, spec.name, 2  # type: ignore[attr-defined]

    for spec in scenario.processes:
        made = incarnations.process_id(Sim(spec))  # type: ignore[arg-type]
        key = f"{scenario.seed}\x00{spec.name}\x002"
        expected = ProcessId(uuid.uuid5(SIM_NAMESPACE, key))
        assert made == expected and hash(made) == hash(expected)
        assert made.model_dump() == expected.model_dump() and made.uuid.int == expected.uuid.int
        again = incarnations.process_id(Sim(spec))  # type: ignore[arg-type]
        # the UUID is kept by name; the ProcessId (which keeps its hash once computed) is new
        assert again == made and again is not made and again.uuid is made.uuid


def test_a_static_process_id_is_the_adapters_derived_one() -> None:
    scenario = generate("rolling_restart", {"processes": 3, "static": True}, seed=4)
    topology = scenario.build_topology()
    incarnations = Incarnations(scenario, topology, offset_sums=lambda _: {},
                                read_end_offsets=None,  # type: ignore[arg-type]
                                clock_ms=lambda: 0)

    class Sim:  # the fields process_id reads
        def __init__(self, spec: object) -> None:
            self.spec, self.name, self.disk_generation = spec, spec.name, 0  # type: ignore[attr-defined]

    for spec in scenario.processes:
        assert spec.static
        expected = derive_process_id(topology.application_id, spec.name)
        for _ in range(2):  # derived, then kept
            made = incarnations.process_id(Sim(spec))  # type: ignore[arg-type]
            assert made == expected and hash(made) == hash(expected)
            assert made.model_dump() == expected.model_dump()
