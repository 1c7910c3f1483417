"""Agent: an immutable recipe for runs — model, strategy, tools, policy, prompt, default budget.

Decision: an Agent holds no per-run state at all, so one instance can serve any number of
sessions at once, from any number of threads or tasks. Everything a run accumulates lives in its
Session. The recipe is validated when built, so a mistake is reported where it was made.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidArgument, WrongType
from tether.models.base import Model
from tether.models.pricing import Price
from tether.policy.base import AllowAll, Policy
from tether.policy.deadline import DEFAULT_POLICY_TIMEOUT
from tether.policy.names import check_names
from tether.policy.quotas import Quota, check_quotas
from tether.runtime.accounting.budget import Budget
from tether.runtime.accounting.limits import Limits
from tether.runtime.approvals.approver import Approver, ApproverFn, as_approver
from tether.runtime.approvals.requests import ALL_TENANTS, ApprovalStore, StoredApprovals
from tether.runtime.lifecycle.fingerprint import recipe_fingerprint
from tether.runtime.lifecycle.lease import DEFAULT_LEASE_TTL
from tether.runtime.lifecycle.thread_memo import CheckedThreads
from tether.runtime.strategy.handle import Strategy
from tether.store.base import Store
from tether.store.memory import MemoryStore
from tether.store.opening import open_store
from tether.tools.base import Tool
from tether.tools.registry import ToolRegistry
from tether.types import TOOL_CHOICES, Event

if TYPE_CHECKING:
    from tether.credentials import CredentialBroker
    from tether.runtime.chokepoint.output import OutputSpec
    from tether.runtime.context.compaction import Compaction
    from tether.runtime.lifecycle.planning import ModelPlanner
    from tether.runtime.lifecycle.session import Session
    from tether.runtime.record.result import Result
    from tether.runtime.stream import StreamEvent
    from tether.tools.selection import ToolIndex, ToolSelection

DEFAULT_SYSTEM_PROMPT = (
    "You are a careful assistant. Use the tools when they help; answer plainly when done."
)


@dataclass(frozen=True, slots=True)
class Agent:
    """A recipe for runs: the model, the strategy, the tools and the rules they run under.

    Immutable and holding no per-run state, so one agent serves any number of sessions at once;
    each run is a ``Session`` (``session``, ``run``, ``arun``). Only ``model`` and ``reasoning`` are
    required; every other parameter's default adds nothing to a run. A mistake in the recipe
    raises here, when it is built (``tether.errors.InvalidArgument``, ``tether.errors.WrongType``).

    Args:
        model: The model every turn asks (a ``tether.Model``: ``ScriptedModel``, ``OpenAIModel``,
            ``AnthropicModel``, ...).
        reasoning: The strategy that drives a run through its handle: ``ReAct()``, or
            ``Reflexion``, ``LATS``, ``Router``, ... from ``tether.reasoning``.
        tools: The tools the model may call (``@tool`` functions, ``Calculator()``, an MCP
            toolset's tools). Names must be unique. Default: none.
        policy: Decides every tool call before it runs (allow, deny, require approval, mask,
            ...). Default ``AllowAll()``: every call is allowed, and still budgeted and journaled.
        system_prompt: The system message of every model turn.
        budget: The hard limits of each session (tokens, cost, steps, tool calls, seconds);
            ``session(budget=...)`` gives one run another. Default ``Budget()``: unlimited.
        name: The agent's name, in the journal, the policy's subject and the recipe's
            fingerprint.
        price: Prices the model's tokens, overriding the model's own price (for a model with
            none, e.g. an unknown one under a cost budget). Default None: the model's price.
        limits: Limits on the run's shape that are not spend: loop detection and the ceilings
            on failed and refused tool calls in a row.
        show_budget: Show the model a note of the budget left before each turn.
        first_tool_choice: The tool choice of a session's first model turn: ``"required"`` (some
            tool), a tool's name, or None (the model chooses), e.g. to make a small model start
            with the tool it must use.
        max_result_chars: A tool result longer than this is cut, with a notice, before the
            model reads it.
        store: Where journals live: a ``tether.store.Store`` or a URL (``"sqlite:///tether.db"``,
            ``"memory://"``, ``"postgresql://..."``), opened once. Default None: in memory, in this
            process only.
        approvals: Where approval requests are kept. Default None: the store's, scoped to
            ``tenant_id``.
        approval_ttl: Seconds an approval request stays answerable.
        approver: Decides approval requests in process (``tether.runtime.approve_when``, ...): a
            callable ``(ApprovalRequest) -> True | False | None``, or an ``Approver``. Default
            None: requests wait for a person, and the session pauses.
        policy_timeout: Seconds a policy that may block (one not declared ``inline``) has to
            decide; past it the call is denied. None waits without limit.
        lease_ttl: Seconds a worker's hold on a running session lasts unrenewed, after which
            another worker may take the session over.
        check_policy_names: Refuse a YAML policy whose rules name tools or arguments these
            tools do not have. Turn off for a policy shared by agents whose tools differ.
        credentials: Gives tools short-lived scoped tokens at call time instead of raw secrets
            (``tether.credentials.CredentialBroker``). Default None: no credentials.
        keep_hidden_arguments: Keep the arguments the policy hides from the journal in the
            store's private table, so a call that waits for approval can still run when the
            session resumes in another process. Needs a ``store``.
        tenant_id: The tenant this recipe serves: its sessions, loads and approvals are that
            tenant's only (another tenant's session is "not found"). Default None: every
            tenant, each session naming its own.
        telemetry: Subscribers told of every event of this recipe's sessions
            (``tether.observe.OTelSink``, ``SIEMSink``, or any callable taking an ``Event``); with
            any, model and tool calls also carry their W3C traceparent to providers, MCP
            servers and sub-agents.
        output_type: The type the final answer must validate as (a pydantic model, a dataclass
            or a TypedDict); ``Result.output`` is then the validated instance. Default None: the
            answer is text.
        output_retries: The repair turns (each a governed model call) an answer that does not
            validate as ``output_type`` gets before the run stops ``output_invalid``.
        compaction: When a request would not fit the model's context window (or a share of the
            token budget left), summarise or drop older turns, journaled (``Compaction(...)``).
            Default None: no compaction.
        planner: A governed model reading of the request before the first turn, widening the
            policy rules' request plan by what it validates (``ModelPlanner(...)``). Default
            None: the rules alone.
        tool_selection: Offer each model turn only the tools ranked best for it, for catalogs
            of hundreds of tools (``tether.tools.ToolSelection``). Default None: every turn is
            offered every tool.
        quotas: Rolling-window limits over every session of this agent, its tenant or its user,
            kept in the store (``tether.Quota``; a YAML policy's ``quotas:`` are added to them).
            Needs a ``store``.
    """

    model: Model
    reasoning: Strategy
    tools: Iterable[Tool] = ()
    policy: Policy = field(default_factory=AllowAll)
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    budget: Budget = field(default_factory=Budget)
    name: str = "agent"
    price: Price | None = None
    limits: Limits = field(default_factory=Limits)
    show_budget: bool = False
    first_tool_choice: str | None = None
    max_result_chars: int = 20_000
    store: Store | str | None = field(default=None, compare=False)
    approvals: ApprovalStore | None = field(default=None, compare=False)
    approval_ttl: float = 24 * 3600.0
    approver: Approver | ApproverFn | None = field(default=None, compare=False)
    policy_timeout: float | None = DEFAULT_POLICY_TIMEOUT  # tether.policy.deadline
    lease_ttl: float = DEFAULT_LEASE_TTL  # tether.runtime.lifecycle.lease
    check_policy_names: bool = True  # tether.policy.names
    credentials: CredentialBroker | None = field(default=None, compare=False)
    keep_hidden_arguments: bool = False
    tenant_id: str | None = None
    telemetry: Iterable[Callable[[Event], object]] = field(default=(), compare=False)
    output_type: Any = None  # tether.runtime.chokepoint.output
    output_retries: int = 2
    compaction: Compaction | None = None  # tether.runtime.context.compaction
    planner: ModelPlanner | None = None  # tether.runtime.lifecycle.planning
    tool_selection: ToolSelection | None = None  # tether.tools.selection
    quotas: Iterable[Quota] = ()  # tether.policy.quotas
    tool_index: ToolIndex | None = field(init=False, repr=False, compare=False)
    output_spec: OutputSpec | None = field(init=False, repr=False, compare=False)
    registry: ToolRegistry = field(init=False, repr=False, compare=False)
    fingerprint: str = field(init=False, repr=False, compare=False)  # lifecycle.fingerprint
    # the thread histories its sessions checked (tether.runtime.lifecycle.thread_memo)
    checked_threads: CheckedThreads = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.model, Model):
            raise WrongType(f"model {self.model!r} is not a tether Model (needs name, price, "
                            "estimate_message_tokens and async complete)")
        if not callable(getattr(self.reasoning, "run", None)):
            raise WrongType(f"reasoning {self.reasoning!r} has no run(handle) method; use "
                            "tether.ReAct() or implement the Strategy protocol")
        if not callable(getattr(self.policy, "evaluate", None)):
            raise WrongType(f"policy {self.policy!r} has no evaluate(subject, action, resource, "
                            "context) method")
        if not isinstance(self.budget, Budget):
            raise WrongType("budget must be a tether.Budget")
        if self.max_result_chars < 1:
            raise InvalidArgument("max_result_chars must be >= 1")
        if not self.approval_ttl > 0:
            raise InvalidArgument("approval_ttl must be a positive number of seconds")
        if not 0 < self.lease_ttl < math.inf:
            raise InvalidArgument("lease_ttl must be a positive, finite number of seconds")
        if self.policy_timeout is not None and not self.policy_timeout > 0:
            raise InvalidArgument("policy_timeout must be a positive number of seconds (or None: "
                                  "a policy that may block is then waited for without limit)")
        if type(self.output_retries) is not int or self.output_retries < 0:
            raise InvalidArgument("output_retries must be a whole number >= 0 (the repair turns an "
                                  "answer that does not validate as output_type gets)")
        if self.compaction is not None:
            from tether.runtime.context.compaction import Compaction as _Compaction

            if not isinstance(self.compaction, _Compaction):
                raise WrongType(f"compaction {self.compaction!r} is not a tether Compaction; "
                                "give Compaction(...) or None")
            self.compaction.check(self.model, self.budget.max_cost_usd is not None)
        if self.planner is not None:
            from tether.runtime.lifecycle.planning import ModelPlanner as _ModelPlanner

            if not isinstance(self.planner, _ModelPlanner):
                raise WrongType(f"planner {self.planner!r} is not a tether ModelPlanner; give "
                                "ModelPlanner(...) or None")
            self.planner.check(self.budget.max_cost_usd is not None)
        spec = None
        if self.output_type is not None:
            from tether.runtime.chokepoint.output import output_spec

            spec = output_spec(self.output_type)
        object.__setattr__(self, "output_spec", spec)
        object.__setattr__(self, "checked_threads", CheckedThreads())
        if isinstance(self.store, str):
            object.__setattr__(self, "store", open_store(self.store))
        object.__setattr__(self, "quotas", check_quotas(self.quotas))
        if self.all_quotas and self.store is None:
            raise InvalidArgument("quotas are kept in the store, and this agent has none: give "
                                  "it one, e.g. Agent(..., store='sqlite:///tether.db')")
        if self.keep_hidden_arguments and self.store is None:
            raise InvalidArgument("keep_hidden_arguments=True keeps hidden arguments in the store, "
                                  "and this agent has none: give it one, e.g. "
                                  "Agent(..., store='sqlite:///tether.db')")
        if self.approvals is None or type(self.approvals) is _RecipeApprovals:
            scope = ALL_TENANTS if self.tenant_id is None else self.tenant_id
            approvals = _RecipeApprovals(self.journal_store or MemoryStore(), scope)
            object.__setattr__(self, "approvals", approvals)
        object.__setattr__(self, "approver", as_approver(self.approver))
        telemetry = (self.telemetry,) if callable(self.telemetry) else tuple(self.telemetry)
        for sink in telemetry:
            if not callable(sink):
                raise WrongType(f"telemetry {sink!r} is not callable: give sinks that take an "
                                "Event, e.g. Agent(..., telemetry=[tether.observe.OTelSink()])")
        object.__setattr__(self, "telemetry", telemetry)
        registry = ToolRegistry(self.tools)
        choice = self.first_tool_choice
        if choice is not None and choice not in TOOL_CHOICES and choice not in registry.names:
            raise InvalidArgument(f"first_tool_choice={choice!r} is neither one of {TOOL_CHOICES} "
                                  f"nor a tool of this agent ({', '.join(sorted(registry.names))})")
        if self.check_policy_names:
            check_names(self.policy, registry.specs)
        object.__setattr__(self, "tool_index", self._index_tools(registry))
        object.__setattr__(self, "tools", tuple(registry))
        object.__setattr__(self, "registry", registry)
        object.__setattr__(self, "fingerprint", recipe_fingerprint(self))

    def _index_tools(self, registry: ToolRegistry) -> ToolIndex | None:
        """The tool selection's index of the tools, once (None without selection)."""
        selection = self.tool_selection
        if selection is None:
            return None
        from tether.tools.selection import ToolSelection

        if not isinstance(selection, ToolSelection):
            raise WrongType("tool_selection must be a tether.tools.selection.ToolSelection, "
                            "e.g. ToolSelection(k=8)")
        missing = [n for n in selection.always if registry.get(n) is None]
        if missing:
            raise InvalidArgument(f"ToolSelection(always=...) names {missing}, not tools of this "
                                  f"agent ({', '.join(sorted(registry.names))})")
        choice = self.first_tool_choice
        if choice is not None and choice not in TOOL_CHOICES and choice not in selection.always:
            raise InvalidArgument(f"first_tool_choice={choice!r} must be offered on the first "
                                  "turn: with tool_selection, put it in ToolSelection(always=...)")
        index = selection.ranker.index(registry.specs)
        if not callable(getattr(index, "rank", None)):
            raise WrongType(f"{selection.ranker!r}.index(specs) returned {index!r}, which has no "
                            "rank(query, limit) method (see tether.tools.selection.ToolIndex)")
        return index

    @property
    def journal_store(self) -> Store | None:
        """The store journals are written to (a URL given to the recipe is opened once)."""
        assert not isinstance(self.store, str)
        return self.store

    @property
    def decides_approvals(self) -> Approver | None:
        """The in-process approver (a callable given to the recipe is wrapped once)."""
        assert self.approver is None or isinstance(self.approver, Approver)
        return self.approver

    @property
    def approval_store(self) -> ApprovalStore:
        """Where this recipe's approval requests are kept (``approvals``, or its store's)."""
        assert self.approvals is not None
        return self.approvals

    def load(self, session_id: str, *, accept_recipe_change: bool = False) -> Session:
        """A stored session of this recipe (and of its tenant, if it serves one), rebuilt from
        its journal, which must verify. A session started under another recipe (agent name,
        tools or policy) is refused unless ``accept_recipe_change``."""
        from tether.runtime.lifecycle.session import Session

        return Session.restore(self, session_id, accept_recipe_change=accept_recipe_change)

    def resume(self, session_id: str, *, accept_recipe_change: bool = False) -> Result:
        """Continue a stored session after an approval, a settlement or a crash."""
        return self.load(session_id, accept_recipe_change=accept_recipe_change).resume()

    async def aresume(self, session_id: str, *, accept_recipe_change: bool = False) -> Result:
        """``resume``, awaited on the caller's event loop."""
        return await self.load(session_id,
                               accept_recipe_change=accept_recipe_change).aresume()

    def with_store(self, store: Store) -> Agent:
        """This recipe writing its journals to ``store``, and its approvals with them (unless it
        was given approvals of its own that are not the in-memory default)."""
        if store is self.journal_store:
            return self
        approvals = self.approvals
        if isinstance(approvals, StoredApprovals) and isinstance(approvals.store, MemoryStore):
            approvals = None  # the recipe's default: approvals go where the journal goes
        return dataclasses.replace(self, store=store, approvals=approvals)

    @property
    def all_quotas(self) -> tuple[Quota, ...]:
        """The recipe's quotas and its YAML policy's (``quotas:``), names distinct."""
        return check_quotas((*self.quotas, *getattr(self.policy, "quotas", ())))

    @property
    def effective_price(self) -> Price | None:
        """The price the budget charges: ``price`` if given, else the model's own (or None)."""
        return self.price if self.price is not None else self.model.price

    def session(
        self,
        task: str,
        *,
        budget: Budget | None = None,
        user_id: str | None = None,
        tenant_id: str | None = None,
        roles: Iterable[str] = (),
        context: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        request: str | None = None,
        thread: str | None = None,
    ) -> Session:
        """A new run of this recipe on ``task``, not started yet: run it with ``Session.run()``
        (or ``arun()``, ``astream()``). Fails here if the budget cannot be enforced.

        Args:
            task: What the agent is asked to do: the first user message the model sees.
            budget: This run's limits. Default None: the recipe's ``budget``.
            user_id: Who asked: the policy's subject, and the owner of a ``thread``.
            tenant_id: The tenant the session belongs to. A recipe that serves one tenant
                refuses another.
            roles: The user's roles, for the policy (``Subject.roles``).
            context: Facts the policy may read (``Context.extra``); the model never sees
                them.
            session_id: The session's id. Default None: a random one.
            metadata: Labels the session in its journal (e.g. an evaluation trial's identity);
                neither the model nor the policy sees them.
            request: What the user asked, for the policy (``context.request``), when the task is
                not the user's own words (a sub-agent's task, written by its caller's model).
                Default None: the task.
            thread: Continues a conversation of this tenant's user across sessions: the model
                sees its earlier questions and answers before the task. Needs ``user_id`` and a
                ``store``.

        Returns:
            The new ``Session``.
        """
        from tether.runtime.lifecycle.session import Session

        if self.tenant_id is not None:
            if tenant_id not in (None, self.tenant_id):
                raise InvalidArgument(f"this agent serves tenant {self.tenant_id!r}; it cannot "
                                      f"start a session for tenant {tenant_id!r}")
            tenant_id = self.tenant_id
        if thread is not None:
            from tether.runtime.lifecycle.thread import check_thread_id

            check_thread_id(thread)
            if not user_id:  # else every anonymous session of the tenant would share it
                raise InvalidArgument("a thread belongs to a user: pass user_id=... with thread=")
            if self.journal_store is None:
                raise InvalidArgument("a thread lives in a store, and this agent has none: give it "
                                      "one, e.g. Agent(..., store='sqlite:///tether.db')")
        return Session(self, task, budget=budget or self.budget, user_id=user_id,
                       tenant_id=tenant_id, roles=roles, context=context, session_id=session_id,
                       metadata=metadata, request=request, thread=thread)

    def run_stream(self, task: str, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        """``async for event in agent.run_stream(task)``: TextDelta, ToolCallEvent,
        ToolResultEvent as they happen, then Finished(result) (``tether.runtime.stream``).
        ``kwargs`` are those of ``session``."""
        return self.session(task, **kwargs).astream()

    async def arun(self, task: str, **kwargs: Any) -> Result:
        """``run``, awaited on the caller's event loop: ``await agent.arun(task, **kwargs)``,
        with the same arguments and the same ``Result``."""
        return await self.session(task, **kwargs).arun()

    def run(self, task: str, **kwargs: Any) -> Result:
        """Run a new session of this recipe on ``task`` to its end or a pause, and return its
        result: ``agent.session(task, **kwargs).run()``. Blocks; inside an event loop, use
        ``arun``.

        Args:
            task: What the agent is asked to do: the first user message the model sees.
            **kwargs: Those of ``session`` (``budget``, ``user_id``, ``tenant_id``, ``roles``,
                ``context``, ``session_id``, ``metadata``, ``request``, ``thread``).

        Returns:
            The run's ``Result``: its ``output``, ``stop_reason``, ``spend`` and
            ``trajectory``. A run stopped by a budget, a denial or a pause for approval
            returns too (``result.finished`` is then False); nothing it did is lost.
        """
        return self.session(task, **kwargs).run()


class _RecipeApprovals(StoredApprovals):
    """The approvals a recipe given none derives: its journal's store, its tenant's scope.
    Marked, so that a recipe made from it with ``dataclasses.replace`` (another store, another
    tenant) derives its own again instead of keeping these as if they had been given."""


