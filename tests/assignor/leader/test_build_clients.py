"""The leader's client bookkeeping equals ``build_client_state`` fed one report per consumer.

``pipeline.build_clients`` builds each ``ClientState`` directly (the leader's consumers own no
partitions); this checks it against the general function on drawn groups: several processes,
consumers that share or split their reports, reports that overlap (a later consumer wins),
tasks that are no longer stateful, and unknown end offsets.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assignor.leader.model import DecodedGroup
from assignor.leader.pipeline import build_clients
from assignor.placement.client_state import ConsumerReport, build_client_state
from assignor.topology.tasks import TaskLayout
from protocol import HostInfo, ProcessId, SubscriptionInfo, TaskId

TASKS = [TaskId(s, p) for s in range(2) for p in range(4)]
SUMS = st.one_of(st.sampled_from([-2, -3, 0]), st.integers(0, 10**6))


@st.composite
def decoded_groups(draw: st.DrawFn) -> DecodedGroup:
    subscriptions: dict[str, SubscriptionInfo] = {}
    process_of: dict[str, ProcessId] = {}
    for pid in range(1, draw(st.integers(1, 4)) + 1):
        process = ProcessId.for_int(pid)
        tags = draw(st.sampled_from([{}, {"zone": f"z{pid}"}]))
        endpoint = draw(st.sampled_from([None, HostInfo(f"h{pid}", 80)]))
        shared = None
        for index in range(draw(st.integers(1, 4))):
            if shared is None or draw(st.booleans()):
                shared = SubscriptionInfo(
                    version=4,
                    latest_supported_version=4,
                    process_id=process,
                    user_endpoint=endpoint,
                    client_tags=tags,
                    rack_id=draw(st.sampled_from([None, "r1"])),
                    task_offset_sums=draw(st.dictionaries(st.sampled_from(TASKS), SUMS)),
                )
            member = draw(st.sampled_from(["a", "b", "c"])) + f"-{pid}-{index}"
            subscriptions[member] = shared
            process_of[member] = process
    return DecodedGroup(
        subscriptions=subscriptions,
        rejected={},
        process_of=process_of,
        min_used_version=4,
        min_supported_version=4,
        future_version=None,
        shutdown_requested_by=(),
    )


@given(group=decoded_groups(), known=st.booleans(), stateful=st.sets(st.sampled_from(TASKS)))
def test_build_clients_equals_build_client_state(
    group: DecodedGroup, known: bool, stateful: set[TaskId]
) -> None:
    layout = TaskLayout(
        tasks={task: () for task in TASKS},
        stateful=frozenset(stateful),
        changelogs={},
        changelog_counts={},
    )
    end_sums = dict.fromkeys(stateful, 500) if known else None
    built = build_clients(group, layout, end_sums)
    by_process: dict[ProcessId, list[str]] = {}
    for member in sorted(group.subscriptions):
        by_process.setdefault(group.process_of[member], []).append(member)
    assert list(built) == list(by_process)
    for process, members in by_process.items():
        first = group.subscriptions[members[0]]
        expected = build_client_state(
            process,
            [
                ConsumerReport.from_subscription(m, group.subscriptions[m])
                for m in members
            ],
            {},
            end_sums if end_sums is not None else dict.fromkeys(stateful, -3),
            client_tags=first.client_tags,
            host_info=first.user_endpoint,
            rack=first.rack_id,
        )
        assert built[process] == expected
        assert dict(built[process].task_lags) == dict(expected.task_lags)
        assert dict(built[process].client_tags) == dict(expected.client_tags)
