"""Features that each reshape a model turn work together: compaction with tool selection (one
Environment that does both), and a strategy forcing a tool that selection would not offer."""

from __future__ import annotations

from tether import (
    Agent,
    Compaction,
    ModelRequest,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether.knowledge import AdaptiveRAG
from tether.runtime.rerun import rerun
from tether.store.memory import MemoryStore
from tether.tools import ToolSelection


@tool
def read_page(n: int) -> str:
    """Read page n of the report."""
    return f"page {n}: " + "lorem ipsum " * 100


def distractor(item: int) -> str:
    """Count the stock of a warehouse item."""
    return "12"


CATALOG = [read_page, *(tool(name=f"stock_{i}")(distractor) for i in range(40))]


def test_compaction_and_tool_selection_share_one_turn() -> None:
    pages = [ModelResponse(tool_calls=(ToolCall(f"p{n}", "read_page", {"n": n}),))
             for n in range(12)]
    store = MemoryStore()
    agent = Agent(model=ScriptedModel([*pages, "It is lorem ipsum."]), reasoning=ReAct(),
                  tools=CATALOG, store=store, tool_selection=ToolSelection(k=3),
                  compaction=Compaction(context_window=3000, strategy="drop"))
    result = agent.run("Read the report's twelve pages, page by page.")
    assert result.answer == "It is lorem ipsum." and result.stop_reason == "finished"
    kinds = [e.type for e in store.read(result.session_id)]
    assert "context.compacted" in kinds and kinds.count("tools.selected") == 13
    offers = [e.data["tools"] for e in store.read(result.session_id)
              if e.type == "model.request"]
    assert all(len(o) <= 3 and "read_page" in o for o in offers)
    assert rerun(agent, store.read(result.session_id)).matches


@tool(output_trust="untrusted")
def zzz(query: str) -> str:
    """Qqq."""  # (a name and description no question matches: selection never ranks it)
    return "The refund window is 30 days."


def test_a_tool_a_strategy_forces_is_offered_whatever_the_ranking() -> None:
    def model(request: ModelRequest) -> ModelResponse | str:
        if request.tool_choice == "zzz":
            assert "zzz" in [t.name for t in request.tools]
            return ModelResponse(tool_calls=(ToolCall("", "zzz", {"query": "refund"}),))
        return "30 days."

    store = MemoryStore()
    agent = Agent(model=ScriptedModel(model), reasoning=AdaptiveRAG("zzz"),
                  tools=[zzz, *CATALOG[1:]], store=store, tool_selection=ToolSelection(k=2))
    result = agent.run("How long is the refund window?")
    assert result.answer == "30 days."
    assert [e.data["status"] for e in store.read(result.session_id)
            if e.type == "tool.result"] == ["ok"]
