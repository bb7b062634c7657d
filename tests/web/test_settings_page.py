"""The settings page (`#/settings`) in the browser against a real `plait serve` run from a
plait.toml of two scripted providers: the pool's order changed by dragging and saved as the next
revision; a value the server refuses said next to the form in the server's words, naming the
key, with nothing changed and the form left as edited; a change saved meanwhile by someone else
met as a conflict that offers to reload; the history listing each change, key by key, and a
revert; and a provider's key never in the page, only its variable's name and whether it is set."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.web.conftest import EXAMPLES, Served, serve
from tests.web.test_accessibility import violations

KEY_ENV = "PLAIT_TEST_SETTINGS_PAGE_KEY"
SECRET = "sk-settings-page-0123456789-never-in-the-page"
CONFIG = """
[[providers]]
id = "first"
kind = "scripted"
file = "SCRIPT"
api_key_env = "KEY_ENV"
models = [{ name = "scripted", price_in = 0.5, price_out = 1.5, context = 8192 }]

[[providers]]
id = "second"
kind = "scripted"
file = "SCRIPT"
models = [{ name = "scripted" }]

[roles]
chat = ["first/scripted", "second/scripted"]
"""


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    """A server whose models come from the plait.toml above, the key's variable set."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    config = tmp_path / "plait.toml"
    script = EXAMPLES / "scripted" / "video_chapters.yaml"
    config.write_text(CONFIG.replace("SCRIPT", str(script)).replace("KEY_ENV", KEY_ENV), encoding="utf-8")
    yield from serve(tmp_path, "--config", str(config), script=None)


def _settings(server: Served) -> dict[str, Any]:
    response = server.client.get("/api/settings")
    assert response.status_code == 200, response.text
    return dict(response.json())


def _order(page: Any) -> list[str]:
    items = page.get_by_role("list", name="Priority order").locator("li")
    return [str(items.nth(i).get_attribute("data-provider")) for i in range(items.count())]


