"""What a run may spend, and why it stopped: budgets, the accountant, run-shape limits, the stop.

Why a part of its own: the budget invariant (checked before every call, reserved, settled, an
overrun stops the run) is the one promise every other part leans on; here it is read in one place,
and it imports nothing of the runtime above it.
"""
