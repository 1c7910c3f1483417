"""In-memory worlds for the shipped domains, with the tools that act on them.

Why: LLM+P's examples, tests and benchmark need tools with real preconditions — a tool that
refuses to stack onto a covered block, a truck that cannot drive a road that is not there — so a
wrong plan fails the way it would against a real system, and success is read off the world, not
off what the model says. Each world is an object its caller creates (one per run: nothing is
shared between sessions); its tools are side-effecting, so they run one at a time, through the
gate, and each reports the world after it acted (what a replanning model reads).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tether.errors import InvalidArgument
from tether.tools.base import ToolFailure
from tether.tools.decorator import tool


class BlocksWorld:
    """Blocks on a table and a one-block hand. ``on`` maps each block to what it sits on (a
    block or ``"table"``)."""

    def __init__(self, on: Mapping[str, str]) -> None:
        self.on = dict(on)
        self.holding: str | None = None
        self.moves = 0
        unknown = {v for v in self.on.values() if v != "table"} - self.on.keys()
        if unknown:
            raise InvalidArgument(f"blocks {sorted(unknown)} are under others but not in the world")

    def clear(self, block: str) -> bool:
        return block != self.holding and block not in self.on.values()

    def facts(self) -> str:
        """The world as PDDL facts."""
        out = [f"(ontable {b})" if below == "table" else f"(on {b} {below})"
               for b, below in sorted(self.on.items())]
        out += [f"(clear {b})" for b in sorted(self.on) if self.clear(b)]
        out.append(f"(holding {self.holding})" if self.holding else "(handempty)")
        return " ".join(out)

    def satisfies(self, goal: Mapping[str, str]) -> bool:
        return self.holding is None and all(self.on.get(b) == below for b, below in goal.items())

    def _block(self, block: str) -> None:
        if block not in self.on and block != self.holding:
            raise ToolFailure(f"there is no block {block!r}; blocks: {sorted(self.on)}")

    def _done(self, what: str) -> str:
        self.moves += 1
        return f"done: {what}. The world now: {self.facts()}"

    def tools(self) -> list[Any]:
        world = self

        def need(ok: bool, why: str) -> None:
            if not ok:
                raise ToolFailure(f"cannot: {why}. The world is: {world.facts()}")

        @tool(side_effect=True)
        def pick_up(block: str) -> str:
            """Pick a clear block up from the table (the hand must be empty)."""
            world._block(block)
            need(world.holding is None, f"the hand holds {world.holding}")
            need(world.on.get(block) == "table" and world.clear(block),
                 f"{block} is not clear on the table")
            del world.on[block]
            world.holding = block
            return world._done(f"(pick-up {block})")

        @tool(side_effect=True)
        def put_down(block: str) -> str:
            """Put the held block down on the table."""
            need(world.holding == block, f"the hand does not hold {block}")
            world.on[block], world.holding = "table", None
            return world._done(f"(put-down {block})")

        @tool(side_effect=True)
        def stack(block: str, onto: str) -> str:
            """Put the held block onto a clear block."""
            world._block(onto)
            need(world.holding == block, f"the hand does not hold {block}")
            need(onto != block and onto in world.on and world.clear(onto), f"{onto} is not clear")
            world.on[block], world.holding = onto, None
            return world._done(f"(stack {block} {onto})")

        @tool(side_effect=True)
        def unstack(block: str, from_block: str) -> str:
            """Take a clear block off the block it sits on (the hand must be empty)."""
            world._block(block)
            need(world.holding is None, f"the hand holds {world.holding}")
            need(world.on.get(block) == from_block and world.clear(block),
                 f"{block} is not clear on {from_block}")
            del world.on[block]
            world.holding = block
            return world._done(f"(unstack {block} {from_block})")

        return [pick_up, put_down, stack, unstack]


class Logistics:
    """Trucks, packages and one-way roads between places."""

    def __init__(self, trucks: Mapping[str, str], packages: Mapping[str, str],
                 roads: Iterable[tuple[str, str]]) -> None:
        self.trucks = dict(trucks)  # truck -> place
        self.packages = dict(packages)  # package -> place, or "in:<truck>"
        self.roads = frozenset(roads)
        self.moves = 0

    def facts(self) -> str:
        out = [f"(at {t} {p})" for t, p in sorted(self.trucks.items())]
        out += [f"(in {k} {p[3:]})" if p.startswith("in:") else f"(at {k} {p})"
                for k, p in sorted(self.packages.items())]
        return " ".join(out)

    def satisfies(self, goal: Mapping[str, str]) -> bool:
        return all(self.packages.get(k) == p for k, p in goal.items())

    def tools(self) -> list[Any]:
        world = self

        def need(ok: bool, why: str) -> None:
            if not ok:
                raise ToolFailure(f"cannot: {why}. The world is: {world.facts()}")

        def done(what: str) -> str:
            world.moves += 1
            return f"done: {what}. The world now: {world.facts()}"

        @tool(side_effect=True)
        def load(package: str, truck: str, place: str) -> str:
            """Load a package into a truck, both at the place."""
            need(world.trucks.get(truck) == place, f"{truck} is not at {place}")
            need(world.packages.get(package) == place, f"{package} is not at {place}")
            world.packages[package] = f"in:{truck}"
            return done(f"(load {package} {truck} {place})")

        @tool(side_effect=True)
        def unload(package: str, truck: str, place: str) -> str:
            """Unload a package from a truck at the truck's place."""
            need(world.trucks.get(truck) == place, f"{truck} is not at {place}")
            need(world.packages.get(package) == f"in:{truck}", f"{package} is not in {truck}")
            world.packages[package] = place
            return done(f"(unload {package} {truck} {place})")

        @tool(side_effect=True)
        def drive(truck: str, origin: str, destination: str) -> str:
            """Drive a truck along a road from its place to another."""
            need(world.trucks.get(truck) == origin, f"{truck} is not at {origin}")
            need((origin, destination) in world.roads, f"no road {origin} -> {destination}")
            world.trucks[truck] = destination
            return done(f"(drive {truck} {origin} {destination})")

        return [load, unload, drive]
