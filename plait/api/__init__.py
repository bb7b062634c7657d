"""The HTTP service (`plait serve`): REST under /api, SSE run events, token auth.

    from plait.api import ServerSettings, create_app
    app = create_app(ServerSettings(db="sqlite:///plait.db", llm="scripted:answers.yaml"))

See docs/http.md for the routes, errors and events.
"""

from plait.api.app import ServerConfigError, create_app
from plait.api.settings import ServerSettings

__all__ = ["ServerConfigError", "ServerSettings", "create_app"]
