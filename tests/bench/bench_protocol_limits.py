"""What the decoder's limits let a payload cost: the largest accepted ones, and the attack's.

Figures: CPU time (median of a few runs, ``process_time``) and peak traced memory
(``tracemalloc``, one run) of decoding (1) the largest subscription the limits accept (65,536
offset sums, one subtopology group each, every other field at its longest) and (2) the largest
assignment (65,536 tasks, 65,536 standby partitions, 131,072 host-map partitions over 2 x 4,096
hosts, 10,000 topics, 1,024 named topologies), every id distinct and the shared-id tables
emptied first, so nothing is reused: the worst case a member or leader can be handed. Reference:
the session timeout (10 s, Kafka's default ``session.timeout.ms``), which a leader stuck in
``assign()`` must stay well inside, and the target set for this benchmark.

Then the payloads an independent attack used against a real broker, with what they cost before
the limits (measured there): time and memory until each is refused now.
"""

from __future__ import annotations

import statistics
import time
import tracemalloc
from collections.abc import Callable

import msgpack

from protocol import ProtocolError
from protocol._read import forget_interned
from protocol.codec import decode_assignment, decode_subscription
from tests.protocol.limit_payloads import (
    dense_subscription,
    largest_assignment,
    largest_subscription,
)

SESSION_TIMEOUT_S = 10.0
MIB = 1024 * 1024


def _cold(decode: Callable[[bytes], object], data: bytes) -> str:
    forget_interned()
    try:
        decode(data)
    except ProtocolError as error:
        return f"refused ({error.field}: {error.problem[:70]})"
    return "accepted"


def _cpu_s(decode: Callable[[bytes], object], data: bytes, runs: int) -> float:
    samples = []
    for _ in range(runs):
        forget_interned()
        started = time.process_time()
        _cold(decode, data)
        samples.append(time.process_time() - started)
    return statistics.median(samples)


def _peak_mib(decode: Callable[[bytes], object], data: bytes) -> float:
    forget_interned()
    tracemalloc.start()
    try:
        _cold(decode, data)
        return tracemalloc.get_traced_memory()[1] / MIB
    finally:
        tracemalloc.stop()


def largest(
    name: str, decode: Callable[[bytes], object], data: bytes, target_s: float, target_mib: float
) -> bool:
    outcome = _cold(decode, data)
    cpu = _cpu_s(decode, data, runs=3)
    peak = _peak_mib(decode, data)
    ok = outcome == "accepted" and cpu < target_s and peak < target_mib
    print(name)
    print(f"  {len(data):,} B, {outcome}")
    share = cpu / SESSION_TIMEOUT_S
    print(
        f"  decode: {cpu:.3f} s CPU ({share:.1%} of the {SESSION_TIMEOUT_S:.0f} s session "
        f"timeout), peak {peak:.1f} MiB | target < {target_s:g} s, < {target_mib:g} MiB "
        f"| {'ok' if ok else 'OVER TARGET'}"
    )
    return ok


def hostile(name: str, decode: Callable[[bytes], object], data: bytes, before: str) -> bool:
    outcome = _cold(decode, data)
    cpu = _cpu_s(decode, data, runs=3)
    peak = _peak_mib(decode, data)
    print(name)
    print(f"  before the limits (measured by the attack): {before}")
    print(f"  now: {outcome} after {cpu:.3f} s CPU, peak {peak:.1f} MiB")
    return outcome.startswith("refused")


def main() -> None:
    ok = largest(
        "largest accepted subscription (65,536 offset sums)",
        decode_subscription,
        largest_subscription(),
        target_s=1.0,
        target_mib=64,
    )
    ok &= largest(
        "largest accepted assignment (65,536 tasks, 196,608 partitions, 8,192 hosts)",
        decode_assignment,
        largest_assignment(),
        target_s=2.0,
        target_mib=160,
    )
    print()
    hosts = [[f"h{i}", 1, [0, i * 1000, *([1] * 999)]] for i in range(4_000)]
    empties = [3, 3, 0x41, [], [], [], [[]] * 16_000_000, [], [], 0, 0]
    ok &= hostile(
        "subscription with 1,000,000 offset sums (2 MB)",
        decode_subscription,
        dense_subscription(1_000_000),
        "a 3-process group never became stable; assign() calls up to 55 s",
    )
    ok &= hostile(
        "subscription with 8,000,000 offset sums (16 MB)",
        decode_subscription,
        dense_subscription(8_000_000, per_group=40_000),
        "62-69 s and 4.6 GB to decode",
    )
    ok &= hostile(
        "assignment with a 4 MB host map (4,000,000 partitions)",
        decode_assignment,
        msgpack.packb([3, 3, 0x41, ["t"], [], [], [], hosts, [], 0, 0]),
        "27.6 s and 2.36 GB to decode",
    )
    ok &= hostile(
        "assignment of 16 MB of empty arrays",
        decode_assignment,
        msgpack.packb(empties),
        "7.4 s and 1.16 GB before being refused",
    )
    ok &= hostile(
        "subscription of 16 KiB of nested array16 headers (each declaring 16,384 elements)",
        decode_subscription,
        b"\xdc\x40\x00" * (16 * 1024 // 3),
        "about 80 MB allocated by the one-call read (measured here before its bound)",
    )
    print("\nall within target" if ok else "\nSOME FIGURES OVER TARGET")


if __name__ == "__main__":
    main()
