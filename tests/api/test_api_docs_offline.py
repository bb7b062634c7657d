"""/docs works offline: the page and every file it loads come from the server itself; and
/openapi.json lists per operation only the error statuses it can return."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from api_helpers import Api

from plait.api.openapi import CONFLICTS, NAMED_ELSEWHERE, NO_DATABASE, SYSTEM_GRAPHS


class Assets(HTMLParser):
    """Every `src` and `href` of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls.extend(value for name, value in attrs if name in ("src", "href") and value)


def test_docs_and_every_file_they_load_are_served_by_the_server(api: Api) -> None:
    page = api.client.get("/docs")
    assert page.status_code == 200
    parser = Assets()
    parser.feed(page.text)
    assert len(parser.urls) >= 3, parser.urls  # the script, the style sheet, the icon
    origin = urlsplit(api.url).netloc
    for url in parser.urls:
        absolute = urljoin(f"{api.url}/docs", url)
        assert urlsplit(absolute).netloc == origin, f"/docs loads {url} from elsewhere"
        assert api.client.get(absolute).status_code == 200, url
    assert "url: '/openapi.json'" in page.text
    assert "cdn" not in page.text.lower()
    assert api.client.get("/redoc").status_code == 404  # ReDoc's bundle reaches for a CDN: not served


def test_each_operation_lists_only_the_errors_it_can_return(api: Api) -> None:
    paths = api.client.get("/openapi.json").json()["paths"]
    assert set(paths["/api/health"]["get"]["responses"]) == {"200"}
    responses = {(m.upper(), p): set(op["responses"]) for p, ops in paths.items() for m, op in ops.items()}
    assert responses[("GET", "/api/graphs")] == {"200", "422", "503"}  # no path names a thing: no 404
    assert "404" in responses[("GET", "/api/runs/{run_id}")]
    assert "409" not in responses[("GET", "/api/runs/{run_id}")]  # an output no migration reads comes as stored
    assert "413" not in responses[("GET", "/api/runs/{run_id}")]  # no body
    assert {"403", "409", "413"} <= responses[("PUT", "/api/graphs/{ref}")]
    assert "403" not in responses[("POST", "/api/runs/{run_id}/nodes/{node_id}/override")]
    assert not any("401" in statuses for statuses in responses.values())  # this server asks for no token


def test_the_tables_name_real_operations(api: Api) -> None:
    """A table entry that names no operation is a route renamed or removed: it would silently
    stop declaring that route's errors."""
    paths = api.client.get("/openapi.json").json()["paths"]
    operations = {(m.upper(), p) for p, ops in paths.items() for m in ops}
    for table in (CONFLICTS, NAMED_ELSEWHERE, NO_DATABASE, SYSTEM_GRAPHS):
        assert set(table) - operations == set()
