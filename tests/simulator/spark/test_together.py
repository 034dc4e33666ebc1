"""``together``: results in the order given, the first call in the calling thread, every call
ended before it returns or raises, the first failure raised."""

from __future__ import annotations

import threading
import time

import pytest

from simulator.spark.together import together


def test_results_come_back_in_order_with_the_first_call_in_the_calling_thread() -> None:
    caller = threading.get_ident()
    delays = [0.03, 0.0, 0.02, 0.01, 0.0, 0.02]

    def call(index: int) -> tuple[int, bool]:
        time.sleep(delays[index])
        return index, threading.get_ident() == caller

    results = together(*(lambda i=i: call(i) for i in range(len(delays))))
    assert [index for index, _ in results] == list(range(len(delays)))
    assert [here for _, here in results] == [True] + [False] * (len(delays) - 1)


def test_one_call_or_none_runs_inline() -> None:
    assert together() == []
    assert together(threading.get_ident) == [threading.get_ident()]


def test_a_failure_is_raised_after_every_call_ended() -> None:
    ended: list[str] = []

    def slow() -> None:
        time.sleep(0.05)
        ended.append("slow")

    def fails() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        together(lambda: ended.append("first"), fails, slow)
    assert sorted(ended) == ["first", "slow"]
