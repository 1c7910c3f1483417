"""The retrieval guide's blocks run as pasted (tests/doc_blocks.py: each after the blocks it
continues, with the extras its page states) and print what their comments say; the audit excerpt
is what `tether audit show` prints for the first block's session."""

from __future__ import annotations

from typing import Any

from doc_blocks import find, printed
from doc_pages import blocks

PAGE = "docs/guide/retrieval.md"


def test_the_guide_blocks_print_what_they_say() -> None:
    assert printed(find(PAGE, "faq search")) == [
        "Refunds are paid within 14 days.",
        "True",
        "[('refunds#1', 'faq.md')]",
    ]
    assert printed(find(PAGE, "bm25 and dense")) == ["[]", "['refunds#1']", "['shipping#1']"]
    assert printed(find(PAGE, "Index files")) == [
        "['refunds#1']",
        "index acme-faq.index has tenant_id 'acme', not 'globex'; load the index built for it, "
        "or rebuild",
        "index acme-faq.index was altered or corrupted (its sha256 does not match its content); "
        "it was not used: rebuild it from the corpus",
    ]


def test_the_audit_excerpt_is_what_audit_show_prints(tmp_path: Any, capsys: Any) -> None:
    from tether.cli import main

    (block,) = blocks(PAGE, "Search a corpus as a governed tool")
    url = f"sqlite:///{tmp_path / 'docs.db'}"
    code = block.replace("store = MemoryStore()", f"store = {url!r}").replace(
        "store.read(result.session_id)", "agent.store.read(result.session_id)")
    scope: dict[str, Any] = {"__name__": "retrieval"}
    exec(compile(code, PAGE, "exec", dont_inherit=True), scope)
    capsys.readouterr()
    assert main(["audit", "show", scope["result"].session_id, "--store", url]) == 0
    shown = capsys.readouterr().out.splitlines()
    (excerpt,) = blocks(PAGE, "Search a corpus as a governed tool", "text")
    for line in excerpt.splitlines():
        assert line in shown
