"""The journal layer: the hash-chained record of a session and what only reads it.

Why a layer of its own: the record sits below the runtime that writes it. Everything here
(chaining, verification, tamper diagnosis, and the views in ``views/``) reads events and never
holds a tool, a model or a policy gate, so no audit, export or report can become a path to a
tool.
"""
