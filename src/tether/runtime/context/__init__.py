"""What each model turn is shown: compaction, tool selection and the output a run must return.

Why a part of its own: these recipe features shape a turn without deciding anything; each is a
small part the chokepoint consults in order, costing nothing when the recipe does not ask for it.
"""
