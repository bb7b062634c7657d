"""`client.settings`: what `plait config show` and `plait settings` do, from Python, over the
client's store and plait.toml: the settings in force and where each value comes from, a change
(checked as plait.toml is; servers and workers on the same store take it up without a restart),
the history of changes and reverting one. The values are the JSON the HTTP API answers with."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from plait.client._namespaces import _Blocking
from plait.client._sync import _blocking

if TYPE_CHECKING:
    from plait.client._async import AsyncClient

BY = "python"


class AsyncSettings:
    """The settings changed while the server runs: get, put, history, revert."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def get(self) -> dict[str, Any]:
        """The settings in force (`GET /api/settings`'s body): roles, providers (key variables by
        name, never a key), pool, resources, context, limits and caps, and `sources`."""
        from plait.runs.settings import effective
        from plait.runs.settings_view import settings_view

        return settings_view(self._client._refused(effective, self._client.store, self._client._config))

    async def put(
        self, settings: dict[str, Any], *, base_revision: int | None = None, note: str | None = None
    ) -> dict[str, Any]:
        """Change the settings by a patch of their sections (as `PUT /api/settings`), made on
        `base_revision` (default: the newest now); refused whole when anything is wrong."""
        from plait.runs.settings import change
        from plait.runs.settings_view import settings_view

        store = self._client.store
        revision = base_revision if base_revision is not None else store.settings_changes.revision()
        found = self._client._refused(
            change, store, self._client._config, settings, by=BY, base_revision=revision, note=note
        )
        return settings_view(found)

    async def history(self, limit: int = 100) -> builtins.list[dict[str, Any]]:
        """The changes, newest first, each with the keys it changed before and after."""
        from plait.runs.settings import history
        from plait.runs.settings_view import history_view

        return [history_view(entry) for entry in self._client._refused(history, self._client.store, limit)]

    async def revert(self, revision: int, *, note: str | None = None) -> dict[str, Any]:
        """Undo one change (recorded as a new change); the settings then in force."""
        from plait.runs.settings import revert
        from plait.runs.settings_view import settings_view

        store = self._client.store
        found = self._client._refused(revert, store, self._client._config, revision, by=BY, note=note)
        return settings_view(found)


class Settings(_Blocking[AsyncSettings]):
    """`Client.settings`: the methods of `AsyncSettings`, each returning its result."""

    get = _blocking(AsyncSettings.get)
    put = _blocking(AsyncSettings.put)
    history = _blocking(AsyncSettings.history)
    revert = _blocking(AsyncSettings.revert)
