"""Property tests of the leader's pipeline over random groups, topologies and codec builds.

Whatever the group looks like, a normal assignment must serve every task exactly once, every
source partition exactly once, keep standbys off their active's process, align each member's
active tasks with its sorted partitions, be readable by each member's own build, and give the
member side back exactly those tasks; mixed builds are served at the lowest version in use.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assignor.config import AssignorConfig
from assignor.leader.decode import FUTURE_PROCESS_ID
from assignor.leader.model import GroupInput, MemberSubscription
from assignor.leader.pipeline import assign_group
from assignor.testing import sized_topologies
from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.tasks import plan_tasks
from protocol.codec import Codec
from protocol.ids import HostInfo, ProcessId, TaskId
from protocol.messages import LATEST_OFFSET, UNKNOWN_OFFSET_SUM, SubscriptionInfo
from tests.assignor.leader.pipeline_support import check_served


@st.composite
def groups(draw: st.DrawFn) -> dict[str, Any]:
    """A topology, its cluster, and 1-4 processes of 1-3 consumers with random local state."""
    topology, counts = draw(sized_topologies(max_partitions=4))
    sizing = size_internal_topics(topology, counts)
    cluster = dict(counts)
    stateful: list[TaskId] = []
    end_offsets = None
    if isinstance(sizing, InternalTopics):
        cluster.update(sizing.repartition_partitions)
        layout = plan_tasks(topology, sizing.source_partitions)
        stateful = sorted(layout.stateful)
        if draw(st.integers(0, 4)) > 0:  # mostly known, sometimes unknown (fallback)
            end_offsets = {
                tp: draw(st.integers(0, 10_000))
                for parts in layout.changelogs.values()
                for tp in parts
            }
    leader_build = draw(st.integers(1, 3))
    members: dict[str, MemberSubscription] = {}
    builds: dict[str, int] = {}
    used: dict[str, int] = {}
    real_process: dict[str, ProcessId] = {}
    endpoints: dict[str, HostInfo | None] = {}
    for p in range(draw(st.integers(1, 4))):
        # distinct processes: the top 4 bits are the index (a random part reaching into them
        # let hypothesis draw two processes with one id, which the guard rightly refuses)
        process = ProcessId.for_int(draw(st.integers(0, 2**60 - 1)) | (p << 60))
        build = draw(st.integers(1, 3))
        version = draw(st.integers(1, build))
        endpoint = HostInfo("h", 9000 + p) if draw(st.booleans()) else None
        for c in range(draw(st.integers(1, 3))):
            sums = (
                {
                    task: draw(
                        st.one_of(
                            st.just(LATEST_OFFSET),
                            st.just(UNKNOWN_OFFSET_SUM),
                            st.integers(0, 12_000),
                        )
                    )
                    for task in draw(st.lists(st.sampled_from(stateful), unique=True, max_size=4))
                }
                if stateful
                else {}
            )
            info = SubscriptionInfo(
                version=version,
                latest_supported_version=build,
                process_id=process,
                user_endpoint=endpoint,
                task_offset_sums=sums,
            )
            member = f"p{p}-c{c}"
            members[member] = MemberSubscription((), Codec(build).encode_subscription(info))
            builds[member], used[member] = build, version
            real_process[member] = process
            endpoints[member] = endpoint
    config = AssignorConfig.model_validate(
        {
            "num.standby.replicas": draw(st.integers(0, 2)),
            "acceptable.recovery.lag": draw(st.sampled_from([0, 100, 10_000])),
            "max.warmup.replicas": draw(st.integers(1, 3)),
        }
    )
    return {
        "topology": topology,
        "sizing": sizing,
        "group": GroupInput(members, cluster, end_offsets, now_ms=0),
        "config": config,
        "leader": Codec(leader_build),
        "builds": builds,
        "used": used,
        "process": real_process,
        "endpoints": endpoints,
    }


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(groups())
def test_any_group_is_served_completely_and_consistently(case: dict[str, Any]) -> None:
    leader: Codec = case["leader"]
    result = assign_group(case["topology"], case["config"], case["group"], leader)
    builds, used = case["builds"], case["used"]
    assert result.used_version == min([leader.latest_supported, *used.values()])
    assert result.commonly_supported_version == min([leader.latest_supported, *builds.values()])
    assert set(result.members) == set(builds)
    if not isinstance(case["sizing"], InternalTopics):
        assert result.error is case["sizing"].code
        for member in builds:
            info = Codec(builds[member]).decode_assignment(result.members[member].user_data)
            assert getattr(info, "error_code", None) is result.error
        return
    process_of = {
        m: case["process"][m] if used[m] <= leader.latest_supported else FUTURE_PROCESS_ID
        for m in builds
    }
    check_served(
        result, process_of=process_of, builds=builds, used=used, endpoints=case["endpoints"]
    )
    lags_known = case["group"].changelog_end_offsets is not None
    assert result.assignor == ("high_availability" if lags_known else "fallback_prior")
    deadlines = [m for m, r in result.members.items() if r.info.next_rebalance_ms < 2**63 - 1]
    probing = result.task_assignment is not None and result.task_assignment.probing_rebalance_needed
    assert len(deadlines) == (1 if probing else 0)


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(groups())
def test_the_summary_counts_task_by_task(case: dict[str, Any]) -> None:
    """``summarize`` works on whole sets; its numbers are the plain per-task count's."""
    result = assign_group(case["topology"], case["config"], case["group"], case["leader"])
    summary = result.summary
    assignment, layout = result.task_assignment, result.layout
    if assignment is None or layout is None:
        assert summary is None
        return
    assert summary is not None
    owner_before: dict[TaskId, ProcessId] = {}
    for pid, client in result.clients_before.items():
        for task in client.previous_active:
            owner_before.setdefault(task, pid)
    moved, placed, holders = [], 0, dict.fromkeys(layout.stateful, 0)
    for pid, client in assignment.clients.items():
        for task in client.active:
            if task not in owner_before:
                placed += 1
            elif owner_before[task] != pid:
                moved.append(task)
        for task in client.standby - assignment.warmups.get(pid, frozenset()):
            holders[task] = holders.get(task, 0) + 1
    wanted = case["config"].num_standby_replicas
    short = [wanted - n for n in holders.values() if n < wanted]
    assert (summary.moved, summary.placed) == (tuple(sorted(moved)), placed)
    assert (summary.standbys_short, summary.short_tasks) == (sum(short), len(short))
