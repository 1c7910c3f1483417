"""docs/architecture.md's pictures cannot go stale or lie: they are drawn at every site build
(docs/hooks/architecture_picture.py, registered in mkdocs.yml), and this test reads the drawing
back and compares it with what it draws, worked out again here from the source tree, grimp's import
graph and pyproject.toml's layers contract: every package a box, on its floor, every import between
boxes an arrow with its count, red exactly where the floors forbid it."""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import grimp
import pytest
import yaml

from doc_pages import ROOT

HOOK = ROOT / "docs" / "hooks" / "architecture_picture.py"
TREE = ROOT / "src" / "tether"
SVG = "{http://www.w3.org/2000/svg}"


def load_hook() -> ModuleType:
    sys.path.insert(0, str(HOOK.parent))  # as MkDocs loads a hook: its siblings importable
    try:
        spec = importlib.util.spec_from_file_location("architecture_picture", HOOK)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(HOOK.parent))


@pytest.fixture(scope="module")
def page() -> str:
    rendered: str = load_hook().render((ROOT / "docs" / "architecture.md").read_text())
    return rendered


def picture(page: str, name: str) -> ET.Element:
    found = re.search(rf'<svg class="{name}".*?</svg>', page, re.S)
    assert found, name
    return ET.fromstring(found.group(0))


def boxes(svg: ET.Element) -> dict[str, tuple[set[str], float]]:
    """Each box: the names it stands for and its height on the page."""
    found = {}
    for g in svg.iter(f"{SVG}g"):
        if "data-box" in g.attrib:
            rect = g.find(f"{SVG}rect")
            assert rect is not None
            found[g.attrib["data-box"]] = (set(g.attrib["data-members"].split()),
                                           float(rect.attrib["y"]))
    return found


def arrows(svg: ET.Element) -> dict[tuple[str, str], tuple[int, str]]:
    return {(g.attrib["data-from"], g.attrib["data-to"]):
            (int(g.attrib["data-count"]), g.attrib["data-kind"])
            for g in svg.iter(f"{SVG}g") if "data-from" in g.attrib}


def children(directory: Path) -> set[str]:
    return ({p.parent.name for p in directory.glob("*/__init__.py")}
            | {p.stem for p in directory.glob("*.py")} - {"__init__"})


def imports() -> list[tuple[str, str]]:
    graph = grimp.build_graph("tether", cache_dir=None)
    return [(m, i) for m in graph.modules for i in graph.find_modules_directly_imported_by(m)]


def name(module: str, depth: int) -> str:
    parts = module.split(".")
    return parts[depth] if len(parts) > depth else "__init__"


def layers() -> dict[str, Any]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract: dict[str, Any] = next(c for c in config["contracts"] if c["type"] == "layers")
    return contract


def floor_of() -> dict[str, tuple[int, bool]]:
    """Each name the contract places: its floor's index and whether that floor's are independent."""
    return {n.strip(): (i, "|" in layer)
            for i, layer in enumerate(layers()["layers"]) for n in re.split(r"[|:]", layer)}


def test_the_site_draws_both_pictures_into_the_architecture_page(page: str) -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    assert "docs/hooks/architecture_picture.py" in config["hooks"]
    source = (ROOT / "docs" / "architecture.md").read_text()
    assert "<!-- picture: floors -->" in source and "<!-- picture: runtime -->" in source
    assert "<!-- picture:" not in page
    assert page.count("<svg ") == 2


def test_every_package_and_module_of_tether_is_a_box_on_its_floor(page: str) -> None:
    drawn = boxes(picture(page, "floors-picture"))
    names = [n for members, _ in drawn.values() for n in members]
    assert sorted(names) == sorted(children(TREE) | {"__init__"})  # each once
    floors = floor_of()
    height = {n: y for members, y in drawn.values() for n in members}
    for a in height:
        for b in height:
            if a in floors and b in floors:  # a lower floor is drawn lower, one floor one row
                assert (floors[a][0] < floors[b][0]) == (height[a] < height[b]), (a, b)
            elif a not in floors and b in floors:  # what the contract does not place: on top
                assert height[a] < height[b], (a, b)


def test_the_arrows_between_floors_are_the_import_graph_counted(page: str) -> None:
    svg = picture(page, "floors-picture")
    box_of = {n: key for key, (members, _) in boxes(svg).items() for n in members}
    expected = Counter((box_of[name(m, 1)], box_of[name(i, 1)]) for m, i in imports()
                       if box_of[name(m, 1)] != box_of[name(i, 1)])
    assert {pair: count for pair, (count, _) in arrows(svg).items()} == dict(expected)
    assert sum(expected.values()) > 300


def test_red_arrows_are_exactly_the_imports_the_floors_forbid(page: str) -> None:
    svg = picture(page, "floors-picture")
    drawn = boxes(svg)
    box_of = {n: key for key, (members, _) in drawn.items() for n in members}
    floors = floor_of()
    exceptions = {tuple(p.strip() for p in line.split("->"))
                  for line in layers().get("ignore_imports", [])}
    forbidden: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for m, i in imports():
        a, b = name(m, 1), name(i, 1)
        if a in floors and b in floors and box_of[a] != box_of[b] and (
                floors[a][0] > floors[b][0] or (floors[a] == floors[b] and floors[a][1])):
            forbidden.setdefault((box_of[a], box_of[b]), set()).add((m, i))
    for pair, (_, kind) in arrows(svg).items():
        assert (kind == "forbidden") == (pair in forbidden), pair
    for pair, found in forbidden.items():  # and each is an exception the contract lists
        assert found <= exceptions, (pair, found - exceptions)


def test_the_runtime_parts_are_the_tree_and_their_arrows_the_graph(page: str) -> None:
    svg = picture(page, "runtime-picture")
    drawn = boxes(svg)
    assert {n for members, _ in drawn.values() for n in members} == children(TREE / "runtime")
    inside = "tether.runtime."
    expected = Counter((name(m, 2), name(i, 2)) for m, i in imports()
                       if m.startswith(inside) and i.startswith(inside)
                       and name(m, 2) != name(i, 2))
    found = arrows(svg)
    assert {pair: count for pair, (count, _) in found.items()} == dict(expected)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            seen.add(node)
            todo += [t for (s, t) in expected if s == node and t not in seen]
        return False

    for (source, target), (_, kind) in found.items():
        assert (kind == "circle") == reaches(target, source), (source, target)
        if kind != "circle":  # an import on no circle points down the picture
            assert drawn[source][1] < drawn[target][1], (source, target)
    for part in children(TREE / "runtime"):
        assert f"| `{part}` |" in page


def test_the_pictures_are_the_same_at_every_build(page: str) -> None:
    assert load_hook().render((ROOT / "docs" / "architecture.md").read_text()) == page
