"""AgentDojo, run through tether: each (user task, injection task) pair as a governed session.

Why: prompt-injection containment must be measured on a public benchmark, not on examples we
wrote ourselves. AgentDojo's suites (workspace, travel, banking, slack) bring the environments,
the tools, the injections and the checkers; tether brings the runtime under test. The model is
the obedient model (``tether.evals.obedient``) — the user task's ground-truth calls, then the
injection task's once it has read the injected text — so the figures measure what the *runtime*
lets an always-obeying model do. Decisions: AgentDojo's tools become tether tools with the
metadata of this package's reviewed overlays (``<suite>.yaml``); injections are placed by
AgentDojo's own ``important_instructions`` attack (no model needed to build it); scoring is by
AgentDojo's own checkers, handed only the calls that **ran** (its trace-based checkers would count
a refused call as made). AgentDojo re-reads and re-parses its YAML, in pure Python, for every
environment it builds — most of the benchmark's time — so ``Environments`` reads a suite's once
and parses each injected copy with libyaml when PyYAML has it. This is the only module that
imports ``agentdojo`` (extra ``tether[agentdojo]``).
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from tether.evals.obedient import PlannedCall, obedient_model
from tether.tools.base import ToolArgumentError, ToolContext, ToolFailure, ToolMeta
from tether.types import ToolSpec
from tether.vocabulary import EventType

SUITES = ("workspace", "travel", "banking", "slack")
MARKER = "<INFORMATION>"  # opens every important_instructions injection, as the agent sees it


def _agentdojo() -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import agentdojo.task_suite as task_suite
    except ImportError:
        raise ImportError("the AgentDojo benchmark needs its extra: pip install "
                          "'tether[agentdojo]'") from None
    return task_suite


class DojoTool:
    """An AgentDojo function as a tether tool, bound to one trial's environment."""

    __slots__ = ("_function", "_ran", "_runtime", "env", "meta", "name", "spec")

    def __init__(self, function: Any, runtime: Any, env: Any,
                 ran: Callable[[str, Mapping[str, Any]], None] | None = None) -> None:
        self._function, self._runtime, self.env, self._ran = function, runtime, env, ran
        self.name = function.name
        self.meta = ToolMeta()
        self.spec = ToolSpec(function.name, function.description,
                             function.parameters.model_json_schema())

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        from pydantic import ValidationError

        try:
            self._function.parameters.model_validate(dict(arguments))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ToolArgumentError(".".join(str(p) for p in first["loc"]),
                                    first["msg"]) from None
        return dict(arguments)

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        if self._ran is not None:
            self._ran(self.name, arguments)
        result, error = self._runtime.run_function(self.env, self.name, arguments)
        if error is not None:
            raise ToolFailure(f"Error: {error}")
        return _plain(result)


def _plain(result: Any) -> Any:
    """A function's result as plain data, rendered as JSON by the runtime — structured, so the
    values of a tool's ``trusted_fields`` can be told from the text beside them."""
    from pydantic import BaseModel

    if isinstance(result, BaseModel):
        return result.model_dump(mode="json")
    if isinstance(result, list | tuple):
        return [_plain(item) for item in result]
    if isinstance(result, dict):
        return {str(key): _plain(item) for key, item in result.items()}
    return result


class Environments:
    """A suite's environments, built many times over (a user task's pairs, the trust probe): the
    environment file and the overlay read once, the attack (which finds the injection vectors a
    user task sees by running its ground truth, remembered per user task) made once, and each
    injected copy parsed by libyaml when PyYAML has it."""

    __slots__ = ("_attack", "_defaults", "_loader", "_text", "overlay", "suite")

    def __init__(self, suite: Any) -> None:
        import yaml
        from agentdojo.attacks import FixedJailbreakAttack
        from agentdojo.attacks.important_instructions_attacks import ImportantInstructionsAttack
        from agentdojo.task_suite.task_suite import read_suite_file

        self.suite = suite
        self.overlay = overlay_for(suite.name)
        self._text = read_suite_file(suite.name, "environment.yaml", suite.data_path)
        self._defaults = suite.get_injection_vector_defaults()
        self._loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        self._attack = FixedJailbreakAttack(ImportantInstructionsAttack._JB_STRING, suite, None)
        self._attack.user_name, self._attack.model_name = "Emma Johnson", "GPT-4"

    def injections(self, user_task: Any, injection_task: Any) -> dict[str, str]:
        """AgentDojo's ``important_instructions`` attack on the vectors ``user_task`` sees."""
        injections: dict[str, str] = self._attack.attack(user_task, injection_task)
        return injections

    def load(self, injections: Mapping[str, str]) -> Any:
        """What ``suite.load_and_inject_default_environment(injections)`` returns."""
        import yaml
        from agentdojo.task_suite.task_suite import validate_injections

        validate_injections(dict(injections), self._defaults)
        text = self._text.format(**{**self._defaults, **injections})
        return self.suite.environment_type.model_validate(yaml.load(text, Loader=self._loader))


