"""``assignor.testing``: the public strategies draw what they promise, honour what is pinned,
and shrink to small readable examples."""

from __future__ import annotations

from random import Random
from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from assignor import Topology, TopologyBuilder
from assignor.config import AssignorConfig
from assignor.testing import (
    Group,
    ProcessLayout,
    configs,
    groups,
    process_layouts,
    topology_data,
)
from assignor.topology.data_form import topology_from_data, topology_to_data
from protocol import TaskId
from protocol.codec import Codec
from simulator.scenarios import scenario_from_data

FEW = settings(max_examples=max(10, settings().max_examples // 8),
               suppress_health_check=[HealthCheck.too_slow])


def _orders() -> Topology:
    builder = TopologyBuilder("shop")
    builder.add_source("orders", "orders")
    builder.add_processor("count", "orders").add_state_store("counts", "count")
    return builder.build()


ORDERS = _orders()


@FEW
@given(groups(topology=ORDERS, partitions={"orders": 6}, processes=st.integers(3, 5)))
def test_pinned_parameters_are_kept(group: Group) -> None:
    assert group.topology == ORDERS
    assert group.partitions == {"orders": 6}
    assert 3 <= len(group.processes) <= 5
    assert len(group.layout.tasks) == 6


@FEW
@given(groups())
def test_every_view_of_a_group_is_valid(group: Group) -> None:
    """Each member's bytes read back with its own build; the simulator accepts the scenario."""
    builds = {m: p.build for p in group.processes for m in p.members()}
    for member, data in group.member_bytes().items():
        info = Codec(builds[member]).decode_subscription(data)
        assert info == group.subscriptions()[member]
    assert set(group.group_input().members) == set(builds)
    scenario = scenario_from_data(group.scenario_data())
    assert [p.name for p in scenario.processes] == [p.name for p in group.processes]
    # no task was running as active on two processes
    running = [t for p in group.processes for t in p.previous_active]
    assert len(running) == len(set(running))


@FEW
@given(process_layouts(st.integers(1, 6), threads=st.integers(1, 16),
                       stateful=[TaskId(0, p) for p in range(4)]))
def test_process_layouts_have_distinct_ids_and_sensible_state(layouts: list[ProcessLayout]) -> None:
    assert len({p.process_id for p in layouts}) == len(layouts)
    for layout in layouts:
        assert 1 <= layout.threads <= 16
        assert layout.version <= layout.build
        assert set(layout.previous_active) <= set(layout.lags)
        assert all(layout.lags[t] == 0 for t in layout.previous_active)


@FEW
@given(configs())
def test_configs_are_valid_assignor_configs(entries: dict[str, Any]) -> None:
    AssignorConfig.model_validate(entries)


def test_a_bad_pinned_config_fails_naming_the_key() -> None:
    with pytest.raises(ValueError, match=r"num\.standby\.replicas"):
        find(configs(standbys=-1), lambda _: True)


@FEW
@given(topology_data())
def test_topology_data_round_trips(data: dict[str, Any]) -> None:
    assert topology_to_data(topology_from_data(data)) == data


def test_groups_shrink_to_small_readable_examples() -> None:
    """Asked for two processes with a standby, hypothesis hands back the smallest such group:
    two one-thread processes, one or two one-partition source topics, no local state."""
    found = find(groups(), lambda g: len(g.processes) >= 2
                 and g.config["num.standby.replicas"] >= 1,
                 settings=settings(max_examples=500, database=None), random=Random(0))
    assert len(found.processes) == 2
    assert all(p.threads == 1 and not p.lags for p in found.processes)
    assert len(found.topology.subtopologies) <= 2
    assert set(found.partitions.values()) == {1}
    assert found.config["num.standby.replicas"] == 1
    assert found.config["max.warmup.replicas"] == 1
