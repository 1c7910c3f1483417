"""The guide's "Model providers" examples run as written, against the fake server (keys and base
URLs come from the environment, as the README says they may)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doc_pages import blocks
from fake_llm_server import (
    OPENAI_PATH,
    FakeLLMServer,
    Recorded,
    Reply,
    anthropic_message,
    openai_completion,
    openai_stream,
)

ROOT = Path(__file__).resolve().parents[1]


def section_blocks() -> list[str]:
    return blocks("docs/guide/providers.md", "Model providers")


def brain(rec: Recorded) -> Reply:
    body = rec.body
    if rec.path == OPENAI_PATH:
        if body.get("stream"):
            return Reply(events=openai_stream(["Hi", "!"], usage=(9, 2, 0)))
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply(body=openai_completion(f"17 * 23 = {last['content']}"))
        return Reply(body=openai_completion(None, [("call_1", "calculator",
                                                    '{"expression": "17 * 23"}')]))
    results = [b for b in body["messages"][-1]["content"] if b["type"] == "tool_result"]
    if results:
        return Reply(body=anthropic_message(f"17 * 23 = {results[0]['content']}"))
    return Reply(body=anthropic_message(None, [("toolu_1", "calculator",
                                                {"expression": "17 * 23"})]))


def test_model_provider_examples_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    blocks = section_blocks()
    assert len(blocks) == 4
    with FakeLLMServer(brain) as server:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-readme")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-readme")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        namespace: dict[str, object] = {}
        for block in blocks:
            exec(block, namespace)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("openai:gpt-4o-mini 17 * 23 = 391 Usage(")
    assert out[1].startswith("anthropic:claude-3-5-haiku-latest 17 * 23 = 391 Usage(")
    assert out[2:5] == ["Hi", "!", "Usage(input_tokens=9, output_tokens=2, cached_input_tokens=0, "
                          "cache_write_tokens=0, estimated=False)"]
    assert out[5] == "17 * 23 = 391"
    assert len(server.requests) == 7  # 2 + 2 agent turns, 1 stream, 2 via the fallback chain
