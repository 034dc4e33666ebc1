"""The mixes: seeded, every family and assignor, the documented sizes, and batches that hold
every job exactly once (no Spark needed)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from simulator.families import FAMILIES
from simulator.spark import mix


def test_the_same_seed_draws_the_same_cases_and_another_seed_others() -> None:
    default = mix.MIXES["default"]
    families = tuple(FAMILIES)
    first = mix.build_cases(default, families, 200, 5)
    assert first == mix.build_cases(default, families, 200, 5)
    assert first != mix.build_cases(default, families, 200, 6)


def test_default_mix_covers_every_family_standbys_and_sizes() -> None:
    chosen, families, assignors = mix.resolve("default", None, None)
    cases = mix.build_cases(chosen, families, chosen.scenarios, 0)
    assert len(cases) >= 2000
    assert {c.family for c in cases} == set(FAMILIES)
    assert {c.params["standbys"] for c in cases} == {0, 1, 2}
    sizes = [c.params["processes"] for c in cases]
    assert min(sizes) == 1 and max(sizes) >= 200
    rolling = [c.params["processes"] for c in cases if c.family in mix.ROLLING_FAMILIES]
    assert max(rolling, default=0) <= chosen.max_rolling_processes
    assert set(assignors) == set(mix.all_assignors()) - {"fallback_prior"}
    assert set(mix.resolve("default", None, ["fallback_prior"])[2]) == {"fallback_prior"}


def test_no_case_is_smaller_than_its_family_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The draw is lifted to a family's minimum after it is made: rack_loss gets 2 processes
    where it drew 1 (its zone would have been the whole group), and every other case is the
    one the same seed drew without the minimum."""
    chosen, families, _ = mix.resolve("default", None, None)
    cases = mix.build_cases(chosen, families, chosen.scenarios, 0)
    assert all(c.params["processes"] >= FAMILIES[c.family].min_processes for c in cases)
    assert min(c.params["processes"] for c in cases if c.family != "rack_loss") == 1
    monkeypatch.setitem(FAMILIES, "rack_loss",
                        dataclasses.replace(FAMILIES["rack_loss"], min_processes=1))
    unlifted = mix.build_cases(chosen, families, chosen.scenarios, 0)
    changed = [(old, new) for old, new in zip(unlifted, cases, strict=True) if old != new]
    assert len(changed) > 20
    for old, new in changed:
        assert (old.family, old.params["processes"], new.params["processes"]) == (
            "rack_loss", 1, 2)
        assert (old.case_id, old.seed) == (new.case_id, new.seed)


def test_default_mix_caps_consumers_and_membership_steps() -> None:
    chosen, families, _ = mix.resolve("default", None, None)
    cases = mix.build_cases(chosen, families, chosen.scenarios, 0)
    members = [c.params["processes"] * c.params["threads"] for c in cases]
    assert max(members) <= chosen.max_members
    steps = [c.params.get(k, 0) for c in cases for k in ("add", "remove")]
    assert max(steps) == mix.MAX_STEPS
    big = [c for c in cases if c.params["processes"] > 100]
    assert len(families) <= len(big) <= 3 * len(families)
    # skewed draws 1..max_threads per process: on average within the cap, full skew when small
    skewed = [c.params for c in cases if c.family == "skewed"]
    assert all(p["processes"] * (1 + p["max_threads"]) / 2 <= chosen.max_members for p in skewed)
    assert 16 in {p["max_threads"] for p in skewed} and min(p["max_threads"] for p in skewed) < 16


def test_large_mix_adds_a_thousand_members_and_ten_thousand_tasks() -> None:
    """The ``large`` mix is the default mix's very cases, then one group of 1,000 members
    and 10,000 tasks per family that takes a size (not the rolling ones, not ``perturbation``,
    which draws its own); ``skewed``'s averages the group's 4 threads."""
    chosen, families, _ = mix.resolve("large", None, None)
    cases = mix.build_cases(chosen, families, 16, 0)
    default = mix.build_cases(*mix.resolve("default", None, None)[:2], 16, 0)
    assert cases[:16] == default
    added = cases[16:]
    assert sorted(c.family for c in added) == sorted(
        f for f in families if f not in mix.ROLLING_FAMILIES and f != "perturbation")
    for case in added:
        members = mix.cost(case.family, {**case.params, "add": 0, "remove": 0, "flaps": 0,
                                         "partitions": 1, "to_partitions": 0}) // 4
        assert members == 1000 and case.params["partitions"] * 2 >= 10_000, case


