"""Ids print, parse and sort as Kafka's Java does; the assignors' tie-breaks depend on it."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from protocol.ids import (
    HostInfo,
    ProcessId,
    TaskId,
    TopicPartition,
    java_string_key,
    sorted_tasks,
    task_order,
    trusted_model,
    trusted_task_id,
    trusted_topic_partition,
)

int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


def java_uuid_compare(a: tuple[int, int], b: tuple[int, int]) -> int:
    """java.util.UUID.compareTo on (msb, lsb) given as signed longs."""
    if a[0] != b[0]:
        return -1 if a[0] < b[0] else 1
    if a[1] != b[1]:
        return -1 if a[1] < b[1] else 1
    return 0


@given(int64, int64, int64, int64)
def test_process_id_orders_like_java_uuid(msb1: int, lsb1: int, msb2: int, lsb2: int) -> None:
    first = ProcessId.from_halves(msb1, lsb1)
    second = ProcessId.from_halves(msb2, lsb2)
    assert first.most_significant_bits == msb1 and first.least_significant_bits == lsb1
    expected = java_uuid_compare((msb1, lsb1), (msb2, lsb2))
    assert (first < second) == (expected < 0)
    assert (first > second) == (expected > 0)
    assert (first == second) == (expected == 0)


def test_process_id_order_differs_from_string_order() -> None:
    high_bit = ProcessId(uuid.UUID("80000000-0000-0000-0000-000000000000"))
    low = ProcessId(uuid.UUID("10000000-0000-0000-0000-000000000000"))
    # As text "8..." > "1...", but Java reads msb 0x8000... as a negative long.
    assert str(high_bit) > str(low)
    assert high_bit < low


def test_process_id_for_int_keeps_order() -> None:
    ids = [ProcessId.for_int(n) for n in (5, 1, 3, 10)]
    assert [p.least_significant_bits for p in sorted(ids)] == [1, 3, 5, 10]
    assert str(ProcessId.for_int(1)) == "00000000-0000-0000-0000-000000000001"


@given(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1))
def test_task_id_round_trips_through_text(subtopology: int, partition: int) -> None:
    task = TaskId(subtopology, partition)
    assert str(task) == f"{subtopology}_{partition}"
    assert TaskId.parse(str(task)) == task


def test_task_id_with_named_topology_prints_as_kafka() -> None:
    task = TaskId(1, 2, topology="orders")
    assert str(task) == "orders__1_2"
    assert TaskId.parse("orders__1_2") == task


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=30))
def test_task_id_orders_by_subtopology_then_partition(pairs: list[tuple[int, int]]) -> None:
    tasks = [TaskId(s, p) for s, p in pairs]
    assert [(t.subtopology, t.partition) for t in sorted(tasks)] == sorted(pairs)


def test_task_id_orders_by_topology_name_first() -> None:
    assert TaskId(5, 5, topology="a") < TaskId(0, 0, topology="b")


def test_task_id_refuses_to_compare_named_with_unnamed() -> None:
    with pytest.raises(ValueError, match="only one has a named topology"):
        _ = TaskId(0, 0, topology="a") < TaskId(0, 1)


@pytest.mark.parametrize("text", ["", "0", "a_1", "0_-1", "_1", "0_1_"])
def test_task_id_parse_rejects_bad_text(text: str) -> None:
    with pytest.raises(ValueError):
        TaskId.parse(text)


def test_task_id_rejects_negative_parts() -> None:
    with pytest.raises(ValidationError, match="subtopology"):
        TaskId(-1, 0)


def test_task_id_is_hashable_and_frozen() -> None:
    task = TaskId(0, 1)
    assert {task: 1}[TaskId(0, 1)] == 1
    with pytest.raises(ValidationError):
        task.partition = 3  # type: ignore[misc]


def test_topic_partition_orders_by_topic_then_partition() -> None:
    tps = [TopicPartition("b", 0), TopicPartition("a", 10), TopicPartition("a", 2)]
    assert [str(tp) for tp in sorted(tps)] == ["a-2", "a-10", "b-0"]


def test_topic_partition_rejects_empty_topic() -> None:
    with pytest.raises(ValidationError, match="topic"):
        TopicPartition("", 0)


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [("localhost:8080", "localhost", 8080), ("[::1]:9092", "::1", 9092)],
)
def test_host_info_parses_and_prints(text: str, host: str, port: int) -> None:
    info = HostInfo.parse(text)
    assert (info.host, info.port) == (host, port)
    assert str(info) == text


@pytest.mark.parametrize("text", ["localhost", ":80", "host:port", "host:99999"])
def test_host_info_rejects_bad_endpoints(text: str) -> None:
    with pytest.raises(ValueError):
        HostInfo.parse(text)


def test_models_validate_from_dicts_and_json() -> None:
    assert TaskId.model_validate({"subtopology": 1, "partition": 2}) == TaskId(1, 2)
    assert TaskId.model_validate_json('{"subtopology": 1, "partition": 2, "topology": "t"}') == (
        TaskId(1, 2, topology="t")
    )
    assert TopicPartition.model_validate({"topic": "a", "partition": 0}) == TopicPartition("a", 0)
    assert HostInfo.model_validate({"host": "h", "port": 1}) == HostInfo("h", 1)
    assert ProcessId.model_validate({"uuid": str(uuid.UUID(int=7))}) == ProcessId.for_int(7)
    with pytest.raises(ValidationError, match="partition"):
        TaskId.model_validate({"subtopology": 1})


@given(
    st.lists(
        st.builds(TaskId, st.integers(0, 5), st.integers(0, 5), topology=st.text(min_size=1)),
        min_size=2,
    )
)
def test_task_sort_key_orders_like_the_comparisons(tasks: list[TaskId]) -> None:
    assert sorted(tasks, key=lambda t: t.sort_key) == sorted(tasks)


def test_topology_names_order_as_java_strings_not_code_points() -> None:
    # U+FF5E is one UTF-16 unit (0xFF5E); U+1F600 is a surrogate pair starting 0xD83D. Java's
    # String.compareTo puts the emoji first; Python's str order puts it last.
    emoji, fullwidth = TaskId(0, 0, topology="\U0001f600"), TaskId(0, 0, topology="\uff5e")
    assert emoji < fullwidth
    assert sorted([fullwidth, emoji]) == [emoji, fullwidth]
    assert java_string_key("\U0001f600") < java_string_key("\uff5e")
    assert "\U0001f600" > "\uff5e"


def test_trusted_constructors_build_what_validation_builds() -> None:
    assert trusted_task_id(1, 2, "t") == TaskId(1, 2, topology="t")
    assert trusted_task_id(1, 2).model_dump() == TaskId(1, 2).model_dump()
    assert hash(trusted_topic_partition("a", 3)) == hash(TopicPartition("a", 3))
    assert trusted_topic_partition("a", 3).model_fields_set == {"topic", "partition"}


def test_topic_partition_interoperates_with_aiokafkas() -> None:
    from aiokafka.structs import TopicPartition as AiokafkaTopicPartition

    ours, theirs = TopicPartition("orders", 3), AiokafkaTopicPartition("orders", 3)
    assert ours == theirs and theirs == ours
    assert {ours: "found"}[theirs] == "found"
    assert {theirs: "found"}[ours] == "found"
    assert ours != AiokafkaTopicPartition("orders", 4)
    assert ours != ("orders", 3), "a plain tuple is not a partition"


@given(
    st.integers(min_value=0, max_value=2**31 - 1),
    st.integers(min_value=0, max_value=2**31 - 1),
    st.none() | st.text(min_size=1, max_size=5),
)
def test_cached_hash_and_sort_key_match_the_fields_however_the_id_was_made(
    subtopology: int, partition: int, topology: str | None
) -> None:
    """Ids keep their hash and sort key in slots; every way of making or copying one (which may
    skip the constructors that fill the slots) must still hash and order by its fields."""
    import copy
    import pickle

    made = [
        TaskId(subtopology, partition, topology=topology),
        trusted_task_id(subtopology, partition, topology),
        TaskId.model_validate(
            {"subtopology": subtopology, "partition": partition, "topology": topology}
        ),
        TaskId.model_construct(subtopology=subtopology, partition=partition, topology=topology),
    ]
    made += [pickle.loads(pickle.dumps(t)) for t in made] + [copy.copy(made[0])]
    name_key = b"" if topology is None else java_string_key(topology)
    for task in made:
        assert hash(task) == hash((subtopology, partition, topology))
        assert task.sort_key == (name_key, subtopology, partition)
        assert task == made[0]
    moved = made[0].model_copy(update={"partition": partition + 1})
    assert hash(moved) == hash((subtopology, partition + 1, topology))
    assert moved.sort_key == (name_key, subtopology, partition + 1) and moved != made[0]
    tps = [
        TopicPartition("t", partition),
        trusted_topic_partition("t", partition),
        TopicPartition.model_construct(topic="t", partition=partition),
    ]
    tps.append(pickle.loads(pickle.dumps(tps[0])))
    assert {hash(tp) for tp in tps} == {hash(("t", partition))}
    assert tps[0].model_copy(update={"topic": "u"}) == TopicPartition("u", partition)
    pid = ProcessId.for_int(partition)
    again = pickle.loads(pickle.dumps(pid))
    assert hash(again) == hash(pid) == hash(pid.uuid) and again.sort_key == pid.sort_key


def test_trusted_model_builds_what_model_construct_builds() -> None:
    """The decoder builds subscriptions and process ids with ``trusted_model``; they must be
    indistinguishable from ``model_construct``'s (fields, fields set, equality, copies)."""
    from protocol.messages import SubscriptionInfo

    pid = trusted_model(ProcessId, {"uuid": uuid.UUID(int=7)})
    assert pid == ProcessId.for_int(7) and hash(pid) == hash(ProcessId.for_int(7))
    assert pid.model_fields_set == {"uuid"} and pid.sort_key == (0, 7)
    values = {
        "version": 11,
        "latest_supported_version": 11,
        "process_id": pid,
        "user_endpoint": HostInfo("h", 1),
        "task_offset_sums": {TaskId(0, 1): -2},
        "unique_field": 3,
        "error_code": SubscriptionInfo.model_fields["error_code"].default,
        "client_tags": {"az": "1"},
        "rack_id": None,
        "group_instance_id": None,
    }
    fast = trusted_model(SubscriptionInfo, dict(values))
    slow = SubscriptionInfo.model_construct(**values)
    assert fast == slow and fast.__dict__ == slow.__dict__
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_copy(update={"unique_field": 4}).unique_field == 4


