"""Which tether the site documents, said on every page, from the code.

A version typed into ``mkdocs.yml`` is a second copy that the next release forgets; this MkDocs
hook appends ``tether._version.__version__`` (the one leaf the package build reads too) to the
site name, which the theme shows in every page's header and title.
"""

from __future__ import annotations

from typing import Any


def documented_version() -> str:
    from tether._version import __version__

    return __version__


def on_config(config: Any) -> Any:
    config.site_name = f"{config.site_name} {documented_version()}"
    return config
