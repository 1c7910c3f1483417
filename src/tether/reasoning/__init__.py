"""Reasoning strategies. Each drives a run only through the Handle it is given."""

from tether.reasoning.react import ReAct

__all__ = ["ReAct"]
