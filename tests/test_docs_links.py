"""Every relative link of the README and of the docs/ pages points at a file that exists.

The README sends users to docs/ pages, and those pages (moved out of the README) link back to
code and images by relative paths; a page moved or renamed must not leave a dead link behind.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def local_links(page: Path) -> list[str]:
    targets = re.findall(r"\]\(([^)\s]+)\)", page.read_text())
    return [t for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def test_the_readme_links_every_docs_page() -> None:
    linked = {(ROOT / t.split("#")[0]).resolve() for t in local_links(ROOT / "README.md")}
    unlinked = [p.relative_to(ROOT) for p in PAGES[1:] if p.resolve() not in linked]
    assert unlinked == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    dead = [t for t in local_links(page) if not (page.parent / t.split("#")[0]).exists()]
    assert dead == []
