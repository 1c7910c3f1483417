"""A policy decides within a deadline, or the call is denied.

Why: a policy is code the operator installs, and it may ask something slow — a remote authz
service, a database — that can hang. A hung policy must not hang the run, nor keep the
interpreter from exiting: past its deadline the call is denied, saying so.

Decision: a policy that may block runs on a daemon thread, and the caller waits for it at most
until the deadline (the thread is abandoned if it never answers). Whatever ends the thread
without a decision — an exception, even ``SystemExit`` or ``KeyboardInterrupt`` — is a denial
naming it, at once. Starting a thread costs tens of microseconds, so policies known not to block
decide inline, on the caller's thread: tether's own (``AllowAll``, ``YamlPolicy``, the presets,
and the combinators when every member is inline) and any policy whose author declares
``inline = True`` — a promise that it does no I/O and returns promptly, which tether cannot
check. Everything else is treated as possibly blocking.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any

from tether.policy.base import (
    Action,
    Context,
    Decision,
    Effect,
    Policy,
    Resource,
    Subject,
    decide,
    policy_id_of,
)

DEFAULT_POLICY_TIMEOUT = 5.0  # seconds a policy may take before the call is denied


def runs_inline(policy: object) -> bool:
    """Whether ``policy`` decides on the caller's thread: it says ``inline`` (a combinator says
    so when all its members do)."""
    return bool(getattr(policy, "inline", False))


def decide_within(policy: Policy, timeout: float | None, subject: Subject, action: Action,
                  resource: Resource, context: Context, *, inline: bool) -> Decision:
    """``decide`` (fail closed), bounded by ``timeout`` seconds unless the policy is ``inline``
    or there is no timeout; past it, DENY with that reason."""
    if inline or timeout is None:
        return decide(policy, subject, action, resource, context)
    answer: list[Decision] = []
    done = threading.Event()
    run = contextvars.copy_context().run  # the policy sees the caller's context variables

    def work() -> None:
        try:
            answer.append(run(decide, policy, subject, action, resource, context))
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: they end this thread,
            # not the process; the call is denied, saying what happened
            answer.append(Decision(Effect.DENY, f"the policy raised {type(exc).__name__} ("
                                   f"{exc}) instead of deciding; denied", policy_id_of(policy)))
        finally:
            done.set()

    threading.Thread(target=work, name="tether-policy", daemon=True).start()
    if not done.wait(max(timeout, 0.0)):
        return Decision(Effect.DENY, f"the policy did not decide within {timeout:.3g}s; denied "
                        "(a policy that does I/O must answer within Agent(policy_timeout=...))",
                        policy_id_of(policy))
    return answer[0]  # set before ``done``, whatever the policy did


def members_inline(*members: Any) -> bool:
    """``inline`` for a combinator: true when every member decides inline."""
    return all(runs_inline(m) for m in members)
