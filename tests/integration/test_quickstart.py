"""The README's quick start, command by command, against the session's real broker.

``make kafka-up`` is what the Makefile says it is (``python -m tests.support.kafka up``); here it
finds the broker this test session started already running (its record is written to a
temporary state folder first), so it prints and writes the export line exactly as it does for a
user, without a second broker. The shell then sources that file, with ``KAFKA_BOOTSTRAP_SERVERS``
unset beforehand, and runs the example as the README writes it. ``make install`` is what made
this interpreter's environment; ``make kafka-down`` would stop the session's broker, so it is the
one line checked but not run.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from tests.support.kafka.__main__ import env_file, export_line, remember, state_dir
from tests.support.kafka.broker import Broker
from tests.support.readme import ROOT, code_blocks, run, section

DEFAULT_STATE = "tests/support/kafka/target/"


def quickstart_commands() -> list[str]:
    (block,) = code_blocks(section("quickstart"), "sh")
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


def test_the_readme_shows_the_example_file_as_it_is() -> None:
    (code,) = code_blocks(section("quickstart"), "python")
    assert code == (ROOT / "examples" / "quickstart.py").read_text()


def test_make_kafka_up_is_the_command_this_test_runs() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^kafka-up:.*\n\t\$\(PY\) -m tests\.support\.kafka up$", makefile, re.M)
    assert str(state_dir().resolve()).endswith(DEFAULT_STATE.rstrip("/"))


def test_the_quick_start_commands_work_on_the_broker_as_printed(
    kafka_broker: Broker | None, tmp_path: Path
) -> None:
    if kafka_broker is None:
        pytest.skip("KAFKA_BOOTSTRAP_SERVERS names an outside cluster: no broker for kafka-up")
    commands = quickstart_commands()
    assert commands[0] == "make install" and commands[-1] == "make kafka-down", commands
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_BOOTSTRAP_SERVERS"}
    env["STREAMS_ASSIGNOR_KAFKA_STATE"] = str(tmp_path)
    os.environ["STREAMS_ASSIGNOR_KAFKA_STATE"] = str(tmp_path)
    try:
        remember(kafka_broker)
        printed_env_file = env_file()
    finally:
        del os.environ["STREAMS_ASSIGNOR_KAFKA_STATE"]
    script = ["set -euo pipefail", f"PY={shlex.quote(sys.executable)}"]
    for command in commands[1:-1]:
        command = command.replace(".venv/bin/python", '"$PY"')
        command = command.replace("make kafka-up", '"$PY" -m tests.support.kafka up')
        script.append(command.replace(DEFAULT_STATE, f"{tmp_path}/"))
    script.append('echo "bootstrap=$KAFKA_BOOTSTRAP_SERVERS"')
    result = run(["bash", "-c", "\n".join(script)], env, timeout_s=180)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert export_line(kafka_broker.bootstrap) in lines  # kafka-up's ready-to-paste line
    assert printed_env_file.read_text().strip() == export_line(kafka_broker.bootstrap)
    assert lines[-1] == f"bootstrap={kafka_broker.bootstrap}"
    threads = {line.split(":")[0] for line in lines if line.startswith("thread ")}
    assert threads == {"thread 0", "thread 1"}, result.stdout
