"""The CLI's telemetry: what the standard OpenTelemetry environment asks for.

Why: ``tether run``, ``resume``, ``mcp serve`` and ``mcp proxy`` run in deployments whose
collector is named the way OpenTelemetry names it (``OTEL_EXPORTER_OTLP_ENDPOINT``) and whose
SIEM reads a file or a syslog port (``TETHER_SIEM_PATH``, ``TETHER_SIEM_SYSLOG``); they should
report there with no flag of their own. Decision: only when such a variable is set is
``tether.observe`` imported at all (a CLI without telemetry pays nothing), the sinks are made
once per process and flushed when it exits, so a short command's spans are not lost — for
at most ``EXIT_TIMEOUT`` seconds in all, so a collector that never answers cannot hold the
command's exit (what is unsent then is lost, as with a collector that is down).
"""

from __future__ import annotations

import atexit
import dataclasses
import os
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

from tether.types import Event

if TYPE_CHECKING:
    from tether.runtime.lifecycle.agent import Agent

EXIT_TIMEOUT = 5.0  # seconds the exit flush may take, in total
ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
             "TETHER_SIEM_PATH", "TETHER_SIEM_SYSLOG")


@cache
def environment_sinks() -> tuple[Callable[[Event], object], ...]:
    """The sinks the environment configures (none without an OTLP endpoint or a SIEM
    destination), closed at exit."""
    if not any(os.environ.get(name) for name in ENDPOINTS):
        return ()
    from tether.observe import configure

    telemetry = configure()
    atexit.register(telemetry.close, EXIT_TIMEOUT)
    return telemetry.sinks


def with_environment_telemetry(agent: Agent) -> Agent:
    """``agent`` with the environment's sinks added to its own."""
    sinks = environment_sinks()
    if not sinks:
        return agent
    return dataclasses.replace(agent, telemetry=(*agent.telemetry, *sinks))
