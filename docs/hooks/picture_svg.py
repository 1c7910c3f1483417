"""Boxes on floors and counted arrows between them, drawn as one inline SVG with no dependency.

Why by hand: Material loads mermaid from a CDN and the site builds and reads offline, and no
graphviz binary is assumed. A layered picture needs little layout: each row is a floor, its boxes
side by side and centred; an arrow leaves its importer's bottom edge (its top edge when it points
up or along its own floor) and enters its target's top edge (bottom edge when it points up), at a
port spread along the edge in the order of the other ends, so arrows to the left leave to the left
and few cross near a box. Boxes are drawn over the arrows (an arrow that skips a floor passes
behind it), and every count is written beside its arrow's head. Hovering a box keeps its own
arrows and fades the rest (CSS ``:has``, no script).

Decision: the drawing is a pure function of rows and arrows, with coordinates rounded and every
list sorted, so the same code gives the same bytes; each box and arrow carries ``data-`` attributes
(members, ends, count, kind) that the tests read back and compare with the import graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

# Kinds of arrow: an import the floors allow, and one they forbid (up a floor, or across
# independent siblings: the contract's listed exceptions)
ALLOWED, FORBIDDEN = "allowed", "forbidden"
COLOUR = {ALLOWED: "#6b7785", FORBIDDEN: "#c62828"}

BOX_H, ROW_GAP, BOX_GAP, LEFT, PORT, PAD = 38, 74, 22, 150, 16, 10
MIN_WIDTH, ZIGZAG = 640, 0.2


@dataclass(frozen=True)
class Box:
    """One box: ``key`` names it in arrows; ``members`` are the tree's names it stands for."""

    key: str
    title: str
    members: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class Row:
    label: str
    boxes: tuple[Box, ...]


@dataclass(frozen=True)
class Arrow:
    source: str
    target: str
    count: int
    kind: str
    detail: str = ""  # tooltip lines, e.g. the module imports under a forbidden arrow


@dataclass(frozen=True)
class _Place:
    x: float
    y: float
    width: float
    row: int


def _text_width(text: str, size: float) -> float:
    return len(text) * size * 0.58


def _sides(arrow: Arrow, row_of: dict[str, int]) -> tuple[str, str]:
    """Which edge the arrow leaves and which it enters: ``bottom``/``top``."""
    source, target = row_of[arrow.source], row_of[arrow.target]
    if target > source:
        return "bottom", "top"
    if target < source:
        return "top", "bottom"
    return "top", "top"


def _widths(rows: tuple[Row, ...], arrows: tuple[Arrow, ...]) -> dict[str, float]:
    row_of = {box.key: i for i, row in enumerate(rows) for box in row.boxes}
    ends: dict[tuple[str, str], int] = {}
    for arrow in arrows:
        out_side, in_side = _sides(arrow, row_of)
        ends[arrow.source, out_side] = ends.get((arrow.source, out_side), 0) + 1
        ends[arrow.target, in_side] = ends.get((arrow.target, in_side), 0) + 1
    widths = {}
    for row in rows:
        for box in row.boxes:
            ports = max(ends.get((box.key, "top"), 0), ends.get((box.key, "bottom"), 0))
            widths[box.key] = max(_text_width(box.title, 13), _text_width(box.note, 9),
                                  (ports + 1) * PORT) + 2 * PAD
    return widths


def _left(rows: tuple[Row, ...]) -> float:
    return LEFT if any(row.label for row in rows) else 20


def _layout(rows: tuple[Row, ...], arrows: tuple[Arrow, ...]) -> tuple[dict[str, _Place], float]:
    widths = _widths(rows, arrows)
    left = _left(rows)
    spans = [sum(widths[b.key] for b in row.boxes) + BOX_GAP * (len(row.boxes) - 1)
             for row in rows]
    inner = max(*spans, MIN_WIDTH)
    places = {}
    for index, (row, span) in enumerate(zip(rows, spans, strict=True)):
        # the row's spare room shared around its boxes (CSS's space-around): boxes of a floor
        # spread over the picture, so the arrows between floors spread too; a lone box stands
        # left or right of the middle by turns, so an arrow that skips it passes beside it
        share = (inner - span) / len(row.boxes)
        x = left + share / 2
        if len(row.boxes) == 1:
            x += (inner - span) * ZIGZAG * (1 if index % 2 else -1)
        y = 40 + index * (BOX_H + ROW_GAP)
        for box in row.boxes:
            places[box.key] = _Place(x, y, widths[box.key], index)
            x += widths[box.key] + BOX_GAP + share
    return places, left + inner + 20


def _ports(arrows: tuple[Arrow, ...],
           places: dict[str, _Place]) -> dict[tuple[int, str], tuple[float, float]]:
    """Each arrow's two ends: (arrow index, "out"/"in") -> point on its box's edge."""
    claims: dict[tuple[str, str], list[tuple[float, int, int, str]]] = {}
    row_of = {key: place.row for key, place in places.items()}
    for i, arrow in enumerate(arrows):
        out_side, in_side = _sides(arrow, row_of)
        source, target = places[arrow.source], places[arrow.target]
        claims.setdefault((arrow.source, out_side), []).append(
            (target.x + target.width / 2, 1, i, "out"))
        claims.setdefault((arrow.target, in_side), []).append(
            (source.x + source.width / 2, 0, i, "in"))
    points = {}
    for (key, side), items in claims.items():
        place = places[key]
        y = place.y + (BOX_H if side == "bottom" else 0)
        for k, (_, _, i, end) in enumerate(sorted(items)):
            points[i, end] = (place.x + place.width * (k + 1) / (len(items) + 1), y)
    return points


