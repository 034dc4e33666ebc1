"""``python -m protocol decode`` as a user runs it: a real subprocess per invocation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from protocol.codec import encode_assignment
from protocol.jsonview import message_json
from tests.protocol.expected import assignment_as_read, subscription_as_read
from tests.protocol.samples import FUTURE, GOLDEN, assignment

GOLDEN_DIR = Path(__file__).parent / "golden"
ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "protocol", *args],
        input=None if stdin is None else stdin.decode("latin-1"),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_decodes_every_golden_file(name: str) -> None:
    kind, version, message = GOLDEN[name]
    result = run("decode", f"@{GOLDEN_DIR / name}")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed["kind"] == kind and printed["version"] == version
    as_read = (
        subscription_as_read(message, version)  # type: ignore[arg-type]
        if kind == "subscription"
        else assignment_as_read(message, version)  # type: ignore[arg-type]
    )
    assert printed == message_json(kind, as_read, 3)


@pytest.mark.parametrize("name", sorted(FUTURE))
def test_a_newer_version_prints_its_header_and_says_so(name: str) -> None:
    result = run("decode", f"@{GOLDEN_DIR / name}")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed["version"] == 9 and printed["newer_than_supported"] is True
    assert printed["kind"] == name.split("_")[1]
    assert "newer than this build reads" in result.stderr
    assert (printed["error_code"], printed["error"]) == {
        "future_subscription_v9.bin": (4, "SHUTDOWN_REQUESTED"),
        "future_assignment_v9.bin": (77, "unknown to this build (77)"),
    }[name]


def test_hex_argument_hex_file_and_stdin_agree(tmp_path: Path) -> None:
    data = encode_assignment(assignment(2), 2)
    hex_file = tmp_path / "payload.hex"
    hex_file.write_text("0x" + data.hex(" ") + "\n")
    outputs = {
        run("decode", data.hex()).stdout,
        run("decode", f"@{hex_file}").stdout,
        run("decode", "@-", stdin=data.hex().encode()).stdout,
    }
    assert len(outputs) == 1
    printed = json.loads(outputs.pop())
    assert printed["active_task_list"] == ["0_1", "1_1", "0_4", "0_1"]
    # bare user data: the partitions are in the envelope, not here
    assert printed["partitions"] is None
    assert printed["active_tasks"] == {"0_1": None, "0_4": None, "1_1": None}
    assert "travel in the ConsumerProtocol envelope" in run("decode", data.hex()).stderr


def test_an_old_build_reads_only_the_header() -> None:
    result = run("decode", "--latest-supported", "1", f"@{GOLDEN_DIR / 'assignment_v2.bin'}")
    assert result.returncode == 0
    assert json.loads(result.stdout) == {
        "kind": "assignment",
        "version": 2,
        "commonly_supported_version": 3,
        "newer_than_supported": True,
        "note": json.loads(result.stdout)["note"],
    }


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("9301", "ProtocolError: payload: is truncated"),
        ("93000153", "ProtocolError: version: 0 is outside"),
        ("", "ProtocolError: payload: is empty"),
        ("xyz", "error: not hexadecimal"),
        ("@/nonexistent/payload.bin", "error: cannot read"),
    ],
)
def test_bad_input_exits_2_with_the_error_on_stderr(argument: str, message: str) -> None:
    result = run("decode", argument)
    assert result.returncode == 2
    assert result.stdout == ""
    assert message in result.stderr


def test_a_truncated_golden_file_exits_2(tmp_path: Path) -> None:
    cut = tmp_path / "cut.bin"
    cut.write_bytes((GOLDEN_DIR / "subscription_v3.bin").read_bytes()[:-3])
    result = run("decode", f"@{cut}")
    assert result.returncode == 2
    assert result.stderr.startswith("ProtocolError: payload")
