"""Every module the README and the docs name exists: a path such as ``runtime/chokepoint/gate.py``
or ``journal/chain.py`` is a file of the repository (or of src/tether), and a dotted name such as
``tether.runtime.rerun`` or ``tether.runtime.fold`` imports.

Why: the runtime was split into named parts and its paths rewritten mechanically in the prose;
the next move (a package moved up a floor, a module renamed) would leave a page pointing at a file
that is gone, and no link checker reads a path in backticks."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from doc_pages import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PLACES = [ROOT, ROOT / "src", ROOT / "src" / "tether", ROOT / "tests"]
EXAMPLES = ("path/to/", "myapp/")  # placeholders a reader replaces with their own
NOT_MODULES = {"tether.policy.id"}  # a span attribute (docs/guide/telemetry.md), not a module path

PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)+[\w-]+\.py)\b")
DOTTED = re.compile(r"(?<![\w./])(tether(?:\.\w+)+)")


def module_prefix(parts: list[str]) -> int:
    """How many leading parts of a dotted name are a module or package of the source tree."""
    for length in range(len(parts), 0, -1):
        path = ROOT / "src" / Path(*parts[:length])
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            return length
    return 0


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_path_a_page_names_exists(page: Path) -> None:
    text = page.read_text()
    for path in PATH.findall(text):
        if path.startswith(EXAMPLES):
            continue
        assert any((place / path).is_file() for place in PLACES), path


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_dotted_tether_name_a_page_names_imports(page: Path) -> None:
    for name in sorted(set(DOTTED.findall(page.read_text())) - NOT_MODULES):
        parts = name.split(".")
        length = module_prefix(parts)
        if length < 2:
            continue  # tether.stop_reason, tether.budget.left: telemetry names, no module
        found: object = importlib.import_module(".".join(parts[:length]))
        for attribute in parts[length:]:
            assert hasattr(found, attribute), name
            found = getattr(found, attribute)


def test_the_check_finds_the_runtime_paths() -> None:
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    assert len([p for p in PATH.findall(architecture) if p.startswith("runtime/")]) > 10
