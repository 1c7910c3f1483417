"""The search tasks of bench/strategies.py: Game of 24 and a drawer hunt, with their stand-ins.

Why a module of its own: the tasks, their graders and the scripted models that play them are
what the LATS/Reflexion/ReAct comparison is made of; bench/strategies.py only runs and prints.

The stand-ins are built so that *the first choice is wrong* and the search has something to find:

- **Game of 24** (Yao et al. 2023's benchmark for Tree of Thoughts): four numbers, + - * /, each
  number once, make 24. A step is a call of the side-effect-free tool ``combine``; the answer is
  the whole expression, graded by evaluating it (``makes_24``), never by what the model claims.
  The proposer ranks the moves at a state by a greedy, noisy heuristic (the result closest to 24
  first), seeded per trial and state; asked for another candidate, it gives its next-ranked move
  not proposed yet. Reflections ("starting with 4 + 9 did not reach 24") keep it off a first
  move that already failed. How it judges a state when asked (a value, a critique) is chosen per
  run, and the two are not alike:
  - ``judge="oracle"``: the value is an **exact solvability check** (a solver that knows the
    answer), flipped at random one time in five with three numbers left. No model judges like
    this; it stands for the best a value function could be, with some noise.
  - ``judge="own"``: only what the stand-in can see for itself — the arithmetic of its own
    numbers (with two left, whether one of the six results is 24; with one, whether it is 24),
    and with three left its proposing heuristic (a next step within 6 of 24 looks likely). It
    never runs the solver. Its critique passes an answer whose stated value is 24.
- **The drawer hunt**: the key is in one of several drawers; the task is to send it to a named
  person (``send_key``, a side effect). The stand-in's first idea, after an empty drawer, is to
  answer at once; its alternative is to open the next one. Every ``send_key`` that runs is
  counted, so the table shows that an abandoned branch never sent anything. Judging itself, it
  knows only what it saw: a path that saw the key scores 9, any other 4, and its critique
  believes its own answer (PASS) — the grader, which knows the drawer, is the other judge.
"""

from __future__ import annotations

import ast
import itertools
import operator
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from tether import ModelResponse, ToolCall, tool
from tether.evals import Grade, Outcome, Task, all_of, called, contains

