"""Seeded scenario generators: ``(family, params, seed) -> Scenario``.

A family is a kind of operational story (a rolling restart, a scale-out, a crash) with parameters
a person sets (how many processes, threads, partitions, standbys) and a seed that picks the rest
(order of the restarts, which process crashes, small jitter in timing). The same family, params
and seed always give the same scenario, so a row of a sweep is reproduced by one command line
(``python -m simulator run --family F --seed S --param k=v``).

Every family uses the same application unless ``topology=simple``: the "shop" topology of the
README (orders JOIN customers, copartitioned, with a store; a repartition by region and a count),
so partition-level peers meet a copartitioned join.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from simulator.scenarios import Scenario, scenario_from_data

_SHOP_TOPOLOGY: dict[str, Any] = {
    "application_id": "shop",
    "subtopologies": [
        {"id": 0, "source_topics": ["shop-customers", "shop-orders"],
         "sink_topics": ["shop-by-region-repartition"], "stores": ["joined"],
         "changelog_topics": ["shop-joined-changelog"]},
        {"id": 1, "source_topics": ["shop-by-region-repartition"], "stores": ["counts"],
         "changelog_topics": ["shop-counts-changelog"]},
    ],
    "repartition_topics": {"shop-by-region-repartition": None},
    "copartition_groups": [["shop-customers", "shop-orders"]],
}
_SIMPLE_TOPOLOGY: dict[str, Any] = {
    "application_id": "app",
    "subtopologies": [{"id": 0, "source_topics": ["input"], "stores": ["store"],
                       "changelog_topics": ["app-store-changelog"]}],
}

#: Parameters every family understands, with their defaults.
COMMON_PARAMS: dict[str, Any] = {
    "processes": 4,
    "threads": 2,
    "partitions": 8,
    "standbys": 1,
    "assignor": "high_availability",
    "topology": "shop",
    "static": False,
    "recovery_lag": 10_000,
    "warmups": 2,
}


@dataclass(frozen=True, slots=True)
class Family:
    """A generator and the parameters it adds to :data:`COMMON_PARAMS`."""

    name: str
    summary: str
    params: Mapping[str, Any]
    build: Callable[[dict[str, Any], random.Random], tuple[list[dict[str, Any]],
                                                            list[dict[str, Any]]]]
    #: fewest processes the story makes sense with (:func:`generate` refuses fewer; the
    #: sweep's mixes draw no fewer)
    min_processes: int = 1


def _processes(p: dict[str, Any], count: int, *, start: bool = True, first: int = 0,
               state: str = "settled") -> list[dict[str, Any]]:
    return [
        {"name": f"p{i}", "threads": p["threads"], "static": bool(p["static"]),
         "initial_state": state, "start": start,
         "rack": f"zone-{'abc'[i % 3]}", "tags": {"zone": f"zone-{'abc'[i % 3]}"}}
        for i in range(first, first + count)
    ]


def _jitter(rng: random.Random, at: float) -> float:
    return round(at + rng.uniform(0.0, 5.0), 3)


def _rolling_restart(p: dict[str, Any], rng: random.Random) -> tuple[list[Any], list[Any]]:
    processes = _processes(p, p["processes"])
    order = list(range(p["processes"]))
    rng.shuffle(order)
    events = [
        {"kind": "restart", "at": _jitter(rng, 60.0 + step * p["gap_s"]), "process": f"p{i}",
         "down_s": p["down_s"], "wipe": bool(p["wipe"])}
        for step, i in enumerate(order)
    ]
    return processes, events


def _scale_out(p: dict[str, Any], rng: random.Random) -> tuple[list[Any], list[Any]]:
    processes = _processes(p, p["processes"])
    processes += _processes(p, p["add"], start=False, first=p["processes"], state="empty")
    events = [
        {"kind": "join", "at": _jitter(rng, 60.0 + step * p["gap_s"]), "process": f"p{i}"}
        for step, i in enumerate(range(p["processes"], p["processes"] + p["add"]))
    ]
    return processes, events


def _scale_in(p: dict[str, Any], rng: random.Random) -> tuple[list[Any], list[Any]]:
    processes = _processes(p, p["processes"])
    leaving = rng.sample(range(p["processes"]), min(p["remove"], p["processes"] - 1))
    events = [
        {"kind": "leave", "at": _jitter(rng, 60.0 + step * p["gap_s"]), "process": f"p{i}"}
        for step, i in enumerate(leaving)
    ]
    return processes, events


def _crash_recover(p: dict[str, Any], rng: random.Random) -> tuple[list[Any], list[Any]]:
    processes = _processes(p, p["processes"])
    victims = rng.sample(range(p["processes"]), min(p["crash"], p["processes"]))
    events = [
        {"kind": "restart", "at": _jitter(rng, 60.0), "process": f"p{i}",
         "down_s": p["down_s"], "wipe": bool(p["wipe"]), "graceful": False}
        for i in victims
    ]
    return processes, events


def _flapping(p: dict[str, Any], rng: random.Random) -> tuple[list[Any], list[Any]]:
    processes = _processes(p, p["processes"])
    victim = f"p{rng.randrange(p['processes'])}"
    events = [
        {"kind": "pause", "at": _jitter(rng, 60.0 + k * p["gap_s"]), "process": victim,
         "duration_s": p["pause_s"]}
        for k in range(p["flaps"])
    ]
    return processes, events


def _rolling_upgrade(p: dict[str, Any], rng: random.Random) -> tuple[list[Any], list[Any]]:
    processes = _processes(p, p["processes"])
    for spec in processes:
        spec["protocol_version"] = p["from_version"]
    order = list(range(p["processes"]))
    rng.shuffle(order)
    events = [
        {"kind": "upgrade", "at": _jitter(rng, 60.0 + step * p["gap_s"]), "process": f"p{i}",
         "version": p["to_version"], "down_s": p["down_s"]}
        for step, i in enumerate(order)
    ]
    return processes, events


def _partitions_added(p: dict[str, Any], rng: random.Random) -> tuple[list[Any], list[Any]]:
    processes = _processes(p, p["processes"])
    topics = ["shop-orders", "shop-customers"] if p["topology"] == "shop" else ["input"]
    at = _jitter(rng, 60.0)
    events = [{"kind": "add_partitions", "at": at,
               "topics": {t: p["to_partitions"] for t in topics}}]
    return processes, events


def _rack_loss(p: dict[str, Any], rng: random.Random) -> tuple[list[Any], list[Any]]:
    processes = _processes(p, p["processes"])
    zone = f"zone-{rng.choice('abc'[: min(3, p['processes'])])}"
    return processes, [{"kind": "lose_tag", "at": _jitter(rng, 60.0), "key": "zone",
                        "value": zone}]


def _skewed(p: dict[str, Any], rng: random.Random) -> tuple[list[Any], list[Any]]:
    processes = _processes(p, p["processes"])
    for spec in processes:
        spec["threads"] = rng.randint(1, p["max_threads"])
    victim = f"p{rng.randrange(p['processes'])}"
    events = [{"kind": "restart", "at": _jitter(rng, 60.0), "process": victim,
               "down_s": p["down_s"], "graceful": False}]
    return processes, events


def _cold_start(p: dict[str, Any], rng: random.Random) -> tuple[list[Any], list[Any]]:
    return _processes(p, p["processes"], state="empty"), []


def harness_topology(stateless: int, stateful: int, partitions: int = 5
                     ) -> tuple[dict[str, Any], dict[str, int]]:
    """Kafka's ``TaskAssignorConvergenceTest`` harness as a topology: stateless subtopologies
    first, then stateful ones, each with ``min(remaining, partitions)`` tasks of its own topic,
    so there are exactly ``stateless`` + ``stateful`` tasks."""
    subtopologies: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for kind, total in (("stateless", stateless), ("stateful", stateful)):
        remaining = total
        while remaining > 0:
            index = len(subtopologies)
            size = min(remaining, partitions)
            topic = f"topic_{index}"
            entry: dict[str, Any] = {"id": index, "source_topics": [topic]}
            if kind == "stateful":
                entry.update(stores=[f"store{index}"],
                             changelog_topics=[f"harness-store{index}-changelog"])
            subtopologies.append(entry)
            counts[topic] = size
            remaining -= size
    return {"application_id": "harness", "subtopologies": subtopologies}, counts


def _perturbation(p: dict[str, Any], rng: random.Random) -> tuple[list[Any], list[Any]]:
    """Kafka's ``runRandomizedScenario``: random sizes, then random drops and additions."""
    initial = p["processes"]
    processes = [
        {"name": f"p{i}", "threads": 1, "initial_state": "caught_up", "start": i < initial}
        for i in range(initial + p["events"] * initial)
    ]
    up = list(range(initial))
    down: list[int] = []
    fresh = initial
    events: list[dict[str, Any]] = []
    for step in range(p["events"]):
        at = 60.0 + step * p["gap_s"]
        if rng.randrange(2) == 0 and len(up) > 1:
            for i in rng.sample(up, rng.randrange(min(initial, len(up)))):
                up.remove(i)
                down.append(i)
                events.append({"kind": "leave", "at": at, "process": f"p{i}"})
        else:
            for _ in range(rng.randrange(initial)):
                if down and rng.randrange(2) == 0:
                    i = down.pop(rng.randrange(len(down)))
                else:
                    i, fresh = fresh, fresh + 1
                up.append(i)
                events.append({"kind": "join", "at": at, "process": f"p{i}"})
    return processes, events


