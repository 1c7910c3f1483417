"""Approvals: a paused call waits for a person, bound to exactly that call; in-process approvers.

Why a part of its own: an approval outlives the process that asked for it (durable, single-use,
bound to tool + canonical arguments + session), so its rules are kept apart from the chokepoint
that consults them and the stores that keep them.
"""
