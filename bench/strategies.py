"""Strategies side by side: python bench/strategies.py [--k K] [--games N] [--local-games N] ...

Every comparison is an evaluation (``tether.evals.evaluate``: every trial a governed, journaled
session, graded, pass^k with 95% bootstrap intervals over tasks), with tokens, model steps and
tool calls per trial from the run metrics:

1. ReAct against Reflexion on a small tool-using task the scripted model gets wrong the first
   time (it answers a Fahrenheit question in Celsius): Reflexion's grader says so, the model
   reflects, the next attempt converts.
2. ReAct, Reflexion, LATS and LATS with rollouts on the search tasks of ``search_tasks.py``:
   seeded solvable games of 24 played one ``combine`` step at a time by a proposer whose first
   move is greedy and noisy (seeded per trial, so the k trials differ), graded by evaluating the
   answer's expression; and a drawer hunt whose stand-in answers after the first empty drawer,
   where every ``send_key`` that ran is counted (an abandoned branch must never send).
3. LLM+P against the model planning directly, on seeded random Blocksworld instances (3 to 6
   blocks), graded on the world the tools leave (goal reached), not on what the model says. The
   scripted stand-ins: for LLM+P, a model that translates the task into a PDDL problem
   faithfully (the planner does the rest); for direct planning, a model that plans the way
   models are reported to fail — building the goal towers bottom-up without first clearing the
   blocks in the way — and does not recover once a move is refused by the world.

``--local N`` runs comparison 3 on N instances with the local SmolLM2-135M-Instruct model
(llama.cpp, the ``local`` extra) instead of the stand-ins, one trial each; ``--local-games N``
runs ReAct and a small LATS with it on N games of 24. The scripted figures show the harness and
the governance (every branch budgeted and journaled, side effects only on the chosen path, plans
validated before anything runs); what a capable model gains is the papers' figures, printed
beside them (Tree of Thoughts on Game of 24; LATS on HumanEval and WebShop; LLM+P on
Blocksworld).
"""

from __future__ import annotations

import argparse
import functools
import random
import re
import statistics
from collections.abc import Callable, Mapping
from typing import Any

from search_tasks import Drawers, Proposer, combine, drawer_tasks, game_tasks, hunter

from tether import Agent, Budget, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.evals import Task, evaluate, numeric, state
from tether.evals.report import Report
from tether.reasoning import GraderCheck, Reflexion, SelfCritique
from tether.reasoning.lats import LATS, GraderValue, SelfEvaluation
from tether.reasoning.llmp import LLMP
from tether.reasoning.pddl import blocksworld
from tether.reasoning.pddl.worlds import BlocksWorld
from tether.store.memory import MemoryStore

# -- 1. ReAct against Reflexion ------------------------------------------------------------------

CITIES = {"Paris": 25, "Oslo": 5, "Cairo": 35, "Lima": 20, "Quito": 15, "Perth": 30}


@tool(inline=True)
def lookup(city: str) -> str:
    """The temperature in a city, in Celsius."""
    return f"{CITIES.get(city, 0)} C"


@tool(inline=True)
def to_fahrenheit(celsius: float) -> str:
    """Convert Celsius to Fahrenheit."""
    return f"{celsius * 9 / 5 + 32:g}"


def converter(request: Any) -> ModelResponse | str:
    """Answers in Celsius until a reflection in context says to convert."""
    said = [m.content for m in request.messages]
    if "That attempt failed" in said[-1]:
        return "I answered in Celsius; the question asked Fahrenheit. Convert before answering."
    reflected = next((i for i, m in enumerate(said) if "Reflections on your earlier" in m), None)
    since = request.messages[reflected or 0:]
    results = [m.content for m in since if m.role == "tool"]
    celsius = [m.content for m in request.messages if m.role == "tool" and m.name == "lookup"]
    if reflected is None:
        if not results:
            city = re.search(r"in (\w+)", said[1]).group(1)  # type: ignore[union-attr]
            return ModelResponse(tool_calls=(ToolCall("", "lookup", {"city": city}),))
        return f"It is {results[-1].split()[0]} degrees."
    if not results:
        value = float(celsius[-1].split()[0])
        return ModelResponse(tool_calls=(ToolCall("", "to_fahrenheit", {"celsius": value}),))
    return f"It is {results[-1]} degrees Fahrenheit."


