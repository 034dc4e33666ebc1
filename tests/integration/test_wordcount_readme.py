"""The README's word-count walk-through, command by command, on the session's real broker.

The commands are read from the README's ``wordcount`` section and run as written, with the
session's broker in ``KAFKA_BOOTSTRAP_SERVERS`` (``make kafka-up`` and the ``source`` line are
the quick start's, tested in ``test_quickstart.py``), a unique application id instead of ``wc``
and state and log files under the test's folder. Lines ending in ``&`` start in the background;
``kill %1 %2`` is a SIGTERM to both. ``counts`` is repeated, bounded, until it prints the JSON
the README shows after it.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.readme import ROOT, code_blocks, run, section

COUNTS_TIMEOUT_S = 90.0


def walkthrough() -> list[tuple[str, str]]:
    """(command, comment) per line of the section's shell block."""
    (block,) = code_blocks(section("wordcount"), "sh")
    lines = []
    for line in block.splitlines():
        command, _, comment = line.partition("  #")
        lines.append((command.strip(), comment.strip().lstrip("#").strip()))
    return lines


def test_the_walkthrough_runs_as_written(
    kafka_bootstrap: str, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    app_id = unique_name("wc")
    env = os.environ | {"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}
    lines = walkthrough()
    assert lines[0][0].startswith("make kafka-up && source"), lines[0]
    assert lines[-1][0] == "kill %1 %2"

    def words(command: str) -> tuple[list[str], str | None]:
        command = command.replace("--app-id wc", f"--app-id {app_id}")
        command = command.replace("--group wc", f"--group {app_id}")
        command = command.replace("/tmp/", f"{tmp_path}/")
        command = command.replace('"$KAFKA_BOOTSTRAP_SERVERS"', kafka_bootstrap)
        redirect = None
        if ">" in command:
            command, _, target = command.partition(">")
            redirect = target.strip()
        argv = shlex.split(command)
        assert argv[0] == ".venv/bin/python", command
        return [sys.executable, *argv[1:]], redirect

    background: list[subprocess.Popen[bytes]] = []
    try:
        for command, comment in lines[1:-1]:
            if command.endswith("&"):
                argv, redirect = words(command.rstrip("&").strip())
                assert redirect is not None
                with open(redirect, "wb") as log:
                    background.append(subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log))
                continue
            argv, _ = words(command)
            if "console counts" in command:
                expected = json.loads(comment)
                deadline = time.monotonic() + COUNTS_TIMEOUT_S
                while True:
                    done = run(argv, env)
                    assert done.returncode == 0, done.stdout + done.stderr
                    if json.loads(done.stdout) == expected or time.monotonic() > deadline:
                        break
                    time.sleep(1)
                assert json.loads(done.stdout) == expected, [p.poll() for p in background]
                continue
            done = run(argv, env)
            assert done.returncode == 0, done.stdout + done.stderr
            if "assignor describe" in command:
                described = json.loads(done.stdout)
                assert described["group"] == app_id and described["state"] == "Stable"
                processes = {m["subscription"]["process_id"] for m in described["members"].values()}
                assert len(processes) == 2 and len(described["members"]) == 4
    finally:
        for process in background:  # kill %1 %2
            process.send_signal(signal.SIGTERM)
        codes = [process.wait(timeout=60) for process in background]
    assert codes == [0, 0]
    for number in (1, 2):
        events = [
            json.loads(line) for line in (tmp_path / f"wc-{number}.log").read_text().splitlines()
        ]
        assert events[0]["event"] == "started" and events[-1]["event"] == "stopped"
