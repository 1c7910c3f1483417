"""docs/architecture.md's pictures cannot go stale or lie: they are drawn at every site build
(docs/hooks/architecture_picture.py, registered in mkdocs.yml), and this test reads the drawing
back and compares it with what it should show, worked out again here from the source tree, grimp's
import graph and pyproject.toml's layers contracts: for each contract (the floors of tether, the
runtime's named parts) every package and module a box on its floor, every import between boxes an
arrow with its count, red exactly where the floors forbid it and only for a listed exception."""

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


def children(package: str) -> set[str]:
    directory = ROOT / "src" / Path(*package.split("."))
    return ({p.parent.name for p in directory.glob("*/__init__.py")}
            | {p.stem for p in directory.glob("*.py")})  # with __init__: the package face


def imports() -> list[tuple[str, str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    graph = grimp.build_graph("tether", cache_dir=None, exclude_type_checking_imports=bool(
        config.get("exclude_type_checking_imports", False)))  # as lint-imports reads them
    return [(m, i) for m in graph.modules for i in graph.find_modules_directly_imported_by(m)]


def under(module: str, package: str) -> str | None:
    if module == package:
        return "__init__"
    if module.startswith(package + "."):
        return module[len(package) + 1:].split(".")[0]
    return None


def contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return [c for c in config["contracts"] if c["type"] == "layers"]


CONTRACTS = {c.get("containers", ["tether"])[0]: c for c in contracts()}


def floor_of(contract: dict[str, Any]) -> dict[str, tuple[int, bool]]:
    """Each name the contract places: its floor's index and whether that floor's are independent."""
    prefix = contract.get("containers", ["tether"])[0] + "."
    return {n.strip().removeprefix(prefix): (i, "|" in layer)
            for i, layer in enumerate(contract["layers"]) for n in re.split(r"[|:]", layer)}


def svg_of(page: str, package: str) -> ET.Element:
    return picture(page, package.replace(".", "-") + "-picture")


def test_the_site_draws_a_picture_of_each_contract_into_the_architecture_page(page: str) -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    assert "docs/hooks/architecture_picture.py" in config["hooks"]
    assert set(CONTRACTS) >= {"tether", "tether.runtime"}
    source = (ROOT / "docs" / "architecture.md").read_text()
    for package in CONTRACTS:
        assert f"<!-- picture: {package} -->" in source, package
    assert "<!-- picture:" not in page and "<!-- table:" not in page
    assert page.count("<svg ") == len(CONTRACTS)


@pytest.mark.parametrize("package", sorted(CONTRACTS))
def test_every_package_and_module_is_a_box_on_its_floor(page: str, package: str) -> None:
    drawn = boxes(svg_of(page, package))
    names = [n for members, _ in drawn.values() for n in members]
    assert sorted(names) == sorted(children(package))  # each once
    floors = floor_of(CONTRACTS[package])
    height = {n: y for members, y in drawn.values() for n in members}
    for a in height:
        for b in height:
            if a in floors and b in floors:  # a lower floor is drawn lower, one floor one row
                assert (floors[a][0] < floors[b][0]) == (height[a] < height[b]), (a, b)
            elif a not in floors and b in floors:  # what the contract does not place: on top
                assert height[a] < height[b], (a, b)


@pytest.mark.parametrize("package", sorted(CONTRACTS))
def test_the_arrows_are_the_import_graph_counted(page: str, package: str) -> None:
    svg = svg_of(page, package)
    box_of = {n: key for key, (members, _) in boxes(svg).items() for n in members}
    expected: Counter[tuple[str, str]] = Counter()
    for m, i in imports():
        a, b = under(m, package), under(i, package)
        if a and b and box_of[a] != box_of[b]:
            expected[box_of[a], box_of[b]] += 1
    assert {pair: count for pair, (count, _) in arrows(svg).items()} == dict(expected)
    assert sum(expected.values()) > 50


@pytest.mark.parametrize("package", sorted(CONTRACTS))
def test_red_arrows_are_exactly_the_imports_the_floors_forbid(page: str, package: str) -> None:
    svg = svg_of(page, package)
    box_of = {n: key for key, (members, _) in boxes(svg).items() for n in members}
    floors = floor_of(CONTRACTS[package])
    exceptions = {tuple(p.strip() for p in line.split("->"))
                  for line in CONTRACTS[package].get("ignore_imports", [])}
    forbidden: dict[tuple[str, str], set[tuple[str, ...]]] = {}
    for m, i in imports():
        a, b = under(m, package), under(i, package)
        if a in floors and b in floors and box_of[a] != box_of[b] and (
                floors[a][0] > floors[b][0] or (floors[a] == floors[b] and floors[a][1])):
            forbidden.setdefault((box_of[a], box_of[b]), set()).add((m, i))
    for pair, (_, kind) in arrows(svg).items():
        assert (kind == "forbidden") == (pair in forbidden), pair
    for pair, found in forbidden.items():  # and each is an exception the contract lists
        assert found <= exceptions, (pair, found - exceptions)


def test_the_runtime_parts_table_has_every_part(page: str) -> None:
    for part in children("tether.runtime") - {"__init__"}:
        assert f"| `{part}` |" in page


def test_the_pictures_are_the_same_at_every_build(page: str) -> None:
    assert load_hook().render((ROOT / "docs" / "architecture.md").read_text()) == page
