"""What a user of the adapter sees: listeners (plain and async), changelogs, logs and metrics.

Rebalances go through aiokafka's own structs, as in ``test_streams_assignor.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from assignor import (
    BrokerUnreachableError,
    RebalanceMetrics,
    StreamsPartitionAssignor,
    StreamsProcess,
    decode_answers,
)
from assignor.config import AssignorConfig
from assignor.member import MemberAssignment
from protocol.ids import TaskId, TopicPartition
from tests.assignor.adapter.test_streams_assignor import (
    APP,
    _end_offsets,
    _group,
    _process,
    _rebalance,
)

ALL_TASKS = [TaskId(s, p) for s in (0, 1) for p in range(4)]


def _one_process_group(**kwargs: Any) -> tuple[StreamsProcess, dict[str, StreamsPartitionAssignor]]:
    process = _process(1, **kwargs)
    process.set_changelog_end_offsets(_end_offsets())
    return process, _group([process], [2])


# --- listeners --------------------------------------------------------------------------------


async def test_async_listeners_are_awaited_in_order_after_plain_ones() -> None:
    process, assignors = _one_process_group()
    order: list[str] = []
    finished = asyncio.Event()

    async def slow(assignor: StreamsPartitionAssignor, assignment: MemberAssignment) -> None:
        order.append(f"slow-start-{assignor.index}")
        await asyncio.sleep(0.01)
        order.append(f"slow-end-{assignor.index}")

    class Recorder:
        async def __call__(self, assignor: StreamsPartitionAssignor, _: MemberAssignment) -> None:
            order.append(f"second-{assignor.index}")
            if assignor.index == 1:
                finished.set()

    process.add_listener(slow)
    process.add_listener(lambda a, m: order.append(f"plain-{a.index}"))
    process.add_listener(Recorder())
    _rebalance(assignors, "m0-0")
    # on_assignment returned: plain listeners ran, async ones are only scheduled
    assert order == ["plain-0", "plain-1"]
    await process.wait_for_listeners(timeout_s=10)
    assert finished.is_set()
    for index in (0, 1):  # per consumer: in the order added
        mine = [e for e in order if e.endswith(f"-{index}") and not e.startswith("plain")]
        assert mine == [f"slow-start-{index}", f"slow-end-{index}", f"second-{index}"]


async def test_a_consumers_async_listeners_see_rebalances_in_order() -> None:
    process, assignors = _one_process_group()
    seen: list[tuple[int, int]] = []

    async def listener(assignor: StreamsPartitionAssignor, assignment: MemberAssignment) -> None:
        mine = 2 if assignment.changes.kept_active else 1  # the second rebalance keeps all
        # the first rebalance's listener is slower than the second's would be
        await asyncio.sleep(0.05 if mine == 1 else 0)
        seen.append((assignor.index, mine))

    process.add_listener(listener)
    for _ in range(2):
        _rebalance(assignors, "m0-0")
    await process.wait_for_listeners(timeout_s=10)
    for index in (0, 1):
        assert [g for i, g in seen if i == index] == [1, 2]


async def test_a_failing_listener_is_counted_and_the_others_still_run() -> None:
    process, assignors = _one_process_group()
    ran: list[str] = []

    def broken(_: StreamsPartitionAssignor, __: MemberAssignment) -> None:
        raise RuntimeError("plain boom")

    async def broken_async(_: StreamsPartitionAssignor, __: MemberAssignment) -> None:
        raise RuntimeError("async boom")

    async def fine(a: StreamsPartitionAssignor, _: MemberAssignment) -> None:
        ran.append(f"async-{a.index}")

    for listener in (broken, broken_async, fine):
        process.add_listener(listener)
    _rebalance(assignors, "m0-0")
    await process.wait_for_listeners(timeout_s=10)
    assert sorted(ran) == ["async-0", "async-1"]
    assert process.metrics().listener_errors == 4


def _not_a_listener() -> Iterator[object]:
    yield from ()


@pytest.mark.parametrize(
    ("candidate", "message"),
    [
        (42, "must be a function listener(assignor, assignment)"),
        ("print", "must be a function listener(assignor, assignment)"),
        (lambda assignment: None, "cannot be called as listener(assignor, assignment)"),
        (lambda a, b, c: None, "cannot be called as listener(assignor, assignment)"),
        (_not_a_listener, "is a generator function"),
    ],
)
def test_what_cannot_be_a_listener_is_refused_when_added(candidate: object, message: str) -> None:
    process = _process(1)
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        process.add_listener(candidate)  # type: ignore[arg-type]


async def test_async_listener_closed_down_with_the_process() -> None:
    process, assignors = _one_process_group()
    started = asyncio.Event()
    cancelled: list[int] = []

    async def forever(a: StreamsPartitionAssignor, _: MemberAssignment) -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(a.index)
            raise

    process.add_listener(forever)
    _rebalance(assignors, "m0-0")
    await asyncio.wait_for(started.wait(), 10)
    with pytest.raises(TimeoutError, match="still running"):
        await process.wait_for_listeners(timeout_s=0.05)
    await process.close()
    assert sorted(cancelled) == [0, 1]


def test_the_listener_gets_changelog_partitions_for_actives_and_standbys() -> None:
    processes = [_process(1), _process(2)]
    for process in processes:
        process.set_changelog_end_offsets(_end_offsets())
    assignors = _group(processes, [1, 1])
    got: dict[int, MemberAssignment] = {}
    processes[0].add_listener(lambda a, m: got.__setitem__(a.index, m))
    _rebalance(assignors, "m0-0")
    mine = got[0]
    assert mine.active_tasks and mine.standby_tasks  # one standby replica: the other half
    for task in [*mine.active_tasks, *mine.standby_tasks]:
        store = "join-store" if task.subtopology == 0 else "counts"
        assert mine.changelogs[task] == (
            TopicPartition(f"{APP}-{store}-changelog", task.partition),
        )


# --- logs -------------------------------------------------------------------------------------


def test_one_info_line_per_rebalance_and_one_shortfall_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, assignors = _one_process_group()  # one standby wanted, no other process
    with caplog.at_level(logging.INFO, logger="assignor"):
        _rebalance(assignors, "m0-0")
    leader = [r for r in caplog.records if r.name == "assignor.leader.pipeline"]
    infos = [r.getMessage() for r in leader if r.levelno == logging.INFO]
    assert len(infos) == 1
    assert "8 tasks on 1 clients; 0 moved, 8 newly placed, 0 warm-ups, 8 standbys short" in infos[0]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith("8 standby replicas of 8 tasks could not be placed")
    members = [
        r.getMessage()
        for r in caplog.records
        if r.name == "assignor.adapter.streams_assignor" and r.levelno == logging.INFO
    ]
    assert sorted(members) == [
        "consumer 0 received 4 active (0 kept, 4 added, 0 removed) and 0 standby tasks "
        "(0 kept, 0 added, 0 removed)",
        "consumer 1 received 4 active (0 kept, 4 added, 0 removed) and 0 standby tasks "
        "(0 kept, 0 added, 0 removed)",
    ]


def test_debug_gives_every_replicas_reason(caplog: pytest.LogCaptureFixture) -> None:
    _, assignors = _one_process_group()
    with caplog.at_level(logging.DEBUG, logger="assignor.leader.pipeline"):
        _rebalance(assignors, "m0-0")
    reasons = [
        r.getMessage()
        for r in caplog.records
        if r.name == "assignor.leader.pipeline" and r.levelno == logging.DEBUG
    ]
    assert len(reasons) == 8
    assert all(" active on " in line for line in reasons)


# --- metrics ----------------------------------------------------------------------------------


def test_metrics_count_rebalances_moves_warmups_probing_and_errors() -> None:
    config = AssignorConfig.model_validate(
        {"num.standby.replicas": 0, "acceptable.recovery.lag": 10}
    )
    first = _process(1, config=config)
    first.set_changelog_end_offsets(_end_offsets())
    assert first.metrics() == RebalanceMetrics()
    alone = _group([first], [1])
    _rebalance(alone, "m0-0")
    after_one = first.metrics()
    assert (after_one.rebalances, after_one.assign_calls, after_one.active_tasks) == (1, 1, 8)
    assert after_one.tasks_moved == after_one.standbys_short == after_one.warmups_placed == 0
    assert after_one.assign_seconds_total == after_one.assign_seconds_last > 0

    # a second process with no state: the leader keeps the actives and warms it up
    cold = _process(2, config=config)
    group = {"m0-0": alone["m0-0"], "m1-0": next(iter(_group([cold], [1]).values()))}
    _rebalance(group, "m0-0")
    warm = first.metrics()
    assert warm.assign_calls == 2 and warm.rebalances == 2
    assert warm.warmups_placed > 0 and warm.probing_rebalances_scheduled == 1
    assert warm.tasks_moved == 0

    # the same process now reports caught-up state for every task: the leader moves half over
    caught_up = _process(2, config=config, state=lambda: dict.fromkeys(ALL_TASKS, 100))
    group["m1-0"] = next(iter(_group([caught_up], [1]).values()))
    _rebalance(group, "m0-0")
    moved = first.metrics()
    assert moved.tasks_moved == 4
    assert moved.active_tasks == 4
    assert cold.metrics().assign_calls == 0  # not the leader
    assert dataclasses.asdict(moved).keys() <= moved.as_dict().keys()
    assert moved.as_dict()["errors"] == moved.errors == 0

    # an exception in assign(): counted, never raised to aiokafka
    leader = alone["m0-0"]
    meta = ConsumerProtocolMemberMetadata(0, ["orders"], b"")
    broken = SimpleNamespace(partitions_for_topic=lambda t: 1 / 0)
    answers = decode_answers(leader.assign(broken, {"m0-0": meta}))
    leader.on_assignment(ConsumerProtocolMemberAssignment.decode(answers["m0-0"].encode()))
    failed = first.metrics()
    assert failed.assign_errors == 1 and failed.assignment_errors == 1 and failed.errors == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        failed.rebalances = 0  # type: ignore[misc]


# --- connect() --------------------------------------------------------------------------------


async def test_connect_to_a_closed_port_fails_clearly() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()  # nothing listens on the port any more
    process = _process(1)
    with pytest.raises(BrokerUnreachableError, match=f"cannot reach Kafka at 127.0.0.1:{port}"):
        await process.connect(f"127.0.0.1:{port}", timeout_s=5)
    assert process.changelog_end_offsets is None


async def test_connect_to_a_silent_server_fails_after_the_timeout() -> None:
    """A port that accepts connections and never answers (a wrong service, a hung broker)."""
    held: list[asyncio.StreamWriter] = []

    async def accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        process = _process(1)
        with pytest.raises(BrokerUnreachableError, match=r"within 0\.5 s"):
            await process.connect(f"127.0.0.1:{port}", timeout_s=0.5)
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()
