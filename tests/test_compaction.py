"""Context compaction: when it triggers, what replaces what, how it is journaled, folded, rerun
and shown — and that a recipe without it gets the plain chokepoint."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether import (
    Agent,
    Budget,
    Compaction,
    Message,
    ModelRequest,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether.journal.views.measures import event_points
from tether.journal.views.spans import derive_spans
from tether.journal.views.timeline import timeline
from tether.models.base import compacted_turns
from tether.runtime.context.compaction import plan, replacement
from tether.runtime.record.state import fold
from tether.runtime.rerun import rerun
from tether.types import Event

TURNS = 10


@tool
def lookup(n: int) -> str:
    """Look up record n."""
    return f"record {n}: " + "x" * 400


def _script(turns: int = TURNS) -> list[ModelResponse | str]:
    return [ModelResponse(tool_calls=(ToolCall(f"c{i}", "lookup", {"n": i}),))
            for i in range(turns)] + ["all records read"]


class Recorder:
    """A summariser that records what it is sent and answers ``answer``."""

    def __init__(self, answer: str = "records 0-5 were read; nothing is open") -> None:
        self.sent: list[ModelRequest] = []
        self.answer = answer

    def __call__(self, request: ModelRequest) -> str:
        self.sent.append(request)
        return self.answer


def _agent(compaction: Compaction | None, sent: list[ModelRequest] | None = None,
           **kwargs: object) -> Agent:
    script = _script()

    def respond(request: ModelRequest) -> ModelResponse | str:
        if sent is not None:
            sent.append(request)
        turn = sum(m.role == "assistant" for m in request.messages)
        if request.messages[2:3] and compacted_turns(request.messages[2]):
            turn += compacted_turns(request.messages[2])
        return script[turn]

    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[lookup],
                 compaction=compaction, **kwargs)  # type: ignore[arg-type]


def _summariser(recorder: Recorder) -> ScriptedModel:
    return ScriptedModel(recorder, name="summariser")


def _of(events: list[Event], kind: str) -> list[dict[str, object]]:
    return [dict(e.data) for e in events if e.type == kind]


def test_a_recipe_without_compaction_gets_the_plain_chokepoint_and_no_events() -> None:
    session = _agent(None).session("read the records")
    result = session.run()
    assert result.answer == "all records read"
    assert not [e for e in session.replay() if e.type.startswith(("context.", "compaction."))]


def test_the_old_turns_are_summarised_and_the_model_continues_from_the_summary() -> None:
    sent: list[ModelRequest] = []
    recorder = Recorder()
    compaction = Compaction(context_window=1200, keep_last=2, model=_summariser(recorder))
    session = _agent(compaction, sent).session("read the records")
    result = session.run()
    assert result.answer == "all records read"
    assert result.spend.steps == TURNS + 1  # a summary call is charged, but is not a step
    events = session.replay()
    compacted = _of(events, "context.compacted")
    assert compacted and all(c["strategy"] == "summarise" for c in compacted)
    first = compacted[0]
    assert first["start"] == 2 and first["reason"] == "context_window"
    assert first["tokens_after"] < first["tokens_before"]  # type: ignore[operator]
    # the request after the compaction: the system prompt, the task, the summary, the last turns
    after = sent[int(first["step"]) - 1].messages  # type: ignore[call-overload]
    assert [m.role for m in after[:3]] == ["system", "user", "user"]
    assert after[1].content == "read the records"
    assert after[2].content.endswith(recorder.answer)
    assert sum(m.role == "assistant" for m in after) == 2  # keep_last
    # every request fits what the window allows
    for request in sent:
        assert request.input_tokens_estimate is not None
    # the summary calls are charged to the session
    charged = sum(int(d["input_tokens"]) + int(d["output_tokens"])  # type: ignore[call-overload]
                  for d in _of(events, "compaction.response"))
    assert charged > 0
    assert result.usage.total_tokens == charged + sum(
        e.data["response"]["usage"]["input_tokens"] + e.data["response"]["usage"]["output_tokens"]
        for e in events if e.type == "model.response")


def test_what_the_summariser_is_sent_is_the_replaced_turns_calls_and_results() -> None:
    recorder = Recorder()
    compaction = Compaction(context_window=1200, keep_last=2, model=_summariser(recorder))
    _agent(compaction).session("read the records").run()
    first = recorder.sent[0]
    assert first.tools == () and first.messages[0].role == "system"
    text = first.messages[1].content
    assert "[assistant called lookup (call c0)]" in text and "[result of lookup (call c0)]" in text
    assert first.max_output_tokens == compaction.summary_tokens


def test_drop_leaves_a_note_and_makes_no_model_call() -> None:
    sent: list[ModelRequest] = []
    session = _agent(Compaction(strategy="drop", context_window=1200), sent).session("read")
    result = session.run()
    assert result.answer == "all records read"
    events = session.replay()
    assert not _of(events, "compaction.request")
    compacted = _of(events, "context.compacted")
    assert compacted and compacted[0]["strategy"] == "drop"
    note = compacted[0]["replacement"][0]["content"]  # type: ignore[index]
    assert note.startswith("[tether] Turns 1-") and "left out" in note


def test_the_budget_triggers_it_too() -> None:
    compaction = Compaction(strategy="drop", budget_share=0.15)
    session = _agent(compaction).session("read", budget=Budget(max_tokens=14_000))
    session.run()
    reasons = {c["reason"] for c in _of(session.replay(), "context.compacted")}
    assert reasons == {"token_budget"}


def test_the_fold_of_the_journal_is_the_live_conversation() -> None:
    compaction = Compaction(context_window=1200, model=_summariser(Recorder()))
    session = _agent(compaction).session("read the records")
    session.run()
    live = session._state.conversation
    stored = [Event.from_json(e.seq, e.type, e.session_id, e.timestamp,
                              json.dumps(e.data), e.prev_hash, e.hash) for e in session.replay()]
    assert fold(stored).conversation == live
    assert fold(stored).tally.usage == session._state.tally.usage


def test_rerun_replays_the_recorded_summaries_and_matches() -> None:
    compaction = Compaction(context_window=1200, model=_summariser(Recorder()))
    agent = _agent(compaction)
    session = agent.session("read the records")
    session.run()
    report = rerun(agent, session.replay())
    assert report.matches, report.divergences
    assert report.result is not None and report.result.answer == "all records read"


def test_rerun_reports_a_compaction_that_differs() -> None:
    compaction = Compaction(context_window=1200, model=_summariser(Recorder()))
    agent = _agent(compaction)
    session = agent.session("read the records")
    session.run()
    events = session.replay()
    # a recorded summary unlike the one the recorded call gave
    doctored = [dataclasses.replace(e, data={**e.data, "replacement": [
        replacement(e.data["turns"], "something else entirely").to_dict()]})
        if e.type == "context.compacted" else e for e in events]
    report = rerun(agent, doctored)
    assert [d.what for d in report.divergences][:1] == ["the compaction differs"]
    # a recipe that would cut elsewhere
    other = dataclasses.replace(agent, compaction=dataclasses.replace(compaction, keep_last=3))
    report = rerun(other, events)
    assert "the compaction differs" in [d.what for d in report.divergences]
    # a recipe without compaction at all
    report = rerun(dataclasses.replace(agent, compaction=None), events)
    assert "the rerun compacted the conversation another number of times" in [
        d.what for d in report.divergences]


def test_audit_views_show_it_and_do_not_break_on_it() -> None:
    compaction = Compaction(context_window=1200, model=_summariser(Recorder()))
    session = _agent(compaction).session("read the records")
    session.run()
    events = session.replay()
    text = "\n".join(timeline(events))
    assert "compacted: turns 1-" in text and "summary call" in text
    spans = derive_spans(events)
    (root,) = [s for s in spans if s.name.startswith("invoke_agent")]
    assert root.attributes["gen_ai.conversation.compacted"] is True
    # the summary call is a chat span of its own, its tokens counted like any model call's
    (summary,) = [s for s in spans if s.attributes.get("tether.model_call.purpose")
                  == "compaction"]
    assert summary.name == "chat summariser" and summary.kind == "CLIENT"
    assert summary.parent == root.context and summary.attributes["gen_ai.usage.input_tokens"]
    plain = _agent(None).session("read the records")
    plain.run()
    (root,) = [s for s in derive_spans(plain.replay()) if s.name.startswith("invoke_agent")]
    assert "gen_ai.conversation.compacted" not in root.attributes  # never false
    for event in events:
        event_points(event)
    from tether.cli.run import RENDER

    (compacted, *_) = [e.data for e in events if e.type == "context.compacted"]
    assert RENDER["context.compacted"](compacted).startswith("turns 1-")


def test_a_recipe_that_cannot_trigger_or_cannot_price_is_refused_where_built() -> None:
    with pytest.raises(ValueError, match="context window"):
        _agent(Compaction())
    with pytest.raises(ValueError, match="strategy"):
        Compaction(strategy="forget")
    with pytest.raises(ValueError, match="keep_last"):
        Compaction(keep_last=0)
    unpriced = ScriptedModel(["s"], name="unpriced", price=None)
    with pytest.raises(ValueError, match="no price"):
        _agent(Compaction(context_window=100, model=unpriced),
               budget=Budget(max_cost_usd=1))
    with pytest.raises(TypeError, match="Compaction"):
        _agent("drop")  # type: ignore[arg-type]


# -- where a conversation may be cut: never between a call and its result ------------------

@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    messages = [Message.system("s"), Message.user("task")]
    if draw(st.booleans()):
        messages.append(Message.user("[tether] budget left: tokens=9"))
    for turn in range(draw(st.integers(0, 8))):
        calls = tuple(ToolCall(f"t{turn}_{i}", "f", {}) for i in range(draw(st.integers(0, 3))))
        messages.append(Message.assistant(draw(st.sampled_from(["", "thinking"])), calls))
        if calls and draw(st.booleans()):
            messages.append(Message.user("a note sent with the results"))
        messages.extend(Message.tool(c.id, "f", "r") for c in calls)
        if not calls and draw(st.booleans()):
            messages.append(Message.user("a note"))
    return messages


@settings(max_examples=300, deadline=None)
@given(conversations(), st.integers(1, 4))
def test_a_cut_never_splits_a_call_from_its_result(conversation: list[Message],
                                                   keep_last: int) -> None:
    cut = plan(conversation, keep_last)
    turns = sum(m.role == "assistant" for m in conversation)
    if cut is None:
        assert turns <= keep_last
        return
    replaced, kept = conversation[cut.start:cut.end], conversation[cut.end:]
    assert conversation[:cut.start] == conversation[:2]  # the system prompt and the task
    assert sum(m.role == "assistant" for m in kept) == keep_last
    assert cut.turns == turns - keep_last
    called = {c.id for m in replaced for c in m.tool_calls}
    answered = {m.tool_call_id for m in replaced if m.role == "tool"}
    assert called == answered  # every replaced call with its results, and no other result
    after = [*conversation[:cut.start], replacement(cut.turns, None), *kept]
    open_calls: set[str] = set()
    for m in after:  # well-formed: each result follows its own call
        open_calls |= {c.id for c in m.tool_calls}
        if m.role == "tool":
            assert m.tool_call_id in open_calls
    # a second compaction counts the turns the first one replaced
    again = plan([*after, Message.assistant("a"), Message.assistant("b")], keep_last)
    assert again is not None and again.turns == cut.turns + 2


def test_a_list_script_carries_on_where_it_was_after_a_compaction() -> None:
    model = ScriptedModel(_script())
    agent = Agent(model=model, reasoning=ReAct(), tools=[lookup],
                  compaction=Compaction(strategy="drop", context_window=1200))
    session = agent.session("read the records")
    result = session.run()
    assert result.answer == "all records read" and result.spend.steps == TURNS + 1
    assert _of(session.replay(), "context.compacted")


def test_providers_declare_their_window_and_wrappers_pass_it_on() -> None:
    from tether.models.anthropic import AnthropicModel
    from tether.models.openai import OpenAIModel
    from tether.models.resilient import Fallback, Resilient

    openai = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="unused",
                         env_file=None, context_window=8192)
    anthropic = AnthropicModel("claude-3-5-haiku-latest", api_key="unused", env_file=None,
                               context_window=200_000)
    assert Compaction().window(openai) == 8192 and Compaction().window(anthropic) == 200_000
    assert Compaction(context_window=100).window(openai) == 100  # the recipe's own wins
    assert Compaction().window(Resilient(openai)) == 8192
    assert Compaction().window(Fallback([openai, anthropic])) == 8192
    assert Compaction().window(Fallback([openai, ScriptedModel(["x"])])) is None
    with pytest.raises(ValueError, match="context_window"):
        OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="unused", env_file=None,
                    context_window=0)


def test_a_thread_keeps_its_earlier_turns_and_the_task_whole() -> None:
    from tether.store.memory import MemoryStore

    store = MemoryStore()
    first = Agent(model=ScriptedModel(["noted"]), reasoning=ReAct(), store=store)
    first.run("read the records", user_id="u1", thread="chat")  # the same words, asked before
    sent: list[ModelRequest] = []
    script = _script()

    def respond(request: ModelRequest) -> ModelResponse | str:
        sent.append(request)
        own = request.messages[3:]  # after the system prompt and the thread's one turn
        return script[sum(m.role == "assistant" for m in own)
                      + sum(compacted_turns(m) for m in own)]

    agent = Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[lookup], store=store,
                  compaction=Compaction(context_window=1200, model=_summariser(Recorder())))
    session = agent.session("read the records", user_id="u1", thread="chat")
    assert session.run().answer == "all records read"
    compacted = _of(session.replay(), "context.compacted")
    assert compacted and compacted[0]["start"] == 4  # after the system prompt, the thread, task
    after = sent[int(compacted[0]["step"]) - 1].messages  # type: ignore[call-overload]
    assert [(m.role, m.content) for m in after[1:4]] == [
        ("user", "read the records"), ("assistant", "noted"), ("user", "read the records")]
    assert after[4].content.startswith("[tether] Turns 1-")
