"""The harness itself: dispatch by op name, errors as answers, pipelining, startup cost."""

from __future__ import annotations

import pytest

from tests.support.jvm import HarnessError, JavaHarness


def test_echo_round_trips_json(java_harness: JavaHarness) -> None:
    payload = {"text": "0_3 ü", "n": 2**40, "nested": {"list": [1, 2.5, None, True]}}
    answer = java_harness.call("echo", payload)
    assert answer == {**payload, "op": "echo"}


def test_java_exception_is_an_answer_and_the_jvm_survives(java_harness: JavaHarness) -> None:
    with pytest.raises(HarnessError) as failure:
        java_harness.call("echo", {"fail": True})
    assert failure.value.java_error.startswith("java.lang.IllegalStateException")
    assert "EchoOp" in failure.value.trace
    assert java_harness.call("echo", {"after": 1})["after"] == 1


def test_unknown_op_names_the_missing_class(java_harness: JavaHarness) -> None:
    with pytest.raises(HarnessError, match="NoSuchThingOp"):
        java_harness.call("no_such_thing")


def test_call_many_keeps_order_and_isolates_failures(java_harness: JavaHarness) -> None:
    payloads = [{"i": i, "fail": i % 97 == 13} for i in range(3000)]
    answers = java_harness.call_many("echo", payloads)
    assert len(answers) == len(payloads)
    for i, answer in enumerate(answers):
        if i % 97 == 13:
            assert isinstance(answer, HarnessError)
        else:
            assert answer["i"] == i
