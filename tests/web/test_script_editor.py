"""The prompt-script editor (`#/scripts`) in the browser against a real `plait serve`: writing a
script with completion, its live preview (console, prompt, the time limit, syntax errors, a
busy sandbox), saving an edited system template as one's own and running a graph with it, and
generating with a model: streamed deltas, a broken stream, cancel, parsed values, the roles."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.web.conftest import Served, serve
from tests.web.test_accessibility import violations

HERE = Path(__file__).resolve().parent
RESPONSES = HERE / "scripted_scripts.yaml"

CONFIG = """
[[providers]]
id = "remote"
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "PLAIT_TEST_SCRIPTS_UNSET_KEY"
models = [{ name = "chat-model" }]

[[providers]]
id = "demo"
kind = "scripted"
file = "RESPONSES"

[roles]
chat = ["demo/scripted"]
writer = ["remote/chat-model"]
"""

GRAPH = """
plait: 1
id: uses_my_summary
input_schema:
  type: object
  properties: {text: {type: string}}
  required: [text]
schemas:
  - id: summary
    version: 1.0.0
    schema:
      type: object
      properties: {summary: {type: string}}
      required: [summary]
nodes:
  - {id: summarise, type: LLM_CALL, prompt_script: my_summary}
edges:
  - {source: summarise, target: END, schema_id: summary}
"""


@pytest.fixture
def scripts_server(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path, script=RESPONSES)


@pytest.fixture
def pool_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    """Models from a plait.toml: `chat` served by the scripted answers, `writer` by nothing."""
    monkeypatch.delenv("PLAIT_TEST_SCRIPTS_UNSET_KEY", raising=False)
    config = tmp_path / "plait.toml"
    config.write_text(CONFIG.replace("RESPONSES", str(RESPONSES)))
    yield from serve(tmp_path, "--config", str(config), script=None)


def set_script(page: Any, code: str) -> None:
    """Replace the editor's text by `code`, as a paste (typing would auto-close brackets)."""
    editor = page.get_by_role("textbox", name="Prompt script")
    editor.click()
    page.keyboard.press("Control+A")
    editor.evaluate(
        """(node, text) => {
            const data = new DataTransfer();
            data.setData("text/plain", text);
            node.dispatchEvent(new ClipboardEvent("paste", {clipboardData: data, bubbles: true, cancelable: true}));
        }""",
        code,
    )
    expect(editor).to_contain_text(max(code.splitlines(), key=len).strip())


def open_editor(server: Served, page: Any, route: str = "#/scripts") -> Any:
    page.goto(f"{server.url}/{route}")
    editor = page.get_by_role("textbox", name="Prompt script")
    expect(editor).to_be_visible()
    return editor


def test_a_script_previews_its_console_and_prompt_with_completion(scripts_server: Served, page: Any) -> None:
    server = scripts_server
    editor = open_editor(server, page)
    expect(editor).to_contain_text('const topic = await getVar("input.topic");')  # the New skeleton
    page.get_by_label("Preview input (JSON)").fill('{"topic": "owls", "meta": {"lang": "en"}}')

    # Completion: the host APIs, then the paths of the preview input inside getVar("…").
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.press("Enter")
    page.keyboard.type("getV")
    options = page.locator(".cm-tooltip-autocomplete")
    options.get_by_role("option", name="getVar(path) → Promise").click()
    expect(editor).to_contain_text('getVar("')
    page.keyboard.type("in")
    expect(options).to_contain_text("input.topic")
    expect(options).to_contain_text("input.meta.lang")
    page.keyboard.press("Escape")

    set_script(
        page,
        "async function main() {\n"
        '  const topic = await getVar("input.topic");\n'
        '  console.log("topic is", topic);\n'
        '  console.warn("careful", {n: 2});\n'
        "  return `A poem about ${topic}`;\n"
        "}\n",
    )
    page.get_by_role("button", name="Preview", exact=True).click()
    pane = page.get_by_role("region", name="Preview")
    expect(pane.get_by_test_id("preview-prompt")).to_have_text("A poem about owls")
    lines = pane.get_by_role("list", name="Preview console").locator("li")
    expect(lines).to_have_count(2)
    expect(lines.nth(0)).to_have_attribute("data-level", "log")
    expect(lines.nth(0)).to_have_text("log topic is owls")
    warning = lines.nth(1)
    expect(warning).to_have_attribute("data-type", "warning")
    expect(warning).to_have_class("console-line warning")
    expect(warning).to_contain_text('careful {"n":2}')
    assert warning.evaluate("e => getComputedStyle(e).backgroundColor") != lines.nth(0).evaluate(
        "e => getComputedStyle(e).backgroundColor"
    )  # a warning stands out from a log line
    assert violations(page) == []


