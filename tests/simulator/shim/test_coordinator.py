"""Every rule of the classic group protocol, request by request, on virtual time."""

from __future__ import annotations

import random
import uuid

from simulator.shim import CoordinatorConfig, ErrorCode
from simulator.shim.coordinator import random_uuid4
from tests.simulator.shim.helpers import QUICK, RANGE, Driver, run

NONE = ErrorCode.NONE


# -- member ids, leaders, generations ----------------------------------------------------------
def test_a_new_dynamic_member_is_told_its_id_and_must_come_back_with_it() -> None:
    async def scenario(d: Driver) -> None:
        first = await d.join("", client="alpha")
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        assert first.member_id.startswith("alpha-")
        assert d.state == "Empty" and d.coordinator.members("g") == ()
        second = await d.join(first.member_id, client="alpha")
        assert second.error_code == NONE
        assert second.member_id == first.member_id
        assert second.generation_id == 1
        assert second.leader_id == first.member_id
        assert second.protocol_name == "range"
        assert second.members == ((first.member_id, None, b"range-metadata"),)

    run(scenario)


def test_the_first_member_leads_and_only_the_leader_sees_the_metadata() -> None:
    config = CoordinatorConfig(initial_rebalance_delay_ms=100)

    async def scenario(d: Driver) -> None:
        a, fa = await d.enter("a")
        b, fb = await d.enter("b")
        ra, rb = await fa, await fb
        assert ra.leader_id == rb.leader_id == a
        assert {m[0] for m in ra.members} == {a, b}
        assert rb.members == ()
        assert ra.generation_id == rb.generation_id == 1

    run(scenario, config=config)


def test_the_leaders_assignment_reaches_every_member_and_a_missing_one_is_empty() -> None:
    async def scenario(d: Driver) -> None:
        a, fa = await d.enter("a")
        b, fb = await d.enter("b")
        c, fc = await d.enter("c")
        await fa, await fb, await fc
        follower_b = d.sync(b, 1)
        follower_c = d.sync(c, 1)
        assert not follower_b.done() and d.state == "CompletingRebalance"
        leader = d.sync(a, 1, ((a, b"for-a"), (b, b"for-b")))
        assert (await leader).member_assignment == b"for-a"
        assert (await follower_b).member_assignment == b"for-b"
        late_c = await follower_c
        assert late_c.error_code == NONE and late_c.member_assignment == b""
        assert d.state == "Stable"
        # In Stable a SyncGroup is answered at once with what the coordinator holds.
        assert (await d.sync(b, 1)).member_assignment == b"for-b"

    run(scenario)


def test_generations_count_completed_join_phases() -> None:
    async def scenario(d: Driver) -> None:
        ids = await d.stable_group("a", "b")
        assert d.generation == 1
        for expected in (2, 3, 4):
            leader = d.coordinator.leader("g")
            assert leader is not None
            futures = [d.join(m) for m in ids.values()]
            responses = [await f for f in futures]
            assert {r.generation_id for r in responses} == {expected}
            syncs = [d.sync(m, expected, ((m, b"x"),) if m == leader else ()) for m in ids.values()]
            assert [(await s).error_code for s in syncs] == [NONE, NONE]
        assert [r.generation for r in d.coordinator.journal.records] == [1, 2, 3, 4]
        assert all(r.outcome == "stable" for r in d.coordinator.journal.records)

    run(scenario)


