"""Members that break or lie, thrown at whole groups drawn from ``assignor.testing``.

Each kind of bad input has a defined outcome: unreadable user data (garbage, truncated, empty)
gets an ``ASSIGNMENT_ERROR`` assignment of its own, readable at version 1, and a log line naming
the member; a future version with garbage after its header is served by version probing; offset
sums for tasks that do not exist or beyond the changelog's end are read with Kafka's rules. In
every case the honest members are served by the same checks as a normal rebalance (every task
active exactly once, every partition once, standbys off their active's process, the bytes each
member's own build reads) and no task is lost.
"""

from __future__ import annotations

import logging

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignor import TopologyBuilder
from assignor.leader.decode import FUTURE_PROCESS_ID
from assignor.leader.model import LeaderResult
from assignor.leader.pipeline import assign_group
from assignor.testing import Group, ProcessLayout, groups, subscription_infos
from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.tasks import plan_tasks
from protocol import AssignmentInfo, AssignorError, ProcessId, ProtocolError
from protocol.codec import LATEST_VERSION, Codec
from protocol.ids import TaskId
from tests.assignor.leader.pipeline_support import check_served

HONEST = groups(processes=st.integers(1, 3), threads=st.integers(1, 2))
#: Whole groups are costly to draw and check: a quarter of the profile's examples.
FEW = settings(max_examples=max(10, settings().max_examples // 4))


def _unreadable(data: bytes) -> bool:
    try:
        Codec().decode_subscription(data)
    except ProtocolError:
        return True
    return False


#: User data no build can read: random bytes, valid payloads cut short, nothing at all.
UNREADABLE = st.one_of(
    st.just(b""),
    st.binary(min_size=1, max_size=64),
    subscription_infos().map(Codec().encode_subscription).flatmap(
        lambda data: st.integers(0, max(0, len(data) - 1)).map(lambda cut: data[:cut])),
).filter(_unreadable)


def _serve_honest(group: Group, result: LeaderResult, *, extra: set[str]) -> None:
    """The normal-rebalance checks for every honest member (``check_served``)."""
    process_of = {m: p.process_id for p in group.processes for m in p.members()}
    builds = {m: p.build for p in group.processes for m in p.members()}
    used = {m: p.version for p in group.processes for m in p.members()}
    endpoints = {m: p.endpoint for p in group.processes for m in p.members()}
    for member in extra:  # served like anyone else, not checked as honest
        process_of[member] = FUTURE_PROCESS_ID
        builds[member] = used[member] = result.used_version
    check_served(result, process_of=process_of, builds=builds, used=used, endpoints=endpoints)


class _Lines(logging.Handler):
    """Error lines the leader logs (caplog does not mix with hypothesis' repeated calls)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())


@FEW
@given(group=HONEST, bad=st.lists(UNREADABLE, min_size=1, max_size=3))
def test_unreadable_members_get_an_error_of_their_own_and_the_rest_is_served(
    group: Group, bad: list[bytes]
) -> None:
    extra = {f"zz-bad-{i}": data for i, data in enumerate(bad)}
    lines = _Lines()
    logger = logging.getLogger("assignor")
    logger.addHandler(lines)
    try:
        result = assign_group(group.topology, group.assignor_config(),
                              group.group_input(extra=extra))
    finally:
        logger.removeHandler(lines)
    assert result.error is AssignorError.NONE, result.detail
    assert set(result.rejected) == set(extra)
    for member in extra:
        info = Codec(1).decode_assignment(result.members[member].user_data)
        assert isinstance(info, AssignmentInfo)
        assert info.error_code is AssignorError.ASSIGNMENT_ERROR
        assert result.members[member].partitions == ()
        assert any(member in line for line in lines.seen), member
    _serve_honest(group, result, extra=set())


#: A header from a newer build (version 4-9) followed by anything at all.
# From version 4 on every payload keeps its error code as the fourth field, which any older build
# reads (a newer member's shutdown request is heard at once); garbage may follow it.
FUTURE = st.builds(
    lambda version, rest: msgpack.packb([version, version, 0x53, 0, *rest]),
    st.integers(LATEST_VERSION + 1, 9),
    st.lists(st.one_of(st.binary(max_size=8), st.integers(-(2**63), 2**64 - 1),
                       st.text(max_size=8)), max_size=4),
)


@FEW
@given(group=HONEST, future=st.lists(FUTURE, min_size=1, max_size=2))
def test_a_future_version_with_garbage_after_its_header_is_served_by_version_probing(
    group: Group, future: list[bytes]
) -> None:
    extra = {f"zz-future-{i}": data for i, data in enumerate(future)}
    result = assign_group(group.topology, group.assignor_config(), group.group_input(extra=extra))
    assert result.error is AssignorError.NONE, result.detail
    assert not result.rejected
    assert result.followup  # a version probe (or a probing rebalance) follows
    _serve_honest(group, result, extra=set(extra))


@FEW
@given(group=HONEST, data=st.data())
def test_offset_sums_for_unknown_tasks_and_beyond_the_changelog_end_are_harmless(
    group: Group, data: st.DataObject
) -> None:
    """A process reports a task the topology does not have and a sum past the end: the first
    is ignored, the second counts as fully behind (Kafka's rule), nobody is refused."""
    liar = group.processes[0]
    ghost = TaskId(data.draw(st.integers(50, 99)), data.draw(st.integers(0, 5)))
    stateful = sorted(group.layout.stateful)
    lags = dict(liar.lags)
    lags[ghost] = 0
    if stateful:
        lags[stateful[0]] = -data.draw(st.integers(1, 10**6))  # offset sum = end + that
    running = liar.previous_active - set(stateful[:1])  # a running task reports -2 instead
    liar = type(liar)(**{**liar.__dict__, "lags": lags, "previous_active": running})
    changed = Group(**{**group.__dict__, "processes": (liar, *group.processes[1:])})
    result = assign_group(changed.topology, changed.assignor_config(), changed.group_input())
    assert result.error is AssignorError.NONE, result.detail
    assert not result.rejected and not result.refused
    _serve_honest(changed, result, extra=set())
    if stateful:
        before = result.clients_before[liar.process_id]
        assert before.lag_for(stateful[0]) > 0


# -- sizes at the limits ------------------------------------------------------------------------

def _one_topic_group(processes: int, threads: int, partitions: int, *, stateful: bool) -> Group:
    builder = TopologyBuilder("big")
    builder.add_source("source", "in")
    builder.add_processor("work", "source")
    if stateful:
        builder.add_state_store("store", "work")
    topology = builder.build()
    counts = {"in": partitions}
    sizing = size_internal_topics(topology, counts)
    assert isinstance(sizing, InternalTopics)
    layout = plan_tasks(topology, sizing.source_partitions)
    return Group(
        topology=topology, partitions=counts, config={"num.standby.replicas": 1},
        processes=tuple(ProcessLayout(name=f"p{i}", process_id=ProcessId.for_int(i + 1),
                                      threads=threads) for i in range(processes)),
        layout=layout, internal=sizing, end_sums=dict.fromkeys(layout.stateful, 1000),
    )


@pytest.mark.parametrize(("processes", "threads", "partitions", "stateful"), [
    (2000, 1, 2000, True),      # 2,000 members, a stateful task and a standby each
    (10, 2, 100_000, False),    # one topic of 100,000 partitions
])
def test_groups_at_the_size_limits_are_served(
    processes: int, threads: int, partitions: int, stateful: bool
) -> None:
    logging.disable(logging.WARNING)
    try:
        group = _one_topic_group(processes, threads, partitions, stateful=stateful)
        result = assign_group(group.topology, group.assignor_config(), group.group_input())
    finally:
        logging.disable(logging.NOTSET)
    assert len(result.members) == processes * threads
    if partitions <= 10_000:
        _serve_honest(group, result, extra=set())
        return
    # check_served compares partition sets per task (quadratic here): the lean version
    assert result.error is AssignorError.NONE, result.detail
    owners: dict[TaskId, str] = {}
    seen: set[object] = set()
    for member, answer in result.members.items():
        assert len(answer.partitions) == len(set(answer.partitions))
        seen.update(answer.partitions)
        for task in answer.info.active_tasks:
            assert owners.setdefault(task, member) == member, f"{task} active twice"
    assert set(owners) == set(group.layout.tasks)
    assert len(seen) == partitions
    first = next(iter(result.members.values()))
    decoded = Codec().decode_assignment(first.user_data)
    assert isinstance(decoded, AssignmentInfo)
    assert decoded.active_tasks == first.info.active_tasks
