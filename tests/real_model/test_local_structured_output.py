"""Structured output on a real model: SmolLM2-135M behind llama.cpp's server (``local_server``),
which turns the schema tether sends (``response_format`` ``json_object`` with ``schema``) into a
grammar. A 135M model knows little about the weather, so these tests assert on the mechanism —
the server takes the schema, the grammar holds the answer to it, the output validates at the
first attempt and is journaled — and on the bounds when the model gets no grammar."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from doc_pages import blocks
from tether import Agent, Budget, ReAct
from tether.journal.chain import verify_chain
from tether.store.memory import MemoryStore


class Weather(BaseModel):
    sky: Literal["sunny", "cloudy", "rainy"]
    warm: bool
    degrees: int = Field(ge=-50, le=60)


def kinds(store: MemoryStore, session_id: str, kind: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in store.read(session_id) if e.type == kind]


def test_the_servers_grammar_holds_a_real_model_to_the_schema(local_server: Any) -> None:
    store = MemoryStore()
    agent = Agent(model=local_server.model(max_output_tokens=120), reasoning=ReAct(),
                  store=store, output_type=Weather)
    result = agent.run("Describe today's weather in Paris.",
                       budget=Budget(max_steps=3, max_seconds=120))
    assert result.ok, (result.stop_reason, result.stop_detail, result.answer)
    assert isinstance(result.output, Weather)
    assert kinds(store, result.session_id, "output.invalid") == []  # the grammar held it
    (valid,) = kinds(store, result.session_id, "output.valid")
    assert Weather.model_validate(valid["output"]) == result.output
    start = kinds(store, result.session_id, "session.start")[0]
    assert start["output"]["native"] is True
    assert start["system_prompt"] == agent.system_prompt  # the grammar, not instructions
    assert verify_chain(store.read(result.session_id)) is None


def test_without_a_grammar_the_repairs_stay_bounded_and_in_budget(local_server: Any) -> None:
    """The same server taken as one of unknown kind (``compat="generic"``) gets no
    ``response_format``: the schema goes to the model as instructions, and whatever the small
    model makes of them, the run ends validly — output, or ``output_invalid`` after the bounded
    repairs, or a budget stop — with every attempt journaled."""
    store = MemoryStore()
    model = local_server.model(max_output_tokens=80, compat="generic")
    agent = Agent(model=model, reasoning=ReAct(), store=store, output_type=Weather,
                  output_retries=1)
    result = agent.run("Describe today's weather in Paris.",
                       budget=Budget(max_steps=4, max_seconds=120))
    invalid = kinds(store, result.session_id, "output.invalid")
    assert len(invalid) <= 2 and result.spend.steps <= 4
    if result.ok:
        assert isinstance(result.output, Weather)
    else:
        assert result.output is None
        assert result.stop_reason in ("output_invalid", "step_budget", "token_budget",
                                      "time_budget")
    if result.stop_reason == "output_invalid":
        assert len(invalid) == 2 and invalid[-1]["repairs_left"] == 0
    start = kinds(store, result.session_id, "session.start")[0]
    assert start["output"]["native"] is False and "JSON schema" in start["system_prompt"]
    assert verify_chain(store.read(result.session_id)) is None


def test_the_guides_real_model_block_runs_as_written(capsys: Any) -> None:
    (block,) = blocks("docs/guide/structured-output.md", "A real model held by a grammar")
    # compiled apart from this module's __future__ import: as a script of its own would be
    exec(compile(block, "structured-output.md", "exec", dont_inherit=True),
         {"__name__": "structured_output_guide"})
    assert capsys.readouterr().out.split() == ["finished", "Weather"]
