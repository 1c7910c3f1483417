"""The repair rate of structured output on a real model: python bench/repairs.py [--runs N]

Runs SmolLM2-135M behind llama.cpp's server (``tether.models.local``, the test tier's model) on
N prompts with ``Agent(output_type=Weather, output_retries=2)``, twice: as ``compat="llama.cpp"``
(the schema goes out as a grammar) and as ``compat="generic"`` (the schema goes out as
instructions only). Prints, per mode, how many answers validated at the first attempt, the
repair turns per run, and how many runs ended ``output_invalid`` — read off each journal.
"""

from __future__ import annotations

import argparse
from typing import Literal

from pydantic import BaseModel, Field

from tether import Agent, Budget, ReAct
from tether.models.local import local_model_server
from tether.store.memory import MemoryStore

CITIES = ("Paris", "Oslo", "Cairo", "Lima", "Tokyo", "Nairobi", "Denver", "Perth", "Reykjavik",
          "Mumbai", "Quito", "Seoul")


class Weather(BaseModel):
    sky: Literal["sunny", "cloudy", "rainy"]
    warm: bool
    degrees: int = Field(ge=-50, le=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    args = parser.parse_args()
    with local_model_server() as server:
        for compat in ("llama.cpp", "generic"):
            store = MemoryStore()
            agent = Agent(model=server.model(max_output_tokens=120, compat=compat),
                          reasoning=ReAct(), output_type=Weather, output_retries=2, store=store)
            first = repairs = failed = 0
            other: list[str] = []
            for i in range(args.runs):
                result = agent.run(f"Describe today's weather in {CITIES[i % len(CITIES)]}.",
                                   budget=Budget(max_steps=4, max_seconds=120))
                invalid = sum(e.type == "output.invalid" for e in store.read(result.session_id))
                first += result.ok and invalid == 0
                repairs += min(invalid, 2)
                failed += result.stop_reason == "output_invalid"
                if not result.ok and result.stop_reason != "output_invalid":
                    other.append(f"{result.stop_reason} ({result.stop_detail[:80]})")
            print(f"{compat:>10}: {args.runs} runs, valid at the first attempt {first}, "
                  f"repair turns {repairs} ({repairs / args.runs:.2f} per run), "
                  f"output_invalid {failed}, other stops {len(other)} {other}")


if __name__ == "__main__":
    main()
