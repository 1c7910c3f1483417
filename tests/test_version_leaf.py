"""``__version__`` lives in a leaf module (as httpx's ``__version__.py``): no module of the
package imports the ``tether`` face, which sits above every floor, to learn the version."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import tether
from tether import _version
from tether.journal.views.ocsf import product_version

PACKAGE = Path(tether.__file__).parent


def _imports_of_the_face(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "tether" and node.level == 0:
            lines.append(node.lineno)
        if isinstance(node, ast.Import) and any(a.name == "tether" for a in node.names):
            lines.append(node.lineno)
    return lines


def test_no_module_of_the_package_imports_the_tether_face() -> None:
    found = {str(p.relative_to(PACKAGE)): lines for p in sorted(PACKAGE.rglob("*.py"))
             if (lines := _imports_of_the_face(p))}
    assert found == {}, f"import from a leaf module (tether._version, ...) instead: {found}"


def test_the_version_is_written_once() -> None:
    assert not any(isinstance(n, ast.Import | ast.ImportFrom) and getattr(n, "module", "")
                   != "__future__" for n in ast.walk(ast.parse(
                       (PACKAGE / "_version.py").read_text(encoding="utf-8"))))
    assert tether.__version__ == _version.__version__ == product_version()
    project = tomllib.loads((PACKAGE.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "src/tether/_version.py"
