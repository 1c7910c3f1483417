"""Perturbations: the same task in a slightly shifted world, seeded and written down.

Why: an agent that is right only for the exact wording and tool order it was tuned on is not
reliable. Each perturbation turns a trial's ``Setup`` (the prompt the model sees and the Agent
recipe it runs) into a shifted one, drawing every choice from the trial's own seeded generator,
and says what it did in ``notes`` — which the trial journals in its session metadata, so any trial
can be reproduced and read. Decision: perturbations only rearrange what the agent is given (its
prompt, its tools' order and company, the reliability of its tools and provider); the recipe's
policy, budget and approver are untouched, so every perturbed call is governed exactly as the
canonical one.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from tether.errors import InvalidArgument, WrongType
from tether.evals.faults import PROVIDER_FAULTS, TOOL_FAULTS, FaultyModel, FaultyTool

if TYPE_CHECKING:
    from tether.runtime.lifecycle.agent import Agent


@dataclass(frozen=True, slots=True)
class Setup:
    """What a trial runs: the prompt, the agent, and notes a perturbation left (journaled with
    the trial). A perturbation returns a changed copy (``but``)."""
    prompt: str
    agent: Agent
    notes: Mapping[str, Any] = field(default_factory=dict)

    def but(self, note: Mapping[str, Any], **changes: Any) -> Setup:
        """This setup with ``note`` added to its notes and ``changes`` (``prompt=``, ``agent=``)
        made."""
        return dataclasses.replace(self, notes={**self.notes, **note}, **changes)


class Perturbation(Protocol):
    @property
    def name(self) -> str: ...

    async def apply(self, setup: Setup, rng: random.Random) -> Setup: ...


@dataclass(frozen=True, slots=True)
class Canonical:
    """The perturbation that changes nothing: the task as written (``"canonical"``)."""
    name: str = "canonical"

    async def apply(self, setup: Setup, rng: random.Random) -> Setup:
        return setup


@dataclass(frozen=True, slots=True)
class OrderShuffled:
    """The agent's tools offered in another order."""

    name: str = "order_shuffled"

    async def apply(self, setup: Setup, rng: random.Random) -> Setup:
        tools = list(setup.agent.tools)
        rng.shuffle(tools)
        agent = dataclasses.replace(setup.agent, tools=tools)
        return setup.but({"tool_order": [t.name for t in tools]}, agent=agent)


TEMPLATES = (
    "{prompt}",
    "Please help me with this: {prompt}",
    "{prompt} Be precise.",
    "Question: {prompt}",
    "I need the following done. {prompt}",
    "{lower}",
    "Hi! {prompt} Thanks.",
    "Task for you — {prompt}",
)


@dataclass(frozen=True, slots=True)
class Paraphrase:
    """The prompt reworded: by a template, or by ``model`` through the chokepoint under
    ``budget`` (a rewording that drops a number or a quoted name from the prompt is refused
    and a template used instead, noted as such)."""

    templates: Sequence[str] = TEMPLATES
    model: Any = None
    budget: Any = None
    name: str = "paraphrase"

    async def apply(self, setup: Setup, rng: random.Random) -> Setup:
        index = rng.randrange(len(self.templates))
        templated = self.templates[index].format(
            prompt=setup.prompt, lower=setup.prompt[:1].lower() + setup.prompt[1:])
        if self.model is None:
            return setup.but({"paraphrase": {"template": index}}, prompt=templated)
        reworded, why = await self._reword(setup.prompt)
        if reworded is None:
            return setup.but({"paraphrase": {"template": index, "model_refused": why}},
                             prompt=templated)
        return setup.but({"paraphrase": {"model": True}}, prompt=reworded)

    async def _reword(self, prompt: str) -> tuple[str | None, str]:
        from tether.reasoning.react import ReAct
        from tether.runtime.accounting.budget import Budget
        from tether.runtime.lifecycle.agent import Agent

        agent = Agent(model=self.model, reasoning=ReAct(), tools=(), name="eval-paraphrase",
                      system_prompt="Reword the user's message. Keep every number, name and "
                                    "quoted text exactly. Reply with the reworded message only.",
                      budget=self.budget or Budget(max_tokens=1_000, max_steps=2))
        result = await agent.arun(prompt)
        text = result.answer.strip()
        if not result.finished or not text:
            return None, f"the paraphrase run stopped: {result.stop_reason.value}"
        kept = set(re.findall(r"\d+(?:\.\d+)?|\"[^\"]+\"|'[^']+'", prompt))
        lost = sorted(k for k in kept if k not in text)
        return (None, f"it dropped {lost}") if lost else (text, "")


def _distractor_pool() -> list[Any]:
    from tether.tools.decorator import tool

    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"Weather in {city}: 18°C, light clouds."

    @tool
    def search_news(query: str) -> str:
        """Search recent news headlines."""
        return f"No recent headlines match {query!r}."

    @tool
    def translate_text(text: str, language: str) -> str:
        """Translate text into another language."""
        return f"[{language}] {text}"

    @tool
    def convert_units(value: float, unit_from: str, unit_to: str) -> str:
        """Convert a value between measurement units."""
        return f"{value} {unit_from} is about {value} {unit_to} (approximate)."

    @tool
    def list_holidays(country: str, year: int) -> str:
        """Public holidays of a country in a year."""
        return f"{country} {year}: 1 Jan, 25 Dec."

    return [get_weather, search_news, translate_text, convert_units, list_holidays]