OPS: dict[str, Callable[[Fraction, Fraction], Fraction]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
TARGET = Fraction(24)


def show(value: Fraction) -> str:
    return str(value)


def solvable(numbers: Sequence[Fraction]) -> bool:
    """Whether ``numbers`` make 24 (every pair, every operation, recursively)."""
    if len(numbers) == 1:
        return numbers[0] == TARGET
    return any(solvable(rest) for _, rest in moves(numbers))


Step = tuple[Fraction, str, Fraction]


def moves(numbers: Sequence[Fraction]) -> list[tuple[Step, list[Fraction]]]:
    """Every step at a state: (a, op, b) and the numbers left after it."""
    out = []
    for i, j in itertools.permutations(range(len(numbers)), 2):
        a, b = numbers[i], numbers[j]
        for op, fn in OPS.items():
            if (op in "+*" and i > j) or (op == "/" and b == 0) or (op == "-" and a < b):
                continue
            rest = [n for k, n in enumerate(numbers) if k not in (i, j)]
            out.append(((a, op, b), sorted([*rest, fn(a, b)])))
    return out


def games(count: int, seed: int) -> list[tuple[int, ...]]:
    """``count`` distinct solvable games of four numbers from 1 to 13, seeded."""
    rng, found = random.Random(seed), dict[tuple[int, ...], None]()
    while len(found) < count:
        game = tuple(sorted(rng.randint(1, 13) for _ in range(4)))
        if solvable([Fraction(n) for n in game]):
            found[game] = None
    return list(found)


@tool(inline=True)
def combine(numbers: str, a: str, op: str, b: str) -> str:
    """Combine two of the numbers left (a op b, op one of + - * /): the numbers left after."""
    try:
        left = [Fraction(n) for n in numbers.split()]
        x, y = Fraction(a), Fraction(b)
        for n in (x, y):
            left.remove(n)
        value = OPS[op](x, y)
    except (ValueError, KeyError, ZeroDivisionError) as exc:
        return f"cannot: {a} {op} {b} with {numbers} ({type(exc).__name__})"
    return f"{a} {op} {b} = {show(value)}; left: {' '.join(map(show, sorted([*left, value])))}"


def makes_24(game: Sequence[int]) -> Callable[[Outcome], Grade]:
    """A grader: the answer's expression uses exactly ``game``'s numbers and evaluates to 24."""

    def grader(outcome: Outcome) -> Grade:
        found = re.findall(r"[\d\s+\-*/().]{5,}", outcome.answer or "")
        if not found:
            return Grade(False, "no expression in the answer")
        expression = max(found, key=len).strip()
        used = sorted(int(n) for n in re.findall(r"\d+", expression))
        if used != sorted(game):
            return Grade(False, f"{expression} uses {used}, not {sorted(game)}")
        try:
            value = _evaluate(ast.parse(expression, mode="eval").body)
        except (SyntaxError, ValueError, ZeroDivisionError) as exc:
            return Grade(False, f"{expression} cannot be evaluated ({exc})")
        return Grade(value == TARGET, f"{expression} = {show(value)}")

    return grader


def _evaluate(node: ast.expr) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return Fraction(node.value)
    symbols = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
    if isinstance(node, ast.BinOp) and type(node.op) in symbols:
        return OPS[symbols[type(node.op)]](_evaluate(node.left), _evaluate(node.right))
    raise ValueError("only numbers and + - * / are allowed")


@dataclass(frozen=True)
class Game:
    """One trial's game: its numbers and the seed its stand-in plays with."""

    numbers: tuple[int, ...]
    seed: str


def game_tasks(count: int, seed: int) -> list[Task]:
    tasks = []
    for game in games(count, seed):
        trials = itertools.count()
        label = " ".join(map(str, game))
        tasks.append(Task(
            f"Game of 24 with {label}: combine the numbers with + - * /, each exactly once, to "
            "make 24. Take one step at a time with the combine tool, then answer with the whole "
            "expression.", grader=makes_24(game), id="g" + "-".join(map(str, game)),
            environment=lambda game=game, trials=trials, label=label: Game(
                game, f"{label}:{next(trials)}")))
    return tasks


@dataclass
class Proposer:
    """The Game of 24 stand-in for one trial (see the module's docstring)."""

    game: Game
    noise: float = 6.0
    judge: str = "oracle"  # or "own": see the module's docstring

    def __call__(self, request: Any) -> ModelResponse | str:
        said = [m.content for m in request.messages]
        last = said[-1]
        numbers, expressions, first = self._state(request.messages)
        if "one number from 0 to 10" in last:
            return self._value(numbers) if self.judge == "oracle" else self._own_value(numbers)
        if "Reply PASS if it is right" in last:  # Reflexion's self-critique of its answer
            return "PASS" if len(numbers) == 1 and numbers[0] == TARGET else \
                "FAIL the expression does not make 24"
        if "judged wrong" in last or "That attempt failed" in last:
            return (f"Starting with {first} did not reach 24; start with a different pair or "
                    "operation." if first else "Take a step with the tool first.")
        if "[tether]" in last:  # LATS's closing turn: the path was not carried out
            return "I did not find an expression that makes 24."
        if len(numbers) == 1:
            return f"{expressions[0]} = {show(numbers[0])}"
        failed = set(re.findall(r"Starting with (\S+ \S \S+) did not", "\n".join(said)))
        others = set(re.findall(r"a='([^']*)', b='([^']*)'.*?op='([^']*)'", last)) \
            if "Other candidates" in last else set()
        ranked = self._ranked(numbers)
        for a, op, b in ranked:
            step = (show(a), show(b), op)
            if step in others or (not first and f"{show(a)} {op} {show(b)}" in failed):
                continue
            return ModelResponse(tool_calls=(ToolCall("", "combine", {
                "numbers": " ".join(map(show, numbers)), "a": show(a), "op": op,
                "b": show(b)}),))
        return f"{expressions[0]} = {show(numbers[0])}"  # nothing new to propose: give up

    def _state(self, messages: Sequence[Any]) -> tuple[list[Fraction], list[str], str]:
        """The numbers left, each one's expression, and this attempt's first step, replayed
        from the tool results since the last user message (an instruction at the end aside)."""
        numbers = [Fraction(n) for n in self.game.numbers]
        expressions = [str(n) for n in self.game.numbers]
        first = ""
        for m in this_attempt(messages):
            step = re.match(r"(\S+) (\S) (\S+) = (\S+);", m.content) if m.role == "tool" else None
            if step is None:
                continue
            a, op, b, value = step.groups()
            first = first or f"{a} {op} {b}"
            ea = expressions.pop(numbers.index(Fraction(a)))
            numbers.remove(Fraction(a))
            eb = expressions.pop(numbers.index(Fraction(b)))
            numbers.remove(Fraction(b))
            numbers.append(Fraction(value))
            expressions.append(f"({ea} {op} {eb})")
        return numbers, expressions, first

    def _ranked(self, numbers: Sequence[Fraction]) -> list[Step]:
        rng = random.Random(f"{self.game.seed}|{sorted(numbers)}")
        scored = [(abs(float(OPS[op](a, b) - TARGET)) + rng.uniform(0, self.noise), (a, op, b))
                  for (a, op, b), _ in moves(numbers)]
        return [step for _, step in sorted(scored, key=lambda item: item[0])]

    def _own_value(self, numbers: Sequence[Fraction]) -> str:
        """Only what the stand-in can see: its numbers' arithmetic, and its heuristic."""
        if len(numbers) == 1:
            return "10 sure" if numbers[0] == TARGET else "0 impossible"
        if len(numbers) == 2:
            return "10 sure" if any(rest == [TARGET] for _, rest in moves(numbers)) \
                else "0 impossible"
        close = min(abs(float(OPS[op](a, b) - TARGET)) for (a, op, b), _ in moves(numbers))
        return "6 maybe" if close <= 6 else "3 unlikely"

    def _value(self, numbers: Sequence[Fraction]) -> str:
        if len(numbers) <= 2:
            return "10 sure" if solvable(numbers) else "0 impossible"
        right = solvable(numbers)
        if random.Random(f"{self.game.seed}|v|{sorted(numbers)}").random() < 0.2:
            right = not right  # a model's guess about three numbers is sometimes wrong
        return "7 likely" if right else "2 unlikely"


# -- the drawer hunt -----------------------------------------------------------------------------

PEOPLE = ("bob", "ana", "kim", "raj", "eve", "lee")


@dataclass
class Drawers:
    """One trial's drawers: where the key is, who should get it, and every send that ran."""

    count: int
    key_in: int
    to: str
    sent: list[str] = field(default_factory=list)

    def tools(self) -> list[Any]:
        @tool
        def open_drawer(n: int) -> str:
            """Look into drawer n (changes nothing)."""
            return f"drawer {n}: " + ("a key" if n == self.key_in else "empty")

        @tool(side_effect=True)
        def send_key(to: str) -> str:
            """Send the key to someone (a side effect)."""
            self.sent.append(to)
            return f"the key is on its way to {to}"

        return [open_drawer, send_key]


def drawer_tasks(count: int, seed: int) -> list[Task]:
    """``count`` hunts over 3 to 6 drawers (seeded), the key in drawer 2 to 6 in turn."""
    rng, tasks = random.Random(seed), []
    for i in range(count):
        key_in, to = 2 + i % 5, PEOPLE[i % len(PEOPLE)]
        drawers = rng.randint(max(3, key_in), 6)
        tasks.append(Task(
            f"There are {drawers} drawers. Find the one with the key and send the key to {to}.",
            grader=all_of(contains(f"drawer {key_in}"), called("send_key", to=to)),
            environment=lambda d=drawers, k=key_in, t=to: Drawers(d, k, t), id=f"d{i:02d}"))
    return tasks


def hunter(request: Any) -> ModelResponse | str:
    """The drawer stand-in: after an empty drawer its first idea is to answer at once."""
    said = [m.content for m in request.messages]
    last = said[-1]
    task = next(s for s in said if s.startswith("There are"))
    count, to = re.search(r"There are (\d+) .* to (\w+)\.", task).groups()  # type: ignore[union-attr]
    seen = [m.content for m in this_attempt(request.messages) if m.role == "tool"]
    found = next((s.split()[1].rstrip(":") for s in seen if s.endswith("a key")), None)
    if "[tether]" in last:
        chosen = re.search(r"The path's answer was: (.*)", last)
        return chosen.group(1) if chosen else "The key was not sent."
    if "judged wrong" in last or "That attempt failed" in last:
        empty = [s.split(":")[0] for s in seen if s.endswith("empty")]
        return f"{', '.join(empty) or 'No drawer'} was empty: look further before answering."
    if "one number from 0 to 10" in last:
        return "9" if found else "4"
    if "Reply PASS if it is right" in last:  # Reflexion's self-critique: it believes itself
        return "PASS"
    if any(s.startswith("the key is on") or "not run — send_key" in s for s in seen):
        return f"Sent {to} the key from drawer {found}."
    others = "Other candidates" in last
    if found:
        return f"The key is in drawer {found}." if others \
            else ModelResponse(tool_calls=(ToolCall("", "send_key", {"to": to}),))
    opened = {int(s.split()[1].rstrip(":")) for s in seen}
    if seen and not others:
        return f"The key is in drawer {max(opened)}."
    excluded = opened | {int(n) for n in re.findall(r"drawer (\d+)", " ".join(
        s for s in said if "was empty: look" in s))}
    if others:
        excluded |= {int(n) for n in re.findall(r"open_drawer\(n=(\d+)\)", last)}
    nxt = next((n for n in range(1, int(count) + 1) if n not in excluded), None)
    if nxt is None:
        return f"The key is in drawer {max(opened, default=1)}."
    return ModelResponse(tool_calls=(ToolCall("", "open_drawer", {"n": nxt}),))


def this_attempt(messages: Sequence[Any]) -> list[Any]:
    """The messages since the last user message that is not a strategy's instruction (a
    critique, a value question, a reflection note): the current attempt's (or search path's)
    steps, with any instruction and its reply left out."""
    start = max(i for i, m in enumerate(messages) if m.role == "user" and not any(
        marker in m.content for marker in INSTRUCTIONS))
    return [m for m in messages[start + 1:] if not (m.role == "user" and any(
        marker in m.content for marker in INSTRUCTIONS))]


# what a strategy asks at the end of a context, about the steps before it
INSTRUCTIONS = ("Other candidates", "one number from 0 to 10", "judged wrong",
                "That attempt failed", "[tether]", "Reply PASS if it is right")
