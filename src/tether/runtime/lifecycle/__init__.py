"""A run's life: the recipe (Agent), the session that opens, pauses, resumes and ends, sub-agents.

Why a part of its own: opening a journal, holding a lease, handling an interrupt and continuing a
thread are the steps around the chokepoint, not inside it; they are read here in order.
"""