@dataclass(frozen=True, slots=True)
class DistractorTools:
    """``count`` harmless, irrelevant tools added at random places among the agent's own (a
    tool whose name the agent already uses is skipped)."""

    count: int = 3
    pool: Callable[[], Sequence[Any]] = _distractor_pool
    name: str = "distractor_tools"

    async def apply(self, setup: Setup, rng: random.Random) -> Setup:
        own = list(setup.agent.tools)
        taken = {t.name for t in own}
        free = [t for t in self.pool() if t.name not in taken]
        chosen = rng.sample(free, min(self.count, len(free)))
        for extra in chosen:
            own.insert(rng.randrange(len(own) + 1), extra)
        agent = dataclasses.replace(setup.agent, tools=own)
        return setup.but({"distractors": [t.name for t in chosen]}, agent=agent)


def _seeded(rng: random.Random) -> random.Random:
    return random.Random(rng.getrandbits(64))


@dataclass(frozen=True, slots=True)
class ToolFaults:
    """Every tool fails at ``rate`` with one of ``kinds``: transient error, timeout or
    malformed output."""

    rate: float = 0.2
    kinds: Sequence[str] = TOOL_FAULTS
    name: str = "tool_faults"

    async def apply(self, setup: Setup, rng: random.Random) -> Setup:
        tools = [FaultyTool(t, self.rate, self.kinds, rng=_seeded(rng))
                 for t in setup.agent.tools]
        agent = dataclasses.replace(setup.agent, tools=tools)
        return setup.but({"tool_faults": {"rate": self.rate, "kinds": list(self.kinds)}},
                         agent=agent)


@dataclass(frozen=True, slots=True)
class ProviderFaults:
    """Model calls fail at ``rate`` with a 429, a 503 or a timeout, before they reach the
    model. ``wrap`` puts a resilience layer over the faults (``lambda m: Resilient(m)``) to
    measure what it recovers."""

    rate: float = 0.2
    kinds: Sequence[str] = PROVIDER_FAULTS
    wrap: Callable[[Any], Any] | None = None
    name: str = "provider_faults"

    async def apply(self, setup: Setup, rng: random.Random) -> Setup:
        model: Any = FaultyModel(setup.agent.model, self.rate, self.kinds, rng=_seeded(rng))
        if self.wrap is not None:
            model = self.wrap(model)
        agent = dataclasses.replace(setup.agent, model=model)
        return setup.but({"provider_faults": {"rate": self.rate, "kinds": list(self.kinds)}},
                         agent=agent)


PARAGRAPHS = (
    "For context, our office moved to a new building last spring and the cafeteria now opens "
    "at eight.",
    "Unrelated note: the quarterly newsletter is due next week; drafts go to the comms team.",
    "By the way, the printer on the third floor is out of toner again.",
    "Reminder: the team offsite has been rescheduled to the first Friday of next month.",
)


@dataclass(frozen=True, slots=True)
class IrrelevantContext:
    """One or two irrelevant paragraphs around the prompt."""

    paragraphs: Sequence[str] = PARAGRAPHS
    name: str = "irrelevant_context"

    async def apply(self, setup: Setup, rng: random.Random) -> Setup:
        chosen = rng.sample(list(self.paragraphs), min(len(self.paragraphs),
                                                      rng.randint(1, 2)))
        before = rng.random() < 0.5
        parts = [*chosen, setup.prompt] if before else [setup.prompt, *chosen]
        return setup.but({"irrelevant_context": {"paragraphs": len(chosen),
                                                 "before": before}},
                         prompt="\n\n".join(parts))


BUILT_IN: dict[str, Callable[[], Perturbation]] = {
    "canonical": Canonical, "order_shuffled": OrderShuffled, "paraphrase": Paraphrase,
    "distractor_tools": DistractorTools, "tool_faults": ToolFaults,
    "provider_faults": ProviderFaults, "irrelevant_context": IrrelevantContext,
}


def perturbations(given: Sequence[str | Perturbation]) -> list[Perturbation]:
    """Perturbations by name or as objects; unknown names and duplicates are refused."""
    out: list[Perturbation] = []
    for item in given:
        if isinstance(item, str):
            if item not in BUILT_IN:
                raise InvalidArgument(f"unknown perturbation {item!r}; built in: "
                                      f"{', '.join(BUILT_IN)} (or pass an object with a name and "
                                      "async apply(setup, rng))")
            item = BUILT_IN[item]()
        if not callable(getattr(item, "apply", None)) or not isinstance(
                getattr(item, "name", None), str):
            raise WrongType(f"{item!r} is not a perturbation (needs name and apply)")
        if any(p.name == item.name for p in out):
            raise InvalidArgument(f"the perturbation {item.name!r} is listed twice")
        out.append(item)
    if not out:
        raise InvalidArgument('give at least one perturbation ("canonical" is the task as '
                              "written)")
    return out
