"""Other frameworks' agents under tether's chokepoint.

``governed`` is the framework-free core (a governed foreign run: a tool door and a model meter
over one journal), ``runs`` what every adapter's run object shares (its declared tools, its
handle); each adapter (``.pydantic_ai``, ``.langgraph``, ``.openai_agents``) maps one framework's
own seams onto it and is imported only when asked for, so ``import tether`` loads no framework.
"""