FAMILIES: dict[str, Family] = {
    f.name: f for f in (
        Family("rolling_restart", "every process restarts in turn (shuffled), with its disk",
               {"gap_s": 60.0, "down_s": 20.0, "wipe": False}, _rolling_restart),
        Family("scale_out", "new processes with empty disks join one by one",
               {"add": 2, "gap_s": 30.0}, _scale_out),
        Family("scale_in", "random processes leave cleanly one by one",
               {"remove": 1, "gap_s": 30.0}, _scale_in),
        Family("crash_recover", "random processes are killed and come back after down_s",
               {"crash": 1, "down_s": 120.0, "wipe": False}, _crash_recover),
        Family("flapping", "one process stalls longer than the session timeout, again and again",
               {"flaps": 3, "pause_s": 60.0, "gap_s": 120.0}, _flapping),
        Family("rolling_upgrade", "every process restarts on a newer protocol version",
               {"from_version": 1, "to_version": 3, "gap_s": 60.0, "down_s": 10.0},
               _rolling_upgrade),
        Family("partitions_added", "the source topics grow to to_partitions",
               {"to_partitions": 12}, _partitions_added),
        # one process is one zone: losing it would lose the whole group, a total outage with
        # nothing left to rebalance (it ran to the settle bound as a "non-convergence", task
        # unavailability = every task for the whole hour, for every assignor alike)
        Family("rack_loss", "every process of one zone crashes at once (standbys tag-aware); "
               "at least 2 processes, so that one survives", {"processes": 6}, _rack_loss,
               min_processes=2),
        Family("skewed", "processes of 1 to max_threads threads; one is killed and returns",
               {"max_threads": 16, "partitions": 32, "down_s": 60.0}, _skewed),
        Family("cold_start", "every process starts at once with an empty disk",
               {"processes": 8}, _cold_start),
        Family("perturbation", "Kafka's randomized convergence scenario: harness topology, "
               "random drops and additions (acceptable.recovery.lag 100, changelogs static)",
               {"stateless": 5, "stateful": 5, "events": 3, "gap_s": 600.0, "warmups": 2,
                "recovery_lag": 100, "random_sizes": True}, _perturbation),
    )
}


