"""An AgentDojo suite as tether sees it: its tools as tether tools, its environments, a call's key.

Why a module of its own: the harness (``tether.evals.agentdojo``) runs the pairs and offers the
adaptive attacks (``tether.evals.agentdojo.adaptive``), which build their injections on the same
tools and environments. Kept in the package's face, these pieces would make the harness and the
attacks import each other; here both stand on them. Decisions (the reviewed overlays, one parse
of a suite's YAML) are the harness's, stated in its docstring.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from tether.errors import MissingExtra, install_command
from tether.tools.base import ToolArgumentError, ToolContext, ToolFailure, ToolMeta
from tether.types import ToolSpec


def _agentdojo() -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import agentdojo.task_suite as task_suite
    except ImportError:
        raise MissingExtra("the AgentDojo benchmark needs its extra: "
                          f"{install_command('agentdojo')}") from None
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

    def __init__(self, suite: Any, overlay: Any = None) -> None:
        """``overlay``: the suite's reviewed metadata (``overlay_for``, when None)."""
        import yaml
        from agentdojo.attacks import FixedJailbreakAttack
        from agentdojo.attacks.important_instructions_attacks import ImportantInstructionsAttack
        from agentdojo.task_suite.task_suite import read_suite_file

        self.suite = suite
        self.overlay = overlay_for(suite.name) if overlay is None else overlay
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
