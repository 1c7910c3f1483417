"""tether as an OWASP Agent Control Standard (ACS) v0.1.0 Guardian (``tether acs serve``).

An observed agent — another framework's — sends ACS-Core JSON-RPC requests before and after each
step; tether answers each with its own policy, approvals and journal, and never runs the tool
(the observed agent does). ``wire``: envelopes, signatures, refusals; ``chain``: the ACS chain
head; ``session``: a session's state, kept in the journal across restarts; ``dispositions``:
tether's decision as an ACS disposition; ``guardian``: the order of checks and the hooks;
``building``: a Guardian from a policy and a store; ``http`` and ``stdio``: the two
transports. Needs the ``acs`` extra (rfc8785, cryptography, uvicorn).
"""

from tether.serve.acs.building import acs_guardian
from tether.serve.acs.guardian import Guardian
from tether.serve.acs.session import Door
from tether.serve.acs.wire import AcsRefused, session_key, sign

__all__ = ["AcsRefused", "Door", "Guardian", "acs_guardian", "session_key", "sign"]
