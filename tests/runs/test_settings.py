"""Settings changed while the server runs (plait/runs/settings.py), on SQLite and PostgreSQL: a
change is recorded with who, when, why and the overlay before it, and is in force with where each
value came from; every refused change (invalid, stale, over a cap, a fixed section, a key the
deployer did not allow) leaves the revision, the settings and the history as they were; a revert
undoes one change's keys only, as a new change; keys never reach the store or a view; `[pool]
order` reorders a role's targets in the pool; `[context]` in force drives the chat's memory."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from plait.config import ConfigError, ContextConfig, PlaitConfig, follow_settings
from plait.config.overlay import SettingsRefused
from plait.llm.check import check_config
from plait.llm.pool import ProviderPool
from plait.llm.types import ChatRequest
from plait.runs.settings import change, effective, history, revert
from plait.runs.settings_view import settings_view
from plait.store import Store
from plait.store.settings_changes import SettingsStale

CANARY = "sk-canary-7f3a9c1e5b2d8f40"
TOML = """
[[providers]]
id = "a"
kind = "scripted"
file = "a.yaml"

[[providers]]
id = "b"
kind = "scripted"
file = "b.yaml"

[[providers]]
id = "cloud"
kind = "openai"
base_url = "https://api.example.com/v1"
api_key_env = "PLAIT_TEST_CLOUD_KEY"
models = [{ name = "big", price_in = 1.0, price_out = 2.0 }]

[roles]
chat = "a/scripted"
both = ["a/scripted", "b/scripted"]

[sandbox]
max_timeout_s = 10

[tools]
max_output_bytes = 1000

