"""Compactness: our encoding is never larger than Kafka Streams' v11 encoding of the same content.

Kafka's size is computed field by field (``tests/protocol/sizes.py``); the formula is itself
checked against the real kafka-streams 4.1.2 encoder, through the conformance harness's
``wire_size`` op (``tests/conformance/java/WireSizeOp.java``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignor.testing import assignment_infos, subscription_infos
from protocol import AssignmentInfo, SubscriptionInfo
from protocol.codec import encode_assignment, encode_subscription
from tests.protocol.sizes import (
    assignment_content,
    java_assignment_v11_size,
    java_subscription_v11_size,
    subscription_content,
)
from tests.support.jvm import JavaHarness, build_harness
from tests.support.requirements import require_tools


def test_the_benchmark_contents_are_smaller_than_kafkas() -> None:
    sub = subscription_content()
    assert len(sub.task_offset_sums) == 1000
    assert len(encode_subscription(sub)) <= java_subscription_v11_size(sub)
    for partitions in (100, 7_500):
        info = assignment_content(partitions, 100)
        assert len(info.partitions_by_host) == 100
        assert len(encode_assignment(info)) <= java_assignment_v11_size(info)
    big = assignment_content(7_500, 100)
    assert len(big.active_tasks) + len(big.standby_tasks) == 1000


@given(info=subscription_infos(st.just(3), max_tasks=60))
def test_any_subscription_is_no_larger_than_kafkas(info: SubscriptionInfo) -> None:
    # Kafka carries no rack id or group instance id in its user data: compare like with like.
    info = info.model_copy(update={"rack_id": None, "group_instance_id": None})
    assert len(encode_subscription(info)) <= java_subscription_v11_size(info)


@given(info=assignment_infos(st.just(3), max_tasks=40))
def test_any_assignment_is_no_larger_than_kafkas(info: AssignmentInfo) -> None:
    assert len(encode_assignment(info)) <= java_assignment_v11_size(info)


# --- the size formula against the real encoder ------------------------------------------------


def _as_java_input(message: SubscriptionInfo | AssignmentInfo) -> dict[str, Any]:
    def task(t: Any) -> list[Any]:
        return [t.subtopology, t.partition, t.topology]

    def host_list(host_map: Any) -> list[Any]:
        return [
            [h.host, h.port, [[tp.topic, tp.partition] for tp in tps]]
            for h, tps in host_map.items()
        ]

    if isinstance(message, SubscriptionInfo):
        endpoint = message.user_endpoint
        return {
            "kind": "subscription",
            "process_id": str(message.process_id),
            "endpoint": None if endpoint is None else str(endpoint),
            "sums": [[*task(t), s] for t, s in message.task_offset_sums.items()],
            "unique": message.unique_field,
            "error": int(message.error_code),
            "tags": dict(message.client_tags),
        }
    return {
        "kind": "assignment",
        "active": [task(t) for t in message.active_tasks],
        "standby": [
            [*task(t), [[tp.topic, tp.partition] for tp in tps]]
            for t, tps in message.standby_tasks.items()
        ],
        "hosts": host_list(message.partitions_by_host),
        "standby_hosts": host_list(message.standby_partitions_by_host),
        "error": int(message.error_code),
        "next_ms": message.next_rebalance_ms,
    }


@pytest.fixture(scope="module")
def java_harness() -> Iterator[JavaHarness]:
    """The one conformance harness (its ``wire_size`` op runs Kafka's own encoders)."""
    require_tools("java", "javac", "mvn")
    harness = JavaHarness(build_harness())
    try:
        yield harness
    finally:
        harness.close()


def _java_sizes(
    harness: JavaHarness, messages: list[SubscriptionInfo | AssignmentInfo]
) -> list[int]:
    answers = harness.call_many("wire_size", [_as_java_input(m) for m in messages])
    for answer in answers:
        if isinstance(answer, Exception):
            raise answer
    return [int(answer) for answer in answers]


def _without_duplicate_standby_partitions(info: AssignmentInfo) -> AssignmentInfo:
    """Kafka keeps standby partitions in a set; ours is a tuple that may repeat one."""
    standby = {t: tuple(dict.fromkeys(tps)) for t, tps in info.standby_tasks.items()}
    return info.model_copy(update={"standby_tasks": standby})


@settings(max_examples=max(3, settings.default.max_examples // 40), deadline=None)
@given(
    subscriptions=st.lists(subscription_infos(st.just(3), max_tasks=40), min_size=1, max_size=25),
    assignments=st.lists(assignment_infos(st.just(3), max_tasks=30), min_size=1, max_size=25),
)
def test_the_size_formula_matches_kafkas_encoder(
    java_harness: JavaHarness,
    subscriptions: list[SubscriptionInfo],
    assignments: list[AssignmentInfo],
) -> None:
    messages: list[SubscriptionInfo | AssignmentInfo] = [
        *subscriptions,
        *map(_without_duplicate_standby_partitions, assignments),
    ]
    formula = [
        java_subscription_v11_size(m)
        if isinstance(m, SubscriptionInfo)
        else java_assignment_v11_size(m)
        for m in messages
    ]
    assert _java_sizes(java_harness, messages) == formula


def test_the_size_formula_matches_kafkas_encoder_on_the_benchmark(
    java_harness: JavaHarness,
) -> None:
    messages: list[SubscriptionInfo | AssignmentInfo] = [
        subscription_content(),
        assignment_content(100, 100),
        assignment_content(7_500, 100),
    ]
    assert _java_sizes(java_harness, messages) == [
        java_subscription_v11_size(messages[0]),  # type: ignore[arg-type]
        java_assignment_v11_size(messages[1]),  # type: ignore[arg-type]
        java_assignment_v11_size(messages[2]),  # type: ignore[arg-type]
    ]
