"""The README's shim example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
#: the section moved from the README to its docs page; its examples still run here
README = ROOT / "docs" / "shim.md"


def test_the_readme_example_runs() -> None:
    text = README.read_text()
    section = text[text.index("<!-- section:shim -->"):text.index("<!-- /section:shim -->")]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/shim.md (shim section)", "exec"), namespace)
    coordinator = namespace["coordinator"]
    records = coordinator.journal.stable("app")  # type: ignore[attr-defined]
    assert [len(r.members) for r in records] == [3, 2]
