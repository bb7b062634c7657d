"""No HTTP error message names the database (not even with its password masked): a client learns
that a run, graph or node run does not exist, not where the server keeps its data."""

from __future__ import annotations

from api_helpers import Api
from sqlalchemy.engine import make_url


def test_404s_do_not_name_the_database(api: Api) -> None:
    url = make_url(api.store.url)
    where = [api.store.display_url, url.database or "", url.host or "", url.render_as_string(hide_password=False)]
    where = [w for w in where if w and w not in ("localhost", "127.0.0.1")]
    for path in ("/api/runs/no-such-run", "/api/graphs/no-such-graph", "/api/node-runs/no-such-node-run",
                 "/api/runs/no-such-run/ledger"):  # fmt: skip
        response = api.client.get(path)
        assert response.status_code == 404, (path, response.text)
        error = response.json()["error"]
        assert "no-such" in error["message"]  # it still says what was not found
        for name in where:
            assert name not in response.text, f"{path} names the database"
        assert "sqlite" not in response.text
        assert "postgresql" not in response.text
