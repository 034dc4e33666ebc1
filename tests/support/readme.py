"""The README's marked sections and their code blocks, and its commands run as a user runs them.

Sections are delimited by ``<!-- section:NAME -->`` and ``<!-- /section:NAME -->``; tests that
prove a section's examples read them here so the markers are looked up one way.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def section(name: str, page: Path = README) -> str:
    text = page.read_text()
    start, end = f"<!-- section:{name} -->", f"<!-- /section:{name} -->"
    return text[text.index(start) : text.index(end)]


def code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def run(
    argv: list[str], env: Mapping[str, str], timeout_s: float = 60
) -> subprocess.CompletedProcess[str]:
    """One command from the repository's root, output captured, never raising on its status."""
    return subprocess.run(
        argv,
        cwd=ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
