"""docs/architecture.md's pictures of the floors, drawn from the imports at every build.

A hand-drawn picture of a code base's layers is right the day it is drawn. This MkDocs hook builds
the import graph with grimp (the graph import-linter itself checks, so the picture and
`lint-imports` read the same imports), reads the floors from pyproject.toml's layers contracts,
and replaces markers in architecture.md with inline SVG (picture_svg.py):

- ``<!-- picture: PACKAGE -->``: the layers contract whose container is PACKAGE (``tether``: the
  floors; ``tether.runtime``: the runtime's named parts), every package and module directly under
  it a box on its floor, top to bottom as the contract lists them; the plain modules of one floor
  (the ground's ``types``, ``errors``, ...) share a box; what the contract does not place (the
  package face) sits in a row above. Arrows are the imports between boxes, counted (one per
  importing and imported module); an import the floors forbid (up a floor, or between siblings
  the contract calls independent: the contract's listed exceptions) is red.
- ``<!-- table: PACKAGE -->``: what each part imports from outside it, and who outside imports it.

Decision: the boxes come from the source tree and the floors from the contracts, with no package
named here, so a package that is added or moved (the MCP serving side's own package) is drawn
where its contract puts it without a change to this file, and a new contract gets its picture by
a marker; tests/test_architecture_picture.py reads the drawing back and compares it with the graph.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from picture_svg import ALLOWED, FORBIDDEN, Arrow, Box, Row, draw

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "tether"
PAGE = "architecture.md"
FACE = "__init__"  # the package's own __init__.py, as a member name


@dataclass(frozen=True)
class Floor:
    """One layer of a contract: its members (names directly under its container), in order."""

    members: tuple[str, ...]
    independent: bool

    def label(self, number: int) -> str:
        if len(self.members) == 1:
            return f"floor {number}"
        return f"floor {number}: " + ("independent" if self.independent else "import each other")


@dataclass(frozen=True)
class Graph:
    """Direct imports between modules of the package, each (importer, imported), sorted."""

    imports: tuple[tuple[str, str], ...]


def importlinter(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]
    return config


def contracts(config: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """The layers contracts of pyproject.toml's import-linter section, in order."""
    return tuple(c for c in config["contracts"] if c["type"] == "layers")


def container(layers: dict[str, Any]) -> str:
    found: list[str] = layers.get("containers") or [PACKAGE]
    return found[0]


def floors(layers: dict[str, Any]) -> tuple[Floor, ...]:
    prefix = container(layers) + "."
    found = []
    for layer in layers["layers"]:
        names = [name.strip().strip("()") for name in re.split(r"[|:]", layer)]
        members = tuple(name.removeprefix(prefix) for name in names if name)
        found.append(Floor(members, independent="|" in layer))
    return tuple(found)


def children(directory: Path) -> tuple[str, ...]:
    """The packages and modules directly in a package's directory, as the tree has them."""
    names = [p.name for p in directory.iterdir() if (p / "__init__.py").is_file()]
    names += [p.stem for p in directory.glob("*.py") if p.name != "__init__.py"]
    return tuple(sorted(names))


def directory(package: str) -> Path:
    return ROOT / "src" / Path(*package.split("."))


def import_graph(exclude_type_checking_imports: bool = False) -> Graph:
    import grimp

    graph = grimp.build_graph(PACKAGE, cache_dir=None,
                              exclude_type_checking_imports=exclude_type_checking_imports)
    return Graph(tuple(sorted((module, imported) for module in graph.modules
                              for imported in graph.find_modules_directly_imported_by(module))))


def member(module: str, package: str) -> str | None:
    """The name directly under ``package`` that holds ``module`` (its face: ``__init__``)."""
    if module == package:
        return FACE
    if not module.startswith(package + "."):
        return None
    return module[len(package) + 1:].split(".")[0]


# -- a contract's picture --------------------------------------------------------------------


def rows(layers: dict[str, Any], nested: frozenset[str] = frozenset(),
         ) -> tuple[tuple[Row, ...], dict[str, Floor]]:
    """A contract's rows, top to bottom (first what it does not place), and each box's floor.

    A package is a box of its own; the plain modules of one floor share a box when there are
    several (the ground's ``types``, ``errors``, ...). A package that is the container of another
    contract (``nested``) lists its parts in its box: the other picture draws them."""
    package = container(layers)
    tree = directory(package)
    names = (FACE, *children(tree))
    placed = [(floor, [n for n in floor.members if n in names]) for floor in floors(layers)]
    unplaced = [n for n in names if not any(n in floor.members for floor, _ in placed)]
    found: list[Row] = []
    floor_of: dict[str, Floor] = {}
    for index, (floor, present) in enumerate([(None, unplaced), *placed]):
        modules = tuple(n for n in present if not (tree / n).is_dir())
        boxes = [Box(n, "the package face" if n == FACE else n, (n,), _note(package, n, nested))
                 for n in present
                 if (tree / n).is_dir() or len(modules) == 1]
        if len(modules) > 1:
            boxes.append(Box(f"modules {index}", "modules" if floor else "the package face",
                             modules, ", ".join(_module(package, n) for n in modules)))
        if boxes:
            found.append(Row(floor.label(index) if floor else "not in the contract",
                             tuple(boxes)))
            floor_of.update({box.key: floor for box in boxes if floor})
    return tuple(found), floor_of


