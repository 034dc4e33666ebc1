"""The README's quick-start program runs as written, against the test broker."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from protocol.errors import AssignorError

README = Path(__file__).resolve().parents[2] / "README.md"


def _example() -> str:
    text = README.read_text()
    section = text[
        text.index("<!-- section:quickstart -->") : text.index("<!-- /section:quickstart -->")
    ]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return code


async def test_the_readme_example_runs(
    kafka_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(_example(), "README.md (quick start)", "exec"), namespace)
    latest = await namespace["main"](kafka_bootstrap, unique_name("shop"))
    assert sorted(latest) == [0, 1]
    assert {a.error for a in latest.values()} == {AssignorError.NONE}
    actives = Counter(str(t) for a in latest.values() for t in a.active_tasks)
    assert set(actives) == {f"{s}_{p}" for s in (0, 1) for p in range(4)}
    assert set(actives.values()) == {1}