# -- protocol selection --------------------------------------------------------------------------
def test_the_protocol_is_one_every_member_supports_chosen_by_votes() -> None:
    config = CoordinatorConfig(initial_rebalance_delay_ms=100)

    async def common_subset(d: Driver) -> None:
        _, fa = await d.enter("a", protocols=(("x", b"1"), ("y", b"2")))
        _, fb = await d.enter("b", protocols=(("y", b"3"), ("x", b"4")))
        _, fc = await d.enter("c", protocols=(("y", b"5"),))
        responses = [await f for f in (fa, fb, fc)]
        assert {r.protocol_name for r in responses} == {"y"}
        leader = next(r for r in responses if r.members)
        assert sorted(m[2] for m in leader.members) == [b"2", b"3", b"5"]

    async def majority(d: Driver) -> None:
        _, fa = await d.enter("a", protocols=(("x", b""), ("y", b"")))
        _, fb = await d.enter("b", protocols=(("x", b""), ("y", b"")))
        _, fc = await d.enter("c", protocols=(("y", b""), ("x", b"")))
        assert {(await f).protocol_name for f in (fa, fb, fc)} == {"x"}

    run(common_subset, config=config)
    run(majority, config=config)


def test_a_member_sharing_no_protocol_with_the_group_is_rejected() -> None:
    async def scenario(d: Driver) -> None:
        ids = await d.stable_group("a", "b")
        stranger = await d.join("", protocols=(("other", b""),), client="z")
        assert stranger.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        wrong_type = await d.join("", protocol_type="connect", client="z")
        assert wrong_type.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        existing = await d.join(ids["a"], protocols=(("other", b""),))
        assert existing.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert d.state == "Stable" and d.generation == 1

    run(scenario)


def test_an_empty_group_accepts_any_protocol_but_not_none() -> None:
    async def scenario(d: Driver) -> None:
        nothing = await d.join("", protocols=())
        assert nothing.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert (await d.join("", protocols=(("z", b""),))).error_code == (
            ErrorCode.MEMBER_ID_REQUIRED
        )

    run(scenario)


# -- request validation ------------------------------------------------------------------------
def test_invalid_group_id_and_session_timeout_are_rejected() -> None:
    async def scenario(d: Driver) -> None:
        d.group = ""
        assert (await d.join("")).error_code == ErrorCode.INVALID_GROUP_ID
        d.group = "g"
        assert (await d.join("", session_ms=5999)).error_code == ErrorCode.INVALID_SESSION_TIMEOUT
        too_long = await d.join("", session_ms=1_800_001)
        assert too_long.error_code == ErrorCode.INVALID_SESSION_TIMEOUT

    run(scenario)


