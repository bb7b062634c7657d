"""The schedules page (`#/schedules`, `#/schedules/ID`) in the browser against a real `plait
serve`: a schedule made with the form (and a bad cron or input explained in the server's words,
the form keeping what was typed), pause, resume, delete after an inline confirmation, and a due
schedule fired by the server's own scheduler showing its run without a reload of the page."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

from playwright.sync_api import expect

from plait.store import Store
from tests.web.conftest import EXAMPLES, Served
from tests.web.test_accessibility import violations


def _iso(ts: float) -> str:
    """An instant as the page writes it in `<time datetime>` (JavaScript's toISOString)."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _schedule(server: Served, cron: str, **extra: Any) -> dict[str, Any]:
    body = {"graph": "video_chapters", "cron": cron, "input": {"transcript": "Nightly."}, **extra}
    made = server.client.post("/api/schedules", json=body)
    assert made.status_code == 201, made.text
    return dict(made.json())


def _listed(server: Served) -> list[dict[str, Any]]:
    response = server.client.get("/api/schedules")
    assert response.status_code == 200, response.text
    return list(response.json())


def test_a_schedule_is_made_with_the_form_and_a_refusal_is_explained(server: Served, page: Any) -> None:
    graph = server.import_graph(EXAMPLES / "video_chapters.yaml")
    page.goto(server.url + "/#/schedules")
    expect(page.get_by_text("No schedules yet")).to_be_visible()
    form = page.get_by_role("form", name="New schedule")
    form.get_by_label("Graph", exact=True).select_option(graph["id"])
    # the run input is asked for in the form "Start a run…" generates from the graph's input_schema
    transcript = form.locator('textarea[name="transcript"]')
    language = form.locator('textarea[name="language"]')
    expect(form.get_by_role("group", name="Run input")).to_contain_text("transcript *")
    expect(language).to_have_attribute("placeholder", "en")  # its default
    form.get_by_label("Cron (5 fields)").fill("every minute")
    transcript.fill("Nightly.")
    form.get_by_role("button", name="Create schedule").click()

    # The server's message and hint, next to the form; everything typed is still there.
    alert = form.get_by_role("alert")
    expect(alert).to_contain_text("schedule_invalid: 'every minute' is not a cron expression")
    expect(alert).to_contain_text("hint: five fields: minute hour day-of-month month day-of-week")
    expect(form.get_by_label("Cron (5 fields)")).to_have_value("every minute")
    expect(transcript).to_have_value("Nightly.")
    expect(form.get_by_label("Graph", exact=True)).to_have_value(graph["id"])
    assert _listed(server) == []

    # An input the graph's input_schema refuses: the server's details are listed too.
    form.get_by_role("button", name="Use */5 * * * * (every 5 minutes)").click()
    expect(form.get_by_label("Cron (5 fields)")).to_have_value("*/5 * * * *")
    transcript.fill("")
    language.fill("fr")
    form.get_by_role("button", name="Create schedule").click()
    expect(alert).to_contain_text("the run input does not match the graph's input_schema")
    expect(alert).to_contain_text("'transcript' is a required property")
    expect(language).to_have_value("fr")
    assert _listed(server) == []

    transcript.fill("Nightly.")
    language.fill("")
    form.get_by_label("Time zone").fill("Europe/Paris")
    form.get_by_label("Missed firings (catch-up)").select_option("all")
    form.get_by_role("button", name="Create schedule").click()
    expect(page.get_by_role("status")).to_have_text("scheduled video_chapters (*/5 * * * * Europe/Paris)")
    expect(alert).to_have_count(0)

    [made] = _listed(server)
    assert (made["graph_id"], made["cron"], made["timezone"], made["catch_up"], made["input"]) == (
        graph["id"], "*/5 * * * *", "Europe/Paris", "all", {"transcript": "Nightly."}
    )  # fmt: skip
    row = page.get_by_role("table", name="Schedules").locator(f'tr[data-schedule="{made["id"]}"]')
    expect(row.locator(".cron")).to_have_text("*/5 * * * * Europe/Paris")
    expect(row.get_by_role("link", name="Video chapter analysis video_chapters")).to_have_attribute(
        "href", f"#/graphs/{graph['id']}"
    )
    expect(row.locator(".pill")).to_have_text("active")
    next_firing = row.locator(".next time")
    expect(next_firing).to_have_attribute("datetime", _iso(made["next_fire_at"]))
    expect(row.locator(".next")).to_contain_text(re.compile(r"\(in \d+ (s|min)\)"))
    expect(row.locator(".last-run")).to_have_text("none yet")
    expect(page.get_by_text("No schedules yet")).to_have_count(0)


def test_a_graph_whose_input_declares_no_fields_takes_its_input_as_json(server: Served, page: Any) -> None:
    free = {"plait": 1, "id": "free", "nodes": [{"id": "echo", "type": "TRANSFORM", "transform_expr": "input"}]}
    graph = server.import_graph({**free, "edges": [{"source": "echo", "target": "END"}]})
    page.goto(server.url + "/#/schedules")
    form = page.get_by_role("form", name="New schedule")
    form.get_by_label("Graph", exact=True).select_option(graph["id"])
    form.get_by_label("Run input (JSON)").fill('{"anything": ')
    expect(form.locator(".warning")).to_contain_text("the run input is not JSON")  # said before asking
    form.get_by_label("Cron (5 fields)").fill("0 9 * * *")
    form.get_by_role("button", name="Create schedule").click()
    expect(form.get_by_role("alert")).to_contain_text("the run input is not JSON")
    assert _listed(server) == []
    form.get_by_label("Run input (JSON)").fill('{"anything": [1, 2]}')
    form.get_by_role("button", name="Create schedule").click()
    expect(page.get_by_role("status")).to_contain_text("scheduled free")
    assert _listed(server)[0]["input"] == {"anything": [1, 2]}


def test_a_schedule_is_paused_resumed_and_deleted_after_confirming(server: Served, page: Any) -> None:
    server.import_graph(EXAMPLES / "video_chapters.yaml")
    made = _schedule(server, "0 9 * * 1-5")
    page.goto(server.url + "/#/schedules")
    row = page.locator(f'tr[data-schedule="{made["id"]}"]')
    expect(row.locator(".pill")).to_have_text("active")

    row.get_by_role("button", name="pause").click()
    expect(row.locator(".pill")).to_have_text("paused")
    expect(row.locator(".next")).to_have_text("none while paused")
    assert _listed(server)[0]["status"] == "paused"

    row.get_by_role("button", name="resume").click()
    expect(row.locator(".pill")).to_have_text("active")
    assert _listed(server)[0]["status"] == "active"
    expect(row.locator(".next time")).to_have_attribute("datetime", _iso(_listed(server)[0]["next_fire_at"]))

    # Delete asks first, in the row; keeping it changes nothing.
    row.get_by_role("button", name="delete").click()
    confirm = row.get_by_role("group", name="Confirm the deletion")
    expect(confirm).to_contain_text("Delete this schedule?")
    confirm.get_by_role("button", name="keep it").click()
    expect(confirm).to_have_count(0)
    page.wait_for_timeout(3500)  # a refresh of the list in between keeps the schedule
    expect(row).to_be_visible()
    assert len(_listed(server)) == 1

    row.get_by_role("button", name="delete").click()
    row.get_by_role("group", name="Confirm the deletion").get_by_role("button", name="yes, delete").click()
    expect(row).to_have_count(0)
    expect(page.get_by_role("status")).to_have_text("deleted the schedule of video_chapters")
    expect(page.get_by_text("No schedules yet")).to_be_visible()
    assert _listed(server) == []
    assert server.client.get(f"/api/schedules/{made['id']}").status_code == 404


def test_a_due_schedule_fires_and_the_page_shows_its_run_without_reload(server: Served, page: Any) -> None:
    server.import_graph(EXAMPLES / "video_chapters.yaml")
    made = _schedule(server, "* * * * *")
    page.goto(server.url + "/#/schedules")
    row = page.locator(f'tr[data-schedule="{made["id"]}"]')
    expect(row.locator(".last-run")).to_have_text("none yet")
    page.evaluate("window.__sameDocument = true")  # gone if the page were loaded again

    with Store(server.db) as store:  # due now: the server's scheduler (every 2 s) fires it
        store.schedules.set_status(made["id"], "active", next_fire_at=time.time() - 1)
    last_run = row.locator(".last-run a")
    expect(last_run).to_be_visible(timeout=10_000)
    assert page.evaluate("window.__sameDocument") is True

    fired = server.client.get(f"/api/schedules/{made['id']}").json()
    run_ids = [f["run_id"] for f in fired["firings"]]
    assert run_ids
    assert fired["last_run_id"] == run_ids[0]
    assert last_run.get_attribute("href") in [f"#/runs/{r}" for r in run_ids]
    listed = server.client.get("/api/runs").json()["items"]
    assert run_ids[-1] in [r["id"] for r in listed]  # the firing's run is a run like any other

    # The details page: its firings newest first, each with its run.
    row.get_by_role("link", name=made["id"][:8]).click()
    expect(page).to_have_url(f"{server.url}/#/schedules/{made['id']}")
    expect(page.locator("dl.facts")).to_contain_text("* * * * * in UTC")
    expect(page.locator("dl.facts")).to_contain_text('"transcript": "Nightly."')
    firings = page.get_by_role("table", name="Firings")
    first = firings.locator(f'tr[data-run="{run_ids[-1]}"]')  # the forced firing (a minute may add one)
    expect(first.locator("time")).to_have_attribute("datetime", _iso(fired["firings"][-1]["fire_at"]))
    stamps = [t.get_attribute("datetime") for t in firings.locator("tbody time").all()]
    assert stamps == sorted(stamps, reverse=True)
    assert violations(page) == []

    first.get_by_role("link", name=run_ids[-1][:8]).click()
    expect(page).to_have_url(f"{server.url}/#/runs/{run_ids[-1]}")
    expect(page.locator(".box[data-node='chapter_split']")).to_be_visible()
    assert server.run(run_ids[-1])["input"] == {"transcript": "Nightly."}


def test_the_form_with_an_error_passes_the_accessibility_audit(server: Served, page: Any) -> None:
    server.import_graph(EXAMPLES / "video_chapters.yaml")
    page.goto(server.url + "/#/schedules")
    form = page.get_by_role("form", name="New schedule")
    form.get_by_label("Graph", exact=True).select_option(label="Video chapter analysis (video_chapters)")
    form.get_by_label("Cron (5 fields)").fill("* * *")
    form.get_by_label("Time zone").fill("Mars/Olympus")
    form.get_by_role("button", name="Create schedule").click()
    expect(form.get_by_role("alert")).to_contain_text("schedule_invalid")
    assert violations(page) == []
