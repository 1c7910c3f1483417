"""docs/architecture.md's two pictures, the floors and the runtime's named parts, drawn from the
imports at every build.

A hand-drawn picture of a code base's layers is right the day it is drawn. This MkDocs hook builds
the import graph with grimp (the graph import-linter itself checks, so the picture and
`lint-imports` read the same imports), reads the floors from pyproject.toml's layers contract, and
replaces two markers in architecture.md with inline SVG (picture_svg.py):

- ``<!-- picture: floors -->``: every package under src/tether as a box on its floor, top to
  bottom as the contract lists them; the plain modules of one floor (the ground's ``types``,
  ``errors``, ...) share a box; what the contract does not place sits in a row above it. Arrows
  are the imports between boxes, counted (one per importing module and imported module); an
  import the floors forbid (up a floor, or between siblings the contract calls independent: the
  contract's listed exceptions) is red.
- ``<!-- picture: runtime -->``: the runtime's named parts (every package and module directly
  under src/tether/runtime), ordered so that the most imports point down, with the imports between
  them counted; an import on a circle between parts is orange and dashed. A table beside it says
  what each part imports from the floors below and who above imports it.

Decision: the boxes come from the source tree and the floors from the contract, with nothing named
here, so a package that is added or moved (the MCP serving side's own package) is drawn where the
contract puts it without a change to this file; tests/test_architecture_picture.py reads the
drawing back and compares it with the graph.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from picture_svg import ALLOWED, CIRCLE, FORBIDDEN, Arrow, Box, Row, draw

ROOT = Path(__file__).resolve().parents[2]
PACKAGE, RUNTIME = "tether", "runtime"
PAGE = "architecture.md"
FLOORS_MARK, RUNTIME_MARK = "<!-- picture: floors -->", "<!-- picture: runtime -->"
FACE = "__init__"  # the package's own __init__.py, as a member name


@dataclass(frozen=True)
class Floor:
    """One layer of the contract: its members (names directly under tether) in the order given."""

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
    exceptions: frozenset[tuple[str, str]]  # the contract's ignore_imports


def contract(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, Any]:
    config = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]
    layers: dict[str, Any] = next(c for c in config["contracts"] if c["type"] == "layers")
    return layers


def floors(layers: dict[str, Any]) -> tuple[Floor, ...]:
    container = (layers.get("containers") or [PACKAGE])[0]
    found = []
    for layer in layers["layers"]:
        names = [name.strip().strip("()") for name in re.split(r"[|:]", layer)]
        members = tuple(name.removeprefix(container + ".") for name in names if name)
        found.append(Floor(members, independent="|" in layer))
    return tuple(found)


def children(directory: Path) -> tuple[str, ...]:
    """The packages and modules directly in a package's directory, as the tree has them."""
    names = [p.name for p in directory.iterdir() if (p / "__init__.py").is_file()]
    names += [p.stem for p in directory.glob("*.py") if p.name != "__init__.py"]
    return tuple(sorted(names))


def import_graph(layers: dict[str, Any]) -> Graph:
    import grimp

    graph = grimp.build_graph(PACKAGE, cache_dir=None, exclude_type_checking_imports=bool(
        layers.get("exclude_type_checking_imports", False)))
    imports = sorted((module, imported) for module in graph.modules
                     for imported in graph.find_modules_directly_imported_by(module))
    exceptions = frozenset((importer.strip(), imported.strip()) for importer, imported in (
        line.split("->") for line in layers.get("ignore_imports", [])))
    return Graph(tuple(imports), exceptions)


def member(module: str, depth: int) -> str:
    """The name directly under the package ``depth`` levels down that holds ``module``."""
    parts = module.split(".")
    return parts[depth] if len(parts) > depth else FACE


def _counted(graph: Graph, box_of: dict[str, str], depth: int,
             within: str = "") -> dict[tuple[str, str], list[tuple[str, str]]]:
    pairs: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for module, imported in graph.imports:
        if not (module.startswith(within) and imported.startswith(within)):
            continue
        source = box_of.get(member(module, depth))
        target = box_of.get(member(imported, depth))
        if source and target and source != target:
            pairs.setdefault((source, target), []).append((module, imported))
    return pairs


