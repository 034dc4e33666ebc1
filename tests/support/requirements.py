"""Helpers every test directory shares: what to do when a real component is missing."""

from __future__ import annotations

import os
import shutil

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(condition: bool, what: str) -> None:
    """Skip locally, fail in CI: a test that needs a JVM, Maven or a broker never skips in CI."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"{what} is required in CI (CI=true) but is missing", pytrace=False)
    pytest.skip(f"{what} is missing")


def require_tools(*names: str) -> None:
    """``require`` for executables on PATH (``java``, ``javac``, ``mvn``)."""
    missing = [name for name in names if shutil.which(name) is None]
    require(not missing, "executable(s) " + ", ".join(missing))