def _path(start: tuple[float, float], end: tuple[float, float], sides: tuple[str, str]) -> str:
    (x1, y1), (x2, y2) = start, end
    if sides == ("top", "top"):  # along a floor: an arch in the gap above it
        lift = 26 + abs(x2 - x1) / 12
        c1, c2 = (x1, y1 - lift), (x2, y2 - lift)
    else:
        bend = max(28.0, abs(y2 - y1) * 0.45)
        out = bend if sides[0] == "bottom" else -bend
        into = -bend if sides[1] == "top" else bend
        c1, c2 = (x1, y1 + out), (x2, y2 + into)
    return (f"M{x1:.1f},{y1:.1f} C{c1[0]:.1f},{c1[1]:.1f} {c2[0]:.1f},{c2[1]:.1f} "
            f"{x2:.1f},{y2:.1f}")


def _css(name: str, rows: tuple[Row, ...]) -> str:
    rules = [f".{name} .edge{{transition:opacity .15s}}",
             f".{name}:has(.box:hover) .edge{{opacity:.08}}",
             f".{name} text{{font-family:system-ui,sans-serif}}"]
    for row in rows:
        for box in row.boxes:
            slug = _slug(box.key)
            rules.append(f".{name}:has(.box-{slug}:hover) :is(.from-{slug},.to-{slug})"
                         f"{{opacity:1}}")
    return "".join(rules)


def _slug(key: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in key)


def draw(name: str, caption: str, rows: tuple[Row, ...], arrows: tuple[Arrow, ...]) -> str:
    """The SVG, one element per line, no blank line (so Markdown passes it through as HTML)."""
    arrows = tuple(sorted(arrows, key=lambda a: (a.source, a.target)))
    places, width = _layout(rows, arrows)
    height = 40 + len(rows) * (BOX_H + ROW_GAP) - ROW_GAP + 30
    ports = _ports(arrows, places)
    out = [f'<svg class="{name}" xmlns="http://www.w3.org/2000/svg" role="img" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" style="max-width:100%;height:auto" '
           f'aria-label="{escape(caption)}">',
           f"<style>{_css(name, rows)}</style>",
           "<defs>"]
    for kind, colour in COLOUR.items():
        out.append(f'<marker id="{name}-{kind}" viewBox="0 0 8 8" refX="7.5" refY="4" '
                   f'markerWidth="7" markerHeight="7" markerUnits="userSpaceOnUse" '
                   f'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="{colour}"/></marker>')
    out.append("</defs>")
    for index, row in enumerate(rows):
        y = 40 + index * (BOX_H + ROW_GAP)
        fill = "#f4f6f8" if index % 2 == 0 else "#ffffff"
        out.append(f'<rect x="0" y="{y - ROW_GAP / 2:.1f}" width="{width:.0f}" '
                   f'height="{BOX_H + ROW_GAP:.1f}" fill="{fill}"/>')
        out.append(f'<text x="8" y="{y + BOX_H / 2 + 4:.1f}" font-size="10" '
                   f'fill="#5f6b76">{escape(row.label)}</text>')
    row_of = {key: place.row for key, place in places.items()}
    for i, arrow in enumerate(arrows):
        sides = _sides(arrow, row_of)
        start, end = ports[i, "out"], ports[i, "in"]
        colour = COLOUR[arrow.kind]
        weight = 0.8 + 0.55 * math.log2(arrow.count) + (0.7 if arrow.kind != ALLOWED else 0)
        opacity = ".45" if arrow.kind == ALLOWED else ".95"
        plural = "s" if arrow.count != 1 else ""
        kind = "" if arrow.kind == ALLOWED else f" ({arrow.kind})"
        title = f"{arrow.source} → {arrow.target}: {arrow.count} import{plural}{kind}"
        if arrow.detail:
            title += "\n" + arrow.detail
        label_y = end[1] + (-5 if sides[1] == "top" else 11)
        out.append(f'<g class="edge from-{_slug(arrow.source)} to-{_slug(arrow.target)}" '
                   f'data-from="{escape(arrow.source)}" data-to="{escape(arrow.target)}" '
                   f'data-count="{arrow.count}" data-kind="{arrow.kind}" opacity="{opacity}">'
                   f"<title>{escape(title)}</title>"
                   f'<path d="{_path(start, end, sides)}" fill="none" stroke="{colour}" '
                   f'stroke-width="{weight:.2f}" marker-end="url(#{name}-{arrow.kind})"/>'
                   f'<text x="{end[0] + 2.5:.1f}" y="{label_y:.1f}" font-size="8.5" '
                   f'fill="{colour}">{arrow.count}</text></g>')
    for row in rows:
        for box in row.boxes:
            place = places[box.key]
            members = " ".join(box.members)
            out.append(f'<g class="box box-{_slug(box.key)}" data-box="{escape(box.key)}" '
                       f'data-members="{escape(members)}">'
                       f"<title>{escape(box.title)}: {escape(', '.join(box.members))}</title>"
                       f'<rect x="{place.x:.1f}" y="{place.y:.1f}" width="{place.width:.1f}" '
                       f'height="{BOX_H}" rx="5" fill="#ffffff" stroke="#37474f"/>'
                       f'<text x="{place.x + place.width / 2:.1f}" y="{place.y + 16:.1f}" '
                       f'font-size="13" text-anchor="middle" fill="#1c2833">'
                       f"{escape(box.title)}</text>"
                       f'<text x="{place.x + place.width / 2:.1f}" y="{place.y + 30:.1f}" '
                       f'font-size="9" text-anchor="middle" fill="#5f6b76">'
                       f"{escape(box.note)}</text></g>")
    out.append("</svg>")
    return "\n".join(out)