def conversions(k: int) -> list[tuple[str, Report]]:
    tasks = [Task(f"What is the temperature in {city}, in Fahrenheit?",
                  expected=f"{c * 9 / 5 + 32:g}", grader=numeric(), id=city.lower())
             for city, c in CITIES.items()]

    def react() -> Agent:
        return Agent(model=ScriptedModel(converter), reasoning=ReAct(),
                     tools=[lookup, to_fahrenheit])

    return [("ReAct", evaluate(react, tasks, k=k, store=MemoryStore(), name="react")),
            ("Reflexion (grader)", _reflexion_eval(tasks, k))]


def _reflexion_eval(tasks: list[Task], k: int) -> Report:
    """Reflexion graded per task: each task's agent carries a grader with that task's answer."""
    records = []
    for task in tasks:
        agent = Agent(model=ScriptedModel(converter), tools=[lookup, to_fahrenheit],
                      reasoning=Reflexion(evaluator=GraderCheck(numeric(task.expected)),
                                          max_attempts=3))
        records += evaluate(agent, [task], k=k, store=MemoryStore(), name="reflexion").records
    return Report.of("Reflexion (grader)", records)


# -- 2. ReAct, Reflexion and LATS on search tasks ------------------------------------------------

# (name, the strategy for a task, how the stand-in judges when asked: "oracle" or "own"). The
# "(grader)" rows judge an answer with the task's own grader, which knows the answer (and, in
# Game of 24, estimate a path with the stand-in's noisy solver): they measure the search given a
# judge that knows. The "(self-...)" rows judge with the stand-in's own words only: what a
# strategy does when the model is its only judge.
SEARCHERS: list[tuple[str, Callable[[Task], Any], str]] = [
    ("ReAct", lambda task: ReAct(), "own"),
    ("Reflexion (grader)", lambda task: Reflexion(evaluator=GraderCheck(task.grader),
                                                  max_attempts=3), "oracle"),
    ("Reflexion (self-critique)", lambda task: Reflexion(evaluator=SelfCritique(),
                                                         max_attempts=3), "own"),
    ("LATS n=3 (grader)", lambda task: LATS(value=GraderValue(
        task.grader, estimate=SelfEvaluation()), n=3, max_iterations=12), "oracle"),
    ("LATS n=3 (self-evaluation)", lambda task: LATS(value=SelfEvaluation(), n=3,
                                                     max_iterations=12), "own"),
    ("LATS n=5 + rollouts (grader)", lambda task: LATS(value=GraderValue(
        task.grader, estimate=SelfEvaluation()), n=5, max_iterations=12, rollout_depth=3),
     "oracle"),
    ("LATS n=5 + rollouts (self-eval.)", lambda task: LATS(
        value=SelfEvaluation(), n=5, max_iterations=12, rollout_depth=3), "own"),
]


def searching(tasks: list[Task], k: int, agent: Callable[[Any, Any, Budget, str], Agent],
              steps: int = 150,
              strategies: list[tuple[str, Callable[[Task], Any], str]] = SEARCHERS,
              concurrency: int = 4) -> list[tuple[str, Report, list[Any]]]:
    """Each strategy on every task, k trials each, at most ``steps`` model calls a trial;
    ``agent(environment, reasoning, budget, judge)`` makes a trial's agent. With each report,
    the trials' environments (what the tools did)."""
    rows = []
    for name, strategy, judge in strategies:
        records: list[Any] = []
        environments: list[Any] = []
        for task in tasks:
            make = functools.partial(_trial, agent, strategy(task), Budget(max_steps=steps),
                                     judge, environments)
            records += evaluate(make, [task], k=k, store=MemoryStore(), name=name,
                                concurrency=concurrency).records
        rows.append((name, Report.of(name, records), environments))
    return rows


def _trial(agent: Callable[[Any, Any, Budget, str], Agent], reasoning: Any, budget: Budget,
           judge: str, environments: list[Any], environment: Any) -> Agent:
    environments.append(environment)
    return agent(environment, reasoning, budget, judge)


def game24_agent(game: Any, reasoning: Any, budget: Budget, judge: str) -> Agent:
    return Agent(model=ScriptedModel(Proposer(game, judge=judge)), tools=[combine],
                 reasoning=reasoning, budget=budget)


def drawer_agent(drawers: Drawers, reasoning: Any, budget: Budget, judge: str) -> Agent:
    # the hunter has one way of judging itself (its own words); the grader rows use the grader
    return Agent(model=ScriptedModel(hunter), tools=drawers.tools(), reasoning=reasoning,
                 budget=budget)


# -- 3. LLM+P against planning directly ----------------------------------------------------------


