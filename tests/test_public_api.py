"""The package roots are the API: README examples import only from them, and the pure core stays
free of aiokafka until the adapter is used."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_ROOTS = {"assignor", "assignor.testing", "protocol", "simulator", "simulator.shim"}
PROJECT_ROOTS = ("assignor", "protocol", "simulator", "tests")


def readme_imports() -> list[tuple[str, str]]:
    """Every ``from X import Y`` of the Python blocks of the README and of the docs/ pages it
    links (user examples moved there from the README), whose ``X`` is ours."""
    found: list[tuple[str, str]] = []
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    text = "\n".join(page.read_text() for page in pages)
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and node.module is not None:
                if node.module.split(".")[0] in PROJECT_ROOTS:
                    found.extend((node.module, alias.name) for alias in node.names)
            elif isinstance(node, ast.Import):
                found.extend(
                    (alias.name, "")
                    for alias in node.names
                    if alias.name.split(".")[0] in PROJECT_ROOTS
                )
    return found


def test_the_readme_has_examples_that_import_our_code() -> None:
    assert len(readme_imports()) >= 10


@pytest.mark.parametrize(("module", "name"), readme_imports())
def test_readme_examples_import_only_public_names(module: str, name: str) -> None:
    assert module in PUBLIC_ROOTS, f"README imports {name} from {module}, not a package root"
    assert name in importlib.import_module(module).__all__, f"{module}.__all__ lacks {name}"


@pytest.mark.parametrize("package", sorted(PUBLIC_ROOTS))
def test_every_public_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == sorted(module.__all__, key=lambda n: (not n.isupper(), n))
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_importing_the_core_does_not_import_aiokafka_or_pyspark() -> None:
    probe = (
        "import sys, assignor, protocol, simulator\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('aiokafka', 'pyspark'))\n"
        "print(heavy)\n"
        "assignor.StreamsProcess\n"
        "print('aiokafka' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "True", "the adapter's names must still load on first use"


def test_an_unknown_name_is_an_attribute_error() -> None:
    import assignor

    with pytest.raises(AttributeError, match="no attribute 'StreamProcess'"):
        _ = assignor.StreamProcess  # type: ignore[attr-defined]


def test_packages_carry_the_distribution_version() -> None:
    from importlib.metadata import version

    import assignor
    import protocol

    assert assignor.__version__ == protocol.__version__ == version("streams-assignor")
