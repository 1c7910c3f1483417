"""The zero-cost quickstart: a scripted model, the calculator tool, a hard budget, the journal.

``python examples/quickstart.py`` runs it; ``tether run examples/quickstart.py:agent "..."``
runs the same ``agent`` under the CLI, so importing this file only defines it.
"""

from tether import Agent, Budget, ReAct, ScriptedModel
from tether.tools import Calculator

model = ScriptedModel.tool_then_answer("calculator", {"expression": "17 * 23"}, "391")
agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()])


def main() -> None:
    result = agent.run(
        "What is 17 * 23?", budget=Budget(max_tokens=1000, max_tool_calls=5, max_steps=10)
    )
    print("answer:     ", result.answer)
    print("stop reason:", result.stop_reason)
    print("tokens:     ", result.usage.total_tokens)
    print("steps:      ", len(result.trajectory.steps))

    session = agent.session("What is 17 * 23?")
    session.run()
    print("\njournal:")
    for event in session.replay():
        print(f"  {event.seq:>2} {event.type:<15} {str(dict(event.data))[:90]}")
    print("chain intact:", session.verify() is None)


if __name__ == "__main__":
    main()
