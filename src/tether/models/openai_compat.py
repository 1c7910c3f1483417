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
cancelled non-streamed request runs to its end there.

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

from tether.models.errors import ErrorKind, ProviderError
from tether.types import TOOL_CHOICES


@dataclass(frozen=True, slots=True)
class Compat:
    name: str
    cap_fields: tuple[str, ...]  # the request fields that carry the output cap
    tool_choice: str | None = None  # sent with tools when the run asks for no choice
    knows_required: bool = True  # whether the server accepts tool_choice "required"


PROFILES = {profile.name: profile for profile in (
    Compat("openai", ("max_completion_tokens",)),
    Compat("llama.cpp", ("max_tokens",), tool_choice="auto", knows_required=False),
    Compat("vllm", ("max_completion_tokens", "max_tokens")),
    Compat("ollama", ("max_tokens",)),
    Compat("generic", ("max_completion_tokens", "max_tokens")),
)}


def profile(compat: str, base_url: str | None) -> Compat:
    """The profile ``compat`` names; ``"auto"``: OpenAI's for its own API, else generic."""
    if compat == "auto":
        official = base_url is None or "api.openai.com" in base_url
        return PROFILES["openai" if official else "generic"]
    if compat not in PROFILES:
        raise ValueError(f"compat={compat!r} is not a known server kind; use one of "
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
