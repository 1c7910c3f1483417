"""A real model with no API key (`make demo-local`): SmolLM2-135M on llama.cpp's local server.

The model is tiny, so the run forces its first turn to call the calculator, tells the turns after
it to answer, and judges nothing by the model's wisdom; what to watch is the runtime around it —
every call budgeted, gated and journaled, the budget holding, the journal verifying.
"""

from tether import Agent, Budget, ReAct
from tether.models.local import local_model_server
from tether.store import MemoryStore
from tether.tools import Calculator


def main() -> None:
    with local_model_server() as server:  # starts on 127.0.0.1, stops (with its children) after
        store = MemoryStore()
        model = server.model(max_output_tokens=128, params={"tool_choice": "none"})
        agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()], store=store,
                      first_tool_choice="calculator")
        result = agent.run("What is 17 * 23? Use the calculator.",
                           budget=Budget(max_tokens=3000, max_steps=3, max_seconds=60))
        print("answer:     ", result.answer.strip()[:200])
        print("stop reason:", result.stop_reason)
        print("tokens:     ", result.usage.total_tokens, "of 3000")
        print("\njournal:")
        for event in store.read(result.session_id):
            print(f"  {event.seq:>2} {event.type:<16} {str(dict(event.data))[:80]}")
        session = agent.load(result.session_id)
        print("chain intact:", session.verify() is None)


if __name__ == "__main__":
    main()
