"""The SIEM guide runs as written: its Python block, run as pasted (tests/doc_blocks.py), prints
what its comments say, its example record is exactly what that run writes (ids, times and hashes
aside) and valid OCSF 1.8.0, and its export command reproduces the sink's file."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from doc_blocks import find, promised, run
from doc_pages import blocks
from ocsf_schema import validate

PAGE = "docs/guide/siem.md"
# absolute, as resolved before the test changes directory: the CLI runs these sources
PYTHONPATH = os.pathsep.join(str(Path(p).resolve()) for p in
                             os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
VOLATILE = {"uid", "correlation_uid", "time", "hash", "prev_hash", "seconds"}


def same_shape(a: Any, b: Any) -> bool:
    """Equal, except for the values of the keys that differ run to run."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(
            k in VOLATILE or same_shape(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_shape(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_the_guide_runs_as_written() -> None:
    block = find(PAGE, "SIEM events")
    result = run([block], keep=True)["results"][block.id]  # keeps the files the block wrote
    where = Path(result["cwd"])
    try:
        assert result["rc"] == 0, result["stderr"]
        assert result["stdout"].splitlines() == promised(block.code)
        written = [json.loads(line) for line in (where / "siem.jsonl").read_text().splitlines()]
        (example,) = blocks(PAGE, "SIEM events", "json")
        shown = json.loads(example)
        assert validate(shown) == [] and all(validate(r) == [] for r in written)
        assert same_shape(shown, written[1])

        (command,) = blocks(PAGE, "SIEM events", "bash")
        argv = shlex.split(command)
        assert argv[0] == "tether"
        subprocess.run([sys.executable, "-m", "tether", *argv[1:]], cwd=where, check=True,
                       capture_output=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": PYTHONPATH})
        assert (where / "siem-export.jsonl").read_text() == (where / "siem.jsonl").read_text()
    finally:
        shutil.rmtree(where)  # its entries linking to the checkout are unlinked, not followed


def test_the_mapping_table_names_every_mapped_event() -> None:
    from tether.journal.views.ocsf import _BUILDERS

    table = (Path(__file__).resolve().parents[1] / PAGE).read_text()
    for kind in _BUILDERS:
        assert f"`{kind}`" in table, kind
    assert "1.8.0" in table and "record_integrity" in table
