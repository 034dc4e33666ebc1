"""Wire size of our codec against Kafka Streams' version 11 encoding of the same content.

Figures: bytes of a subscription with 1,000 task offset sums and of an assignment carrying 1,000
tasks (750 active, 250 standby) plus host maps for 100 hosts, each encoded at our latest version;
the reference is Kafka Streams 4.1's v11 byte count of the same content, computed field by field
from its layout (``SubscriptionInfoData`` / ``AssignmentInfo.encode``; ``tests/protocol/sizes.py``,
checked against Kafka's encoder by ``test_codec_size.py``); and encode/decode CPU times.

The host maps are those of a consistent cluster: 100 single-thread hosts, each running what this
member runs, so the maps list 75,000 active and 25,000 standby partitions. A second, small case
(1,000 tasks in the whole cluster, 10 per host) shows the ratio when the maps are light.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable

from protocol.codec import (
    Codec,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from tests.protocol.sizes import (
    assignment_content,
    java_assignment_v11_size,
    java_subscription_v11_size,
    subscription_content,
)

# --- measuring -------------------------------------------------------------------------------


def _median_us(action: Callable[[], object], budget_s: float = 1.0, max_runs: int = 200) -> float:
    """Median CPU time (``process_time``): the machine is shared, and wall time says little."""
    samples: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(samples) < max_runs and (len(samples) < 3 or time.perf_counter() < deadline):
        started = time.process_time()
        action()
        samples.append(time.process_time() - started)
    return statistics.median(samples) * 1e6


def _count(items: Iterable[object]) -> int:
    return sum(1 for _ in items)


def report(name: str, ours: bytes, java: int, timings: dict[str, float]) -> bool:
    ratio = len(ours) / java
    verdict = "ok" if len(ours) <= java else "LARGER THAN JAVA"
    print(name)
    print(f"  size: ours {len(ours):,} B | Kafka v11 {java:,} B | ratio {ratio:.3f} ({verdict})")
    print("  CPU time: " + " | ".join(f"{what} {us:,.0f} us" for what, us in timings.items()))
    return len(ours) <= java


def main() -> None:
    sub = subscription_content()
    sub_bytes = encode_subscription(sub)
    assert decode_subscription(sub_bytes) == sub
    ok = report(
        f"subscription, {len(sub.task_offset_sums):,} offset sums",
        sub_bytes,
        java_subscription_v11_size(sub),
        {
            "encode": _median_us(lambda: encode_subscription(sub)),
            "decode": _median_us(lambda: decode_subscription(sub_bytes)),
        },
    )
    for partitions, label in ((7_500, "consistent cluster"), (100, "light maps")):
        info = assignment_content(partitions, 100)
        tasks = len(info.active_tasks) + len(info.standby_tasks)
        mapped = sum(len(v) for v in info.partitions_by_host.values()) + sum(
            len(v) for v in info.standby_partitions_by_host.values()
        )
        data = encode_assignment(info)
        assert decode_assignment(data) == info
        # A leader's codec packs the shared host maps once; a fresh codec packs them every time.
        other_member = info.model_copy(update={"active_tasks": info.active_tasks[::-1]})
        leader = Codec()
        leader.encode_assignment(info)
        ok &= report(
            f"assignment, {tasks:,} tasks, 100 hosts, {mapped:,} mapped partitions ({label})",
            data,
            java_assignment_v11_size(info),
            {
                "encode": _median_us(lambda info=info: Codec().encode_assignment(info)),  # type: ignore[misc]
                "encode, maps already packed": _median_us(
                    lambda m=other_member, c=leader: c.encode_assignment(m)  # type: ignore[misc]
                ),
                "decode": _median_us(lambda data=data: decode_assignment(data)),  # type: ignore[misc]
            },
        )
    print("all sizes <= Kafka v11" if ok else "SOME SIZES EXCEED KAFKA v11")


if __name__ == "__main__":
    main()
