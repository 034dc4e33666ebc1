"""Families: seeded and reproducible; invariants hold for our assignors, peers' breaks recorded."""

from __future__ import annotations

import pytest

from simulator.engine import replay
from simulator.families import FAMILIES, FamilyError, generate, parse_params

OURS = ("high_availability", "legacy_sticky")
STORIES = tuple(name for name in FAMILIES if name != "perturbation")


def test_the_same_family_params_and_seed_give_the_same_scenario() -> None:
    first = generate("crash_recover", {"processes": 5}, seed=3)
    assert generate("crash_recover", {"processes": 5}, seed=3) == first
    others = {generate("crash_recover", {"processes": 5}, seed=s).events[0].process
              for s in range(8)}
    assert len(others) > 1  # the seed picks the victim


def test_parameters_are_checked_and_typed() -> None:
    assert parse_params("scale_out", {"add": "3", "static": "true", "gap_s": "5"}) == {
        "add": 3, "static": True, "gap_s": 5.0}
    with pytest.raises(FamilyError, match="no parameter 'nope'"):
        parse_params("scale_out", {"nope": "1"})
    with pytest.raises(FamilyError, match="expected a int"):
        parse_params("scale_out", {"add": "many"})
    with pytest.raises(FamilyError, match="no family"):
        generate("earthquake")


@pytest.mark.parametrize("assignor", OURS)
@pytest.mark.parametrize("family", STORIES)
def test_our_assignors_keep_every_invariant_and_converge(family: str, assignor: str) -> None:
    result = replay(generate(family, {"assignor": assignor}, seed=1))
    assert result.violations == []
    summary = result.summary
    assert summary.converged, summary.note
    assert summary.rebalances >= 1
    assert summary.balance_thread <= 1
    if assignor == "high_availability":
        assert summary.within_kafka_bound
        assert summary.standby_coverage == 1.0


def test_tag_aware_standbys_survive_the_loss_of_a_zone() -> None:
    summary = replay(generate("rack_loss", {}, seed=2)).summary
    assert summary.tag_spread == 1.0
    assert summary.converged


def test_a_rack_loss_needs_a_process_to_survive_it() -> None:
    """With one process its zone is the whole group: a total outage, not a rack loss (in the
    default mix those cases ran to the settle bound as non-convergences for every assignor)."""
    with pytest.raises(FamilyError, match="rack_loss needs at least 2 processes"):
        generate("rack_loss", {"processes": 1}, seed=0)
    for seed in range(6):
        scenario = generate("rack_loss", {"processes": 2}, seed=seed)
        (event,) = scenario.events
        assert [p for p in scenario.processes if p.tags["zone"] != event.value]


def test_fallback_prior_probes_until_the_bound_and_says_so() -> None:
    scenario = generate("scale_in", {"assignor": "fallback_prior"}, seed=1)
    scenario = scenario.model_copy(update={"bounds": scenario.bounds.model_copy(
        update={"settle_s": 400.0})})
    summary = replay(scenario).summary
    assert not summary.converged
    assert "non-convergence" in summary.note
    assert summary.end_s <= 60 + 5 + 30 + 400 + 1  # last event + bound, never a hang


@pytest.mark.parametrize("peer", ["roundrobin", "sticky"])
def test_aiokafka_peers_split_the_copartitioned_join_and_it_is_recorded(peer: str) -> None:
    result = replay(generate("scale_in", {"assignor": peer, "processes": 3}, seed=1))
    kinds = {v.kind for v in result.violations}
    assert "copartition_split" in kinds
    assert "unowned" in kinds
    assert result.summary.unavailable_task_s > 0
    assert all(v.replay.startswith("python -m simulator run --family scale_in --seed 1 "
                                   f"--assignor {peer}") for v in result.violations)


def test_peers_on_a_topology_without_copartitioning_keep_the_invariants() -> None:
    result = replay(generate("scale_out", {"assignor": "roundrobin", "topology": "simple"},
                             seed=1))
    assert result.violations == []
    assert result.summary.converged
