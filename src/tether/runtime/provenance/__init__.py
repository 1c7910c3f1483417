"""Where values came from: value-level provenance, confidentiality labels, what a session hid.

Why a part of its own: a policy decides on the origin of each argument, and a resumed session
must hide again what it hid; both are facts about values, kept apart from the loop that moves them.
"""
