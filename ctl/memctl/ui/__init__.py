"""`memctl ui`: a local web view to read and correct a project's memory.

Server-rendered pages (Jinja2 templates in `templates/ui/`) over the same core the MCP
tools and the look-up commands use, on 127.0.0.1 only, behind the project token.
"""

from ._app import create_app
from ._auth import Auth

__all__ = ["Auth", "create_app"]
