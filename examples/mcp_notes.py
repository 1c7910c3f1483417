"""A small notes desk, served to MCP clients by tether (README: "Serving tools over MCP").

    tether mcp serve examples/mcp_notes.py:tools --policy examples/policies/mcp_notes.yaml

The notes are text files in the folder named by ``NOTES_DIR`` (default: ``./notes``). Sending a
note "mails" it by dropping a copy in ``NOTES_DIR/outbox``, so you can see whether it happened.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tether import tool

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _folder() -> Path:
    folder = Path(os.environ.get("NOTES_DIR", "notes"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _note(name: str) -> Path:
    if not NAME.fullmatch(name):
        raise ValueError(f"a note name is 1-64 letters, digits, '_' or '-', got {name!r}")
    return _folder() / f"{name}.txt"


@tool
def list_notes() -> str:
    """List the names of all notes."""
    return "\n".join(sorted(p.stem for p in _folder().glob("*.txt"))) or "(no notes)"


@tool
def read_note(name: str) -> str:
    """Read the note called `name`."""
    path = _note(name)
    if not path.exists():
        raise FileNotFoundError(f"there is no note {name!r}; list_notes shows the notes")
    return path.read_text(encoding="utf-8")


@tool(side_effect=True, idempotent=True)
def write_note(name: str, text: str) -> str:
    """Write the note called `name`, replacing it if it exists."""
    _note(name).write_text(text, encoding="utf-8")
    return f"saved note {name!r} ({len(text)} characters)"


@tool(side_effect=True, risk="high")
def delete_note(name: str) -> str:
    """Delete the note called `name`."""
    _note(name).unlink()
    return f"deleted note {name!r}"


@tool(side_effect=True, egress=True, risk="high")
def send_note(name: str, to: str) -> str:
    """E-mail the note called `name` to the address `to`."""
    outbox = _folder() / "outbox"
    outbox.mkdir(exist_ok=True)
    (outbox / f"{name}.eml").write_text(f"To: {to}\n\n{_note(name).read_text()}",
                                        encoding="utf-8")
    return f"sent note {name!r} to {to}"


tools = [list_notes, read_note, write_note, delete_note, send_note]