def test_a_script_that_never_ends_hits_the_time_limit_and_the_page_goes_on(scripts_server: Served, page: Any) -> None:
    open_editor(scripts_server, page)
    set_script(page, "async function main() { while (true) await 0; }\n")
    pane = page.get_by_role("region", name="Preview")
    started = time.monotonic()
    pane.get_by_role("button", name="Preview", exact=True).click()
    # The limits are the server's (measured from when its process starts the script); the page
    # shows what it was told, so the words are checked here, not the browser's clock.
    warning = pane.locator('.console-line[data-level="time"]')
    expect(warning).to_contain_text("has run for 3 s; it is stopped at 5 s")  # the soft limit
    expect(warning).to_have_class("console-line warning")
    error = pane.locator(".script-error")
    expect(error).to_have_attribute("data-kind", "timeout")
    expect(error).to_contain_text("Script error: timeout")
    expect(error).to_contain_text("time limit of 5 s")
    expect(warning).to_be_visible()  # the warning stays above the error
    # stopped by the hard limit, not by something far later (a loaded host adds its seconds)
    assert time.monotonic() - started < 5 + 30
    expect(pane.get_by_test_id("preview-prompt")).to_have_count(0)

    set_script(page, 'async function main() { return "after the timeout"; }\n')
    pane.get_by_role("button", name="Preview", exact=True).click()
    expect(pane.get_by_test_id("preview-prompt")).to_have_text("after the timeout")
    expect(pane.locator(".script-error")).to_have_count(0)
    expect(pane.locator(".console-line")).to_have_count(0)


def test_a_syntax_error_shows_its_line_and_column(scripts_server: Served, page: Any) -> None:
    server = scripts_server
    editor = open_editor(server, page, "#/scripts/plait.classify")
    expect(editor).to_contain_text('getVar("input.text")')
    page.get_by_role("button", name="New").click()  # back to the skeleton, on #/scripts
    expect(page).to_have_url(f"{server.url}/#/scripts")
    expect(editor).to_contain_text("return `Write about ${topic}`;")

    set_script(page, "async function main() {\n  return 1 +;\n}\n")
    pane = page.get_by_role("region", name="Preview")
    pane.get_by_role("button", name="Preview", exact=True).click()
    error = pane.locator(".script-error")
    expect(error).to_have_attribute("data-kind", "syntax")
    expect(error).to_contain_text("line 2, column 13")
    expect(error).to_contain_text("unexpected token")

    # A newer preview replaces one still running: only the newer one's outcome is shown.
    set_script(page, "async function main() { while (true) await 0; }\n")
    pane.get_by_role("button", name="Preview", exact=True).click()
    expect(pane.get_by_role("status")).to_have_text("running…")
    set_script(page, 'async function main() { return "the newer one"; }\n')
    pane.get_by_role("button", name="Preview", exact=True).click()
    expect(pane.get_by_test_id("preview-prompt")).to_have_text("the newer one")
    expect(pane.get_by_role("status")).to_have_count(0)
    page.wait_for_timeout(500)
    expect(pane.locator(".script-error")).to_have_count(0)


def test_a_busy_sandbox_is_shown_as_an_http_error(scripts_server: Served, page: Any) -> None:
    """Three previews already run (each its own session): the server refuses a fourth with 503
    before any stream, and the pane says that Plait refused it."""
    server = scripts_server
    open_editor(server, page)
    forever = {"script_code": "async function main() { while (true) await 0; }", "input": {}}
    streams = [
        server.client.stream("POST", "/api/templates/preview", json={**forever, "session": f"other-{n}"})
        for n in range(3)
    ]
    opened = [s.__enter__() for s in streams]
    try:
        assert [r.status_code for r in opened] == [200, 200, 200]
        pane = page.get_by_role("region", name="Preview")
        pane.get_by_role("button", name="Preview", exact=True).click()
        refused = pane.locator('.layer-error[data-layer="http"]')
        expect(refused).to_contain_text("HTTP error 503")
        expect(refused).to_contain_text("sandbox_busy")
        expect(refused).to_contain_text("try again in a moment")
    finally:
        for s in streams:
            s.__exit__(None, None, None)


