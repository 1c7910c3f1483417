"""The version of tether, written once, in a leaf that imports nothing (httpx's ``__version__.py``).

Decision: the package build reads it from here (``[tool.hatch.version]``), the ``tether`` face
re-exports it, and a module on any floor that needs it (an OCSF product, an OTel scope, the MCP
server's handshake) imports it from here, never from the ``tether`` face above every floor.
"""

__version__ = "0.1.0"
