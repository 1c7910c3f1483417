"""The API reference is complete: every public name has an entry in the built site, and the
recipe a newcomer builds first, ``tether.Agent``, shows each of its constructor parameters.

Why read the built site and not the pages: a ``::: tether.x`` line renders only what
mkdocstrings finds and keeps (an undocumented member, a lazily exported alias it did not follow,
a face with no page at all are silently left out), so the one place that says what a reader
gets is the site's ``objects.inv``, the inventory mkdocstrings writes of every object it
rendered. The public names come from the code and from docs/reference/surface.md, the one
statement of the public surface: every package face's ``__all__`` (a face is a folder's
``__init__`` that has one), and every public module's ``__all__``, or, for a module without one,
the classes and functions it defines. A new face, module or name without its entry fails here,
named.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import zlib
from pathlib import Path

from built_site import built_site  # noqa: F401
from doc_pages import ROOT

SOURCE = ROOT / "src"
SURFACE = ROOT / "docs" / "reference" / "surface.md"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _declared_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            assert node.value is not None
            names = ast.literal_eval(node.value)
            assert isinstance(names, (list, tuple)), "__all__ must be a literal list of names"
            return [str(name) for name in names]
    return None


def _tree(module: str) -> ast.Module:
    path = SOURCE / module.replace(".", "/")
    file = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    return ast.parse(file.read_text(encoding="utf-8"))


def faces() -> list[str]:
    """Every public package face: a folder's ``__init__`` that lists its names in ``__all__``."""
    found = []
    for init in sorted((SOURCE / "tether").rglob("__init__.py")):
        module = _module_name(init)
        if any(part.startswith("_") for part in module.split(".")):
            continue
        if _declared_all(ast.parse(init.read_text(encoding="utf-8"))) is not None:
            found.append(module)
    return found


def public_modules() -> list[str]:
    """The modules docs/reference/surface.md lists as public."""
    section = SURFACE.read_text(encoding="utf-8").split("## Public modules", 1)[1]
    return re.findall(r"^- `(tether[\w.]*)`:", section, re.M)


def homes(module: str) -> dict[str, str]:
    """Where each name a module imports comes from (its ``from X import name`` lines, those
    under ``TYPE_CHECKING`` included: a lazy face names its homes there)."""
    return {alias.asname or alias.name: node.module
            for node in ast.walk(_tree(module)) if isinstance(node, ast.ImportFrom) and node.module
            for alias in node.names}


def public_names(module: str) -> list[str]:
    """A module's ``__all__``, or, without one, the classes and functions it defines."""
    tree = _tree(module)
    declared = _declared_all(tree)
    if declared is not None:
        return declared
    defined = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return [node.name for node in tree.body
            if isinstance(node, defined) and not node.name.startswith("_")]


def inventory(site: Path) -> dict[str, str]:
    """The objects of the site's ``objects.inv`` (Sphinx inventory v2): name -> page."""
    data = (site / "objects.inv").read_bytes()
    header = data.split(b"\n", 4)
    assert header[0] == b"# Sphinx inventory version 2", header[0]
    assert b"zlib" in header[3], header[3]
    entries: dict[str, str] = {}
    for line in zlib.decompress(header[4]).decode("utf-8").splitlines():
        match = re.match(r"(\S+)\s+py:\S+\s+-?\d+\s+(\S+)", line)
        if match:
            entries[match.group(1)] = match.group(2)
    return entries


def test_the_surface_is_found() -> None:
    """The lists the other tests walk are the ones the code has (guards an empty walk)."""
    found = faces()
    for face in ("tether", "tether.policy", "tether.runtime", "tether.store", "tether.models",
                 "tether.reasoning", "tether.knowledge", "tether.credentials", "tether.durable"):
        assert face in found, face
    assert "tether.runtime.stream" in public_modules()
    assert {"Agent", "ReAct", "FakeModel"} <= set(public_names("tether"))
    assert "DenseRetriever" in public_names("tether.knowledge.dense")


def _documented(entries: dict[str, str], module: str, name: str) -> bool:
    """``module.name`` has an entry; or its home's does (a face's name that is also the name of
    the submodule it comes from, ``tether.observe.configure``, is rendered from its home)."""
    home = homes(module).get(name)
    return f"{module}.{name}" in entries or (
        home is not None and home.rsplit(".", 1)[-1] == name and f"{home}.{name}" in entries)


def test_every_public_name_has_a_reference_entry(built_site: Path) -> None:  # noqa: F811
    entries = inventory(built_site)
    missing = {module: [name for name in public_names(module)
                        if not _documented(entries, module, name)]
               for module in [*faces(), *public_modules()]}
    missing = {module: names for module, names in missing.items() if names}
    assert missing == {}, (
        "these public names have no entry in the API reference: give the module a page under "
        "docs/reference/ (a '::: module' line, in mkdocs.yml's nav; reference/tether.md lists "
        "tether's names one by one, so a new one needs its line there), and each name a "
        f"docstring (mkdocstrings shows no member without one): {missing}")


def _object_html(page: str, identifier: str) -> str:
    """The HTML of one rendered object: from its heading to the next object's."""
    start = page.find(f'id="{identifier}"')
    assert start >= 0, f"{identifier} is not rendered on its page"
    end = page.find('id="tether.', start + 1)
    return page[start:end if end >= 0 else len(page)]


def test_the_agent_shows_every_constructor_parameter(built_site: Path) -> None:  # noqa: F811
    from tether import Agent

    parameters = [f.name for f in dataclasses.fields(Agent) if f.init]
    assert len(parameters) >= 25, parameters
    page = (built_site / "reference" / "tether.html").read_text(encoding="utf-8")
    agent = _object_html(page, "tether.Agent")
    signature, _, rest = agent.partition("</code></pre></div>")
    assert re.search(r'class="[^"]*\bdoc-signature\b', signature), \
        "tether.Agent has no rendered signature"
    described = rest.partition('doc-section-title">Parameters:')[2].partition("</ul>")[0]
    shown = re.findall(r'<span class="n">(\w+)</span><span class="p">:</span>', signature)
    not_in_signature = [name for name in parameters if name not in shown]
    not_described = [name for name in parameters if f"<b><code>{name}</code></b>" not in described]
    assert not_in_signature == [], (
        f"tether.Agent's signature leaves out {not_in_signature}: keep merge_init_into_class and "
        "show_signature_annotations in mkdocs.yml's mkdocstrings options")
    assert not_described == [], (
        f"tether.Agent's docstring describes no {not_described}: add each to its Args section")