def test_the_pool_order_is_dragged_saved_refused_and_reverted(configured: Served, page: Any) -> None:
    server = configured
    before = _settings(server)
    assert [p["id"] for p in before["providers"]] == ["first", "second"]

    page.goto(server.url + "/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    expect(page).to_have_url(f"{server.url}/#/settings")
    expect(page.get_by_test_id("settings-revision")).to_have_text(f"revision {before['revision']}")

    # Models and roles: the chat role, the default chat model, with its targets in order.
    chat = page.get_by_role("region", name="Role chat")
    expect(chat.get_by_role("heading")).to_contain_text("chat: the default chat model")
    expect(chat.get_by_role("list", name="Targets of chat").locator("li code")).to_have_text(
        ["first/scripted", "second/scripted"]
    )

    # Providers: the key's variable by name and whether it is set; never the key.
    page.get_by_role("tab", name="Providers").click()
    providers = page.get_by_role("table", name="Providers")
    expect(providers.locator('tr[data-provider="first"]')).to_contain_text(f"{KEY_ENV} set")
    expect(providers.locator('tr[data-provider="second"]')).to_contain_text("no key")
    providers.get_by_role("button", name="edit first").click()
    models = page.get_by_role("table", name="Models of first")
    expect(models.get_by_label("scripted price out")).to_have_value("1.5")
    expect(models.get_by_label("scripted context")).to_have_value("8192")
    expect(page.get_by_text("Keys are never typed into this page")).to_be_visible()
    assert SECRET not in page.content()
    assert violations(page) == []

    # Pool: "second" dragged above "first", then saved as the next revision.
    page.get_by_role("tab", name="Pool").click()
    expect(page.get_by_role("list", name="Priority order").locator("li")).to_have_count(2)
    assert _order(page) == ["first", "second"]
    order = page.get_by_role("list", name="Priority order")
    order.locator('li[data-provider="second"] .grip').drag_to(order.locator('li[data-provider="first"] .grip'))
    expect(order.locator("li").first).to_have_attribute("data-provider", "second")
    assert _order(page) == ["second", "first"]
    assert violations(page) == []
    page.get_by_label("Note (optional)").fill("second first")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_role("status").filter(has_text="Saved")).to_contain_text(
        f"Saved as revision {before['revision'] + 1}"
    )
    saved = _settings(server)
    assert saved["revision"] == before["revision"] + 1
    assert saved["pool"]["order"] == ["second", "first"]
    assert saved["roles"] == before["roles"]  # only what was changed was sent
    expect(page.get_by_test_id("settings-revision")).to_have_text(f"revision {saved['revision']}")

    # A value the server refuses: its words, naming the key, beside the form; nothing changes.
    page.get_by_role("tab", name="Scheduling").click()
    cpu = page.get_by_role("group", name="Resources").get_by_label("cpu_percent_max")
    cpu.fill("150")
    page.get_by_role("button", name="Save", exact=True).click()
    refusal = page.get_by_role("form", name="Save the settings").get_by_role("alert")
    expect(refusal).to_contain_text("resources.cpu_percent_max")
    expect(cpu).to_have_attribute("aria-invalid", "true")  # the field it names is marked
    expect(page.get_by_role("tab", name="Scheduling")).to_contain_text("(refused)")
    assert _settings(server) == saved
    expect(cpu).to_have_value("150")  # left as edited, to be fixed
    page.get_by_role("button", name="Discard edits").click()
    expect(cpu).to_have_value(str(saved["resources"]["cpu_percent_max"]).removesuffix(".0"))

    # The history: the change, key by key, with who and the note.
    history = page.get_by_role("list", name="Changes")
    entry = history.locator(f'li[data-revision="{saved["revision"]}"]')
    expect(entry).to_contain_text("note: second first")
    expect(entry.get_by_role("list", name=f"Changes of revision {saved['revision']}")).to_contain_text(
        "pool.order: plait.toml's → " + '["second","first"]'
    )

    # Reverted: a new revision puts the order back.
    entry.get_by_role("button", name="revert…").click()
    entry.get_by_role("button", name=f"Revert revision {saved['revision']}").click()
    expect(page.get_by_role("status").filter(has_text="Reverted")).to_contain_text(
        f"the settings are revision {saved['revision'] + 1} now"
    )
    reverted = _settings(server)
    assert reverted["revision"] == saved["revision"] + 1
    assert reverted["pool"]["order"] != ["second", "first"]
    page.get_by_role("tab", name="Pool").click()
    assert _order(page) == ["first", "second"]
    expect(history.locator(f'li[data-revision="{reverted["revision"]}"]')).to_contain_text(
        f"reverts revision {saved['revision']}"
    )
    assert SECRET not in page.content()


def test_a_change_saved_meanwhile_is_a_conflict_that_offers_to_reload(configured: Served, page: Any) -> None:
    server = configured
    before = _settings(server)
    page.goto(server.url + "/#/settings?tab=pool")
    order = page.get_by_role("list", name="Priority order")
    expect(order.locator("li")).to_have_count(2)

    # Someone else saves first.
    theirs = {"base_revision": before["revision"], "settings": {"resources": {"probe_s": 7}}, "note": "theirs"}
    assert server.client.put("/api/settings", json=theirs).status_code == 200

    page.get_by_role("button", name="Move second up").click()
    page.get_by_role("button", name="Save", exact=True).click()
    conflict = page.get_by_role("form", name="Save the settings")
    expect(conflict).to_contain_text("Someone else changed the settings since this page read them")
    assert _settings(server)["pool"]["order"] == before["pool"]["order"]
    conflict.get_by_role("button", name="Reload their settings").click()
    expect(page.get_by_test_id("settings-revision")).to_have_text(f"revision {before['revision'] + 1}")
    expect(order.locator("li").first).to_have_attribute("data-provider", "first")
    page.get_by_role("tab", name="Scheduling").click()
    expect(page.get_by_role("group", name="Resources").get_by_label("probe_s")).to_have_value("7")


def test_the_model_picker_links_to_the_models_tab(configured: Served, page: Any) -> None:
    page.goto(configured.url + "/#/scripts")
    page.get_by_role("tab", name="Generate").click()
    pane = page.get_by_role("region", name="Generate")
    expect(pane.get_by_label("Model role")).to_have_value("chat")
    pane.get_by_role("link", name="Settings").click()
    expect(page).to_have_url(f"{configured.url}/#/settings?tab=models")
    expect(page.get_by_role("tab", name="Models and roles")).to_have_attribute("aria-selected", "true")
