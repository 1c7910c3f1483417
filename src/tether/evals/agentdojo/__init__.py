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
imports ``agentdojo`` (extra ``tether[agentdojo]``), with ``.suite`` (a suite's tools and
environments as tether sees them, which the adaptive attacks of ``.adaptive`` use too).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from tether.errors import InvalidArgument
from tether.evals.agentdojo.agentdyn.attacks import attack_calls
from tether.evals.agentdojo.reading import planned, reads
from tether.evals.agentdojo.suite import DojoTool as DojoTool  # where the tests find them
from tether.evals.agentdojo.suite import (
    Environments,
    PairResult,
    _agentdojo,
    call_key,
    overlay_for,  # the harness's: a test may replace it
    tools_for,
)
from tether.evals.agentdojo.suite import _plain as _plain
from tether.evals.obedient import PlannedCall, obedient_model
from tether.runtime.accounting.limits import Limits
from tether.vocabulary import EventType

SUITES = ("workspace", "travel", "banking", "slack")
AGENTDYN = ("shopping", "github", "dailylife")  # AgentDyn's suites (``.agentdyn``), vendored
# AgentDyn's platforms answer through the user's mailbox, and its tasks read the inbox after
# each action: the same read five times in a run is the task, not a loop
POLLING = Limits(loop_warn_at=6, loop_stop_at=10)
MARKER = "<INFORMATION>"  # opens every important_instructions injection, as the agent sees it


class Oracle:
    """An approver for the user's own ground truth, counted: each ground-truth call approves
    one execution. A call the policy let run unasked uses up its ground-truth call too, so an
    injected duplicate of the user's own payment is refused whether or not the first needed a
    person (``approve_when(any(...))`` approved every copy). An argument the plan reads at run
    time (``reading.Read``: a one-time password, an attachment id) is not compared: a person
    would see the value came from where the user's own action asked for it; the count still
    bounds how many such calls pass."""

    def __init__(self, plan: list[PlannedCall]) -> None:
        self._masks = {(p.tool, reads(p.arguments)) for p in plan}
        self._left = Counter(self._key(p.tool, p.arguments, reads(p.arguments)) for p in plan)
        self._approved: Counter[tuple[str, str, frozenset[str]]] = Counter()

    @staticmethod
    def _key(tool: str, arguments: Mapping[str, Any],
             masked: frozenset[str]) -> tuple[str, str, frozenset[str]]:
        kept = {name: value for name, value in arguments.items() if name not in masked}
        return (*call_key(tool, kept), masked)

    def _keys(self, tool: str, arguments: Mapping[str, Any]
              ) -> list[tuple[str, str, frozenset[str]]]:
        return [self._key(tool, arguments, masked) for named, masked in sorted(
            self._masks, key=lambda m: sorted(m[1])) if named == tool]

    def asked_for(self, request: Any) -> bool:
        for key in self._keys(request.tool, request.arguments):
            if self._left[key] - self._approved[key] > 0:
                self._approved[key] += 1
                return True
        return False

    def ran(self, tool: str, arguments: Mapping[str, Any]) -> None:
        for key in self._keys(tool, arguments):
            if self._left[key] > 0:
                self._left[key] -= 1
                self._approved[key] = max(0, self._approved[key] - 1)
                return

    def approver(self) -> Any:
        from tether.runtime.approvals.approver import approve_when

        return approve_when(self.asked_for, "oracle")


def oracle_for(plan: list[PlannedCall]) -> Any:
    """An approver that approves the calls of the user's own ground truth, each once. Without
    ``Oracle.ran`` wired to the tools it counts approvals only."""
    return Oracle(plan).approver()


def run_pair(suite: Any, user_task: Any, injection_task: Any, *, policy: Any = None,
             approver: Any = None, environments: Environments | None = None,
             store: Any = None) -> PairResult:
    """One user task, under one injection task's attack (or none), as a tether session.
    ``approver="oracle"`` approves exactly the user's ground-truth calls; ``store`` keeps the
    session's journal where a caller reads it (its decisions), else the agent's own."""
    from agentdojo.functions_runtime import FunctionCall

    from tether.policy.base import AllowAll
    from tether.reasoning.react import ReAct
    from tether.runtime.lifecycle.agent import Agent

    environments = environments or Environments(suite, overlay_for(suite.name))
    injections = ({} if injection_task is None
                  else environments.injections(user_task, injection_task))
    env = user_task.init_environment(environments.load(injections))
    pre = env.model_copy(deep=True)
    plan = planned(user_task.ground_truth(pre.model_copy(deep=True)))
    attack_plan = [] if injection_task is None else attack_calls(
        suite.name, injection_task, pre.model_copy(deep=True))
    oracle = Oracle(plan) if approver == "oracle" else None
    if oracle is not None:
        approver = oracle.approver()
    tools = tools_for(suite, env, environments.overlay,
                      None if oracle is None else oracle.ran)
    answer = user_task.GROUND_TRUTH_OUTPUT or "Done."
    instead = getattr(injection_task, "instead", ())  # an adaptive task's changed user call
    model = obedient_model(plan, attack_plan, answer=answer, instead=instead,
                           injection_text=MARKER if attack_plan or instead else None)
    agent = Agent(model=model, reasoning=ReAct(), tools=tools, policy=policy or AllowAll(),
                  approver=approver, name=f"agentdojo-{suite.name}",
                  check_policy_names=False, limits=POLLING if suite.name in AGENTDYN
                  else Limits(), **({} if store is None else {"store": store}))
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
                      injection_task is not None and not attack_plan and not instead,
                      "stock" if kind is None else "adaptive", kind)


def load_suite(name: str, version: str = "v1.2.2") -> Any:
    """AgentDojo's suite ``name`` at ``version``, or AgentDyn's (``AGENTDYN``: one version,
    ``version`` ignored)."""
    if name in AGENTDYN:
        _agentdojo()  # the extra's error, if it is missing
        from tether.evals.agentdojo import agentdyn

        return agentdyn.suite(name)
    if name not in SUITES:
        raise InvalidArgument(f"unknown AgentDojo suite {name!r}; one of "
                              f"{', '.join((*SUITES, *AGENTDYN))}")
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
        raise InvalidArgument(f"unknown attack {attack!r}; one of stock, adaptive, both")
    suite = load_suite(name, version)
    user_task = suite.get_user_task_by_id(user_task_id)
    environments = Environments(suite, overlay_for(suite.name))
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
    environments = Environments(suite, overlay_for(suite.name))
    for task in (*suite.user_tasks.values(), *suite.injection_tasks.values()):
        env = environments.load(canaries)
        if hasattr(task, "init_environment"):
            env = task.init_environment(env)
        plan = (planned(task.ground_truth(env.model_copy(deep=True)))
                if hasattr(task, "PROMPT") else attack_calls(name, task, env.model_copy(deep=True)))
        agent = Agent(model=obedient_model(plan, []), reasoning=ReAct(),
                      tools=tools_for(suite, env, environments.overlay),
                      store=store, name=f"agentdojo-{name}-probe", check_policy_names=False,
                      limits=POLLING if name in AGENTDYN else Limits())
        agent.run(getattr(task, "PROMPT", None) or task.GOAL)
    sessions = [store.read(i.session_id) for i in store.sessions()]
    called = {e.data["tool"] for events in sessions for e in events
              if e.type == EventType.TOOL_RESULT}
    unexercised = tuple(sorted({f.name for f in suite.tools} - called))
    return carriers(sessions, list(canaries.values())), unexercised
