"""The runtime: Agent (recipe), Session (one run), Environment (the chokepoint) and its parts."""
