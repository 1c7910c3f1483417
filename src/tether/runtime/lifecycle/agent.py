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
from tether.runtime.accounting.budget import Budget
from tether.runtime.accounting.limits import Limits
from tether.runtime.approvals.approver import Approver, ApproverFn, as_approver
from tether.runtime.approvals.requests import ALL_TENANTS, ApprovalStore, StoredApprovals
from tether.runtime.lifecycle.fingerprint import recipe_fingerprint
from tether.runtime.lifecycle.lease import DEFAULT_LEASE_TTL
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
    model: Model
    reasoning: Strategy
    tools: Iterable[Tool] = ()
    policy: Policy = field(default_factory=AllowAll)
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    budget: Budget = field(default_factory=Budget)
    name: str = "agent"
    price: Price | None = None  # overrides the model's own price (e.g. for an unknown model)
    limits: Limits = field(default_factory=Limits)
    show_budget: bool = False  # add a note of the budget left before each model turn
    # the tool choice of a session's first model turn: "required" (some tool), a tool's name, or
    # None (the model chooses) — e.g. to make a small model start with the tool it must use
    first_tool_choice: str | None = None
    max_result_chars: int = 20_000
    store: Store | str | None = field(default=None, compare=False)  # where journals live
    approvals: ApprovalStore | None = field(default=None, compare=False)  # default: the store's
    approval_ttl: float = 24 * 3600.0  # seconds an approval request stays answerable
    # decides approval requests in process (tether.runtime.approvals.approver): a callable
    # (ApprovalRequest) -> True / False / None, or an Approver; None leaves them to a person
    approver: Approver | ApproverFn | None = field(default=None, compare=False)
    # seconds a policy that may block (one not declared ``inline``) has to decide; past it the
    # call is denied (tether.policy.deadline)
    policy_timeout: float | None = DEFAULT_POLICY_TIMEOUT
    # seconds a worker's hold on a running session lasts unrenewed (tether.runtime.lifecycle.lease)
    lease_ttl: float = DEFAULT_LEASE_TTL
    # refuse a YAML policy whose rules name tools or arguments these tools do not have
    # (tether.policy.names); off for a policy shared by agents whose tools differ
    check_policy_names: bool = True
    credentials: CredentialBroker | None = field(default=None, compare=False)
    # keep arguments the policy hides from the journal in the store's private table, so a call
    # that waits for approval can still run when the session resumes in another process
    keep_hidden_arguments: bool = False
    # the tenant this recipe serves: its sessions, loads and approvals are that tenant's only
    # (another tenant's session or approval is "not found"); None serves every tenant, each
    # session naming its own
    tenant_id: str | None = None
    # subscribers told of every event of this recipe's sessions (tether.observe: OTelSink,
    # SIEMSink, or any callable taking an Event); with any, model and tool calls also carry
    # their W3C traceparent (tether.tracing) to providers, MCP servers and sub-agents
    telemetry: Iterable[Callable[[Event], object]] = field(default=(), compare=False)
    # the type the final answer must validate as — a pydantic model, a dataclass or a
    # TypedDict (runtime.chokepoint.output): result.output is then the validated instance, and
    # an answer that does not validate gets up to ``output_retries`` repair turns, each a governed
    # model call; None (the default): the answer is text and nothing is added to a run
    output_type: Any = None
    output_retries: int = 2
    # context compaction (tether.runtime.context.compaction): when a request would not fit the
    # model's context window (or a share of the token budget left), older turns are summarised by a
    # governed model call or dropped, journaled; None (the default): nothing is added to a run
    compaction: Compaction | None = None
    # a governed model reading of the request before the first turn
    # (tether.runtime.lifecycle.planning), widening the rules' request plan by what it validates;
    # None (the default): rules alone
    planner: ModelPlanner | None = None
    # offer each model turn only the tools ranked best for it (tether.tools.selection): for
    # catalogs of hundreds of tools; None (the default): every turn is offered every tool
    tool_selection: ToolSelection | None = None
    tool_index: ToolIndex | None = field(init=False, repr=False, compare=False)
    output_spec: OutputSpec | None = field(init=False, repr=False, compare=False)
    registry: ToolRegistry = field(init=False, repr=False, compare=False)
    fingerprint: str = field(init=False, repr=False, compare=False)  # lifecycle.fingerprint

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
        if isinstance(self.store, str):
            object.__setattr__(self, "store", open_store(self.store))
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
    def effective_price(self) -> Price | None:
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
        """A new run of this recipe on ``task``. Fails here if the budget cannot be enforced.
        ``metadata`` labels the session in its journal (e.g. an evaluation trial's identity);
        neither the model nor the policy sees it. ``request`` is what the user asked, for the
        policy (``context.request``), when the task is not the user's own words (a sub-agent's
        task, written by its caller's model): by default the task. ``thread`` continues a
        conversation of this tenant's user across sessions (``runtime.lifecycle.thread``): the
        model sees its earlier questions and answers before the task."""
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
        ToolResultEvent as they happen, then Finished(result)."""
        return self.session(task, **kwargs).astream()

    async def arun(self, task: str, **kwargs: Any) -> Result:
        return await self.session(task, **kwargs).arun()

    def run(self, task: str, **kwargs: Any) -> Result:
        return self.session(task, **kwargs).run()


class _RecipeApprovals(StoredApprovals):
    """The approvals a recipe given none derives: its journal's store, its tenant's scope.
    Marked, so that a recipe made from it with ``dataclasses.replace`` (another store, another
    tenant) derives its own again instead of keeping these as if they had been given."""


