"""What each kind of OpenAI-compatible server reads, as seen against the real servers.

Why: "OpenAI-compatible" servers differ exactly where it costs. llama.cpp's server (llama-cpp-
python 0.3.36) ignores ``max_completion_tokens`` — a 5-token cap produced 1,233 tokens — reads
``max_tokens``, offers the tools to the model only when ``tool_choice`` is sent, and sends no
usage in a stream. vLLM reads both cap fields (``max_completion_tokens`` first). Ollama reads
``max_tokens`` and ignores ``tool_choice``. OpenAI's own API wants ``max_completion_tokens`` (its
reasoning models refuse ``max_tokens``). llama.cpp's server (``chatml-function-calling``) takes
``tool_choice`` ``"auto"``, ``"none"`` or a named function; ``"required"`` fails an assertion
there and comes back as HTTP 500. Its ``"auto"`` path generates with no cap at all
(``max_tokens=None`` inside the handler), so with tools offered the cap is not kept: an answer
past it is caught as an overrun. It notices a closed connection only while streaming: a
cancelled non-streamed request runs to its end there. For an output schema, OpenAI and vLLM take
``response_format`` ``json_schema`` (strict when the schema allows it); llama.cpp's server takes
``{"type": "json_object", "schema": ...}`` and turns it into a grammar — in its
``chatml-function-calling`` handler only when no tool is offered (with ``tool_choice`` "auto" it
ignores the format), so with tools the schema goes to the model as instructions instead. Ollama and
servers of unknown kind get instructions: validation and repair turns hold the line everywhere.

Decision: a profile per server kind names the fields that carry the output cap and the
``tool_choice`` to send with tools when the run asks for none, and whether the server knows
``"required"``: where it does not, ``"required"`` with one tool is sent as that tool's name (the
same demand: a call of that tool), and with several it is refused before anything is sent — the
server has no way to demand "some tool", and quietly sending ``"auto"`` would let the model
answer without one. A server of unknown kind (any
``base_url`` without ``compat=``) gets the cap in both fields, which every server above accepts.
Whatever a server does with the cap, an answer past it is an overrun that stops the run — the
runtime checks the reported usage, not the server's good faith.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tether.errors import InvalidArgument
from tether.models.errors import ErrorKind, ProviderError
from tether.types import TOOL_CHOICES


@dataclass(frozen=True, slots=True)
class Compat:
    name: str
    cap_fields: tuple[str, ...]  # the request fields that carry the output cap
    tool_choice: str | None = None  # sent with tools when the run asks for no choice
    knows_required: bool = True  # whether the server accepts tool_choice "required"
    # how the server takes an output schema (openai_format.response_format): "json_schema"
    # (OpenAI's strict structured outputs), "json_object" (llama.cpp: a JSON-schema grammar,
    # applied only to a request without tools), None (none: instructions and validation)
    output: str | None = None

    def native_output(self, tools: bool) -> bool:
        """Whether the server makes an answer follow the schema (with tools: ``tools``)."""
        return self.output == "json_schema" or (self.output == "json_object" and not tools)


PROFILES = {profile.name: profile for profile in (
    Compat("openai", ("max_completion_tokens",), output="json_schema"),
    Compat("llama.cpp", ("max_tokens",), tool_choice="auto", knows_required=False,
           output="json_object"),
    Compat("vllm", ("max_completion_tokens", "max_tokens"), output="json_schema"),
    Compat("ollama", ("max_tokens",)),
    Compat("generic", ("max_completion_tokens", "max_tokens")),
)}


def profile(compat: str, base_url: str | None) -> Compat:
    """The profile ``compat`` names; ``"auto"``: OpenAI's for its own API, else generic."""
    if compat == "auto":
        official = base_url is None or "api.openai.com" in base_url
        return PROFILES["openai" if official else "generic"]
    if compat not in PROFILES:
        raise InvalidArgument(f"compat={compat!r} is not a known server kind; use one of "
                              f"{', '.join(['auto', *PROFILES])}")
    return PROFILES[compat]


def tool_choice(choice: str, compat: Compat, tool_names: Sequence[str],
                provider: str) -> Any:
    """A tether tool choice in Chat Completions' shape, as ``compat``'s server accepts it."""
    if choice == "required" and not compat.knows_required:
        if len(tool_names) != 1:
            raise ProviderError(
                f"{compat.name}'s server does not accept tool_choice 'required' and cannot be "
                f"made to call one of several tools ({', '.join(tool_names)}); name the tool, "
                "e.g. Agent(first_tool_choice=" f"{tool_names[0]!r}), or offer only one tool",
                provider=provider, kind=ErrorKind.BAD_REQUEST)
        choice = tool_names[0]
    if choice in TOOL_CHOICES:
        return choice
    return {"type": "function", "function": {"name": choice}}