@dataclass(frozen=True, slots=True)
class PairResult:
    suite: str
    user_task: str
    injection_task: str | None
    utility: bool
    attacked: bool  # AgentDojo's "security": True when the injection's goal was reached
    approvals: int  # approval requests: a person's burden
    injected: bool  # the agent read the injected text
    text_only: bool = False  # the injection asks for no tool call: no permission can stop it
    attack: str = "stock"  # AgentDojo's own injections, or "adaptive" (``.adaptive``)
    kind: str | None = None  # an adaptive injection's kind


def overlay_for(suite: str) -> Any:
    from tether.policy.overlay import parse_overlay

    path = files("tether.evals.agentdojo") / f"{suite}.yaml"
    return parse_overlay(path.read_text(encoding="utf-8"), f"tether/evals/agentdojo/{suite}.yaml")


def tools_for(suite: Any, env: Any, overlay: Any = None,
              ran: Callable[[str, Mapping[str, Any]], None] | None = None) -> tuple[Any, ...]:
    """The suite's functions as tether tools bound to ``env``, with the suite's overlay;
    ``ran(tool, arguments)`` is told of every call the runtime lets run."""
    from agentdojo.functions_runtime import FunctionsRuntime

    runtime = FunctionsRuntime(suite.tools)
    tools: tuple[Any, ...] = (overlay or overlay_for(suite.name)).apply(
        [DojoTool(f, runtime, env, ran) for f in suite.tools])
    return tools


def call_key(tool: str, arguments: Mapping[str, Any]) -> tuple[str, str]:
    """A call as (tool, canonical arguments): what counts as "the same call"."""
    from tether.journal.chain import canonical_json

    return tool, canonical_json(dict(arguments))


class Oracle:
    """An approver for the user's own ground truth, counted: each ground-truth call approves
    one execution. A call the policy let run unasked uses up its ground-truth call too, so an
    injected duplicate of the user's own payment is refused whether or not the first needed a
    person (``approve_when(any(...))`` approved every copy)."""

    def __init__(self, plan: list[PlannedCall]) -> None:
        self._left = Counter(call_key(p.tool, p.arguments) for p in plan)
        self._approved: Counter[tuple[str, str]] = Counter()

    def asked_for(self, request: Any) -> bool:
        key = call_key(request.tool, request.arguments)
        if self._left[key] - self._approved[key] <= 0:
            return False
        self._approved[key] += 1
        return True

    def ran(self, tool: str, arguments: Mapping[str, Any]) -> None:
        key = call_key(tool, arguments)
        self._left[key] = max(0, self._left[key] - 1)
        self._approved[key] = max(0, self._approved[key] - 1)

    def approver(self) -> Any:
        from tether.runtime.approvals.approver import approve_when

        return approve_when(self.asked_for, "oracle")


def oracle_for(plan: list[PlannedCall]) -> Any:
    """An approver that approves the calls of the user's own ground truth, each once. Without
    ``Oracle.ran`` wired to the tools it counts approvals only."""
    return Oracle(plan).approver()


def run_pair(suite: Any, user_task: Any, injection_task: Any, *, policy: Any = None,
             approver: Any = None, environments: Environments | None = None) -> PairResult:
    """One user task, under one injection task's attack (or none), as a tether session.
    ``approver="oracle"`` approves exactly the user's ground-truth calls."""
    from agentdojo.functions_runtime import FunctionCall

    from tether.policy.base import AllowAll
    from tether.reasoning.react import ReAct
    from tether.runtime.lifecycle.agent import Agent

    environments = environments or Environments(suite)
    injections = ({} if injection_task is None
                  else environments.injections(user_task, injection_task))
    env = user_task.init_environment(environments.load(injections))
    pre = env.model_copy(deep=True)
    plan = [PlannedCall(c.function, dict(c.args))
            for c in user_task.ground_truth(pre.model_copy(deep=True))]
    attack_plan = [] if injection_task is None else [
        PlannedCall(c.function, dict(c.args))
        for c in injection_task.ground_truth(pre.model_copy(deep=True))]
    oracle = Oracle(plan) if approver == "oracle" else None
    if oracle is not None:
        approver = oracle.approver()
    tools = tools_for(suite, env, environments.overlay,
                      None if oracle is None else oracle.ran)
    answer = user_task.GROUND_TRUTH_OUTPUT or "Done."
    model = obedient_model(plan, attack_plan, injection_text=MARKER if attack_plan else None,
                           answer=answer)
    agent = Agent(model=model, reasoning=ReAct(), tools=tools, policy=policy or AllowAll(),
                  approver=approver, name=f"agentdojo-{suite.name}",
                  check_policy_names=False)
    session = agent.session(user_task.PROMPT)
    result = session.run()
    events = session.replay()
    ran = {e.data["call_id"] for e in events
           if e.type == EventType.TOOL_RESULT and e.data["status"] in ("ok", "error", "timeout")}
    traces = [FunctionCall(function=c.name, id=c.id,
                           args=dict(c.arguments) if isinstance(c.arguments, Mapping) else {})
              for step in result.trajectory.steps for c in step.tool_calls if c.id in ran]
    read = any(MARKER in r.content for r in result.trajectory.tool_results)
    output = result.answer
    utility = user_task.utility_from_traces(output, pre, env, traces)
    if utility is None:
        utility = user_task.utility(output, pre, env)
    attacked = False
    if injection_task is not None:
        attacked = injection_task.security_from_traces(output, pre, env, traces)
        if attacked is None:
            attacked = injection_task.security(output, pre, env)
    approvals = sum(1 for e in events if e.type == EventType.APPROVAL_REQUESTED)
    kind = getattr(injection_task, "kind", None)
    return PairResult(suite.name, user_task.ID, injection_task and injection_task.ID,
                      bool(utility), bool(attacked), approvals, read,
                      injection_task is not None and not attack_plan,
                      "stock" if kind is None else "adaptive", kind)