[settings]
key_envs = ["PLAIT_TEST_OTHER_KEY"]
"""


def write_config(folder: Path, extra: str = "") -> str:
    (folder / "a.yaml").write_text(json.dumps({"responses": [{"text": "from a"}]}))
    (folder / "b.yaml").write_text(json.dumps({"responses": [{"text": "from b"}]}))
    path = folder / "plait.toml"
    path.write_text(TOML + extra)
    return str(path)


@pytest.fixture
def config(tmp_path: Path) -> str:
    return write_config(tmp_path)


def snapshot(store: Store, config: str) -> tuple[int, dict[str, Any], list[Any]]:
    """What a refused change must leave as it was: the revision, the settings, the history."""
    found = effective(store, config)
    return found.revision, found.config.model_dump(mode="json"), [vars(e) for e in history(store)]


def test_a_change_is_recorded_and_in_force_with_where_each_value_came_from(store: Store, config: str) -> None:
    assert effective(store, config).revision == 0
    found = change(store, config, {"roles": {"chat": ["b/scripted"]}}, by="ann", base_revision=0, note="b is better")
    assert found.revision == 1
    assert found.config.roles["chat"] == ("b/scripted",)
    assert found.config.roles["both"] == ("a/scripted", "b/scripted")  # untouched: plait.toml's
    assert found.sources["roles.chat"] == "settings rev 1"
    assert found.sources["roles.both"] == "plait.toml"
    assert found.sources["providers.cloud.base_url"] == "plait.toml"
    assert found.sources["resources.probe_s"] == "default"
    found = change(store, config, {"context": {"history_tokens": 900}}, by="bob", base_revision=1)
    assert found.sources["roles.chat"] == "settings rev 1"  # the change that set it, not the newest
    assert found.sources["context.history_tokens"] == "settings rev 2"
    newest, first = history(store)
    assert (first.revision, first.by, first.note, first.reverts) == (1, "ann", "b is better", None)
    assert first.changes == [{"key": "roles.chat", "old": None, "new": ["b/scripted"]}]
    assert newest.changes == [{"key": "context.history_tokens", "old": None, "new": 900}]
    assert store.settings_changes.get(2).previous == {"roles": {"chat": ["b/scripted"]}}


REFUSED: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"roles": {"chat": ["nobody/model"]}}, ConfigError, "no provider 'nobody'"),
    ({"providers": {"a": {"rpm": 0}}}, ConfigError, "settings.providers.a.rpm"),
    ({"providers": {"a": {"file": "/etc/passwd"}}}, ConfigError, "settings.providers.a.file"),
    ({"secrets": {"x": 1}}, ConfigError, "settings.secrets"),
    ({"sandbox": {"max_timeout_s": 11}}, ConfigError, "above its cap, 10"),
    ({"tools": {"max_output_bytes": 5000}}, ConfigError, "above its cap, 1000"),
    ({"context": {"recent_share": 0.9}}, ConfigError, "may add up to 1 at most"),
    ({"pool": {"order": ["ghost"]}}, ConfigError, "pool.order"),
    ({"providers": {"remove": ["a"]}}, ConfigError, "comes from plait.toml"),
    (
        {"providers": {"x": {"kind": "openai", "base_url": "https://evil.example", "api_key_env": "HOME"}}},
        ConfigError,
        "HOME is not a variable the deployer lets providers take a key from",
    ),
    (
        {"providers": {"cloud": {"base_url": "https://evil.example/v1"}}},
        ConfigError,
        "sent only to https://api.example.com",
    ),
    ({"roles": {"chat": ["cloud/big"]}}, ConfigError, "set the environment variable PLAIT_TEST_CLOUD_KEY"),
    ({"roles": {"chat": ["b/scripted"]}}, ConfigError, "changes nothing"),
    ({}, ConfigError, "changes nothing"),
]


@pytest.mark.parametrize(("patch", "error", "says"), REFUSED, ids=[str(p) for p, _, _ in REFUSED])
def test_a_refused_change_leaves_everything_as_it_was(
    store: Store, config: str, patch: dict[str, Any], error: type[Exception], says: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.delenv("PLAIT_TEST_CLOUD_KEY", raising=False)
    change(store, config, {"roles": {"chat": ["b/scripted"]}}, by="ann", base_revision=0)
    before = snapshot(store, config)
    with pytest.raises(error) as refused:
        change(store, config, patch, by="mallory", base_revision=1)
    assert says in str(refused.value)
    assert snapshot(store, config) == before


def test_a_change_on_a_stale_revision_is_refused_and_changes_nothing(store: Store, config: str) -> None:
    change(store, config, {"roles": {"chat": ["b/scripted"]}}, by="ann", base_revision=0)
    before = snapshot(store, config)
    with pytest.raises(SettingsStale, match="changed since revision 0"):
        change(store, config, {"context": {"history_tokens": 900}}, by="bob", base_revision=0)
    with pytest.raises(SettingsStale):  # the store refuses it too, when two makers race past the read
        store.settings_changes.record(0, {"context": {"history_tokens": 900}}, by="bob")
    assert snapshot(store, config) == before


def test_fixed_sections_and_read_only_settings_are_refused_saying_which_key_to_change(
    store: Store, tmp_path: Path
) -> None:
    fixed = write_config(tmp_path, "fixed = ['providers']\n")
    with pytest.raises(SettingsRefused, match="'providers' is fixed") as refused:
        change(store, fixed, {"providers": {"a": {"rpm": 5}}}, by="ann", base_revision=0)
    assert refused.value.code == "settings_fixed"
    assert "[settings] fixed" in (refused.value.hint or "")
    assert change(store, fixed, {"roles": {"chat": ["b/scripted"]}}, by="ann", base_revision=0).revision == 1
    (tmp_path / "plait.toml").write_text(TOML + "enabled = false\n")
    with pytest.raises(SettingsRefused) as off:
        change(store, fixed, {"roles": {"chat": ["a/scripted"]}}, by="ann", base_revision=1)
    assert off.value.code == "settings_disabled"
    assert "[settings] enabled = true" in (off.value.hint or "")
    with pytest.raises(SettingsRefused):
        revert(store, fixed, 1, by="ann")
    assert store.settings_changes.revision() == 1


def test_a_revert_undoes_one_change_only_and_is_recorded(store: Store, config: str) -> None:
    change(store, config, {"roles": {"chat": ["b/scripted"]}}, by="ann", base_revision=0)
    change(store, config, {"context": {"history_tokens": 900}}, by="bob", base_revision=1)
    found = revert(store, config, 1, by="carol")
    assert found.revision == 3
    assert found.config.roles["chat"] == ("a/scripted",)  # back to plait.toml's
    assert found.config.context.history_tokens == 900  # the later change stays
    assert found.sources["roles.chat"] == "plait.toml"
    entry = history(store)[0]
    assert (entry.by, entry.reverts, entry.note) == ("carol", 1, "revert of revision 1")
    assert entry.changes == [{"key": "roles.chat", "old": ["b/scripted"], "new": None}]
    again = revert(store, config, 3, by="carol")  # a revert is a change like any other
    assert again.config.roles["chat"] == ("b/scripted",)


def test_keys_never_reach_the_store_or_a_view_and_allowed_variables_pass(
    store: Store, config: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAIT_TEST_OTHER_KEY", CANARY)
    monkeypatch.setenv("PLAIT_TEST_CLOUD_KEY", CANARY + "-cloud")
    added = {"kind": "openai", "base_url": "https://anywhere.example/v1", "api_key_env": "PLAIT_TEST_OTHER_KEY",
             "models": [{"name": "m", "price_in": 0.5, "capabilities": ["json_schema"]}]}  # fmt: skip
    patch = {"providers": {"extra": added, "cloud": {"base_url": "https://api.example.com/v2", "rpm": 60}}}
    found = change(store, config, patch, by="ann", base_revision=0)
    view = settings_view(found)
    extra = next(p for p in view["providers"] if p["id"] == "extra")
    assert (extra["api_key_env"], extra["key_set"], extra["from"]) == ("PLAIT_TEST_OTHER_KEY", True, "settings")
    cloud = next(p for p in view["providers"] if p["id"] == "cloud")
    assert (cloud["base_url"], cloud["rpm"], cloud["from"]) == ("https://api.example.com/v2", 60, "plait.toml")
    assert view["key_envs"] == ["PLAIT_TEST_CLOUD_KEY", "PLAIT_TEST_OTHER_KEY"]
    assert view["key_env_hosts"] == {"PLAIT_TEST_CLOUD_KEY": ["https://api.example.com"]}
    assert CANARY not in json.dumps(view)
    with store.db.connect() as conn:
        rows = conn.execute(text("SELECT overlay_json, previous_json, note, by FROM plait_settings_change")).all()
    assert rows
    assert CANARY not in repr(rows)
    assert "PLAIT_TEST_OTHER_KEY" in repr(rows)  # the name, never the value


def test_pool_order_puts_a_roles_targets_on_the_listed_providers_first(store: Store, config: str) -> None:
    found = change(store, config, {"pool": {"order": ["b"]}}, by="ann", base_revision=0)
    assert found.config.ordered("both") == ("b/scripted", "a/scripted")
    assert found.config.ordered("chat") == ("a/scripted",)  # no target on b: as the role says
    assert next(r for r in check_config(found.config).roles if r.role == "both").resolves_to == "b/scripted"

    async def answer() -> str:
        pool = ProviderPool(found.config)
        try:
            response = await pool.complete(ChatRequest("n", [{"role": "user", "content": "hi"}], model_role="both"))
        finally:
            await pool.aclose()
        return response.content or ""

    assert asyncio.run(answer()) == "from b"


def test_settings_that_no_longer_apply_to_plait_toml_leave_it_alone_in_force(
    store: Store, config: str, tmp_path: Path
) -> None:
    change(store, config, {"roles": {"chat": ["b/scripted"]}}, by="ann", base_revision=0)
    (tmp_path / "plait.toml").write_text(TOML.replace('id = "b"', 'id = "bee"').replace("b/scripted", "bee/scripted"))
    found = effective(store, config)
    assert found.problem is not None
    assert "no provider 'b'" in found.problem
    assert found.config.roles["chat"] == ("a/scripted",)
    mended = revert(store, config, 1, by="ann")  # a revert mends them
    assert mended.problem is None
    assert mended.revision == 2


def test_a_cap_lowered_in_plait_toml_holds_a_stored_limit_to_it(store: Store, config: str, tmp_path: Path) -> None:
    change(store, config, {"sandbox": {"max_timeout_s": 8}}, by="ann", base_revision=0)
    assert effective(store, config).config.sandbox.max_timeout_s == 8
    (tmp_path / "plait.toml").write_text(TOML.replace("max_timeout_s = 10", "max_timeout_s = 5"))
    found = effective(store, config)
    assert found.config.sandbox.max_timeout_s == 5
    assert found.sources["sandbox.max_timeout_s"] == "plait.toml"


@pytest.mark.usefixtures("embedder_installed")
def test_the_chat_memory_reads_the_context_in_force(store: Store) -> None:
    from plait.runs._chat_memory import HISTORY_TOKENS, conversation_shown
    from plait.store.chat import ChatMessage

    assert HISTORY_TOKENS == ContextConfig().history_tokens == 750  # the defaults are the former constants
    session = store.chat.create_session("notes")
    turns = [
        ChatMessage(f"m{i}", session.id, i, "user", "text", {"text": f"Turn {i}. " + "word " * 40}, None, None, 0.0)
        for i in range(1, 6)
    ]  # ~55 estimated tokens each: within the default budget, whole
    assert conversation_shown(store, session, turns, "next").turns == [1, 2, 3, 4, 5]
    small = PlaitConfig(context=ContextConfig(history_tokens=200, recent_share=0.3))
    follow_settings(lambda: small)
    try:
        shown = conversation_shown(store, session, turns, "next")
    finally:
        follow_settings(None)
    assert shown.turns == [5]  # the newest turn alone fits 30 % of 200 tokens
    assert shown.summarised  # the older ones by their first sentence
