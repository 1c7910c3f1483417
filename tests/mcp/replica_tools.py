"""Two cheap tools for tests/test_mcp_replicas.py and bench/replicas.py: ``echo`` answers
its text (each call's text is unique, so the journal shows each call once), ``limited`` too,
and the replicas' policy puts a quota on it (shared through the store)."""

from __future__ import annotations

from tether.tools import tool


@tool
def echo(text: str) -> str:
    """Answer the text as it is."""
    return text


@tool
def limited(text: str) -> str:
    """Answer the text as it is (a quota bounds its calls across every replica)."""
    return text


tools = [echo, limited]
