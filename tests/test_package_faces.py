"""The package faces: every name a face lists in ``__all__`` resolves (imported lazily where the
face says so), ``dir()`` shows it, an unknown name fails with AttributeError, and the lazy-export
mechanism is written once (``tether._lazy``), not copied into each face."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import tether

PACKAGE = Path(tether.__file__).parent
FACES = sorted(
    ".".join(p.relative_to(PACKAGE.parent).parent.parts)
    for p in PACKAGE.rglob("__init__.py"))


def test_every_folder_of_the_package_is_a_package() -> None:
    folders = {p.parent for p in PACKAGE.rglob("*.py")}
    missing = sorted(str(f.relative_to(PACKAGE)) for f in folders
                     if not (f / "__init__.py").exists())
    assert missing == [], f"add an __init__.py (a package face) to {missing}"
    assert "tether.store" in FACES


@pytest.mark.parametrize("face", FACES)
def test_every_exported_name_resolves(face: str) -> None:
    module = importlib.import_module(face)
    names = getattr(module, "__all__", [])
    unresolved = []
    for name in names:
        try:
            getattr(module, name)
        except ImportError as exc:  # an optional extra: the name is there, its home needs it
            pytest.skip(f"{face}.{name} needs an extra: {exc}")
        except AttributeError:
            unresolved.append(name)
    assert unresolved == [], f"{face}.__all__ names what it does not have: {unresolved}"
    assert set(names) <= set(dir(module))
    with pytest.raises(AttributeError, match=f"module '{face}' has no attribute 'nothing_here'"):
        module.nothing_here  # noqa: B018


def test_the_lazy_export_code_is_written_once() -> None:
    copies = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("__init__.py")
                    if any(isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
                           for node in ast.parse(p.read_text(encoding="utf-8")).body))
    assert copies == [], f"use tether._lazy.exports instead of a hand-written __getattr__: {copies}"


def test_a_lazy_name_is_imported_when_first_used() -> None:
    import subprocess
    import sys

    code = ("import sys, tether.policy; assert 'tether.policy.presets' not in sys.modules; "
            "tether.policy.ContainUntrusted; assert 'tether.policy.presets' in sys.modules; "
            "assert 'ContainUntrusted' in vars(tether.policy)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
