"""The public surface is stated once (docs/reference/surface.md) and kept: every import in the
README, the docs and the examples is from the package, a package face or a module that page lists
as public; every module it lists exists and is not a face or an internal (``_``) module."""

from __future__ import annotations

import re

from doc_pages import ROOT

SURFACE = ROOT / "docs" / "reference" / "surface.md"
PACKAGE = ROOT / "src"
IMPORT = re.compile(r"^\s*(?:from\s+(tether[\w.]*)\s+import\b|import\s+(tether[\w.]*))", re.M)


def _listed() -> set[str]:
    section = SURFACE.read_text(encoding="utf-8").split("## Public modules", 1)[1]
    return set(re.findall(r"^- `(tether[\w.]*)`:", section, re.M))


def _is_face(module: str) -> bool:
    return (PACKAGE / module.replace(".", "/") / "__init__.py").exists()


def _imports() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "examples").rglob("*.py")]
    for page in pages:
        for match in IMPORT.finditer(page.read_text(encoding="utf-8")):
            found.setdefault(match.group(1) or match.group(2), set()).add(
                str(page.relative_to(ROOT)))
    return found


def test_readme_docs_and_examples_import_only_public_paths() -> None:
    public = _listed()
    private = {module: sorted(pages) for module, pages in _imports().items()
               if not _is_face(module) and module not in public}
    assert private == {}, ("import these from a package face, or list the module in "
                           f"docs/reference/surface.md with why it is public: {private}")


def test_every_listed_module_is_a_public_module_that_exists() -> None:
    listed = _listed()
    assert len(listed) >= 10
    for module in listed:
        assert (PACKAGE / module.replace(".", "/")).with_suffix(".py").exists(), module
        assert not _is_face(module), f"{module} is a face: it needs no listing"
        assert not any(part.startswith("_") for part in module.split(".")), module
