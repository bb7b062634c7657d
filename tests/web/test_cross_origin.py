"""In Chromium: a page served from another port of this machine cannot make a default
`plait serve` (loopback, no token) act, neither with a `text/plain` fetch (no CORS preflight)
nor with a form; the workbench itself still can."""

from __future__ import annotations

import time
from typing import Any

from tests.web.conftest import EXAMPLES, Served, foreign_site

ATTACK = """<!doctype html><title>elsewhere</title>
<iframe name="sink"></iframe>
<form id="fork" method="POST" enctype="text/plain" target="sink" action="{url}/api/graphs/video_chapters/fork">
  <input name='{{"name": "stolen", "x": "' value='"}}'>
</form>
<script>
  window.sent = Promise.all([
    fetch("{url}/api/runs/{run_id}/cancel", {{method: "POST", mode: "no-cors",
      headers: {{"Content-Type": "text/plain"}}, body: "{{}}"}}),
    fetch("{url}/api/runs/{run_id}/nodes/chapter_split/rerun", {{method: "POST", mode: "no-cors",
      headers: {{"Content-Type": "text/plain"}}, body: JSON.stringify({{downstream: true}})}}),
  ]).then(() => "answered", () => "withheld");  // a Cross-Origin-Resource-Policy refusal hides the answer
  document.getElementById("fork").submit();
</script>"""


def test_a_page_of_another_origin_cannot_act_but_the_workbench_can(server: Served, page: Any) -> None:
    server.import_graph(EXAMPLES / "video_chapters.yaml")
    run_id = server.start("video_chapters", {"transcript": "We build a birdhouse."})
    before = server.wait_status(run_id, "paused")
    answered: dict[str, object] = {}  # URL: the status, or why the browser withheld the answer from the page
    page.on("response", lambda r: answered.__setitem__(r.url, r.status) if r.url.startswith(server.url) else None)
    page.on("requestfailed", lambda r: answered.setdefault(r.url, r.failure) if r.url.startswith(server.url) else None)
    with foreign_site({"/": ATTACK.format(url=server.url, run_id=run_id)}) as site:
        page.goto(site + "/")
        assert page.evaluate("window.sent") in ("answered", "withheld")  # both fetches done
        deadline = time.monotonic() + 20
        while len(answered) < 3 and time.monotonic() < deadline:  # and the form
            page.wait_for_timeout(50)
    reached = {url.removeprefix(server.url): status for url, status in answered.items()}
    assert reached.pop("/api/graphs/video_chapters/fork") == 403  # the form's navigation shows the status
    assert set(reached) == {f"/api/runs/{run_id}/cancel", f"/api/runs/{run_id}/nodes/chapter_split/rerun"}
    assert all(status in (403, "net::ERR_BLOCKED_BY_RESPONSE.NotSameOrigin") for status in reached.values()), reached
    after = server.run(run_id)
    assert after["status"] == "paused"
    assert len(after["nodes"]) == len(before["nodes"])  # no node ran again
    assert server.client.get("/api/graphs/stolen").status_code == 404

    page.goto(server.url + "/#/runs")  # the workbench, from the server itself, still acts
    assert page.evaluate(f"fetch('/api/runs/{run_id}/cancel', {{method: 'POST'}}).then((r) => r.status)") == 200
    assert server.run(run_id)["status"] == "cancelled"
