"""The root of every exception class tether defines: a caller writes ``except tether.TetherError``.

Decision (drawn as httpx's ``_exceptions.py`` is): one root, split in two by what the caller
does next. A ``UsageError`` is a recipe, policy, tool definition, argument or configuration that
cannot work: nothing ran, and the fix is in the caller's code or files. A ``RunError`` is a run
(or a request to it) that stopped or was refused: the recipe is sound, the world was not (a model
or server failed, a store is unavailable, a journal does not verify, a credential was refused).
Each class stays in the module that raises it and keeps the built-in base callers catch it by
(``class PolicyLoadError(UsageError, ValueError)``), so no existing ``except ValueError`` breaks.

The plain checks (an argument out of range, an object of the wrong type, a call made where it
cannot work, an id that names nothing, an extra not installed) raise the few general classes
defined here, one per built-in they used to raise, so tether raises no bare built-in exception.
A test walks every ``raise`` in the package and holds it to that (tests/test_error_tree.py).
This module imports nothing from tether: every floor may import it.

The hierarchy::

    TetherError
    ├── UsageError
    │   ├── InvalidArgument (ValueError)      here: a value that cannot work
    │   ├── WrongType (TypeError)             here: an object of the wrong kind
    │   ├── WrongState (RuntimeError)         here: a call made where or when it cannot work
    │   ├── NotFound (LookupError)            here: an id that names nothing stored
    │   ├── MissingExtra (ImportError) ─ PlannerMissing (reasoning.planner)
    │   ├── MissingFile (FileNotFoundError)   here: a file tether needs is not there
    │   ├── AmbiguousId                       (cli.common)
    │   ├── BadReference                      (references)
    │   ├── ExportFormatError                 (journal.views.export)
    │   ├── JournalValueError                 (journal.canonical)
    │   ├── KeyFileError (ValueError)         (journal.note)
    │   ├── KeyMismatch                       (journal.fingerprints)
    │   ├── NestedRunError                    (integrations.nesting)
    │   ├── PolicyLoadError ─ OverlayError    (policy.yaml_source, policy.overlay)
    │   ├── PolicyNameError                   (policy.names)
    │   ├── RetrievalError ─ IndexRefused     (knowledge.retrieval, knowledge.index)
    │   ├── SuiteError                        (evals.tasks)
    │   └── ToolDefinitionError               (tools.decorator)
    └── RunError
        ├── RunFailed (RuntimeError)          here: a process or step a run needs failed
        ├── BadData (ValueError)              here: a journal or an answer that does not hold
        │   └── NoteInvalid                   (journal.note)
        ├── Unreachable (OSError) ─ TimedOut (TimeoutError)   here: nothing took it in time
        ├── AcsRefused                        (serve.acs.wire: an ACS request refused on the wire)
        ├── ApprovalError ─ ApprovalRefused, ApprovalNotFound   (runtime.approvals)
        ├── CredentialError                   (credentials.errors)
        ├── ErasureRefused                    (journal.erasure)
        ├── HiddenNotRecalled                 (runtime.provenance.recalled)
        ├── JournalTampered, RecipeChanged, SessionEnded   (runtime.lifecycle.session)
        ├── ThreadTampered                    (runtime.lifecycle.thread)
        ├── MCPError                          (mcp.errors)
        │   ├── MCPConnectionError ─ UpstreamLost
        │   ├── MCPCapabilityMissing, MCPToolBlocked, MCPToolError, PinError
        ├── ModelError ─ CallCancelled, ProviderError   (models.base, models.errors)
        ├── PlanningError                     (reasoning.planner)
        ├── RunStopped ─ AgentsRunStopped     (integrations.governed, .openai_agents)
        ├── SessionRefused, AlreadyQueued     (durable.dbos)
        ├── StoreError                        (store.base)
        │   ├── ConflictError, SchemaError
        │   ├── SessionBusy ─ SessionMoved
        │   ├── Halted                        (store.halts: a halt stands over the session)
        │   └── StoreUnavailable ─ StoreFull
        ├── WitnessRefused, Inconsistent      (serve.witness)
        ├── ToolArgumentError, ToolFailure ─ ArgumentsChanged   (tools.base, integrations)
        ├── CalculatorError, CallerCannot ─ InputNeeded, TooMuchBinary   (tools)
        └── internal signals that never leave tether: BranchRefused, Rejected, Refused,
            AttemptOver, ClientExpired, Unanswered, and the private _Failed, _Spent, _Unmetered

Not in the tree: ``tether.runtime.accounting.stop.Stop``, the budget stop, is a ``BaseException`` so
that no ``except Exception`` in a tool, a strategy or a foreign framework can swallow it; it is a
control-flow signal, never an error a caller handles; likewise ``tether.tools.inline.Deadline``,
raised inside a sync tool running in place when its timeout is up, and never seen outside the
tool. And the few built-ins a Python protocol
asks for by name, each kept where the protocol needs it:

- ``AttributeError`` from a module's ``__getattr__`` (``tether._lazy``) and from an immutable
  object's ``__setattr__``/``__delattr__`` (``Secret``): ``hasattr``, ``getattr(..., default)``
  and ``copy`` read that exact type as "no such attribute" / "cannot be set";
- ``asyncio.CancelledError`` re-raised for a task asked to stop: asyncio's cancellation protocol;
- ``KeyboardInterrupt`` raised by the SIGTERM handlers of ``tether mcp serve`` and ``tether
  console``: it stops the server the way Ctrl-C does, through the same ``finally`` blocks;
- Starlette's ``HTTPException`` from the console's pages (``tether.web``): its answer with an
  HTTP status, a 404 for a session or report the viewer may not see;
- ``SystemExit`` in ``python -m tether``: the exit status of the process;
- ``IndexError`` from a snapshot's ``__getitem__`` (``tether._snapshots``, a request's
  messages): the sequence protocol's "out of range", which iteration and ``index`` stop on;
- ``argparse.ArgumentTypeError`` from the command line's argument types: argparse turns it
  into a usage message; and pydantic-ai's ``ApprovalRequired``, its own pause for an approval,
  which its agent loop catches.
"""

