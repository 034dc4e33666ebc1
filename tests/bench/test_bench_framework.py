"""The bench's instrument behaves: interleaving order, figures, verdicts, and every side driven
through aiokafka's interface gives every member an answer. No timing is checked."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from tests.bench import drivers
from tests.bench.framework import (
    Budget,
    Figure,
    Target,
    close_call,
    fill_cheapest_first,
    interleave,
    ratio,
)


def test_interleave_alternates_sides_and_stops_at_runs() -> None:
    order: list[str] = []
    results = interleave(
        [("a", lambda: order.append("a")), ("b", lambda: order.append("b"))], 3, budget_s=60
    )
    assert order == ["a", "b", "a", "b", "a", "b"]
    assert {k: len(v) for k, v in results.items()} == {"a": 3, "b": 3}


def test_interleave_runs_one_round_when_the_budget_is_spent() -> None:
    results = interleave([("a", lambda: 1), ("b", lambda: 2)], 5, budget_s=-1)
    assert results == {"a": [1], "b": [2]}


def test_figure_ratio_and_verdicts() -> None:
    figure = Figure.of([3.0, 1.0, 2.0, None])
    assert figure is not None and figure.median == 2.0
    assert figure.text().endswith("n=3")
    paired = ratio([2.0, 4.0, 9.0], [1.0, 4.0, 3.0])
    assert paired is not None and paired.values == (2.0, 1.0, 3.0)
    target = Target("x", must=1.0, goal=0.1)
    assert target.verdict(Figure((0.05,))) == "meets"
    assert target.verdict(Figure((0.5,))).startswith("misses goal")
    assert target.verdict(Figure((1.5,))).startswith("misses must")
    assert target.verdict(None) == "not measured"


def test_a_close_call_is_a_ratio_with_a_run_near_or_past_its_must() -> None:
    """A run at 90 % of the must or above makes a close call even when the median is far
    inside it; runs all below do not; nothing measured is no close call."""
    target = Target("x", must=2.0, goal=1.0)
    assert close_call(Figure((0.5, 0.6, 1.8)), target)  # one run at 90 %: median 0.6
    assert close_call(Figure((2.5,)), target)  # past the must
    assert not close_call(Figure((0.5, 1.0, 1.79)), target)
    assert not close_call(None, target)


def test_peer_close_calls_look_at_both_rebalances_and_both_peers() -> None:
    """The peer grid's pass 3 picks a point by its paired ratios against Faust (must 1) and,
    where the point runs it, aiokafka's sticky (must 1), in either rebalance."""
    from tests.bench import run

    def runs(*pairs: tuple[float, float]) -> list[dict[str, Any]]:
        return [{"first": {"assign_ms": a}, "second": {"assign_ms": b}} for a, b in pairs]

    def point(results: dict[str, list[Any]]) -> Any:
        return run._PeerPoint({}, (), [], results, 1.0, {})

    ours = runs((1.0, 1.0), (1.0, 1.0))
    far = runs((5.0, 5.0), (5.0, 5.0))
    assert not run._peer_close_call(point({"ours": ours, "faust": far}))
    # one run of the second rebalance at 0.95 of Faust's time
    near = runs((5.0, 5.0), (5.0, 1.05))
    assert run._peer_close_call(point({"ours": ours, "faust": near}))
    assert run._peer_close_call(point({"ours": ours, "faust": far, "sticky": near}))
    # a first rebalance without a second (a group of one instance) still counts
    assert run._peer_close_call(point({"ours": runs((1.0, 1.0)), "faust": [{"first": {
        "assign_ms": 1.0}}]}))


def test_budget_shares_what_is_left() -> None:
    budget = Budget(100.0, 4, floor_s=1.0)
    assert 20 < budget.next() <= 25


SIDES = [s for s in drivers.SIDES if s != "faust" or importlib.util.find_spec("faust")]


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("threads", [1, 2])
def test_every_side_answers_every_member_in_every_rebalance(side: str, threads: int) -> None:
    shape = drivers.Shape(partitions=12, instances=3, threads=threads, standbys=1, topics=2)
    story: dict[str, Any] = drivers.run_story(side, shape, stable=True)
    assert set(story) == {"first", "second", "stable", "members_read"}
    assert story["members_read"] == shape.members
    assert story["first"]["sync_bytes_group"] > 0
    for rebalance in (story["first"], story["second"], story["stable"]):
        assert rebalance["assign_ms"] >= 0
        assert rebalance["join_bytes_max"] <= rebalance["join_bytes_group"]