def test_every_assignor_meets_the_same_cases_and_batches_hold_each_job_once() -> None:
    chosen, families, assignors = mix.resolve("default", None, None)
    cases = mix.build_cases(chosen, families, 100, 1)
    batches = mix.batches(cases, assignors, parallelism=2, max_jobs=16)
    jobs = [job for batch in batches for job in batch]
    assert sorted(jobs) == sorted(mix.jobs(cases, assignors))
    assert len(jobs) == len(cases) * len(assignors)
    assert all(1 <= len(batch) <= 16 for batch in batches)
    by_assignor = {a: sorted((j[0], j[1], j[2], j[3]) for j in jobs if j[4] == a)
                   for a in assignors}
    assert len({tuple(v) for v in by_assignor.values()}) == 1


def test_bad_names_are_refused_with_the_known_ones() -> None:
    with pytest.raises(mix.MixError, match="mixes: default"):
        mix.resolve("huge", None, None)
    with pytest.raises(mix.MixError, match="families: "):
        mix.resolve("default", ["nope"], None)
    with pytest.raises(mix.MixError, match="assignors: "):
        mix.resolve("default", None, ["range"])
    with pytest.raises(mix.MixError, match="cannot cover"):
        mix.build_cases(mix.MIXES["default"], tuple(FAMILIES), 2, 0)


def test_a_small_sweep_is_sliced_alike_on_one_core_and_on_two() -> None:
    """Below :data:`mix.MIN_BATCH_COST` a batch's share no longer shrinks with the cores, so
    two cores do not run twice as many Spark tasks for the same replays; a big sweep is still
    cut in :data:`mix.BATCHES_PER_CORE` per core."""
    chosen, families, assignors = mix.resolve("medium", None, None)
    cases = mix.build_cases(chosen, families, 24, 0)
    one, two = (mix.batches(cases, assignors, parallelism=p) for p in (1, 2))
    assert len(one) == len(two)
    for batch in two:
        if len(batch) > 1:
            assert sum(mix.job_cost(j) for j in batch[:-1]) <= mix.MIN_BATCH_COST
    big = mix.build_cases(*mix.resolve("default", None, None)[:2], 400, 0)
    costs = [mix.job_cost(j) for j in mix.jobs(big, assignors)]
    share = sum(costs) // (mix.BATCHES_PER_CORE * 2)
    assert share > mix.MIN_BATCH_COST
    assert all(sum(mix.job_cost(j) for j in b) <= max(share, max(costs))
               for b in mix.batches(big, assignors, parallelism=2))


def test_the_large_mix_prices_its_tasks_and_runs_its_costliest_jobs_one_a_batch() -> None:
    """A group's tasks count in its cost only past :data:`mix.PRICED_TASKS`, which no group of
    the default mix holds (its costs, order and batches stay members x rebalances); the
    ``large`` mix's groups of 10,000 tasks come first, the costliest each in a batch of its own,
    so the progress bar moves as each ends."""
    params = {"processes": 250, "threads": 4, "partitions": 256, "add": 7}
    assert mix.cost("scale_out", params) == 1000 * 11
    assert mix.cost("scale_out", {**params, "partitions": 5000}) == 1000 * 11 * 9
    default = mix.build_cases(*mix.resolve("default", None, None)[:2], 2000, 0)
    assert max(2 * max(c.params["partitions"], c.params.get("to_partitions", 0))
               for c in default) <= mix.PRICED_TASKS
    chosen, families, assignors = mix.resolve("large", None, None)
    cases = mix.build_cases(chosen, families, 2000, 0)
    batches = mix.batches(cases, assignors, parallelism=2)
    every = mix.jobs(cases, assignors)
    thousand = [j for j in every if json.loads(j[2])["processes"] == 250]
    assert len(thousand) == 40  # (8 families that take a size x 5 assignors)
    share = sum(map(mix.job_cost, every)) // (mix.BATCHES_PER_CORE * 2)
    alone = [j for j in thousand if mix.job_cost(j) >= share]
    assert len(alone) >= 5  # (the costliest: high availability's and Faust's)
    head = batches[: len(alone)]
    assert all(len(b) == 1 for b in head) and sorted(b[0] for b in head) == sorted(alone)
    assert sorted(j for b in batches for j in b) == sorted(every)
