# Vendored from AgentDyn (MIT, see LICENSE and SOURCE.md beside it); do not edit.
# tool_registry.py
TOOL_REGISTRY = {}

def register_tool(name: str):
    """register tools"""
    def wrapper(fn):
        TOOL_REGISTRY[name] = fn
        return fn
    return wrapper

def get_tool(name: str):
    return TOOL_REGISTRY.get(name)