"""Governance: SARC requests, decisions and the policies that make them."""

from tether.policy.base import (
    Action,
    AllowAll,
    Context,
    Decision,
    Effect,
    Policy,
    Resource,
    Subject,
    decide,
)

__all__ = ["Action", "AllowAll", "Context", "Decision", "Effect", "Policy", "Resource",
           "Subject", "decide"]