def test_a_system_template_saved_as_mine_runs_in_a_graph(scripts_server: Served, page: Any) -> None:
    server = scripts_server
    page.goto(f"{server.url}/#/scripts")
    system = page.locator('li[data-template="plait.summary"]')
    expect(system.locator(".badge.system")).to_have_text("system · read-only")
    system.get_by_role("link").click()
    expect(page).to_have_url(f"{server.url}/#/scripts/plait.summary")
    head = page.get_by_test_id("script-head")
    expect(head).to_contain_text("system · read-only")
    editor = page.get_by_role("textbox", name="Prompt script")
    expect(editor).to_contain_text("Summarise the text below")
    expect(page.get_by_role("button", name="Save", exact=True)).to_have_count(0)  # read-only: no save in place

    original = server.client.get("/api/templates/plait.summary").json()["script_code"]
    set_script(page, original.replace("Summarise the text below", "MARKER-ONE Summarise the text below"))
    expect(page.get_by_text("edited, not saved")).to_be_visible()
    page.get_by_role("button", name="Save as my template").click()
    form = page.get_by_role("form", name="Save as a new template")
    form.get_by_label("New template id").fill("plait.classify")  # taken: the server's 409, shown
    form.get_by_role("button", name="Save template").click()
    expect(page.get_by_role("alert")).to_contain_text("a template with the id 'plait.classify' exists already")
    form.get_by_label("New template id").fill("my_summary")
    form.get_by_role("button", name="Save template").click()

    expect(page).to_have_url(f"{server.url}/#/scripts/my_summary")
    mine = page.locator('li[data-template="my_summary"]')
    expect(mine).to_have_attribute("data-source", "user")
    expect(mine.locator(".badge.user")).to_have_text("user")
    expect(mine).to_contain_text("based on plait.summary")
    expect(head).to_contain_text("based on plait.summary")
    expect(editor).to_contain_text("MARKER-ONE")
    stored = server.client.get("/api/templates/my_summary").json()
    assert (stored["source_type"], stored["based_on_template_id"]) == ("user", "plait.summary")
    assert "MARKER-ONE Summarise" in stored["script_code"]
    assert "MARKER" not in server.client.get("/api/templates/plait.summary").json()["script_code"]

    # A user template saves in place.
    set_script(page, stored["script_code"].replace("MARKER-ONE", "MARKER-TWO"))
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("saved my_summary")
    assert "MARKER-TWO Summarise" in server.client.get("/api/templates/my_summary").json()["script_code"]

    # A graph whose LLM_CALL names the template sends the prompt the edited script makes.
    assert server.client.post("/api/graphs/import", json={"source": GRAPH}).status_code in (200, 201)
    run_id = server.start("uses_my_summary", {"text": "Birds eat seeds."})
    detail = server.wait_status(run_id, "completed")
    node = next(n for n in detail["nodes"] if n["node_id"] == "summarise")
    snapshot = server.client.get(f"/api/node-runs/{node['id']}").json()["input_snapshot"]
    assert snapshot["prompt_script"]["template"]["id"] == "my_summary"
    prompt = snapshot["prompt_script"]["prompt"]
    assert prompt.startswith("MARKER-TWO Summarise the text below in two sentences.")
    assert prompt.endswith("Text:\nBirds eat seeds.")

    # Previewed as that node of that run: getVar paths of its nodes, and the real schema hint.
    page.get_by_label("Run id (optional)").fill(run_id)
    page.get_by_label("Node id").fill("summarise")
    expect(page.get_by_test_id("run-target")).to_contain_text("uses_my_summary")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.type('\ngetVar("nodes.')
    expect(page.locator(".cm-tooltip-autocomplete")).to_contain_text("nodes.summarise.summary")
    page.keyboard.press("Escape")
    set_script(page, server.client.get("/api/templates/my_summary").json()["script_code"])
    pane = page.get_by_role("region", name="Preview")
    pane.get_by_role("button", name="Preview", exact=True).click()
    expect(pane.get_by_test_id("preview-prompt")).to_contain_text("summary: string (required)")
    assert pane.get_by_test_id("preview-prompt").inner_text().rstrip() == prompt


