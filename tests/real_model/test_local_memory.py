"""Conversation memory on a real model: the memory guide's two-session block on SmolLM2 behind
llama.cpp's server. A 135M model may or may not say the name back, so this asserts on the
mechanism: the second request carries the first turn (the server counts it), journaled."""

from __future__ import annotations

from typing import Any

from doc_pages import blocks
from tether import Agent, Budget, ReAct
from tether.journal.chain import verify_chain
from tether.runtime.lifecycle.thread import recorded_history
from tether.store.memory import MemoryStore


def test_a_thread_carries_the_first_turn_to_a_real_model(local_server: Any) -> None:
    store = MemoryStore()
    agent = Agent(model=local_server.model(max_output_tokens=40), reasoning=ReAct(),
                  store=store)
    budget = Budget(max_steps=2, max_seconds=120)
    first = agent.run("My name is Ada.", user_id="ada", thread="intro", budget=budget)
    alone = agent.run("What is my name?", user_id="ada", thread="other", budget=budget)
    second = agent.run("What is my name?", user_id="ada", thread="intro", budget=budget)
    assert first.ok and second.ok, (first.stop_detail, second.stop_detail)
    history = recorded_history(store, store.read(second.session_id)[0].data)
    assert [t.user for t in history] == ["My name is Ada."]
    assert history[0].assistant == first.answer
    # the server counted the first turn in the second request's input
    assert second.usage.input_tokens > alone.usage.input_tokens
    assert verify_chain(store.read(second.session_id)) is None


def test_the_guides_real_model_block_runs_as_written(capsys: Any) -> None:
    (block,) = blocks("docs/guide/memory.md", "A real model")
    exec(compile(block, "memory.md", "exec", dont_inherit=True), {"__name__": "memory_guide"})
    assert capsys.readouterr().out.split() == ["finished", "['My", "name", "is", "Ada.']"]
