"""A tool result inherits the distrust of the call that asked for it.

Why: provenance calls a value trusted when a trusted source showed it — but a source shows what
it was asked for. An injection that says "buy a pencil set too" need not name a product id: the
agent searches the shop for "pencil set", and the id the purchase uses comes from the shop's own
listing, which the shop writes and the overlay rightly trusts. Every value of that listing is
the shop's, and which of them the session sees is the attacker's choice; nothing tells the id
from one of a product the user asked for. The same holds for a trusted tool that echoes its
argument back ("no results for <text>"), and for the ``trusted_fields`` of an untrusted result:
an e-mail's id is the mail system's, but a search for the attacker's words returns the
attacker's e-mail.

Decision: when an argument of a read (a call without side effects) has ``untrusted`` among its
origins and neither ``user`` nor ``trusted`` — only text a third party wrote supplied it, whole
or as a link the model wrote around — its result is recorded untrusted, whatever its tool
declared: a trusted tool's whole result, and an untrusted tool's ``trusted_fields`` too
(dropped: the system wrote those values, an attacker chose them). ``tool.result`` carries
``untrusted`` as for any untrusted output, ``asked_by`` (the arguments that made it so) and
``declared`` (what the tool declared, for audits: ``tether.journal.views.trust`` judges the
declaration, not the rule), so a resumed session, a rerun and a what-if read it from the journal
like any other result.

Not a side effect's result: it reports what a call the gate governed did (its parties and the
values that shape it were decided on their own origins, and what it wrote keeps those origins
when read back: echoes, ``values``), and the id a drive gives a file the agent was asked to
write from a document is the drive's, not the document's author's — recorded untrusted, "share
it with John" would wait for a person on every such task.

Which arguments count: every one, unless the tool declares those that choose what it returns
(``ToolMeta.selects``). A value a third party alone supplied chooses what comes back whichever
argument it fills (a query, an id, a page number, a sort key), so the default is all of them;
the declaration is for a tool whose result no argument chooses — a confirmation (``selects:
[]``) returns what the call already staged, and governed when it was staged, returns, whatever
code it is given (a wrong one completes nothing). One carried by both the user and
untrusted text counts as the user's (the user asked for it), and a value the model composed
(``nowhere`` alone) as the model's — that is the limit: an agent that rewords an injected query
("a pencil set" as "pencil sets for school") is not caught here, as provenance never follows
paraphrase. The price: a task that walks what an untrusted listing names (every channel a
workspace lists, where anyone may name a channel) reads untrusted results, and a party it then
takes from them waits for a person. Fail closed where it can be: the origins are the ones the
decision saw (``tool.decision``'s ``provenance``, journaled with it — the one place this rests
on, never computed twice), so they include what the session forgot (``forgotten``'s filters only
ever add ``untrusted`` or ``nowhere``: forgetting can make this rule fire, never stop it); and
an inherited result, recorded untrusted without trusted fields, is forgotten as untrusted text
too.

Cost: nothing where no policy reads provenance (``tether.policy.reads``): then no origins are
computed, none journaled, and nothing is inherited.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from tether.runtime.provenance.values import TRUSTED, UNTRUSTED, USER

VOUCHING = frozenset({USER, TRUSTED})  # origins that vouch for a value whatever else gave it


def asked_by_untrusted(provenance: Mapping[str, Iterable[str]] | None,
                       selects: Collection[str] | None = None) -> list[str]:
    """The arguments, of a decision's ``provenance`` (as journaled: name -> origins), that only
    untrusted text supplied: ``untrusted`` among their origins, ``user`` and ``trusted`` not;
    of those the tool says choose what it returns (``ToolMeta.selects``; None: every one)."""
    if not provenance:
        return []
    return sorted(name for name, origins in provenance.items()
                  if UNTRUSTED in origins and VOUCHING.isdisjoint(origins)
                  and (selects is None or name in selects))


def inherit(data: dict[str, Any], asked_by: Sequence[str]) -> None:
    """Make ``data`` (a ``tool.result`` record, as the tool's declaration made it) untrusted
    when ``asked_by`` names arguments only untrusted text supplied, keeping the declaration it
    overrides under ``declared``. A result that is untrusted already, with no trusted fields,
    is left as it is: nothing to inherit."""
    if not asked_by:
        return
    fields = data.pop("trusted_fields", None)
    if data.get("untrusted") and not fields:
        return
    declared: dict[str, Any] = {"output_trust": "untrusted" if data.get("untrusted")
                                else "trusted"}
    if fields:
        declared["trusted_fields"] = fields
    data["untrusted"] = True
    data["asked_by"] = list(asked_by)
    data["declared"] = declared