def test_generate_streams_breaks_cancels_and_parses(pool_server: Served, page: Any) -> None:
    server = pool_server
    open_editor(server, page)
    page.get_by_role("tab", name="Generate").click()  # the pane beside Preview
    pane = page.get_by_role("region", name="Generate")
    role = pane.get_by_label("Model role")
    expect(role).to_have_value("chat")
    expect(role.locator("option:checked")).to_have_text("chat → demo/scripted (default)")
    writer = role.locator('option[value="writer"]')
    expect(writer).to_be_disabled()
    refused = pane.get_by_role("list", name="Roles that cannot be served")
    expect(refused).to_contain_text("writer cannot be served")
    expect(refused).to_contain_text("PLAIT_TEST_SCRIPTS_UNSET_KEY")

    output = pane.get_by_test_id("generate-output")
    status = pane.get_by_test_id("generate-status")
    generate = pane.get_by_role("button", name="Generate", exact=True)

    # Streamed deltas, then done.
    set_script(page, 'async function main() { return "Tell a story about snow"; }\n')
    page.evaluate(
        """() => {
            window.seen = [];
            const stream = document.querySelector("[data-testid=generate-stream]");
            new MutationObserver(() => {
                const out = stream.querySelector("[data-testid=generate-output]");
                if (out) window.seen.push(out.textContent);
            }).observe(stream, {subtree: true, childList: true, characterData: true});
        }"""
    )
    generate.click()
    expect(status).to_have_text("generating…")
    full = "Snow falls softly while the birds gather at the feeder."
    expect(output).to_have_text(full)
    seen = [text for text in page.evaluate("window.seen") if text]
    assert len(set(seen)) >= 5, seen  # word by word, not at once
    assert all(full.startswith(text) for text in seen), seen
    expect(pane.get_by_test_id("generate-done")).to_contain_text("scripted")
    expect(status).to_have_text("ready")
    expect(pane.locator(".layer-error")).to_have_count(0)

    # The stream breaks off: the stream layer, at the top, and the text so far kept as partial.
    set_script(page, 'async function main() { return "BREAK it"; }\n')
    generate.click()
    error = pane.locator(".layer-error")
    expect(error).to_have_attribute("data-layer", "stream")
    expect(error).to_contain_text("Stream error")
    expect(output).to_have_text("The first words arri")
    expect(output).to_have_attribute("data-partial", "true")
    expect(pane.get_by_text("partial", exact=True)).to_be_visible()
    first = pane.get_by_test_id("generate-stream").locator(":scope > *").first
    expect(first).to_have_attribute("data-layer", "stream")
    assert violations(page) == []

    # Cancel during a slow stream: the stream stops, the text so far stays.
    set_script(page, 'async function main() { return "SLOW please"; }\n')
    generate.click()
    expect(output).to_contain_text("one", timeout=5_000)
    pane.get_by_role("button", name="Cancel").click()
    expect(status).to_have_text("ready")
    expect(pane.get_by_role("button", name="Cancel")).to_have_count(0)
    expect(error).to_have_attribute("data-layer", "cancelled")
    expect(error).to_contain_text("Cancelled")
    kept = output.inner_text()
    assert kept.startswith("one")
    assert "twenty" not in kept
    expect(output).to_have_attribute("data-partial", "true")
    page.wait_for_timeout(2_000)  # a word arrives every 1.5 s while the stream runs
    assert output.inner_text() == kept

    # A schema target asks for JSON (one the graph-less preview cannot resolve is parsed as JSON
    # only): a text answer fails as parse, a JSON one shows its value.
    pane.get_by_label("Schema target (optional: the answer is parsed as JSON)").fill("summary")
    set_script(page, 'async function main() { return "Tell a story about snow"; }\n')
    generate.click()
    expect(error).to_have_attribute("data-layer", "parse")
    expect(error).to_contain_text("Parse error")
    set_script(page, 'async function main() { return "Summarise the birds"; }\n')
    generate.click()
    expect(pane.get_by_label("Parsed value")).to_contain_text('"summary": "Birds need food in winter."')
    expect(pane.get_by_role("list", name="Notes")).to_contain_text("'summary'")
    expect(pane.locator(".layer-error")).to_have_count(0)

    # The script's own failure is the script layer; no model is asked.
    set_script(page, 'async function main() { throw new Error("no prompt today"); }\n')
    generate.click()
    expect(error).to_have_attribute("data-layer", "script")
    expect(error).to_contain_text("no prompt today")
    expect(output).to_have_count(0)


