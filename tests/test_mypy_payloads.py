"""The type check refuses a misspelt field of an event's payload (tests/mypy_payloads.py).

A view reads ``data.get("field")`` through a TypedDict of ``tether.journal.payloads``; mypy
alone types a misspelt ``.get`` as ``object`` and says nothing, so the plugin is what makes it
an error. The probe declares a payload of its own (``payload_probe`` is checked as the payloads
are), so mypy need not read all of tether; without the plugin this test fails.
"""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).parent.parent

PROBE = '''
from typing import TypedDict


class ResultData(TypedDict, total=False):
    call_id: str
    status: str


def right(d: ResultData) -> str:
    return str(d.get("status") or d["call_id"])


def misspelt(d: ResultData) -> str:
    return str(d.get("stauts") or d["call_id"])
'''


def test_a_misspelt_field_read_with_get_fails_the_type_check(tmp_path: Path) -> None:
    probe = tmp_path / "payload_probe.py"
    probe.write_text(PROBE)
    out, err, _ = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir",
                           str(tmp_path / "cache"), str(probe)])
    errors = [line for line in (out + err).splitlines() if ": error:" in line]
    assert len(errors) == 1 and 'TypedDict "ResultData" has no key "stauts"' in errors[0]
