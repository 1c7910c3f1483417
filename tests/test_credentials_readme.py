"""The guide's Credentials example runs as pasted (tests/doc_blocks.py) and prints what its
comments say."""

from __future__ import annotations

from pathlib import Path

from doc_blocks import find, printed
from doc_pages import section

ROOT = Path(__file__).resolve().parents[1]


def _section() -> str:
    return section("docs/guide/credentials.md", "Credentials")


def test_credentials_example_runs_as_commented() -> None:
    block = find("docs/guide/credentials.md", "Credentials")
    promised = [line.split("# ", 1)[1].strip() for line in block.code.splitlines()
                if line.strip().startswith("print(") and "# " in line]
    assert printed(block) == promised == ["fetch_invoice 1 False",
                                          "GET /invoices with Bearer [secret redacted]",
                                          "used_up", "True"]


def test_section_names_the_runtime_contract() -> None:
    section = _section()
    for phrase in ("broker.issue(session_id, tool.name)", "token.redact",
                   "broker.revoke_session(session_id)", "`credentials` parameter",
                   "pip install -e '.[vault]'"):
        assert phrase in section