def test_the_editor_keeps_its_layout_per_category_reopens_the_last_template_and_lints(
    scripts_server: Served, page: Any
) -> None:
    server = scripts_server
    open_editor(server, page, "#/scripts/plait.classify")
    layout = page.get_by_role("radiogroup", name="Layout")
    expect(layout.get_by_role("radio", name="Two columns")).to_have_attribute("aria-checked", "true")
    layout.get_by_role("radio", name="One column").click()
    page.get_by_role("tab", name="Generate").click()
    assert page.locator(".scripts").get_attribute("class") == "scripts columns-1"
    # the Preview pane is kept (hidden), with whatever it showed
    expect(page.get_by_role("region", name="Preview", include_hidden=True)).to_be_hidden()

    # another category has its own layout; coming back to this one restores it
    page.goto(f"{server.url}/#/scripts/plait.summary")
    expect(page.get_by_role("textbox", name="Prompt script")).to_contain_text("getVar")
    expect(page.get_by_role("radio", name="Two columns")).to_have_attribute("aria-checked", "true")  # summary's own
    page.goto(f"{server.url}/#/scripts/plait.classify")
    expect(page.get_by_role("radio", name="One column")).to_have_attribute("aria-checked", "true")
    expect(page.get_by_role("tab", name="Generate")).to_have_attribute("aria-selected", "true")

    # the editor opened without a template reopens the last one opened
    page.goto(f"{server.url}/#/graphs")
    page.get_by_role("link", name="Scripts").click()
    expect(page).to_have_url(f"{server.url}/#/scripts/plait.classify")
    page.get_by_role("button", name="New").click()  # and New still starts a new script
    expect(page).to_have_url(f"{server.url}/#/scripts")
    expect(page.get_by_role("heading", name="New script")).to_be_visible()

    # problems are marked as the script is typed, before any preview
    set_script(page, "function helper() {\n  return 1 +;\n}\n")
    expect(page.locator(".cm-lint-marker-error")).to_have_count(1)
    expect(page.locator(".cm-lint-marker-warning")).to_have_count(1)  # and there is no main()
    set_script(page, 'async function main() {\n  return "fine";\n}\n')
    expect(page.locator(".cm-lint-marker-error, .cm-lint-marker-warning")).to_have_count(0)

    # expert mode shows the runtime and the exact request a preview sends
    page.get_by_label("Expert mode").check()
    runtime = page.get_by_test_id("runtime-panel")
    expect(runtime).to_contain_text("await getSchemaHint(id)")
    expect(runtime.get_by_label("Request sent")).to_contain_text('"script_code": "async function main()')
    page.reload()
    expect(page.get_by_test_id("runtime-panel")).to_be_visible()  # kept on


def test_a_template_written_for_an_older_schema_version_says_so(scripts_server: Served, page: Any) -> None:
    server = scripts_server
    newer = GRAPH.replace("version: 1.0.0", "version: 2.0.0").replace("uses_my_summary", "newer_summary")
    newer = newer.replace("prompt_script: my_summary", 'user_prompt_tpl: "Sum up {{ input.text }}"')
    assert server.client.post("/api/graphs/import", json={"source": newer}).status_code in (200, 201)
    assert server.client.get("/api/graphs/newer_summary").json()["graph"]["schemas"][0]["version"] == "2.0.0"
    run_id = server.start("newer_summary", {"text": "Birds eat seeds."})
    template = {
        "id": "old_target",
        "name": "Written for summary 1.0.0",
        "category": "summary",
        "schema_target": "summary@1.0.0",
        "script_code": 'async function main() { return "Sum up " + await getVar("input.text"); }',
    }
    assert server.client.post("/api/templates", json=template).status_code == 201

    open_editor(server, page, "#/scripts/old_target")
    expect(page.get_by_test_id("older-schema")).to_have_count(0)  # tried on no run: nothing to compare with
    page.get_by_label("Run id (optional)").fill(run_id)
    page.get_by_label("Node id").fill("summarise")
    warning = page.get_by_test_id("older-schema")
    expect(warning).to_contain_text("written for schema summary 1.0.0")
    expect(warning).to_contain_text("has summary 2.0.0")
    # a warning only: generating still works, and says which version the answer was parsed with
    page.get_by_role("tab", name="Generate").click()
    expect(
        page.get_by_role("region", name="Generate").get_by_role("button", name="Generate", exact=True)
    ).to_be_enabled()