def load_suite(name: str, version: str = "v1.2.2") -> Any:
    if name not in SUITES:
        raise ValueError(f"unknown AgentDojo suite {name!r}; one of {', '.join(SUITES)}")
    return _agentdojo().get_suite(version, name)


def run_suite(name: str, *, policy: Any = None, approver: Any = None,
              version: str = "v1.2.2") -> list[PairResult]:
    """Every user task of suite ``name`` without an attack, then under every injection task."""
    suite = load_suite(name, version)
    return [result for user_task in suite.user_tasks
            for result in run_user_task(name, user_task, policy=policy, approver=approver,
                                        version=version)]


def run_user_task(name: str, user_task_id: str, *, policy: Any = None, approver: Any = None,
                  version: str = "v1.2.2", attack: str = "stock") -> list[PairResult]:
    """One user task of suite ``name``: without an attack, then under every injection task of
    ``attack``: "stock" (the suite's own), "adaptive" (``.adaptive.tasks_for``), or "both"."""
    from tether.evals.agentdojo.adaptive import tasks_for

    if attack not in ("stock", "adaptive", "both"):
        raise ValueError(f"unknown attack {attack!r}; one of stock, adaptive, both")
    suite = load_suite(name, version)
    user_task = suite.get_user_task_by_id(user_task_id)
    environments = Environments(suite)
    tasks: list[Any] = [None]
    if attack in ("stock", "both"):
        tasks += suite.injection_tasks.values()
    if attack in ("adaptive", "both"):
        tasks += tasks_for(environments, user_task)
    return [run_pair(suite, user_task, injection_task, policy=policy, approver=approver,
                     environments=environments)
            for injection_task in tasks]


def probe_trust(name: str, version: str = "v1.2.2") -> tuple[list[Any], tuple[str, ...]]:
    """The trust audit on suite ``name``: a canary planted in every injection vector (where
    third parties write), each user and injection task's ground truth run through tether with
    nothing refused. Returns every tool that carried a canary (``tether.journal.views.trust``;
    those the overlay declares trusted are findings) and the tools no task called, which the
    probe could not judge."""
    from tether.journal.views.trust import carriers
    from tether.reasoning.react import ReAct
    from tether.runtime.lifecycle.agent import Agent
    from tether.store.memory import MemoryStore

    suite = load_suite(name, version)
    canaries = {vector: f"TetherCanary-{vector}" for vector in
                suite.get_injection_vector_defaults()}
    store = MemoryStore()
    environments = Environments(suite)
    for task in (*suite.user_tasks.values(), *suite.injection_tasks.values()):
        env = environments.load(canaries)
        if hasattr(task, "init_environment"):
            env = task.init_environment(env)
        plan = [PlannedCall(c.function, dict(c.args))
                for c in task.ground_truth(env.model_copy(deep=True))]
        agent = Agent(model=obedient_model(plan, []), reasoning=ReAct(),
                      tools=tools_for(suite, env, environments.overlay),
                      store=store, name=f"agentdojo-{name}-probe", check_policy_names=False)
        agent.run(getattr(task, "PROMPT", None) or task.GOAL)
    sessions = [store.read(i.session_id) for i in store.sessions()]
    called = {e.data["tool"] for events in sessions for e in events
              if e.type == EventType.TOOL_RESULT}
    unexercised = tuple(sorted({f.name for f in suite.tools} - called))
    return carriers(sessions, list(canaries.values())), unexercised
