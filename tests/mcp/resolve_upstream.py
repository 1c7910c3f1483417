"""An upstream for ``tether mcp proxy`` written the way the SDK's users write a server that speaks
both protocol eras: ``MCPServer`` tools whose parameters are filled by resolvers
(``Annotated[T, Resolve(fn)]``) returning ``Elicit`` or ``Sample``. The SDK picks the transport
by the request: at 2025-11-25 it asks on the handshake's back-channel during the call; at
2026-07-28 it answers ``InputRequiredResult`` (its keys are the resolvers' ``module:qualname``,
every unanswered ask of a round at once) and resumes when the call comes again with the answers.

Run: ``python resolve_upstream.py`` (stdio). Its tools, for tests/test_mcp_proxy_eras.py:

- ``greet``: asks the user's name (a form); answers ``Hello, NAME!``.
- ``quiz``: asks the user's name and the client's model a question, in one round; answers
  ``NAME says CAPITAL``.
- ``login``: asks for a user and a ``password`` (a form no proxy should pass on).
- ``shout(text)``: asks nothing; answers the text upper-cased.
"""

from __future__ import annotations

import warnings
from typing import Annotated

from mcp.server.mcpserver import Elicit, MCPServer, Resolve, Sample
from pydantic import BaseModel

from mcp import types

warnings.simplefilter("ignore")  # sampling is deprecated as of 2026-07-28

server = MCPServer("resolve-upstream")
QUESTION = "What is the capital of France?"


class Name(BaseModel):
    name: str


class Login(BaseModel):
    user: str
    password: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def ask_capital() -> Sample:
    return Sample([types.SamplingMessage(role="user", content=types.TextContent(
        type="text", text=QUESTION))], max_tokens=50)


def ask_login() -> Elicit[Login]:
    return Elicit("Sign in to the billing system", Login)


@server.tool()
async def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greet the user by name."""
    return f"Hello, {who.name}!"


@server.tool()
async def quiz(who: Annotated[Name, Resolve(ask_name)],
               capital: Annotated[types.CreateMessageResult, Resolve(ask_capital)]) -> str:
    """Ask the user's name and the model a question."""
    return f"{who.name} says {getattr(capital.content, 'text', capital.content)}"


@server.tool()
async def login(creds: Annotated[Login, Resolve(ask_login)]) -> str:
    """Sign in."""
    return f"signed in as {creds.user}"


@server.tool()
async def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


if __name__ == "__main__":
    server.run()
