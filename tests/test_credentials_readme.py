"""The guide's Credentials example runs and prints what its comments say."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from doc_pages import section

ROOT = Path(__file__).resolve().parents[1]


def _section() -> str:
    return section("docs/guide/credentials.md", "Credentials")


def test_credentials_example_runs_as_commented(capsys: pytest.CaptureFixture[str]) -> None:
    block = re.findall(r"```python\n(.*?)```", _section(), re.S)[0]
    exec(block, {})
    printed = capsys.readouterr().out.splitlines()
    promised = [line.split("# ", 1)[1].strip() for line in block.splitlines()
                if line.strip().startswith("print(") and "# " in line]
    assert printed == promised == ["fetch_invoice 1 False",
                                   "GET /invoices with Bearer [secret redacted]", "used_up",
                                   "True"]


def test_section_names_the_runtime_contract() -> None:
    section = _section()
    for phrase in ("broker.issue(session_id, tool.name)", "token.redact",
                   "broker.revoke_session(session_id)", "`credentials` parameter",
                   "pip install -e '.[vault]'"):
        assert phrase in section