def instance(rng: random.Random, blocks: int) -> tuple[dict[str, str], dict[str, str]]:
    """A random initial state and goal over ``blocks`` blocks: block -> what it sits on."""
    names = [chr(ord("a") + i) for i in range(blocks)]

    def towers() -> dict[str, str]:
        order = names[:]
        rng.shuffle(order)
        on: dict[str, str] = {}
        for i, b in enumerate(order):
            on[b] = "table" if i == 0 or rng.random() < 0.35 else order[i - 1]
        return on

    init = towers()
    goal = towers()
    while goal == init:
        goal = towers()
    return init, goal


def describe(on: Mapping[str, str]) -> str:
    return ", ".join(f"{b} on {below}" for b, below in sorted(on.items()))


def parse(text: str, label: str) -> dict[str, str]:
    found = re.search(rf"{label}: ([^.]*)\.", text)
    assert found is not None
    return dict(re.findall(r"(\w+) on (\w+)", found.group(1)))


def pddl_problem(init: Mapping[str, str], goal: Mapping[str, str]) -> str:
    world = BlocksWorld(init)
    wanted = " ".join(f"(on {b} {u})" if u != "table" else f"(ontable {b})"
                      for b, u in sorted(goal.items()))
    return (f"(define (problem p) (:domain blocksworld) (:objects {' '.join(sorted(init))}) "
            f"(:init {world.facts()}) (:goal (and {wanted})))")


def translator(request: Any) -> str:
    """The LLM+P stand-in: writes the problem from the task faithfully."""
    task = next(m.content for m in request.messages if m.role == "user")
    if "(define (domain" in request.messages[-1].content:
        return pddl_problem(parse(task, "Initially"), parse(task, "Goal"))
    return "Done."


def naive_plan(init: Mapping[str, str], goal: Mapping[str, str]) -> list[tuple[str, dict[str,
                                                                                     str]]]:
    """Goal towers bottom-up, without clearing what is in the way (a typical model error)."""
    where, plan = dict(init), []
    for block, below in sorted(goal.items(), key=lambda item: _height(goal, item[0])):
        if where[block] == below:
            continue
        plan.append(("pick_up", {"block": block}) if where[block] == "table"
                    else ("unstack", {"block": block, "from_block": where[block]}))
        plan.append(("put_down", {"block": block}) if below == "table"
                    else ("stack", {"block": block, "onto": below}))
        where[block] = below
    return plan


def _height(on: Mapping[str, str], block: str) -> int:
    height = 0
    while on.get(block, "table") != "table":
        block, height = on[block], height + 1
    return height


def direct_planner(request: Any) -> ModelResponse | str:
    """The direct-planning stand-in: its plan, one call a turn; after a refusal, it stops."""
    task = next(m.content for m in request.messages if m.role == "user")
    results = [m for m in request.messages if m.role == "tool"]
    plan = naive_plan(parse(task, "Initially"), parse(task, "Goal"))
    if len(results) == len(plan) or (results and results[-1].content.startswith("cannot")):
        return "Done."
    name, arguments = plan[len(results)]
    return ModelResponse(tool_calls=(ToolCall("", name, arguments),))


def blocks_tasks(count: int, seed: int) -> list[Task]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        init, goal = instance(rng, rng.randint(3, 6))
        out.append(Task(f"Blocks. Initially: {describe(init)}. Goal: {describe(goal)}. Move "
                        "the blocks with the tools until the goal holds.",
                        grader=state(lambda w, goal=goal: w.satisfies(goal), "goal reached"),
                        environment=lambda init=init: BlocksWorld(init), id=f"bw{i:02d}"))
    return out


def planning(tasks: list[Task], k: int, models: Mapping[str, Callable[[], Any]],
             steps: int = 16, llmp: LLMP | None = None) -> list[tuple[str, Report]]:
    out = []
    for name, reasoning in (("LLM+P", llmp or LLMP(blocksworld())),
                            ("planning directly", ReAct())):
        def make(world: BlocksWorld, reasoning: Any = reasoning, model: Any = models[name]
                 ) -> Agent:
            return Agent(model=model(), reasoning=reasoning, tools=world.tools(),
                         budget=Budget(max_steps=steps),
                         system_prompt="You move blocks with the tools. Blocks: "
                         "pick_up/put_down a block on the table, stack/unstack it on another.")
        out.append((name, evaluate(make, tasks, k=k, store=MemoryStore(), name=name,
                                   concurrency=4)))
    return out