# -- the floors ------------------------------------------------------------------------------


def floors_rows(tree: Path = ROOT / "src" / PACKAGE,
                layers: dict[str, Any] | None = None) -> tuple[tuple[Row, ...], dict[str, int],
                                                                dict[str, Floor]]:
    """The rows of the floors picture, each box's row, and each box's floor (none: unplaced)."""
    layers = layers or contract()
    names = (FACE, *children(tree))
    placed = [(floor, [n for n in floor.members if n in names]) for floor in floors(layers)]
    unplaced = [n for n in names if not any(n in floor.members for floor, _ in placed)]
    rows: list[Row] = []
    floor_of: dict[str, Floor] = {}
    for index, (floor, present) in enumerate([(None, unplaced), *placed]):
        boxes = [Box(n, n, (n,), _note(tree, n)) for n in present if (tree / n).is_dir()]
        modules = tuple(n for n in present if not (tree / n).is_dir())
        if modules:
            key = f"modules {index}"
            title = "modules" if floor else "the package face"
            boxes.append(Box(key, title, modules, ", ".join(
                f"{PACKAGE}/{n}.py" if n == FACE else n for n in modules)))
        if boxes:
            rows.append(Row(floor.label(index) if floor else "not in the contract", tuple(boxes)))
            for box in boxes:
                if floor:
                    floor_of[box.key] = floor
    rank = {box.key: i for i, row in enumerate(rows) for box in row.boxes}
    return tuple(rows), rank, floor_of


def _note(tree: Path, name: str) -> str:
    if name != RUNTIME:
        return ""
    return ", ".join(n for n in children(tree / name))


def forbidden(source: str, target: str, rank: dict[str, int], floor_of: dict[str, Floor]) -> bool:
    """Does the contract forbid an import from box ``source`` to box ``target``?"""
    if source not in floor_of or target not in floor_of:
        return False  # outside the contract: the picture shows it, the contract does not judge it
    if rank[source] > rank[target]:
        return True
    same = floor_of[source] is floor_of[target]
    return same and floor_of[source].independent


def floors_picture(graph: Graph, layers: dict[str, Any], tree: Path = ROOT / "src" / PACKAGE,
                   ) -> str:
    rows, rank, floor_of = floors_rows(tree, layers)
    box_of = {name: box.key for row in rows for box in row.boxes for name in box.members}
    arrows = []
    for (source, target), pairs in _counted(graph, box_of, 1).items():
        bad = forbidden(source, target, rank, floor_of)
        arrows.append(Arrow(source, target, len(pairs), FORBIDDEN if bad else ALLOWED,
                            "\n".join(f"{a} -> {b}" for a, b in pairs) if bad else ""))
    return draw("floors-picture", "tether's floors: packages and the imports between them",
                rows, tuple(arrows))


# -- the runtime's named parts ---------------------------------------------------------------


def circles(counts: dict[tuple[str, str], int]) -> set[tuple[str, str]]:
    """The arrows on an import circle: both ends in one strongly connected component."""
    nodes = sorted({n for pair in counts for n in pair})
    reach = {n: {t for (s, t) in counts if s == n} for n in nodes}
    changed = True
    while changed:  # transitive closure; a handful of parts
        changed = False
        for n in nodes:
            more = set().union(*(reach[m] for m in reach[n])) - reach[n]
            if more:
                reach[n] |= more
                changed = True
    return {(s, t) for (s, t) in counts if s in reach[t]}