class FamilyError(ValueError):
    """An unknown family or parameter, or a value of the wrong type."""


def family_params(name: str) -> dict[str, Any]:
    """Every parameter of family ``name`` with its default."""
    family = _family(name)
    params = dict(COMMON_PARAMS)
    params.update(family.params)
    return params


def parse_params(name: str, given: Mapping[str, str]) -> dict[str, Any]:
    """``k=v`` strings from the command line, typed like the parameter's default."""
    defaults = family_params(name)
    parsed: dict[str, Any] = {}
    for key, text in given.items():
        if key not in defaults:
            raise FamilyError(f"family {name} has no parameter {key!r}; it has "
                              f"{', '.join(sorted(defaults))}")
        default = defaults[key]
        try:
            if isinstance(default, bool):
                if text.lower() not in ("true", "false", "1", "0"):
                    raise ValueError(text)
                parsed[key] = text.lower() in ("true", "1")
            elif isinstance(default, int):
                parsed[key] = int(text)
            elif isinstance(default, float):
                parsed[key] = float(text)
            else:
                parsed[key] = text
        except ValueError as exc:
            raise FamilyError(f"--param {key}={text}: expected a {type(default).__name__}") \
                from exc
    return parsed


def generate(name: str, params: Mapping[str, Any] | None = None, seed: int = 0) -> Scenario:
    """The scenario of family ``name`` with ``params`` (defaults for the rest) and ``seed``."""
    family = _family(name)
    defaults = family_params(name)
    unknown = sorted(set(params or {}) - set(defaults))
    if unknown:
        raise FamilyError(f"family {name} has no parameter(s) {unknown}")
    given = dict(params or {})
    p = {**defaults, **given}
    if p["processes"] < family.min_processes:
        raise FamilyError(f"family {name} needs at least {family.min_processes} processes, "
                          f"got processes={p['processes']}")
    rng = random.Random(f"{name}\x00{seed}")
    if name == "perturbation" and p["random_sizes"]:  # Kafka's draws, in Kafka's order
        p["processes"] = rng.randrange(10) + 1
        p["stateless"], p["stateful"] = rng.randrange(10) + 1, rng.randrange(10) + 1
        p["warmups"] = rng.randrange(p["stateful"]) + 1
        p["standbys"] = rng.randrange(p["processes"] + 1)
        p["events"] = rng.randrange(10) + 1
    processes, events = family.build(p, rng)
    shop = p["topology"] == "shop"
    if p["topology"] not in ("shop", "simple"):  # checked after build: families read it
        raise FamilyError(f"--param topology={p['topology']}: expected shop or simple")
    topics = ["shop-customers", "shop-orders"] if shop else ["input"]
    config: dict[str, Any] = {
        "num.standby.replicas": p["standbys"],
        "acceptable.recovery.lag": p["recovery_lag"],
        "max.warmup.replicas": p["warmups"],
        "probing.rebalance.interval.ms": 60_000,
    }
    if name == "rack_loss":
        config["rack.aware.assignment.tags"] = ["zone"]
    topology = _SHOP_TOPOLOGY if shop else _SIMPLE_TOPOLOGY
    partitions = {t: p["partitions"] for t in topics}
    dynamics: dict[str, Any] = {}
    if name == "perturbation":
        topology, partitions = harness_topology(p["stateless"], p["stateful"])
        # Kafka's harness: static end offsets (150000 per task), warm-ups catch up between
        # two probing rebalances
        dynamics = {"write_rate": 0.0, "initial_records": 150_000, "restore_rate": 100_000.0}
    data = {
        "name": f"{name}-{seed}",
        "seed": seed,
        "topology": topology,
        "partitions": partitions,
        "dynamics": dynamics,
        "processes": processes,
        "assignor": p["assignor"],
        "config": config,
        "events": events,
        "origin": {"family": name, "params": given, "seed": seed},
    }
    return scenario_from_data(data, source=f"family {name}")


def _family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise FamilyError(f"no family {name!r}; families: {', '.join(FAMILIES)}") from None


__all__ = ["COMMON_PARAMS", "FAMILIES", "Family", "FamilyError", "family_params", "generate",
           "parse_params"]
