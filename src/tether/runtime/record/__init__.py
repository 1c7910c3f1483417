"""A session as a fold over its journal: its state, the charges it folded, the result it hands back.

Why a part of its own: the journal is the truth, and everything a run knows about itself is
rebuilt from it here; a resume in another process reads exactly what this part folds.
"""