def test_ours_keeps_one_leader_process_and_carries_the_previous_assignment() -> None:
    shape = drivers.Shape(partitions=8, instances=2, threads=1, standbys=0)
    instances = drivers.ours(shape, drivers.topology_for(shape))
    members = [m for group in instances for m in group]
    cluster = drivers.cluster_for(shape)
    before = drivers.rebalance(members, cluster)
    leader = members[0][1]
    first = leader.last_leader
    second = drivers.rebalance(members, cluster)
    assert leader.last_leader is not first  # the same leader object ran both rebalances
    # each member now reports the tasks it ran (offset sums), so its subscription grew
    assert all(a > b for a, b in zip(second.join_bytes, before.join_bytes, strict=True))


def test_the_bench_path_would_see_a_leader_comparing_host_maps_per_member(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rebalance that moves nothing, through the bench's aiokafka path with one long-lived
    leader: the leader compares the partitions of the host maps about once, not once per
    member (before the codec fix: 16,780 comparisons here; after: about 1,600)."""
    from protocol import TopicPartition

    shape = drivers.Shape(partitions=400, instances=20, threads=1, standbys=1)
    members = [m for g in drivers.ours(shape, drivers.topology_for(shape)) for m in g]
    cluster = drivers.cluster_for(shape)
    drivers.rebalance(members, cluster)
    drivers.rebalance(members, cluster)
    calls = [0]
    original = TopicPartition.__eq__

    def counting(self: TopicPartition, other: object) -> bool:
        calls[0] += 1
        return original(self, other)

    monkeypatch.setattr(TopicPartition, "__eq__", counting)
    leader = members[0][1]
    assign = leader.assign
    during: list[int] = []

    def counted(*args: Any) -> Any:
        calls[0] = 0
        answer = assign(*args)
        during.append(calls[0])
        return answer

    monkeypatch.setattr(leader, "assign", counted)
    drivers.rebalance(members, cluster)
    host_map_partitions = shape.partitions * (1 + shape.standbys)
    assert during and during[0] < 3 * host_map_partitions  # per member it would be 20x that


@pytest.mark.parametrize("threads", [1, 2])
def test_light_members_send_the_join_bytes_of_fully_fed_members(threads: int) -> None:
    # The growth section hosts only the leader's process; every other member reads its answer
    # with the host maps cut to its own endpoint. What it subscribes with next must not change.
    from tests.bench.leader_only import leader_rebalance

    shape = drivers.Shape(partitions=24, instances=4, threads=threads, standbys=1)
    cluster = drivers.cluster_for(shape)
    full = drivers.ours(shape, drivers.topology_for(shape))
    light = drivers.ours(shape, drivers.topology_for(shape))
    everyone = [m for group in full for m in group]
    staying = [m for group in full[:-1] for m in group]
    light_rest = [m for group in light[1:] for m in group]
    light_staying = [m for group in light[1:-1] for m in group]
    rounds = [(everyone, light_rest), (staying, light_staying), (staying, light_staying)]
    for full_members, light_members in rounds:
        expected = drivers.rebalance(full_members, cluster)
        got = leader_rebalance(light[0], light_members, cluster, sample=1)
        assert got.joined == expected.joined
        assert got.sync_bytes == expected.sync_bytes


def test_the_step_breakdown_times_every_step_of_a_real_assign() -> None:
    # ``make bench`` breaks the full leader down by step by wrapping the pipeline's functions
    # by name; a renamed or moved step must fail here, not half an hour into the bench.
    from tests.bench.leader_only import leader_rounds
    from tests.bench.steps import STEPS

    shape = drivers.Shape(partitions=24, instances=3, threads=2, standbys=1)
    rounds = dict(leader_rounds(shape, sample=1, steps=True))
    first = rounds["first"].steps_ms
    assert first is not None
    for _, _, label in STEPS:
        if label is not None:
            assert label in first, label
    assert first["assign() total"] > 0
    # the second rebalance has the same topology and counts: the leader's cache plans nothing
    second = rounds["second"].steps_ms
    assert second is not None and "2-3 plan tasks" not in second


def test_points_option_keeps_only_the_named_grid_points() -> None:
    """``run.py --points 6000,2`` keeps the peer configurations of that point alone (all five
    of the full grid), and no option keeps every point."""
    from tests.bench import run

    try:
        run.ONLY_POINTS.update({(6000, 2)})
        chosen = run.peer_configs(quick=False)
        assert {(c["partitions"], c["instances"]) for c in chosen} == {(6000, 2)}
        assert len(chosen) == 5
        run.ONLY_POINTS.clear()
        assert len(run.peer_configs(quick=False)) == 5 * len(run.PEER_POINTS)
    finally:
        run.ONLY_POINTS.clear()


def test_rounds_within_takes_the_nearest_count_of_rounds_within_bounds() -> None:
    from tests.bench.framework import rounds_within

    assert rounds_within(10.0, 3.0, 4) == 3  # 3.3 rounds fit
    assert rounds_within(11.0, 3.0, 4) == 4  # 3.7: the fourth is taken
    assert rounds_within(100.0, 3.0, 4) == 4
    assert rounds_within(1.0, 3.0, 4) == 0
    assert rounds_within(-5.0, 3.0, 4) == 0


def test_short_figures_counts_figures_on_fewer_than_five_runs_at_any_depth() -> None:
    from tests.bench.framework import short_figures

    five, three = Figure((1.0, 2.0, 3.0, 4.0, 5.0)).data(), Figure((1.0, 2.0, 3.0)).data()
    assert short_figures([{"a": five, "b": {"c": three}}, three, None]) == 2
    assert short_figures({"a": five}) == 0


def test_a_last_rebalance_is_read_by_the_sample_only() -> None:
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    read: list[str] = []

    def spy(name: str) -> Any:
        def on_assignment(cls: Any, assignment: Any) -> None:
            read.append(name)

        return type(name, (RoundRobinPartitionAssignor,),
                    {"on_assignment": classmethod(on_assignment)})

    shape = drivers.Shape(partitions=12, instances=10)
    members = [(drivers.member_id(i), spy(f"m{i}"), ["events"]) for i in range(10)]
    round_ = drivers.rebalance(members, drivers.cluster_for(shape), readers=3)
    assert read == ["m0", "m1", "m2"]
    assert len(round_.sync_bytes) == 10  # every answer is still encoded and counted
    read.clear()
    drivers.rebalance(members, drivers.cluster_for(shape))
    assert len(read) == 10


class _Clock:
    """Seconds left in a fake budget, spent by each fake round."""

    def __init__(self, left_s: float) -> None:
        self.left_s = left_s
        self.rounds: list[int] = []

    def left(self) -> float:
        return self.left_s


def test_fill_cheapest_first_completes_the_cheap_points_before_the_costly() -> None:
    # Points of 60 s, 0.3 s and 10 s a round, 4 rounds missing each, 50 s left: the cheap
    # point takes all four, the 10 s point four (40 s), and the 60 s point none.
    costs = [60.0, 0.3, 10.0]
    clock = _Clock(50.0)

    def run_round(i: int) -> float:
        clock.rounds.append(i)
        clock.left_s -= costs[i]
        return costs[i]

    round_s = list(costs)
    fill_cheapest_first(round_s, [4, 4, 4], run_round, clock.left)
    assert clock.rounds == [1, 1, 1, 1, 2, 2, 2, 2]


def test_fill_cheapest_first_rerates_each_point_on_its_last_round() -> None:
    # Rated at 20 s a round (its first, recording run), the point's next rounds cost 5 s: after
    # one, 9 s are left, under half of 20 but more than 5, so it goes on and takes all three.
    clock = _Clock(14.0)

    def run_round(i: int) -> float:
        clock.rounds.append(i)
        clock.left_s -= 5.0
        return 5.0

    round_s = [20.0]
    fill_cheapest_first(round_s, [3], run_round, clock.left)
    assert clock.rounds == [0, 0, 0] and round_s == [5.0]


def test_fill_cheapest_first_takes_no_round_when_no_time_is_left() -> None:
    clock = _Clock(0.0)

    def run_round(i: int) -> float:
        clock.rounds.append(i)
        return 1.0

    fill_cheapest_first([1.0, 2.0], [4, 4], run_round, clock.left)
    assert clock.rounds == []


PEER_SIDES = [s for s in SIDES if s != "ours"]


@pytest.mark.parametrize("side", PEER_SIDES)
@pytest.mark.parametrize("threads", [1, 2])
def test_a_reused_run_gives_the_leader_the_bytes_of_a_fully_read_run(
    side: str, threads: int
) -> None:
    # A point's later runs skip the reading of the first answers by the members outside the
    # sample and send their recorded second JoinGroup bytes: the leader's two assign() calls
    # must see exactly the bytes of a run in which every member did its own work, and answer
    # exactly the same.
    shape = drivers.Shape(partitions=24, instances=10, threads=threads, standbys=1, topics=2)
    drivers._KEPT.pop((side, shape), None)
    full = drivers.story_rounds(side, shape, reuse=False)
    recorded = drivers.story_rounds(side, shape)
    reused = drivers.story_rounds(side, shape)
    sample = threads + drivers.LAST_ROUND_SAMPLE
    assert full["first"].read == recorded["first"].read == shape.members
    assert reused["first"].read == sample  # the others' reading was skipped
    for rnd in ("first", "second"):
        assert reused[rnd].joined == recorded[rnd].joined == full[rnd].joined
        assert reused[rnd].synced == recorded[rnd].synced == full[rnd].synced
    assert reused["second"].read == full["second"].read == sample  # a last round: the sample
    # The record keeps the recorded members (their state stays on the heap, as it would) and
    # is the only one: another point's run drops it.
    assert list(drivers._KEPT) == [(side, shape)]
    assert len(drivers._KEPT[(side, shape)].members) == shape.members
    other = drivers.Shape(partitions=12, instances=2, threads=1)
    drivers.story_rounds(side, other)
    assert (side, shape) not in drivers._KEPT


def test_a_run_whose_first_answers_differ_from_the_record_is_read_in_full() -> None:
    shape = drivers.Shape(partitions=24, instances=10, threads=1, standbys=0)
    key = ("roundrobin", shape)
    drivers._KEPT.pop(key, None)
    drivers.story_rounds("roundrobin", shape)
    kept = drivers._KEPT[key]
    one = next(iter(kept.first_answers))
    kept.first_answers[one] += b"x"  # as if the leader had answered otherwise
    again = drivers.story_rounds("roundrobin", shape)
    assert again["first"].read == shape.members
    assert drivers._KEPT[key].first_answers[one] == again["first"].synced[one]  # recorded anew


def test_a_sample_that_would_send_other_bytes_than_the_record_stops_the_run() -> None:
    shape = drivers.Shape(partitions=24, instances=10, threads=1, standbys=0)
    key = ("sticky", shape)
    drivers._KEPT.pop(key, None)
    drivers.story_rounds("sticky", shape)
    leader_id = drivers.member_id(0)
    drivers._KEPT[key].second_join[leader_id] += b"x"
    with pytest.raises(RuntimeError, match="differ from the recorded run"):
        drivers.story_rounds("sticky", shape)


@pytest.mark.parametrize("side", PEER_SIDES)
def test_a_group_no_larger_than_the_sample_runs_again_with_every_member_reading(side: str) -> None:
    # 6,000 partitions over 2 instances: every member is in the sample, nothing is reused.
    shape = drivers.Shape(partitions=24, instances=2, threads=1, standbys=1, topics=2)
    for _ in range(2):
        story = drivers.run_story(side, shape)
        assert story["members_read"] == shape.members
        assert set(story) == {"first", "second", "members_read"}


class _FakeHarness:
    """The Java harness's ``ha`` call, each taking the next of ``seconds`` on a fake clock."""

    def __init__(self, seconds: list[float]) -> None:
        self.now = 0.0
        self.seconds = seconds
        self.benches: list[dict[str, int]] = []

    def call(self, op: str, request: dict[str, object], timeout: float) -> None:
        assert op == "ha"
        self.benches.append(request["bench"])  # type: ignore[arg-type]
        self.now += self.seconds[len(self.benches) - 1]


@pytest.mark.parametrize(
    ("seconds", "warmups"),
    # a short call: the rest up to 40 in one request; one long enough: no more; a middling
    # one: as many as fit in about 6 s at its pace
    [([0.05, 2.0], [1, 39]), ([6.0, 6.0], [1]), ([0.5, 6.0], [1, 12])],
)
def test_java_warm_up_ends_after_a_call_long_enough(
    seconds: list[float], warmups: list[int]
) -> None:
    from tests.bench import run

    harness = _FakeHarness(seconds)
    run._warm_java(harness, {"clients": []}, clock=lambda: harness.now)
    assert [b["warmup"] for b in harness.benches] == warmups
    assert all(b["runs"] == 0 for b in harness.benches)
