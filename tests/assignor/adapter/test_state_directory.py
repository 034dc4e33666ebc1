"""The local state directory: Kafka's layout, offset sums as the assignor expects, a restarted
process finds its id and its tasks, and a damaged file never stops a process."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from assignor import StateDirectory, StateDirectoryError
from assignor.adapter.state_directory import OFFSET_UNKNOWN
from protocol import TaskId, TopicPartition

T01, T02, T10 = TaskId(0, 1), TaskId(0, 2), TaskId(1, 0)
STORE_A, STORE_B = TopicPartition("app-a-changelog", 1), TopicPartition("app-b-changelog", 1)


def test_checkpoints_use_kafkas_layout_and_format(tmp_path: Path) -> None:
    state = StateDirectory(tmp_path, "app")
    state.write_checkpoint(T01, {STORE_B: 7, STORE_A: 120})
    text = (tmp_path / "app" / "0_1" / ".checkpoint").read_text()
    assert text == "0\n2\napp-a-changelog 1 120\napp-b-changelog 1 7\n"
    assert state.read_checkpoint(T01) == {STORE_A: 120, STORE_B: 7}


def test_offset_sums_are_the_state_provider(tmp_path: Path) -> None:
    state = StateDirectory(tmp_path, "app")
    state.write_checkpoint(T01, {STORE_A: 120, STORE_B: 7})
    state.write_checkpoint(T10, {TopicPartition("app-c-changelog", 0): 0})
    (tmp_path / "app" / "0_2").mkdir()  # a task folder without a checkpoint reports nothing
    (tmp_path / "app" / "not-a-task").mkdir()
    assert state.offset_sums() == {T01: 127, T10: 0}
    assert state.tasks() == [T01, T02, T10]


def test_unknown_positions_are_left_out_and_sums_saturate(tmp_path: Path) -> None:
    state = StateDirectory(tmp_path, "app")
    state.write_checkpoint(T01, {STORE_A: 5, STORE_B: OFFSET_UNKNOWN})
    state.write_checkpoint(T02, {STORE_A: 2**63 - 1, STORE_B: 10})
    assert state.offset_sums() == {T01: 5, T02: 2**63 - 1}


def test_a_restarted_process_keeps_its_id_and_finds_its_tasks(tmp_path: Path) -> None:
    first = StateDirectory(tmp_path, "app")
    process_id = first.process_id()
    first.write_checkpoint(T02, {STORE_A: 42})
    again = StateDirectory(tmp_path, "app")
    assert again.process_id() == process_id
    assert again.offset_sums() == {T02: 42}
    assert StateDirectory(tmp_path, "other-app").process_id() != process_id


def test_a_wiped_task_reports_no_state(tmp_path: Path) -> None:
    state = StateDirectory(tmp_path, "app")
    state.write_checkpoint(T01, {STORE_A: 3})
    state.wipe(T01)
    assert state.offset_sums() == {}
    state.wipe(T01)  # wiping twice is harmless


@pytest.mark.parametrize(
    "content",
    [
        "",
        "1\n1\napp-a-changelog 1 5\n",  # a version this reader does not know
        "0\n2\napp-a-changelog 1 5\n",  # fewer entries than declared
        "0\n1\napp-a-changelog one 5\n",
        "0\n1\napp-a-changelog 1 -9\n",
        "0\nmany\n",
    ],
)
def test_a_corrupt_checkpoint_is_logged_and_means_no_state(
    tmp_path: Path, content: str, caplog: pytest.LogCaptureFixture
) -> None:
    state = StateDirectory(tmp_path, "app")
    state.write_checkpoint(T02, {STORE_A: 1})
    (tmp_path / "app" / "0_1").mkdir()
    (tmp_path / "app" / "0_1" / ".checkpoint").write_text(content)
    with caplog.at_level(logging.WARNING):
        assert state.offset_sums() == {T02: 1}
    assert "corrupt" in caplog.text and "0_1" in caplog.text


def test_an_unreadable_process_file_gets_a_new_id(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = StateDirectory(tmp_path, "app")
    (tmp_path / "app" / "kafka-streams-process-metadata").write_text("{not json")
    with caplog.at_level(logging.WARNING):
        process_id = state.process_id()
    assert "unreadable" in caplog.text
    assert StateDirectory(tmp_path, "app").process_id() == process_id


def test_bad_inputs_are_refused_with_their_name(tmp_path: Path) -> None:
    with pytest.raises(StateDirectoryError, match="'a/b' cannot name a folder"):
        StateDirectory(tmp_path, "a/b")
    (tmp_path / "file").write_text("")
    with pytest.raises(StateDirectoryError, match="cannot create state directory"):
        StateDirectory(tmp_path / "file", "app")
    with pytest.raises(ValueError, match="offset -1 of app-a-changelog-1 is negative"):
        StateDirectory(tmp_path, "app").write_checkpoint(T01, {STORE_A: -1})