def _module(package: str, name: str) -> str:
    return f"{package.replace('.', '/')}/__init__.py" if name == FACE else name


def _note(package: str, name: str, nested: frozenset[str]) -> str:
    path = directory(package) / name
    if f"{package}.{name}" in nested:
        return ", ".join(children(path))
    if name == FACE:
        return _module(package, name)
    if not path.is_dir():
        return "module"
    return f"{sum(p.name != '__init__.py' for p in path.rglob('*.py'))} modules"


def forbidden(source: str, target: str, rank: dict[str, int], floor_of: dict[str, Floor]) -> bool:
    """Does the contract forbid an import from box ``source`` to box ``target``?"""
    if source not in floor_of or target not in floor_of:
        return False  # outside the contract: the picture shows it, the contract does not judge it
    if rank[source] > rank[target]:
        return True
    return floor_of[source] is floor_of[target] and floor_of[source].independent


def picture(graph: Graph, layers: dict[str, Any], nested: frozenset[str] = frozenset()) -> str:
    """The contract's container drawn: its floors, boxes, and the imports between boxes."""
    package = container(layers)
    found, floor_of = rows(layers, nested)
    rank = {box.key: i for i, row in enumerate(found) for box in row.boxes}
    box_of = {name: box.key for row in found for box in row.boxes for name in box.members}
    pairs: dict[tuple[str, str], list[str]] = {}
    for module, imported in graph.imports:
        source = box_of.get(member(module, package) or "")
        target = box_of.get(member(imported, package) or "")
        if source and target and source != target:
            pairs.setdefault((source, target), []).append(f"{module} -> {imported}")
    arrows = []
    for (source, target), lines in pairs.items():
        bad = forbidden(source, target, rank, floor_of)
        arrows.append(Arrow(source, target, len(lines), FORBIDDEN if bad else ALLOWED,
                            "\n".join(lines) if bad else ""))
    name = package.replace(".", "-") + "-picture"
    return draw(name, f"{package}: its floors and the imports between them", found,
                tuple(arrows))


def table(graph: Graph, package: str) -> str:
    """Each part of a package: what it imports from outside the package, and who outside
    imports it (by name directly under tether), counted."""
    parts = children(directory(package))
    down: dict[str, Counter[str]] = {p: Counter() for p in parts}
    up: dict[str, Counter[str]] = {p: Counter() for p in parts}
    for module, imported in graph.imports:
        source, target = member(module, package), member(imported, package)
        if source in down and target is None:
            down[source][member(imported, PACKAGE) or imported] += 1
        elif target in up and source is None:
            up[target][(member(module, PACKAGE) or module).replace(FACE, PACKAGE)] += 1

    def listed(counter: Counter[str]) -> str:
        ranked = sorted(counter.items(), key=lambda item: (-item[1], item[0]))
        return ", ".join(f"{name} {count}" for name, count in ranked) or "nothing"

    lines = ["| part | imports from outside it | imported from outside by |",
             "| --- | --- | --- |"]
    lines += [f"| `{p}` | {listed(down[p])} | {listed(up[p])} |" for p in parts]
    return "\n".join(lines)


# -- the hook --------------------------------------------------------------------------------

KEY = ('<p><small>Each row is a floor of the contract in pyproject.toml, top to bottom; an arrow '
       'is the imports from one box to another, its number how many (importing module, imported '
       'module) pairs it stands for; <span style="color:#c62828">red</span>: an import the floors '
       'forbid, listed as an exception in the contract. Hover a box to see only its arrows. '
       'Drawn from the code at every build (docs/hooks/architecture_picture.py).</small></p>')


def render(markdown: str) -> str:
    """The page with each marker replaced by what it names, drawn from the code now:
    ``<!-- picture: PACKAGE -->`` the picture of the layers contract whose container is PACKAGE,
    ``<!-- table: PACKAGE -->`` its parts' imports across its border."""
    config = importlinter()
    found = contracts(config)  # the graph as lint-imports builds it: with TYPE_CHECKING imports
    graph = import_graph(bool(config.get("exclude_type_checking_imports", False)))  # unless told
    nested = frozenset(container(c) for c in found)
    for layers in found:
        package = container(layers)
        markdown = markdown.replace(f"<!-- picture: {package} -->",
                                    f"<div>\n{picture(graph, layers, nested)}\n</div>\n\n{KEY}")
        markdown = markdown.replace(f"<!-- table: {package} -->", table(graph, package))
    return markdown


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    return render(markdown)
