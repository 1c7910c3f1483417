"""Other frameworks' agents under tether's chokepoint.

``governed`` is the framework-free core (a governed foreign run: a tool door and a model meter
over one journal); each adapter (``.pydantic_ai``, ``.openai_agents``) maps one framework's own
seams onto it and is imported only when asked for, so ``import tether`` loads no framework.
"""