def test_unknown_members_and_groups_are_told_so() -> None:
    async def scenario(d: Driver) -> None:
        assert (await d.join("ghost")).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert (await d.sync("ghost", 1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert d.heartbeat("ghost", 1) == ErrorCode.UNKNOWN_MEMBER_ID
        assert d.leave(("ghost", None)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        await d.stable_group("a")
        assert (await d.join("ghost")).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert (await d.sync("ghost", 1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert d.heartbeat("ghost", 1) == ErrorCode.UNKNOWN_MEMBER_ID
        assert d.leave(("ghost", None)).error_code == ErrorCode.UNKNOWN_MEMBER_ID

    run(scenario)


def test_a_stale_generation_is_rejected() -> None:
    async def scenario(d: Driver) -> None:
        ids = await d.stable_group("a", "b")
        a, b = ids["a"], ids["b"]
        responses = [await f for f in (d.join(a), d.join(b))]
        assert {r.generation_id for r in responses} == {2}
        assert (await d.sync(b, 1)).error_code == ErrorCode.ILLEGAL_GENERATION
        assert d.heartbeat(b, 1) == ErrorCode.ILLEGAL_GENERATION
        assert d.heartbeat(b, 3) == ErrorCode.ILLEGAL_GENERATION
        assert d.heartbeat(b, 2) == NONE  # CompletingRebalance: heartbeats are fine

    run(scenario)


def test_heartbeat_and_sync_during_a_join_phase_say_rebalance_in_progress() -> None:
    async def scenario(d: Driver) -> None:
        ids = await d.stable_group("a", "b")
        d.join(ids["a"])  # the leader rejoins: a rebalance starts
        assert d.state == "PreparingRebalance"
        assert d.heartbeat(ids["b"], 1) == ErrorCode.REBALANCE_IN_PROGRESS
        assert (await d.sync(ids["b"], 1)).error_code == ErrorCode.REBALANCE_IN_PROGRESS

    run(scenario)


# -- rejoining ----------------------------------------------------------------------------------
def test_a_follower_rejoining_with_the_same_metadata_keeps_the_generation() -> None:
    async def scenario(d: Driver) -> None:
        ids = await d.stable_group("a", "b")
        again = await d.join(ids["b"])
        assert again.error_code == NONE and again.generation_id == 1 and again.members == ()
        assert d.state == "Stable"
        changed = d.join(ids["b"], protocols=(("range", b"new"),))
        assert not changed.done() and d.state == "PreparingRebalance"

    run(scenario)


def test_the_leader_rejoining_always_starts_a_rebalance() -> None:
    async def scenario(d: Driver) -> None:
        ids = await d.stable_group("a", "b")
        leader = d.coordinator.leader("g")
        assert leader == ids["a"]
        parked = d.join(leader)
        assert not parked.done() and d.state == "PreparingRebalance"
        d.join(ids["b"])
        assert (await parked).generation_id == 2
        record = d.coordinator.journal.records[-1]
        assert record.generation == 1  # generation 2 is still forming

    run(scenario)


def test_a_lost_join_response_is_answered_again_while_completing() -> None:
    async def scenario(d: Driver) -> None:
        a, fa = await d.enter("a")
        first = await fa
        assert d.state == "CompletingRebalance"
        again = await d.join(a)
        assert again.generation_id == first.generation_id == 1
        assert again.members == first.members

    run(scenario)


# -- timeouts ------------------------------------------------------------------------------------
def test_members_that_do_not_rejoin_within_the_rebalance_timeout_are_removed() -> None:
    async def scenario(d: Driver) -> None:
        ids = await d.stable_group("a", "b")
        start = d.clock.time()
        parked = d.join(ids["a"], rebalance_ms=20_000)
        while not parked.done():  # b stays alive by heartbeat but never rejoins
            assert d.heartbeat(ids["b"], 1) == ErrorCode.REBALANCE_IN_PROGRESS
            await d.sleep(2.0)
        response = await parked
        assert d.clock.time() - start == 30.0  # the largest rebalance timeout (b's 30 s)
        assert response.generation_id == 2
        assert d.coordinator.members("g") == (ids["a"],)
        assert [m[0] for m in response.members] == [ids["a"]]

    run(scenario)


def test_a_member_that_stops_heartbeating_is_removed_and_a_rebalance_starts() -> None:
    async def scenario(d: Driver) -> None:
        ids = await d.stable_group("a", "b")
        for _ in range(6):  # a keeps heartbeating for 12 s, b is silent
            await d.sleep(2.0)
            assert d.heartbeat(ids["a"], 1) in (NONE, ErrorCode.REBALANCE_IN_PROGRESS)
        assert d.coordinator.members("g") == (ids["a"],)
        assert d.state == "PreparingRebalance"
        events = [e for e in d.coordinator.journal.events if e.kind == "session-expired"]
        assert [(e.member, e.time) for e in events] == [(ids["b"], 10.0)]

    run(scenario)


def test_leave_group_starts_a_rebalance_at_once_and_aborts_a_pending_sync() -> None:
    async def scenario(d: Driver) -> None:
        ids = await d.stable_group("a", "b", "c", "d")
        response = d.leave((ids["d"], None))
        assert response.error_code == NONE
        assert d.state == "PreparingRebalance"
        fa, fb, fc = d.join(ids["a"]), d.join(ids["b"]), d.join(ids["c"])
        assert {(await f).generation_id for f in (fa, fb, fc)} == {2}
        waiting = d.sync(ids["b"], 2)
        assert d.leave((ids["c"], None)).error_code == NONE
        assert (await waiting).error_code == ErrorCode.REBALANCE_IN_PROGRESS
        assert d.state == "PreparingRebalance"
        outcomes = [(r.generation, r.outcome) for r in d.coordinator.journal.records]
        assert outcomes == [(1, "stable"), (2, "aborted")]

    run(scenario)


def test_the_last_member_leaving_empties_the_group_and_ends_a_generation() -> None:
    async def scenario(d: Driver) -> None:
        ids = await d.stable_group("a")
        d.leave((ids["a"], None))
        await d.sleep(0)
        assert d.state == "Empty" and d.generation == 2
        assert d.coordinator.journal.records[-1].outcome == "empty"
        _, again = await d.enter("a2")
        assert (await again).generation_id == 3

    run(scenario)


def test_an_empty_group_waits_the_initial_delay_and_extends_it_for_newcomers() -> None:
    config = CoordinatorConfig(initial_rebalance_delay_ms=3000)

    async def one_newcomer(d: Driver) -> None:
        _, fa = await d.enter("a", rebalance_ms=10_000)
        await d.sleep(2.0)
        _, fb = await d.enter("b", rebalance_ms=10_000)
        await fa
        assert d.clock.time() == 6.0  # 3 s, then 3 s more because b arrived meanwhile
        assert (await fb).generation_id == 1

    async def a_stream_of_newcomers(d: Driver) -> None:
        _, first = await d.enter("m0", rebalance_ms=10_000)
        i = 0
        while not first.done():
            await d.sleep(1.0)
            i += 1
            if not first.done():
                await d.enter(f"m{i}", rebalance_ms=10_000)
        # Never longer than the rebalance timeout: 3 + 3 + 3 + 1 s.
        assert d.clock.time() == 10.0
        assert len((await first).members) == 10

    run(one_newcomer, config=config)
    run(a_stream_of_newcomers, config=config)


def test_a_pending_member_that_never_returns_expires() -> None:
    async def scenario(d: Driver) -> None:
        first = await d.join("", client="a", session_ms=6000)
        await d.sleep(6.0)
        late = await d.join(first.member_id)
        assert late.error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert any(e.kind == "pending-member-expired" for e in d.coordinator.journal.events)

    run(scenario)


def test_a_member_that_never_syncs_is_removed_after_the_rebalance_timeout() -> None:
    async def scenario(d: Driver) -> None:
        a, fa = await d.enter("a", session_ms=60_000, rebalance_ms=10_000)
        b, fb = await d.enter("b", session_ms=60_000, rebalance_ms=10_000)
        await fa, await fb
        assert (await d.sync(a, 1, ((a, b"x"), (b, b"y")))).error_code == NONE
        await d.sleep(10.0)
        assert d.coordinator.members("g") == (a,)
        assert d.state == "PreparingRebalance"
        assert any(e.kind == "sync-expired" and b in e.detail
                   for e in d.coordinator.journal.events)

    run(scenario)


# -- leader failure ------------------------------------------------------------------------------
def test_a_leader_that_vanishes_before_syncing_leads_to_a_new_rebalance() -> None:
    async def scenario(d: Driver) -> None:
        _a, fa = await d.enter("a")
        b, fb = await d.enter("b")
        await fa, await fb
        waiting = d.sync(b, 1)  # the leader a never sends its SyncGroup nor heartbeats
        aborted = await waiting
        assert aborted.error_code == ErrorCode.REBALANCE_IN_PROGRESS
        assert d.clock.time() == 10.0  # a's session timeout
        rejoined = await d.join(b)
        assert rejoined.generation_id == 2 and rejoined.leader_id == b
        outcomes = [(r.generation, r.outcome) for r in d.coordinator.journal.records]
        assert outcomes == [(1, "aborted")]

    run(scenario)


def test_a_leader_that_does_not_rejoin_is_replaced_by_one_that_did() -> None:
    async def scenario(d: Driver) -> None:
        ids = await d.stable_group("a", "b")
        assert d.coordinator.leader("g") == ids["a"]
        newcomer, parked = await d.enter("c")
        fb = d.join(ids["b"])
        while not fb.done():  # a stays alive by heartbeat but never rejoins
            await d.sleep(2.0)
            d.heartbeat(ids["a"], 1)
        response = await fb
        assert response.leader_id == ids["b"]
        assert set(d.coordinator.members("g")) == {ids["b"], newcomer}
        assert (await parked).generation_id == 2

    run(scenario)


# -- group size -----------------------------------------------------------------------------------
def test_a_full_group_turns_newcomers_away() -> None:
    config = CoordinatorConfig(initial_rebalance_delay_ms=0, max_group_size=2)

    async def scenario(d: Driver) -> None:
        await d.stable_group("a", "b")
        extra = await d.join("", client="c")
        assert extra.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED

    run(scenario, config=config)


# -- static membership ---------------------------------------------------------------------------
async def _static_pair(d: Driver) -> tuple[str, str]:
    """A static leader (instance "i-a") and a dynamic follower, stable on generation 1."""
    fa = d.join("", instance="i-a", client="a")
    b, fb = await d.enter("b")
    ra, rb = await fa, await fb
    a = ra.member_id
    assert a.startswith("i-a-") and ra.leader_id == rb.leader_id == a
    follower = d.sync(b, 1)
    await d.sync(a, 1, ((a, b"part-a"), (b, b"part-b")), instance="i-a")
    await follower
    return a, b


def test_a_static_member_that_restarts_gets_its_assignment_back_without_a_rebalance() -> None:
    async def scenario(d: Driver) -> None:
        old, b = await _static_pair(d)
        await d.sleep(5.0)  # the old incarnation died; within its session timeout it restarts
        restarted = await d.join("", instance="i-a", client="a")
        new = restarted.member_id
        assert restarted.error_code == NONE and new != old
        assert restarted.generation_id == 1  # no new generation
        assert restarted.leader_id == old  # JoinGroup v5 names the leader as it was
        assert d.state == "Stable"
        back = await d.sync(new, 1, instance="i-a")
        assert back.member_assignment == b"part-a"
        assert d.coordinator.leader("g") == new
        assert d.coordinator.static_members("g") == {"i-a": new}
        assert [r.generation for r in d.coordinator.journal.records] == [1]
        # The old incarnation is fenced when it speaks with its instance id, unknown otherwise.
        assert (await d.join(old, instance="i-a")).error_code == ErrorCode.FENCED_INSTANCE_ID
        assert (await d.sync(old, 1, instance="i-a")).error_code == ErrorCode.FENCED_INSTANCE_ID
        assert d.heartbeat(old, 1, instance="i-a") == ErrorCode.FENCED_INSTANCE_ID
        assert d.heartbeat(old, 1) == ErrorCode.UNKNOWN_MEMBER_ID
        assert d.heartbeat(b, 1) == NONE

    run(scenario)


def test_a_new_incarnation_fences_what_the_old_one_is_waiting_for() -> None:
    async def scenario(d: Driver) -> None:
        old, b = await _static_pair(d)
        c, fc = await d.enter("c")  # a newcomer starts a rebalance
        parked_old = d.join(old, instance="i-a")
        assert not parked_old.done()
        new = d.join("", instance="i-a", client="a")
        fenced = await parked_old
        assert fenced.error_code == ErrorCode.FENCED_INSTANCE_ID
        assert not new.done()  # b has not rejoined yet
        fb = d.join(b)
        response = await new
        assert response.error_code == NONE and response.generation_id == 2
        assert (await fb).generation_id == (await fc).generation_id == 2
        assert set(d.coordinator.members("g")) == {b, c, response.member_id}

    run(scenario)


def test_a_static_member_rejoining_with_another_protocol_triggers_a_rebalance() -> None:
    async def scenario(d: Driver) -> None:
        _old, b = await _static_pair(d)
        both = (("range", b""), ("roundrobin", b""))
        d.join(b, protocols=(("roundrobin", b""), ("range", b"")))  # b now prefers roundrobin
        # b's changed metadata already started generation 2's join phase; complete it.
        restarted = d.join("", instance="i-a", client="a", protocols=both)
        await d.sleep(0)
        response = await restarted
        assert response.generation_id == 2
        assert d.state == "CompletingRebalance"

    run(scenario)


def test_a_static_member_that_misses_a_rebalance_stays_in_the_group() -> None:
    async def scenario(d: Driver) -> None:
        a, b = await _static_pair(d)
        start = d.clock.time()
        fb = d.join(b, protocols=(("range", b"changed"),))
        while not fb.done():  # a is alive (heartbeats) but does not rejoin
            d.heartbeat(a, 1)
            await d.sleep(2.0)
        rb = await fb
        assert rb.generation_id == 2
        assert d.clock.time() - start == 30.0  # waited the full rebalance timeout
        assert set(d.coordinator.members("g")) == {a, b}  # a static member is not dropped
        assert rb.leader_id == b  # but the leader must be a member that rejoined
        assert {m[0] for m in rb.members} == {a, b}
        assert (await d.sync(b, 2, ((b, b"x"), (a, b"y")))).error_code == NONE
        for _ in range(5):  # b carries on; a stays silent until its session times out
            await d.sleep(2.0)
            d.heartbeat(b, 2)
        assert d.coordinator.members("g") == (b,)
        assert d.state == "PreparingRebalance"

    run(scenario)


def test_leave_by_instance_id_removes_a_static_member() -> None:
    async def scenario(d: Driver) -> None:
        _a, b = await _static_pair(d)
        response = d.leave(("", "i-a"))
        assert response.error_code == NONE
        assert d.coordinator.members("g") == (b,)
        assert d.leave(("", "i-zzz")).error_code == ErrorCode.UNKNOWN_MEMBER_ID

    run(scenario)


def test_the_rebalance_record_accounts_for_bytes_and_phases() -> None:
    config = CoordinatorConfig(initial_rebalance_delay_ms=500)

    async def scenario(d: Driver) -> None:
        a, fa = await d.enter("a", protocols=(("range", b"12345"),))
        b, fb = await d.enter("b", protocols=(("range", b"123"),))
        await fa, await fb
        await d.sleep(0.25)
        follower = d.sync(b, 1)
        await d.sync(a, 1, ((a, b"AA"), (b, b"BBBB")))
        await follower
        (record,) = d.coordinator.journal.records
        assert record.outcome == "stable" and record.leader == a and record.members == (a, b)
        # The initial delay of 500 ms was extended once because b arrived during it.
        assert record.join_ms == 1000.0 and record.sync_ms == 250.0
        assert record.total_ms == 1250.0
        assert dict(record.metadata) == {a: b"12345", b: b"123"}
        assert dict(record.assignments) == {a: b"AA", b: b"BBBB"}
        assert dict(record.sent_bytes) == {a: 5 + 6, b: 3}
        assert dict(record.received_bytes) == {a: 8 + 2, b: 4}
        text = repr(record)
        assert "gen 1 stable" in text and f"{a} (leader)" in text and "sent 11 B" in text

    run(scenario, config=config)


def test_defaults_are_kafkas() -> None:
    config = CoordinatorConfig()
    assert (config.initial_rebalance_delay_ms, config.min_session_timeout_ms,
            config.max_session_timeout_ms, config.new_member_join_timeout_ms) == (
        3000, 6000, 1_800_000, 300_000)
    assert QUICK.initial_rebalance_delay_ms == 0
    assert RANGE[0][0] == "range"


def test_member_ids_carry_the_same_uuid_text_as_the_uuid_module() -> None:
    rng = random.Random(13)
    for bits in [0, (1 << 128) - 1, *(rng.getrandbits(128) for _ in range(2000))]:
        assert random_uuid4(bits) == str(uuid.UUID(int=bits, version=4))
