"""The root of every exception class tether defines: a caller writes ``except tether.TetherError``.

Decision (drawn as httpx's ``_exceptions.py`` is): one root, split in two by what the caller
does next. A ``UsageError`` is a recipe, policy, tool definition or configuration that cannot
work: nothing ran, and the fix is in the caller's code or files. A ``RunError`` is a run (or a
request to it) that stopped or was refused: the recipe is sound, the world was not (a model or
server failed, a store is unavailable, a journal does not verify, a credential was refused).
Each class stays in the module that raises it and keeps the built-in base callers catch it by
(``class PolicyLoadError(UsageError, ValueError)``), so no existing ``except ValueError`` breaks.

This module imports nothing from tether: every floor may import it. Not yet under it: plain
argument checks that raise a bare ``ValueError`` or ``TypeError`` (docs/guide/errors.md).

The hierarchy::

    TetherError
    ├── UsageError
    │   ├── AmbiguousId                       (cli.common)
    │   ├── BadReference                      (references)
    │   ├── ExportFormatError                 (journal.views.export)
    │   ├── JournalValueError                 (journal.chain)
    │   ├── KeyMismatch                       (journal.fingerprints)
    │   ├── NestedRunError                    (integrations.nesting)
    │   ├── PolicyLoadError ─ OverlayError    (policy.yaml_source, policy.overlay)
    │   ├── PolicyNameError                   (policy.names)
    │   ├── RetrievalError ─ IndexRefused     (knowledge.retrieval, knowledge.index)
    │   ├── SuiteError                        (evals.tasks)
    │   └── ToolDefinitionError               (tools.decorator)
    └── RunError
        ├── ApprovalError                     (runtime.approvals.requests)
        ├── CredentialError                   (credentials.errors)
        ├── ErasureRefused                    (journal.erasure)
        ├── HiddenNotRecalled                 (runtime.provenance.recalled)
        ├── JournalTampered, RecipeChanged, SessionEnded   (runtime.lifecycle.session)
        ├── ThreadTampered                    (runtime.lifecycle.thread)
        ├── MCPError                          (mcp.errors)
        │   ├── MCPConnectionError ─ UpstreamLost
        │   ├── MCPToolBlocked, MCPToolError, PinError
        ├── ModelError ─ CallCancelled, ProviderError   (models.base, models.errors)
        ├── PlanningError                     (reasoning.planner)
        ├── RunStopped ─ AgentsRunStopped     (integrations.governed, .openai_agents)
        ├── SessionRefused, AlreadyQueued     (durable.dbos)
        ├── StoreError                        (store.base)
        │   ├── ConflictError, SchemaError
        │   ├── SessionBusy ─ SessionMoved
        │   └── StoreUnavailable ─ StoreFull
        ├── ToolArgumentError, ToolFailure ─ ArgumentsChanged   (tools.base, integrations)
        ├── CalculatorError, CallerCannot, TooMuchBinary        (tools)
        └── internal signals that never leave tether: BranchRefused, Rejected, Refused,
            AttemptOver, ClientExpired, Unanswered, and the private _Failed, _Spent, _Unmetered

Not in the tree: ``tether.runtime.accounting.stop.Stop``, the budget stop, is a ``BaseException`` so
that no ``except Exception`` in a tool, a strategy or a foreign framework can swallow it; it is a
control-flow signal, never an error a caller handles.
"""

from __future__ import annotations

__all__ = ["RunError", "TetherError", "UsageError"]


class TetherError(Exception):
    """Base of every error tether raises; the message says what went wrong and what to do."""


class UsageError(TetherError):
    """A recipe, policy, tool definition or configuration that cannot work: nothing ran; fix
    the code or file the message names."""


class RunError(TetherError):
    """A run, or a request to one, that stopped or was refused: the recipe is sound, but a
    model, server, store, journal or credential was not; the message says what to do."""
