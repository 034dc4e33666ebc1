"""The README's simulator section: its Python example runs, its command lines parse and run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from simulator.cli import main

ROOT = Path(__file__).resolve().parents[2]
#: the section moved from the README to its docs page; its examples still run here
README = ROOT / "docs" / "simulator.md"


def _section() -> str:
    text = README.read_text()
    return text[text.index("<!-- section:simulator -->"):text.index("<!-- /section:simulator -->")]


def test_the_python_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    (code,) = re.findall(r"```python\n(.*?)```", _section(), flags=re.S)
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/simulator.md (simulator section)", "exec"), namespace)
    result = namespace["result"]
    assert result.summary.family == "crash_recover"  # type: ignore[attr-defined]
    assert result.summary.converged  # type: ignore[attr-defined]
    assert capsys.readouterr().out.count("\n") == 1 + len(result.rebalances)  # type: ignore[attr-defined]


def test_the_command_lines_run(capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    (block,) = re.findall(r"```sh\n(.*?)```", _section(), flags=re.S)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert len(commands) == 4
    for command in commands:
        words = shlex.split(command)
        assert words[:3] == [".venv/bin/python", "-m", "simulator"]
        assert main(words[3:]) == 0, command
        assert capsys.readouterr().out


def test_the_error_example_is_what_the_command_says(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = ROOT / "examples" / "scenarios" / "rolling-restart.toml"
    bad = tmp_path / "bad.toml"
    bad.write_text(example.read_text().replace("down_s = 20.0", 'down_s = "soon"', 1))
    assert main(["run", "--scenario", str(bad)]) == 2
    shown = re.search(r"`error: bad\.toml: (.*?)`", _section())
    assert shown is not None
    assert capsys.readouterr().err.strip() == f"error: {bad}: {shown.group(1)}"


def test_every_row_field_is_documented() -> None:
    from dataclasses import fields

    from simulator.metrics import RebalanceRow, ScenarioRow

    section = _section()
    missing = [f.name for row in (RebalanceRow, ScenarioRow) for f in fields(row)
               if f"`{f.name}`" not in section]
    assert missing == []
