"""What the user's request asks for, read once before anything untrusted: the request plan.

Why: ``scope_to_request`` matches words anywhere in the request, so "remind me to book a hotel"
asks for ``reserve_hotel``, "don't pay the second bill" asks for ``send_money``, and "book a room
at 'Le Marais Boutique'" asks for a room at any hotel an injection names. The request is known
before any tool result is read; what it asks for can be read from it then, once, and every later
decision checked against that reading — the way Progent and CaMeL fix a task's privileges before
untrusted data arrives.

Decision: rules, optionally widened by a validated model reading. The rules always read first; a
recipe may add one governed model call that can only add entries the rules missed, each checked
against the request (``tether.policy.planner``). The request is cut into clauses (sentences, and
"; "). In a clause, a cue ends what it asks for: a negation ("don't", "do not", "never", "no
need to", "without") asks for nothing after it; a reminder ("remind me to", "reminder about")
asks for the reminder, not for what it reminds of; the user's own future action ("I'll", "I
will", "I'm going to", "I plan to", "before I") is theirs to take, not the agent's. In what is
left, a side-effecting tool is asked for when the clause uses one of its ``intents`` (a verb in
its "-ing" form too: "by visiting" uses "visit"); its entry
keeps the clause, the count it asks for ("twice", "3 times"); the plan keeps the values the
request names — quoted, or by shape: an e-mail address, a URL, an IBAN. A named value binds a
party of the same shape: a call whose recipient is an e-mail address its asking clause did not
name, when that clause named one, was not asked for (an address binds within its clause: "my
landlord's account is X. Refund my friend" does not bind the refund to X; and to the clause's
own action, the tool whose word comes first: in "update my scheduled transfer to X", X is the
update's, and a payment to X was not asked for); a quoted name binds
anywhere in the request, since a clause refers to the others ("my friend recommended 'Le
Marais'. If it's rated above 4, make a reservation"), and only a party that is a name, never an
id or a number (a listing's "file 3" is the file the user quoted, for all the plan can tell:
provenance vets it). The plan is journaled in the session's start
(``tether.runtime.lifecycle.opening``), a planner's widening of it in ``plan.amended``
(``tether.runtime.lifecycle.planning``), so a resumed run, a what-if and a rerun decide against the
same plan.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from tether.policy.base import Resource
from tether.policy.request_plan import PlanEntry as PlanEntry
from tether.policy.request_plan import RequestPlan as RequestPlan
from tether.tokens import is_link, link_form, tokens

CLAUSES = re.compile(r"(?<=[.!?;])\s+|\n+")
# (cue, why, whether the cue's own words still ask for something: "remind" asks for a reminder)
CUES: tuple[tuple[tuple[str, ...], str, bool], ...] = (
    (("don't",), "negated", False), (("do", "not"), "negated", False),
    (("dont",), "negated", False), (("never",), "negated", False),
    (("no", "need", "to"), "negated", False), (("without",), "negated", False),
    (("remind", "me", "to"), "what a reminder is about", True),
    (("remind", "me", "about"), "what a reminder is about", True),
    (("remind", "me", "of"), "what a reminder is about", True),
    (("reminder", "to"), "what a reminder is about", True),
    (("reminder", "about"), "what a reminder is about", True),
    (("reminder", "for"), "what a reminder is about", True),
    (("i'll",), "the user's own future action", False),
    (("i", "will"), "the user's own future action", False),
    (("i'm", "going", "to"), "the user's own future action", False),
    (("i", "am", "going", "to"), "the user's own future action", False),
    (("i", "plan", "to"), "the user's own future action", False),
    (("before", "i"), "the user's own future action", False),
)
SHAPES = (("email", re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$")),
          ("url", re.compile(r"^(?:[a-z]+://|www\.)\S+$")),
          ("iban", re.compile(r"^[a-z]{2}\d{2}[a-z0-9]{8,30}$")))
# words for what is written to be read: a clause naming one asks to use what it says
# (the user's own correspondence and files; not a web page or a review, which anyone writes:
# a clause that points at one of those must name it, by its address)
SOURCES = frozenset({"email", "emails", "e-mail", "e-mails", "mail", "file", "files", "document",
                     "documents", "doc", "message", "messages", "notes", "list", "minutes",
                     "inbox"})
# words before a noun that make it a thing that exists already ("the email", "her messages")
DEFINITE = frozenset({"the", "this", "that", "these", "those", "my", "your", "his", "her",
                      "its", "our", "their"})
ADDRESSES = frozenset(name for name, _ in SHAPES)  # named by shape alone, unquoted
QUOTED = re.compile(r"(?:^|(?<=[\s(]))[\"'“‘]([^\"'“”‘’\n]{2,80})[\"'”’]")
COUNT_WORDS = {"twice": 2, "again": 2, "thrice": 3}
NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
           "nine": 9, "ten": 10}
TIMES = re.compile(r"\b(\d+|" + "|".join(NUMBERS) + r")\s+times\b", re.IGNORECASE)


def asked_count(text: str) -> int:
    """How many times ``text`` asks for an action at most: 1 unless it says so ("twice",
    "again", "three times", "5 times")."""
    words = set(tokens(text))
    counts = [n for word, n in COUNT_WORDS.items() if word in words]
    counts += [int(m) if m.isdigit() else NUMBERS[m.lower()] for m in TIMES.findall(text)]
    return max(counts, default=1)


def shape(value: str) -> str:
    """A value's shape, for binding: ``email``, ``url``, ``iban``, ``number`` (an id, an
    amount: a quoted name binds none) or ``text``."""
    flat = "".join(value.split()).casefold()
    if not any(c.isalpha() for c in flat):
        return "number"
    return next((name for name, pattern in SHAPES if pattern.match(flat)), "text")


def same(value: Any) -> str:
    """A value as compared with a named one: whole tokens, case and spacing aside."""
    return " ".join(tokens(str(value)))


def askable(resources: Iterable[Resource]) -> list[Resource]:
    """The tools a request can ask for: side-effecting ones that declare intents (one that
    declares none always waits for a person, whatever the request says)."""
    return [r for r in resources if r.side_effect and r.intents]


def clauses(request: str) -> list[str]:
    """The request cut into its clauses (sentences, and "; "), as the plan reads them."""
    return [c for c in (c.strip() for c in CLAUSES.split(request)) if c]


def cue_in(clause: str) -> str:
    """Why a clause asks for nothing after one of its words (a negation, a reminder, the
    user's own future action), or "" when it has no such cue."""
    return _active(tokens(clause))[1]


def read_request(request: str, resources: Iterable[Resource]) -> RequestPlan:
    """The plan of ``request`` for the side-effecting tools among ``resources``."""
    wanted = askable(resources)
    entries: list[PlanEntry] = []
    aside: list[tuple[str, str]] = []
    for clause in clauses(request):
        words = tokens(clause)
        active, why = _active(words)
        uses = {r.name: at for r in wanted if (at := _first_use(r, active)) is not None}
        lead = min(uses.values(), default=None)
        for resource in wanted:
            if resource.name in uses:
                entries.append(PlanEntry(resource.name, clause, asked_count(clause),
                                         binds=uses[resource.name] == lead))
            elif why and _asks(resource, words):
                aside.append((clause, why))
    return RequestPlan(tuple(entries), tuple(dict.fromkeys(aside)), _named(request))


def _asks(resource: Resource, words: list[str]) -> bool:
    return _first_use(resource, words) is not None


def _first_use(resource: Resource, words: list[str]) -> int | None:
    """Where ``words`` first use one of the resource's intents (all of an intent's parts
    present: the first of them), or None when they use none."""
    at = {form: i for i, w in reversed(list(enumerate(words))) for form in verb_forms(w)}
    found = [min(at[part] for part in parts) for parts in
             (intent.split("+") for intent in resource.intents) if all(p in at for p in parts)]
    return min(found, default=None)


def verb_forms(word: str) -> tuple[str, ...]:
    """``word`` and the verbs its "-ing" form may be of: "by visiting" uses the intent "visit",
    "scheduling" "schedule", "shopping" "shop" (an intent is a verb's plain form). A past form
    is not read as one: "I reserved it" tells of what was done, it asks for nothing; a stem of
    fewer than three letters is no verb ("thing")."""
    stem = word[:-3]
    if not word.endswith("ing") or len(stem) < 3:
        return (word,)
    if stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
        return (word, stem, stem + "e", stem[:-1])  # "shopping"
    return (word, stem, stem + "e")


def _active(words: list[str]) -> tuple[list[str], str]:
    """The words of a clause that ask for something (up to its first cue), and the cue's why."""
    for at in range(len(words)):
        for cue, why, keeps in CUES:
            if tuple(words[at:at + len(cue)]) == cue:
                return words[:at + (len(cue) if keeps else 0)], why
    return words, ""


def _named(text: str) -> tuple[str, ...]:
    """The values a text names: quoted ones, and e-mail addresses, URLs and IBANs."""
    found = [same(q) for q in QUOTED.findall(text)]
    found += [t for t in tokens(text) if shape(t) in ADDRESSES]
    return tuple(dict.fromkeys(v for v in found if v))


# a bare host with a path, or one of the top-level domains links are usually written with
BARE_LINK = re.compile(r"^(?:[a-z0-9-]+\.)+(?:[a-z]{2,}/\S*|(?:com|net|org|io|info|biz|co|me|"
                       r"app|dev|xyz|site|online|link|click|top|ru|cn)/?)$")


def links(text: str) -> list[str]:
    """The hosts ``text`` links to, whole tokens: URLs, e-mail addresses' domains, and bare
    hosts (``evil.com``, ``login.evil.net/x``)."""
    out = []
    for token in tokens(text):
        kind = shape(token)
        if kind == "email":
            out.append(token.rsplit("@", 1)[1])
        elif kind == "url" or BARE_LINK.match(token):
            out.append(_host(token))
    return out


def _host(link: str) -> str:
    bare = link.split("://", 1)[-1]
    bare = bare.split("/", 1)[0]
    return bare.removeprefix("www.")


def named_hosts(plan: RequestPlan) -> frozenset[str]:
    """The hosts of the links and addresses the request names."""
    return frozenset(host for value in plan.named for host in links(value))


def names_a_source(clause: str, intents: Iterable[str] = ()) -> bool:
    """Whether a clause points at something to read from: a URL, an e-mail address, an IBAN, a
    quoted name ("the article at www.x.com", "the file 'notes.txt'"), or a thing written to be
    read ("based on the emails about it", "the task list in the minutes file"). A word that asks
    for the tool itself (``intents``) points at a source only as a thing that exists already
    ("forward the email from Bob", "her message"); as the thing made ("send a message to
    Alice", "email Alice") it relays nothing. A party the clause names stays a source: "refund
    GB29… for what they sent me" points at what that account sent."""
    if _named(clause):
        return True
    own = {part for intent in intents for part in intent.split("+")}
    words = tokens(clause)
    return any(word in SOURCES and (word not in own or (at > 0 and words[at - 1] in DEFINITE))
               for at, word in enumerate(words))


def unnamed_parties(resource: Resource, arguments: Mapping[str, Any], plan: RequestPlan,
                    entries: Iterable[PlanEntry]) -> list[str]:
    """The call's party values the request does not name, where it named a value of that
    shape: an address or an account as its asking clause named it (spacing and case aside; a
    clause that names no IBAN binds no recipient, whatever another sentence named); a name as
    the request quoted it anywhere, or as words of an asking clause."""
    if not resource.parties:
        return []
    entries = tuple(entries)
    named = [(e, v) for e in entries for v in _named(e.clause) if shape(v) in ADDRESSES]
    # an asking clause that names an address binds the party's shape; the address itself is
    # a party of the clause's own action only (``PlanEntry.binds``)
    addresses = {_flat(v) for e, v in named if e.binds}
    names = {same(v) for v in plan.named if shape(v) == "text"}
    shapes = {shape(v) for _, v in named} | ({"text"} if names else set())
    clauses = [tokens(e.clause) for e in entries]
    out = []
    for party in sorted(resource.parties):
        value = arguments.get(party)
        for item in value if isinstance(value, list | tuple) else [value]:
            text = "" if item is None else str(item)
            kind = shape(text)
            if not text.strip() or kind not in shapes:
                continue
            if kind != "text":
                missing = _flat(text) not in addresses
            else:
                missing = same(text) not in names and not any(
                    _contains(words, tokens(text)) for words in clauses)
            if missing:
                out.append(f"{party}={text}")
    return out


def _flat(value: str) -> str:
    flat = "".join(value.split()).casefold()
    return link_form(flat) if is_link(flat) else flat


def _contains(words: list[str], run: list[str]) -> bool:
    return any(words[i:i + len(run)] == run for i in range(len(words) - len(run) + 1))
