"""The doors a reasoning strategy has: its handle, explored branches, planned calls.

Why a part of its own: a strategy never holds the Environment; it reaches the chokepoint only
through the public protocols defined here (``Handle``, the doors), so no strategy can find another
path to a tool.
"""