def show(title: str, rows: list[tuple[str, Report]]) -> None:
    print(title)
    print(f"  {'strategy':<33} {'trials':>6}  {'success (pass^1) [95%]':<26} {'pass^k':>7} "
          f"{'tokens':>7} {'steps':>6} {'tool calls':>10}")
    for name, report in rows:
        s = report.slices["canonical"]
        facts = [r.facts for r in report.records]
        print(f"  {name:<33} {s.trials:>6}  {s.pass_hat[1]!s:<26} "
              f"{s.pass_hat[report.k].value:>7.3f} "
              f"{statistics.mean(f.tokens for f in facts):>7.0f} "
              f"{statistics.mean(f.steps for f in facts):>6.1f} "
              f"{statistics.mean(f.tool_calls for f in facts):>10.1f}")


def local_search(games: list[Task]) -> None:
    """ReAct and a small LATS with SmolLM2-135M-Instruct on a few games, one trial each."""
    from tether.models.local import local_model_server

    with local_model_server() as server:
        def agent(game: Any, reasoning: Any, budget: Budget, judge: str) -> Agent:
            return Agent(model=server.model(max_output_tokens=128), tools=[combine],
                         reasoning=reasoning, budget=budget)
        rows = searching(games, 1, agent, steps=16, concurrency=1, strategies=[
            SEARCHERS[0], ("LATS", lambda task: LATS(value=GraderValue(
                task.grader, estimate=SelfEvaluation()), n=2, max_iterations=3), "own")])
    show(f"Game of 24 with SmolLM2-135M-Instruct (llama.cpp, local), {len(games)} games × k=1",
         [(n, r) for n, r, _ in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--instances", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--local", type=int, default=0, metavar="N",
                        help="also run the Blocksworld comparison with SmolLM2 on N instances")
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--local-games", type=int, default=0, metavar="N",
                        help="also run ReAct and LATS with SmolLM2 on N games of 24")
    args = parser.parse_args()
    show("ReAct vs Reflexion: Fahrenheit questions the model first answers in Celsius "
         f"(scripted, {len(CITIES)} tasks × k={args.k})", conversions(args.k))
    games = game_tasks(args.games, args.seed)
    rows = searching(games, args.k, game24_agent)
    show(f"Game of 24: {args.games} solvable games, a proposer whose first move is greedy "
         f"(scripted, seeded per trial, k={args.k})", [(n, r) for n, r, _ in rows])
    hunts = searching(drawer_tasks(15, args.seed), args.k, drawer_agent)
    show(f"Drawer hunt: 15 tasks, the key in drawer 2-6, sent to a named person (scripted, "
         f"k={args.k})", [(n, r) for n, r, _ in hunts])
    for name, report, drawers in hunts:
        sent = [len(d.sent) for d in drawers]
        wrong = sum(to != d.to for d in drawers for to in d.sent)
        print(f"  {name:<33} send_key ran {sum(sent)} times in {len(drawers)} trials "
              f"(at most once a trial: {max(sent, default=0) <= 1}; to the wrong person: "
              f"{wrong}), passed {sum(r.passed for r in report.records)}")
    if args.local_games:
        local_search(games[:args.local_games])
    print("papers: Tree of Thoughts (Yao et al. 2023), Game of 24 with GPT-4: chain of thought "
          "4%, tree search (b=5) 74%; LATS (Zhou et al. 2023): HumanEval 92.7% pass@1, WebShop "
          "score 75.9")
    tasks = blocks_tasks(args.instances, args.seed)
    show(f"LLM+P vs planning directly: {args.instances} Blocksworld instances, 3-6 blocks "
         f"(scripted stand-ins, k={args.k})",
         planning(tasks, args.k, {"LLM+P": lambda: ScriptedModel(translator),
                                  "planning directly": lambda: ScriptedModel(direct_planner)}))
    if args.local:
        from tether.models.local import local_model_server

        with local_model_server() as server:
            def local() -> Any:
                return server.model(max_output_tokens=256)
            # small bounds: a 135M model on a CPU takes a minute or more per turn with the domain
            rows = planning(tasks[:args.local], 1, {"LLM+P": local, "planning directly": local},
                            steps=8, llmp=LLMP(blocksworld(), max_problems=2, max_replans=0,
                                               problem_tokens=256))
        show(f"the same, SmolLM2-135M-Instruct (llama.cpp, local), {args.local} instances × k=1",
             rows)
    print("paper (Liu et al. 2023, LLM+P), Blocksworld: a classical planner on the model's "
          "problem 85.3%, the model planning alone 63.7%")


if __name__ == "__main__":
    main()
