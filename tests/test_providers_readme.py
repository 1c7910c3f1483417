"""The guide's "Model providers" examples run as pasted (tests/doc_blocks.py: each after the block
it continues), against the fake server (keys and base URLs come from the environment, as the page
says they may; the blocks are marked not runnable without keys, so the generic test only compiles
them)."""

from __future__ import annotations

from doc_blocks import every_block, run
from fake_llm_server import (
    OPENAI_PATH,
    FakeLLMServer,
    Recorded,
    Reply,
    anthropic_message,
    openai_completion,
    openai_stream,
)


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


def test_model_provider_examples_run() -> None:
    found = [b for b in every_block() if b.page == "docs/guide/providers.md"]
    assert len(found) == 4
    with FakeLLMServer(brain) as server:
        report = run(found, env={"OPENAI_API_KEY": "sk-readme",
                                 "OPENAI_BASE_URL": server.url + "/v1",
                                 "ANTHROPIC_API_KEY": "sk-ant-readme",
                                 "ANTHROPIC_BASE_URL": server.url})
    out = []
    for block in found:
        result = report["results"][block.id]
        assert result["rc"] == 0, (block.id, result["stderr"])
        out.append(result["stdout"].splitlines())
    both, local, streamed, resilient = out
    assert both[0].startswith("openai:gpt-4o-mini 17 * 23 = 391 Usage(")
    assert both[1].startswith("anthropic:claude-3-5-haiku-latest 17 * 23 = 391 Usage(")
    assert local == []
    assert streamed == ["Hi", "!", "Usage(input_tokens=9, output_tokens=2, cached_input_tokens=0, "
                        "cache_write_tokens=0, estimated=False)"]
    assert resilient == ["17 * 23 = 391"]
    # the first block's 2 + 2 agent turns, again before each block that continues it; 1 stream,
    # 2 via the fallback chain
    assert len(server.requests) == 4 + (4 + 1) + (4 + 2)
