"""Public paths that moved keep working for one release, each use warning where they went
(docs/reference/surface.md): the MCP serving side (``tether.mcp.server``, ``proxy``,
``clients`` -> ``tether.serve``) and the graders (``tether.evals.graders`` ->
``tether.reasoning.graders``). The stubs are written once (``tether._lazy.moved``)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

MOVED = [
    ("tether.mcp.server", "tether.serve.server", "serve"),
    ("tether.mcp.proxy", "tether.serve.proxy", "proxy"),
    ("tether.mcp.clients", "tether.serve.clients", "Governance"),
    ("tether.evals.graders", "tether.reasoning.graders", "exact_match"),
]


@pytest.mark.parametrize(("old", "new", "name"), MOVED)
def test_an_old_path_still_works_and_warns_naming_the_new_one(old: str, new: str,
                                                              name: str) -> None:
    pytest.importorskip("mcp")
    stub = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {new}"):
        value = getattr(stub, name)
    assert value is getattr(importlib.import_module(new), name)
    assert name in dir(stub)
    with warnings.catch_warnings(), pytest.raises(AttributeError, match="no attribute"):
        warnings.simplefilter("ignore")
        stub.nothing_here  # noqa: B018


def test_from_import_of_an_old_path_warns_at_the_importing_line() -> None:
    pytest.importorskip("mcp")
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "try:\n    from tether.mcp.server import serve\n"
            "except DeprecationWarning as w:\n    print(w)\nelse:\n    raise SystemExit(1)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert "tether.mcp.server moved to tether.serve.server" in run.stdout


def test_the_new_homes_do_not_warn() -> None:
    pytest.importorskip("mcp")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        from tether.evals import exact_match
        from tether.serve import Governance, proxy, serve

        assert exact_match and Governance and proxy and serve


def test_what_an_mcp_server_asks_is_one_type_on_both_sides() -> None:
    """The MCP client (adapters' floor) and the runtime share the asks' data and refusal through
    ``tether.tools.asking``, so ``tether.mcp.Question`` is what the runtime gives an answerer and
    a refusal the runtime raises is the one the client catches."""
    import tether.mcp
    from tether.mcp import requests
    from tether.runtime.chokepoint import asks
    from tether.tools import asking

    assert tether.mcp.Question is asks.Question is asking.Question
    assert requests.Refused is asks.Refused is asking.Refused
