"""What each model turn is shown: compaction and tool selection, the chokepoint's turn shapers.

Why a part of its own: these recipe features shape a turn without deciding anything; each is a
small part the chokepoint consults in order (``chokepoint/shaper.py``), costing nothing when the
recipe does not ask for it. The output a run must return is not here: it is judged at the
chokepoint (``chokepoint/output.py``), which checks the strategy's answer, not what a turn shows.
"""
