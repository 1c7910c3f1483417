"""The tool side of the chokepoint: a turn's calls resolved, gated, decided, run and recorded.

Why a package of its own: everything a tool call passes through (the turn pipeline, the policy
gate, the effects' meaning, the executor, approvals and the gateway for calls no model asked for)
lives together, apart from the loop that drives a run, so each part can be read and tested on
its own and nothing outside it reaches a tool.
"""