def order(nodes: list[str], counts: dict[tuple[str, str], int]) -> dict[str, int]:
    """Each part's row, importers above what they import: Eades' greedy order breaks circles at
    their lightest imports, then each part sits one row above the highest part it imports."""
    left: list[str] = []
    right: list[str] = []
    rest = sorted(nodes)
    while rest:
        weight = {n: (sum(c for (s, t), c in counts.items() if s == n and t in rest),
                      sum(c for (s, t), c in counts.items() if t == n and s in rest))
                  for n in rest}
        sink = [n for n in rest if weight[n][0] == 0]
        source = [n for n in rest if weight[n][1] == 0]
        if sink:
            right.insert(0, sink[0])
        else:
            left.append(source[0] if source else max(
                rest, key=lambda n: (weight[n][0] - weight[n][1], n)))
        rest.remove(right[0] if sink else left[-1])
    sequence = left + right  # importers first
    position = {n: i for i, n in enumerate(sequence)}
    height: dict[str, int] = {}
    for n in reversed(sequence):
        below = [height[t] for (s, t) in counts if s == n and position[t] > position[n]]
        height[n] = 1 + max(below, default=-1)
    top = max(height.values(), default=0)
    return {n: top - height[n] for n in nodes}


def runtime_picture(graph: Graph, tree: Path = ROOT / "src" / PACKAGE) -> tuple[str, str]:
    """The runtime's parts as an SVG, and the table of what each imports and is imported by."""
    parts = children(tree / RUNTIME)
    inside = f"{PACKAGE}.{RUNTIME}."
    pairs = _counted(graph, {p: p for p in parts}, 2, within=inside)
    counts = {pair: len(found) for pair, found in pairs.items()}
    on_circle = circles(counts)
    rows_of = order(list(parts), counts)
    rows = tuple(Row("", tuple(
        Box(p, p, (p,), _size(tree / RUNTIME / p))
        for p in parts if rows_of[p] == i)) for i in range(max(rows_of.values()) + 1))
    arrows = tuple(Arrow(s, t, c, CIRCLE if (s, t) in on_circle else ALLOWED)
                   for (s, t), c in counts.items())
    svg = draw("runtime-picture", "the runtime's named parts and the imports between them",
               rows, arrows)
    return svg, _table(graph, parts, inside)


def _size(path: Path) -> str:
    if not path.is_dir():
        return "module"
    return f"{len(list(path.glob('*.py'))) - 1} modules"


def _table(graph: Graph, parts: tuple[str, ...], inside: str) -> str:
    down: dict[str, Counter[str]] = {p: Counter() for p in parts}
    up: dict[str, Counter[str]] = {p: Counter() for p in parts}
    for module, imported in graph.imports:
        if module.startswith(inside) and not imported.startswith(inside):
            down[member(module, 2)][member(imported, 1)] += 1
        elif imported.startswith(inside) and not module.startswith(inside):
            up[member(imported, 2)][member(module, 1).replace(FACE, PACKAGE)] += 1

    def listed(counter: Counter[str]) -> str:
        ranked = sorted(counter.items(), key=lambda item: (-item[1], item[0]))
        return ", ".join(f"{name} {count}" for name, count in ranked) or "nothing"

    lines = ["| part | imports from outside the runtime | imported from outside by |",
             "| --- | --- | --- |"]
    lines += [f"| `{p}` | {listed(down[p])} | {listed(up[p])} |" for p in parts]
    return "\n".join(lines)


# -- the hook --------------------------------------------------------------------------------


def render(markdown: str) -> str:
    """architecture.md with its markers replaced by the pictures drawn from the code now."""
    layers = contract()
    graph = import_graph(layers)
    svg, table = runtime_picture(graph)
    caption = ('<p class="picture-key"><small>Grey: an import the floors allow; '
               '<span style="color:#c62828">red</span>: one they forbid, listed as an '
               'exception in the contract; <span style="color:#d97706">orange, dashed</span>: '
               'an import on a circle between parts. Each number counts the module imports '
               'the arrow stands for; hover a box to see only its arrows. Drawn at every '
               'build from the code (docs/hooks/architecture_picture.py).</small></p>')
    markdown = markdown.replace(FLOORS_MARK, f"<div>\n{floors_picture(graph, layers)}\n</div>"
                                f"\n\n{caption}")
    return markdown.replace(RUNTIME_MARK, f"<div>\n{svg}\n</div>\n\n{caption}\n\n{table}")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    return render(markdown)
