"""Router: pick a reasoning strategy per task, by rules on the task or one cheap model call.

Why: no strategy wins everywhere. A task a domain's planner can solve (stack these blocks,
deliver these parcels) is cheaper and more often right with LLM+P; a task with a checkable answer
that models often get wrong the first time pays for Reflexion's retries; the rest is plain ReAct.
One agent serving all of them should not pay for the most expensive strategy on every task.

Decision: ``Router(routes, rules=..., default=...)``. Rules are read first, in order — each a
regular expression on the task or a predicate on it, with a reason — and cost nothing. When no
rule matches and ``ask_model`` is set, the model picks a route in one tool-less turn capped at
``max_output_tokens`` (a few tokens: its own small budget inside the run's); an unreadable pick
falls back to ``default``. The route is journaled with its reason (``strategy.note`` ``route``)
before the chosen strategy starts, and a resumed session keeps the route it journaled: a run
never changes strategy halfway (a recipe whose Router lacks that route is refused with
``RecipeChanged``, as any recipe that cannot go on with the session as it was started).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tether.errors import InvalidArgument
from tether.runtime.lifecycle.session import RecipeChanged
from tether.runtime.strategy.handle import Handle, Strategy
from tether.runtime.strategy.planned import Note

PICK_NOTE = ("Before you start, choose how to approach the task above. Reply with one word, the "
             "name of one of these approaches:\n{choices}")


@dataclass(frozen=True, slots=True)
class RouteRule:
    """Route to ``route`` when ``pattern`` (a regular expression, case-insensitive) is found in
    the task, or ``when(task)`` is true; ``reason`` is journaled."""

    route: str
    pattern: str | None = None
    when: Callable[[str], bool] | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        if (self.pattern is None) == (self.when is None):
            raise InvalidArgument(f"rule for {self.route!r}: give a pattern or a predicate "
                                  "(when=), one of the two")
        if self.pattern is not None:
            re.compile(self.pattern)  # a bad pattern fails when the recipe is built

    def matches(self, task: str) -> str | None:
        """The reason this rule matches ``task``, or None."""
        if self.pattern is not None:
            found = re.search(self.pattern, task, re.I)
            if found is None:
                return None
            return self.reason or f"the task mentions {found.group(0)!r}"
        assert self.when is not None
        return (self.reason or f"rule {getattr(self.when, '__name__', 'when')}") \
            if self.when(task) else None


@dataclass(frozen=True, slots=True)
class Router:
    """A strategy that picks one strategy per task and journals why:
    ``Agent(reasoning=Router({"plan": LLMP(...), "react": ReAct()}, ...))``. A resumed session
    keeps the route it was given.

    Args:
        routes: The strategies, by route name.
        rules: Read first, in order, at no cost: the first that matches the task picks its
            route.
        default: The route when nothing picks one (or the model's pick is no route). Default
            "": the first route.
        ask_model: When no rule matches, let the model pick a route in one tool-less turn.
        descriptions: What each route is for, shown to the model when it picks.
        max_output_tokens: The output cap of the model's pick.
    """

    routes: Mapping[str, Strategy]
    rules: Sequence[RouteRule] = ()
    default: str = ""
    ask_model: bool = False
    descriptions: Mapping[str, str] = field(default_factory=dict)
    max_output_tokens: int = 8

    def __post_init__(self) -> None:
        if not self.routes:
            raise InvalidArgument("a Router needs at least one route")
        default = self.default or next(iter(self.routes))
        object.__setattr__(self, "default", default)
        unknown = sorted({r.route for r in self.rules} - self.routes.keys()
                         | ({default} - self.routes.keys()))
        if unknown:
            raise InvalidArgument(f"routes {unknown} are named by a rule or as the default but not "
                                  f"among the routes ({', '.join(self.routes)})")
        if type(self.max_output_tokens) is not int or self.max_output_tokens < 1:
            raise InvalidArgument("max_output_tokens must be a whole number >= 1")

    async def run(self, handle: Handle) -> str:
        earlier = [e for e in handle.history() if isinstance(e, Note) and e.kind == "route"
                   and e.data.get("strategy") == "router"]
        if earlier:  # resumed: the route journaled before stands
            route = str(earlier[-1].data["route"])
            if route not in self.routes:
                raise RecipeChanged(
                    f"this session was routed to route {route!r}, which this recipe's Router "
                    f"does not have ({', '.join(self.routes)}); a run never changes strategy "
                    "halfway, so resume it with the recipe that started it (or one whose "
                    f"Router has a route named {route!r})")
        else:
            route, reason, by = await self._choose(handle)
            handle.record("route", {"strategy": "router", "route": route, "reason": reason,
                                    "by": by, "runs": type(self.routes[route]).__name__})
        return await self.routes[route].run(handle)

    async def _choose(self, handle: Handle) -> tuple[str, str, str]:
        for rule in self.rules:
            reason = rule.matches(handle.task)
            if reason is not None:
                return rule.route, reason, "rule"
        if not self.ask_model:
            return self.default, "no rule matched: the default", "default"
        choices = "\n".join(f"- {name}: {self.descriptions.get(name, '')}".rstrip(": ")
                            for name in self.routes)
        said = (await handle.ask_model(note=PICK_NOTE.format(choices=choices),
                                       tool_choice="none",
                                       max_output_tokens=self.max_output_tokens)).text
        words = re.findall(r"[\w-]+", said.lower())
        picked = next((w for w in words if w in self.routes), None)
        if picked is None:
            return self.default, f"the model's pick {said[:40]!r} is no route: the default", \
                "model"
        return picked, f"the model picked {picked!r}", "model"