from __future__ import annotations

__all__ = [
    "BadData",
    "InvalidArgument",
    "MissingExtra",
    "MissingFile",
    "NotFound",
    "RunError",
    "RunFailed",
    "TetherError",
    "TimedOut",
    "Unreachable",
    "UsageError",
    "WrongState",
    "WrongType",
]


class TetherError(Exception):
    """Base of every error tether raises; the message says what went wrong and what to do."""


class UsageError(TetherError):
    """A recipe, policy, tool definition or configuration that cannot work: nothing ran; fix
    the code or file the message names."""


class RunError(TetherError):
    """A run, or a request to one, that stopped or was refused: the recipe is sound, but a
    model, server, store, journal or credential was not; the message says what to do."""


class InvalidArgument(UsageError, ValueError):
    """An argument, option or value that cannot work (a negative budget, an unknown name, two
    options that exclude each other): give the value the message asks for."""


class WrongType(UsageError, TypeError):
    """An object of the wrong kind where tether needs a specific one (a model that is not a
    tether Model, a string where a list goes), or one that cannot be pickled: pass what the
    message names."""


class WrongState(UsageError, RuntimeError):
    """A call made where or when it cannot work: on something closed, already running or not
    started, from inside a running event loop, without the store it needs; the message says
    what to call instead."""


class NotFound(UsageError, LookupError):
    """An id (a session, a run, an approval request) that names nothing stored: check the id,
    or list what there is as the message says."""


class MissingExtra(UsageError, ImportError):
    """An optional extra that is not installed: ``pip install`` what the message names."""


def install_command(extra: str) -> str:
    """The one command that installs ``extra``, for every message that names one: tether is
    installed from its checkout, not from a package index, so ``pip install 'tether[x]'`` would
    fail where this works."""
    return f"pip install -e '.[{extra}]' in tether's checkout"


class MissingFile(UsageError, FileNotFoundError):
    """A file tether needs (a model's weights, the redaction key) is not there and could not be
    made: install or set what the message names."""


class RunFailed(RunError, RuntimeError):
    """A process or step the run depends on failed (a local model server exited, a trial was
    never graded, a rerun left its record): the message says where to look."""


class BadData(RunError, ValueError):
    """Data read while running does not hold together (a journal whose hash chain breaks, a
    provider's answer without a choice): nothing is done with it."""


class Unreachable(RunError, OSError):
    """Something tether sends to or waits on would not take it (a syslog datagram too large for
    UDP): the message says which transport or setting to use."""


class TimedOut(Unreachable, TimeoutError):
    """Something tether waited on did not answer in time (a local model server, a call on the
    MCP connection's loop)."""