def test_trusted_models_share_a_fields_set_that_copies_leave_alone() -> None:
    """``trusted_model`` hands every instance of a class one shared set of all its fields;
    a copy with changes (pydantic copies the set first) must neither fail nor change it, and
    values naming fewer fields (outside the contract) still get their own true set."""
    first = trusted_model(ProcessId, {"uuid": uuid.UUID(int=1)})
    second = trusted_model(ProcessId, {"uuid": uuid.UUID(int=2)})
    assert first.model_fields_set is second.model_fields_set
    copied = first.model_copy(update={"uuid": uuid.UUID(int=3)})
    assert copied == ProcessId.for_int(3) and copied.model_fields_set == {"uuid"}
    assert copied.model_fields_set is not first.model_fields_set
    assert first.model_fields_set == second.model_fields_set == {"uuid"}
    partial = trusted_model(HostInfo, {"host": "h"})
    assert partial.model_fields_set == {"host"}
    assert trusted_model(HostInfo, {"host": "h", "port": 1}).model_fields_set == {"host", "port"}


_task_numbers = st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1))


@given(st.sets(_task_numbers, max_size=30), st.sampled_from([None, "a", "b_c"]))
def test_sorted_tasks_is_the_task_order(
    numbers: set[tuple[int, int]], topology: str | None
) -> None:
    """The rank shortcut (unnamed) and the key fallback (named) both give Kafka's order."""
    tasks = [TaskId(subtopology=s, partition=p, topology=topology) for s, p in numbers]
    assert sorted_tasks(tasks) == sorted(tasks)
    assert sorted_tasks(set(tasks)) == sorted(tasks, key=task_order)


def test_sorted_tasks_orders_a_mix_unnamed_first() -> None:
    named = TaskId(subtopology=0, partition=0, topology="x")
    unnamed = TaskId(subtopology=5, partition=5)
    assert sorted_tasks([named, unnamed]) == [unnamed, named]
