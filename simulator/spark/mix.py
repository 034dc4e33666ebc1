"""Mixes: which scenarios a sweep runs, drawn from the engine's families with one seed.

A mix turns ``(name, families, scenarios, seed)`` into *cases*: ``(family, params, seed)``
triples. Every case runs once with every assignor of the sweep (a *job*), so each assignor meets
exactly the same scenarios and rows out = cases x assignors. The same arguments always give the
same cases (``random.Random`` seeded with a string, no hash of anything), on any machine.

Parameters are set only where the family declares them (:func:`simulator.families.family_params`),
so a family the engine adds later slots in with its own defaults for what this module does not
know. Sizes follow a long tail (:data:`SIZE_TAIL`), as real groups do: most are small, a few
reach ``max_processes``.
Families whose timeline has one event per process (the rolling ones) cost the square of the group
size to replay, so their groups are capped at ``max_rolling_processes``; the cap is part of the
mix's documented definition (:data:`MIXES`), not a silent cut.

No pyspark here: the driver builds the cases before Spark starts.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from simulator.families import FAMILIES, family_params
from simulator.scenarios import OUR_ASSIGNORS, PEER_ASSIGNORS

#: Families whose timeline has one event per process: replay cost grows with the square of size.
ROLLING_FAMILIES = frozenset({"rolling_restart", "rolling_upgrade"})


class MixError(ValueError):
    """An unknown mix, family or assignor, or a count that cannot be met."""


@dataclass(frozen=True, slots=True)
class Mix:
    """A documented distribution of scenarios."""

    name: str
    summary: str
    #: cases when ``--scenarios`` is not given
    scenarios: int
    max_processes: int
    max_rolling_processes: int
    max_partitions: int
    #: most consumers (processes x threads) a drawn group has: threads are cut to fit
    max_members: int
    #: (processes, threads, partitions) groups added once per family where the family allows it
    large_groups: tuple[tuple[int, int, int], ...] = ()
    #: the mix whose draws this one's cases repeat (same seed, same cases), before its groups
    draws_as: str | None = None


MIXES: dict[str, Mix] = {
    m.name: m for m in (
        Mix("default",
            "every family and assignor; groups of 1 to 200 processes (rolling families up to "
            "24), 1-4 threads (at most 400 consumers; skewed draws 1-16 per process, fewer in "
            "big groups), standbys 0-2, the shop topology (2 tasks per partition)",
            scenarios=2000, max_processes=200, max_rolling_processes=24, max_partitions=256,
            max_members=400),
        Mix("large",
            "the default mix (the same cases) plus, for every family that is not rolling and "
            "does not draw its own sizes, one group of 250 processes x 4 threads (1,000 "
            "members; skewed: 1-7 threads, 4 on average) and 5,000 partitions (10,000 tasks)",
            scenarios=2000, max_processes=200, max_rolling_processes=24, max_partitions=256,
            max_members=400, large_groups=((250, 4, 5000),), draws_as="default"),
        Mix("medium",
            "groups of 1 to 24 processes (rolling families up to 8), 1-4 threads: replays of "
            "tenths of a second, so a sweep measures replays rather than Spark's per-row traffic "
            "(make bench's local[1] / local[2] scaling)",
            scenarios=200, max_processes=24, max_rolling_processes=8, max_partitions=64,
            max_members=96),
        Mix("smoke",
            "small groups only (1-6 processes, rolling families up to 4): the tests' and a "
            "quick look's mix",
            scenarios=24, max_processes=6, max_rolling_processes=4, max_partitions=16,
            max_members=24),
    )
}


@dataclass(frozen=True, slots=True)
class Case:
    """One scenario of the mix, before an assignor is chosen."""

    case_id: int
    family: str
    params: dict[str, Any]
    seed: int

    @property
    def params_json(self) -> str:
        """The parameters as canonical JSON (sorted keys): how the tables store them."""
        return json.dumps(self.params, sort_keys=True, separators=(",", ":"))

    @property
    def cost(self) -> int:
        """:func:`cost` of this case."""
        return cost(self.family, self.params)


#: Tasks one unit of :func:`cost` covers: every group of the default mix has at most 1,024
#: (the shop topology's 2 per partition, at most 512 partitions once some are added), so their
#: costs are members x rebalances alone.
PRICED_TASKS = 1024


def cost(family: str, params: dict[str, Any]) -> int:
    """A rough replay cost (members x rebalances, times each started :data:`PRICED_TASKS` of the
    shop topology's tasks): big cases are scheduled first, and the progress bar's time left is
    reckoned in it (the biggest-first order makes a count of replays lie).

    The tasks count only past the default mix's: the ``large`` mix's groups of 1,000 members
    hold 10,000 tasks, and priced as members x rebalances their replays took about 1.9 ms a
    unit against 0.1-0.3 ms in the default mix (a high-availability scale-out: 154 s for
    82,500), so a batch budgeted with them held the two costliest (some 375 s on one core)
    and the progress bar, which moves when a batch ends, sat at 0 for minutes.
    """
    processes = int(params.get("processes", 1))
    members = processes * int(params.get("threads", 1))
    if "max_threads" in params:  # skewed: 1..max_threads threads per process
        members = processes * (1 + int(params["max_threads"])) // 2
    tasks = 2 * max(int(params.get("partitions", 1)), int(params.get("to_partitions", 0)))
    scale = max(1, tasks // PRICED_TASKS)
    if family in ROLLING_FAMILIES:
        return members * (processes + 2) * scale
    steps = sum(int(params.get(key, 0)) for key in ("add", "remove", "flaps"))
    return members * (steps + 4) * scale


#: A job as the executors receive it: (case_id, family, params JSON, seed, assignor).
Job = tuple[int, str, str, int, str]

#: Most processes a scale-out adds or a scale-in removes, one by one: each step is a rebalance
#: and its probing rounds for the whole group, so a quarter of 200 processes would replay 50
#: membership changes (a minute of replay for one job); operators step a group up or down by a
#: few instances at a time.
MAX_STEPS = 8

#: Replay cost of each assignor relative to :func:`cost`, in tenths: seconds per unit of cost
#: summed over the 2,000 replays of ``sweep --scenarios 400`` (seed 0, every family, groups up
#: to 200 processes; round-robin pinned at 5): sticky 15, legacy sticky 20, Faust 68 and
#: high availability 76, whose big groups run dozens of probing rounds. The big groups carry
#: these sums, and they are what the order needs right: an earlier sample of small groups only
#: (1-65 processes) had put Faust at the default 10 and high availability at 22, so their 200-
#: process replays were ranked as cheap as others' of a third of the time. ``fallback_prior``
#: stays five times high availability, as measured before (it runs into the scenario's bound).
ASSIGNOR_WEIGHT: dict[str, int] = {
    "roundrobin": 5, "sticky": 15, "legacy_sticky": 20, "faust": 70, "high_availability": 75,
    "fallback_prior": 375,
}


def assignor_cost(case_cost: int, assignor: str) -> int:
    """A case's :func:`cost` with one assignor (:data:`ASSIGNOR_WEIGHT`; unknown ones as 1)."""
    return max(1, case_cost * ASSIGNOR_WEIGHT.get(assignor, 10) // 10)


def job_cost(job: Job) -> int:
    """:func:`cost` of a job with its assignor's weight (the executors count it as they
    finish; the driver orders and batches the jobs by it)."""
    return assignor_cost(cost(job[1], json.loads(job[2])), job[4])


def all_assignors() -> tuple[str, ...]:
    """Every assignor the engine can run: ours, then the peers."""
    return tuple(OUR_ASSIGNORS) + tuple(PEER_ASSIGNORS)


#: Assignors a sweep runs unless ``--assignors`` names others: not ``fallback_prior``. It is
#: Kafka's assignor for a leader that could not read changelog end offsets; it asks for a
#: probing rebalance every time and so never converges on its own (Kafka's behaviour), which
#: makes each of its replays run into the scenario's bound: ~60 rebalances where the others need
#: 2-10, 70-83 % of a sweep's replay time, for a row that says the same thing every time.
OPT_IN_ASSIGNORS: tuple[str, ...] = ("fallback_prior",)


def default_assignors() -> tuple[str, ...]:
    """:func:`all_assignors` without :data:`OPT_IN_ASSIGNORS`."""
    return tuple(a for a in all_assignors() if a not in OPT_IN_ASSIGNORS)


def resolve(mix: str, families: Sequence[str] | None,
            assignors: Sequence[str] | None) -> tuple[Mix, tuple[str, ...], tuple[str, ...]]:
    """Check names against the engine's; ``None`` or empty means all of them."""
    if mix not in MIXES:
        raise MixError(f"no mix {mix!r}; mixes: {', '.join(MIXES)}")
    chosen_families = tuple(families) if families else tuple(FAMILIES)
    unknown = [f for f in chosen_families if f not in FAMILIES]
    if unknown:
        raise MixError(f"no family {unknown[0]!r}; families: {', '.join(FAMILIES)}")
    chosen_assignors = tuple(assignors) if assignors else default_assignors()
    unknown = [a for a in chosen_assignors if a not in all_assignors()]
    if unknown:
        raise MixError(f"no assignor {unknown[0]!r}; assignors: {', '.join(all_assignors())}")
    for name, values in (("families", chosen_families), ("assignors", chosen_assignors)):
        if len(set(values)) != len(values):
            raise MixError(f"--{name} names one twice: {', '.join(values)}")
    return MIXES[mix], chosen_families, chosen_assignors


#: The size law of a mix's groups: (share of cases, lowest, highest processes), tried in order;
#: the rest are log-uniform in 1..20. Most real groups are small, and a replay's cost grows
#: faster than its group: a 100-200 process replay costs as much as a few hundred small ones
#: (each of its rebalances runs a few hundred members, and the high-availability assignor
#: needs dozens of probing rounds to move hundreds of tasks two warm-ups at a time), so the big
#: end is there to be seen, not to weigh: 0.5 % above 100 and 5 % of 21-100, beside the first
#: case of each family, pinned at the top.
SIZE_TAIL: tuple[tuple[float, int, int], ...] = ((0.005, 101, 10**9), (0.05, 21, 100))


def _long_tail(rng: random.Random, top: int) -> int:
    """1..top: 0.5 % above 100 processes, 5 % 21-100, the rest log-uniform 1-20."""
    draw = rng.random()
    for share, low, high in SIZE_TAIL:
        if draw < share and low <= top:
            return rng.randint(low, min(high, top))
        draw -= share
    small = min(20, top)
    return max(1, min(small, int(math.exp(rng.uniform(0.0, math.log(small + 1))))))


def _params(mix: Mix, family: str, rng: random.Random, index: int,
            size: tuple[int, int, int] | None) -> dict[str, Any]:
    """The parameters of one case: common ones, then the family's own where it has them."""
    known = family_params(family)
    top = mix.max_rolling_processes if family in ROLLING_FAMILIES else mix.max_processes
    if size is not None:
        processes, threads, partitions = size
    else:
        # the first two cases of each family pin the ends of the size range
        processes = {0: 1, 1: top}.get(index, _long_tail(rng, top))
        threads = min(rng.choice((1, 1, 2, 2, 4)), max(1, mix.max_members // processes))
        partitions = max(1, min(mix.max_partitions, round(processes * rng.uniform(1.0, 4.0))))
    draws: dict[str, Any] = {
        "processes": processes,
        "threads": threads,
        "partitions": partitions,
        "standbys": index % 3,
        "static": rng.random() < 0.5,
        "warmups": rng.choice((1, 2, 4)),
        "recovery_lag": rng.choice((1_000, 10_000, 100_000)),
        # family-specific, each only where the family declares it
        "add": rng.randint(1, max(1, min(MAX_STEPS, processes // 4))),
        "remove": rng.randint(1, max(1, min(MAX_STEPS, processes // 4))),
        "crash": rng.randint(1, max(1, processes // 5)),
        "flaps": rng.randint(2, 4),
        "wipe": rng.random() < 0.3,
        "to_partitions": partitions + rng.randint(1, max(1, partitions)),
        # (a large group's own threads are its average: 1..2 x threads - 1 per process)
        "max_threads": (_skewed_thread_ceiling(mix, processes) if size is None
                        else 2 * threads - 1),
    }
    # a family's own minimum (rack_loss: 2) lifts the process count once every draw is made:
    # later draws depend on the count (randint's ranges), so lifting it earlier would move the
    # generator and change every case after it
    draws["processes"] = max(FAMILIES[family].min_processes, processes)
    return {key: value for key, value in draws.items() if key in known}


def _skewed_thread_ceiling(mix: Mix, processes: int) -> int:
    """The ``skewed`` family's top of 1..n threads per process, so that its groups average at
    most ``max_members`` consumers like every other family's (n = 2 x max_members / processes - 1,
    at most 16 and at least 1): with 16 for every size, 200 processes drew up to 1,666 consumers,
    and Faust, whose every subscription carries the whole group's changelog distribution (283 KB
    each there), spent 130-171 s on one such replay, a quarter of the whole mix's replay time."""
    return max(1, min(16, 2 * mix.max_members // processes - 1))


def build_cases(mix: Mix, families: Sequence[str], scenarios: int, seed: int) -> list[Case]:
    """``scenarios`` cases, families in turn, every draw from one seeded generator (the one
    of ``mix.draws_as``, if named: the ``large`` mix's cases are the default mix's, then its
    groups). A family that draws its own group sizes (``perturbation``, Kafka's harness
    family) gets no large group: it would not be one."""
    if scenarios < len(families):
        raise MixError(f"--scenarios {scenarios} cannot cover {len(families)} families")
    rng = random.Random(f"streams-assignor mix\x00{mix.draws_as or mix.name}\x00{seed}")
    cases: list[Case] = []
    for case_id in range(scenarios):
        family = families[case_id % len(families)]
        params = _params(mix, family, rng, case_id // len(families), None)
        cases.append(Case(case_id, family, params, rng.randrange(2**31)))
    for size in mix.large_groups:
        for family in families:
            if family in ROLLING_FAMILIES or family_params(family).get("random_sizes"):
                continue
            params = _params(mix, family, rng, 2, size)
            cases.append(Case(len(cases), family, params, rng.randrange(2**31)))
    return cases


def jobs(cases: Sequence[Case], assignors: Sequence[str]) -> list[Job]:
    """Every case with every assignor, most expensive first (:func:`job_cost`), so the long
    ones do not come last and leave one core working alone at the end."""
    weighted = [(assignor_cost(c.cost, a), c.case_id, index, c, a)
                for c in cases for index, a in enumerate(assignors)]
    weighted.sort(key=lambda w: (-w[0], w[1], w[2]))
    return [(c.case_id, c.family, c.params_json, c.seed, a) for _, _, _, c, a in weighted]


#: A batch's share of the estimated work: ``total / (BATCHES_PER_CORE x parallelism)`` at most.
#: Fewer, longer Spark tasks: each task costs about 0.1-0.4 s of Spark and Python worker time
#: around its replays (measured on the medium mix: batches of 1 job kept the cores replaying
#: 63-67 % of the time, batches of 8 87-93 %), while a batch of 1/16 per core of the work is
#: still small enough that the cheapest batches, last in line, end together.
BATCHES_PER_CORE = 16
#: Least estimated work of a batch (unless a job alone or ``max_jobs`` ends it first): about
#: 0.5-1 s of replays. Without it a small sweep's batches shrink with the cores (1/16 of each
#: core's share), so two cores ran twice as many Spark tasks for the same replays and paid each
#: task's time around its replays twice as often: 24 medium cases (cost 42,530) on local[2]
#: were 30 batches, 5.12 replays/s, cores busy 80 %; with this floor 20 batches (as on one
#: core), 5.88 replays/s, 86 % (3 runs each, alternated in one warm session, loaded machine).
#: A sweep the size of ``make simulate``'s (cost ~4.9 million, batches capped by ``MAX_JOBS``)
#: never reaches it.
MIN_BATCH_COST = 2_500
#: Most jobs in one batch (``--batch``): the driver's progress bar moves when a batch ends.
#: Each Spark task costs its core about 0.09 s between batches on the loaded two-core box
#: (the worker's end of task, Spark's scheduling, the next command), paid once per batch: the
#: default mix's cheap tail (149 of 166 batches were capped at 64 small replays) spent 7.7-8.1 s
#: of each core's time that way, against 2.7-2.9 s in 58 batches capped at 256 (cores busy
#: 0.959 -> 0.978 of the replay phase, measured from each task's own timestamps in two full
#: ``make simulate`` runs); the last batches still end within a second of each other.
MAX_JOBS = 256


def batches(cases: Sequence[Case], assignors: Sequence[str], parallelism: int,
            max_jobs: int = MAX_JOBS) -> list[list[Job]]:
    """The jobs cut into Spark partitions, costliest first: at most ``max_jobs`` each and at
    most :data:`BATCHES_PER_CORE` per core's share of the estimated cost each, but not less
    than :data:`MIN_BATCH_COST` (a job costlier than that runs alone in its batch). Spark
    starts the partitions in order, each on the next free core, so the big groups run first
    and the cheap batches fill in at the end."""
    cost = {c.case_id: c.cost for c in cases}
    ordered = jobs(cases, assignors)
    costs = [assignor_cost(cost[j[0]], j[4]) for j in ordered]
    budget = max(MIN_BATCH_COST, sum(costs) // max(1, BATCHES_PER_CORE * parallelism))
    out: list[list[Job]] = []
    current: list[Job] = []
    spent = 0
    for job, job_spent in zip(ordered, costs, strict=True):
        if current and (len(current) >= max_jobs or spent + job_spent > budget):
            out.append(current)
            current, spent = [], 0
        current.append(job)
        spent += job_spent
    if current:
        out.append(current)
    return out


__all__ = [
    "ASSIGNOR_WEIGHT",
    "BATCHES_PER_CORE",
    "MAX_JOBS",
    "MIN_BATCH_COST",
    "MIXES",
    "OPT_IN_ASSIGNORS",
    "PRICED_TASKS",
    "ROLLING_FAMILIES",
    "Case",
    "Job",
    "Mix",
    "MixError",
    "all_assignors",
    "assignor_cost",
    "batches",
    "build_cases",
    "cost",
    "default_assignors",
    "job_cost",
    "jobs",
    "resolve",
]
