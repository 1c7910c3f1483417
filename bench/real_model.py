"""tether's share of a step with a real model: python bench/real_model.py [--runs N]

Runs an agent on SmolLM2-135M behind llama.cpp's local server (``tether[local]``) and splits
each run's wall time into the time spent waiting for the model (measured around every
``complete`` call, HTTP included) and the rest — tether's chokepoint, policy, budget, tool
execution and journal (in memory, and in SQLite). The question it answers: with a real model,
what fraction of a step is tether's own? The model is tiny and runs on the CPU here, so its
calls are fast; a hosted model's take longer, and tether's share only shrinks.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

from tether import Agent, Budget, ModelRequest, ModelResponse, ReAct
from tether.models.local import local_model_server
from tether.store.sqlite import SQLiteStore
from tether.tools import Calculator


class Timed:
    """A model that passes every call on and adds up the time spent waiting for it."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.name, self.price = model.name, model.price
        self.estimate_message_tokens = model.estimate_message_tokens
        self.waited = 0.0
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        started = time.perf_counter()
        try:
            return await self._model.complete(request)  # type: ignore[no-any-return]
        finally:
            self.waited += time.perf_counter() - started
            self.calls += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with local_model_server() as server, tempfile.TemporaryDirectory() as scratch:
        stores: dict[str, Any] = {"memory": None, "sqlite": SQLiteStore(f"{scratch}/b.db")}
        print(f"{args.runs} runs per store: a forced calculator call, then an answer")
        for name, store in stores.items():
            model = Timed(server.model(max_output_tokens=64, params={"tool_choice": "none"}))
            agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()], store=store,
                          first_tool_choice="calculator")
            wall = 0.0
            for _ in range(args.runs):
                started = time.perf_counter()
                agent.run("What is 17 * 23? Use the calculator.",
                          budget=Budget(max_steps=3, max_tokens=4000))
                wall += time.perf_counter() - started
            own = wall - model.waited
            print(f"  {name:<7} {model.calls} model calls; per call: model "
                  f"{1000 * model.waited / model.calls:7.1f} ms, tether "
                  f"{1000 * own / model.calls:6.2f} ms = {100 * own / wall:5.2f}% of the wall time")


if __name__ == "__main__":
    main()
