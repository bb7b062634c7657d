"""`plait.toml` (SPEC §6.1): the contract's shape, where it is found, errors with their path, and
`plait config check` (never printing a secret)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plait.config import CONFIG_ENV, EMBEDDED_MODEL, Capability, ConfigError, JsonMode, Tokenizer, load_config
from plait.llm import local
from plait.llm.check import check_config
from tests.plait_cli import bare_env, run_plait

CONTRACT = """
[[providers]]
id = "deepseek"
kind = "openai"                 # openai | local | scripted
base_url = "https://api.deepseek.com/v1"
api_key_env = "PLAIT_TEST_DEEPSEEK_KEY"
max_concurrency = 5
rpm = 600
tpm = 1000000
enabled = true
models = [
  { name = "deepseek-chat", price_in = 0.27, price_out = 1.10, context = 65536,
    capabilities = ["tools", "json_schema"] },
]

[[providers]]
id = "llamacpp"
kind = "openai"
base_url = "http://127.0.0.1:8080/v1"
json_mode = "json_object_schema"
tokenizer = "cl100k_base"

[[providers]]
id = "local"
kind = "local"
models = [{ name = "smollm2", capabilities = ["json_schema"] }]

[roles]
chat = ["deepseek/deepseek-chat", "local/smollm2"]
fast = "llamacpp/anything"
"""


def write(tmp_path: Path, text: str, name: str = "plait.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_contract_shape_loads(tmp_path: Path) -> None:
    config = load_config(str(write(tmp_path, CONTRACT)))
    deepseek = config.provider("deepseek")
    assert deepseek is not None
    assert (deepseek.max_concurrency, deepseek.rpm, deepseek.tpm, deepseek.json_mode_for("deepseek-chat")) == (
        5,
        600,
        1_000_000,
        "json_schema",
    )
    model = deepseek.model("deepseek-chat")
    assert model is not None
    assert model.capabilities == (Capability.TOOLS, Capability.JSON_SCHEMA)
    assert model.cost_usd(1_000_000, 500_000) == pytest.approx(0.27 + 0.55)
    assert config.provider("llamacpp").json_mode is JsonMode.JSON_OBJECT_SCHEMA  # type: ignore[union-attr]
    assert config.provider("llamacpp").tokenizer is Tokenizer.CL100K_BASE  # type: ignore[union-attr]
    assert deepseek.tokenizer is Tokenizer.AUTO
    assert config.roles == {"chat": ("deepseek/deepseek-chat", "local/smollm2"), "fast": ("llamacpp/anything",)}
    assert [(p.id, m) for p, m in config.targets("chat")] == [("deepseek", "deepseek-chat"), ("local", "smollm2")]


def test_found_by_flag_then_environment_then_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    assert load_config().source is None  # nothing anywhere: the built-in defaults
    assert load_config().roles["chat"] == (f"local/{EMBEDDED_MODEL}",)
    write(tmp_path, CONTRACT)
    assert load_config().source == "plait.toml"
    other = write(tmp_path, '[[providers]]\nid = "x"\nkind = "local"\n[roles]\nchat = "x/m"\n', "other.toml")
    monkeypatch.setenv(CONFIG_ENV, str(other))
    assert load_config().source == str(other)
    third = write(tmp_path, '[[providers]]\nid = "y"\nkind = "local"\n[roles]\nchat = "y/m"\n', "third.toml")
    assert load_config(str(third)).source == str(third)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[providers]]\nid = "a"\nkind = "local"\nmodles = []\n', r"providers\[0\] \(a\)\.modles: unknown key"),
        ('[[providers]]\nid = "a"\nkind = "openai"\n', r"providers\[0\] \(a\): an openai provider needs base_url"),
        (
            '[[providers]]\nid = "a"\nkind = "gemini"\n',
            r"providers\[0\] \(a\)\.kind: Input should be 'openai', 'local'",
        ),
        (
            '[[providers]]\nid = "a"\nkind = "local"\nmodels = [{name = "m", price_in = -1}]\n',
            r"providers\[0\] \(a\)\.models\[0\]\.price_in: Input should be greater than or equal to 0",
        ),
        (
            '[[providers]]\nid = "a"\nkind = "local"\ntokenizer = "gpt2"\n',
            r"providers\[0\] \(a\)\.tokenizer: Input should be 'auto', 'o200k_base', 'cl100k_base' or 'estimate'",
        ),
        ('[[providers]]\nid = "a"\nkind = "local"\n[roles]\nchat = "b/m"\n', r"role 'chat': no provider 'b'"),
        (
            '[[providers]]\nid = "a"\nkind = "local"\nmodels = [{name = "m"}]\n[roles]\nchat = "a/n"\n',
            r"provider 'a' has no model 'n' \(models: m\)",
        ),
        ('[[providers]]\nid = "a"\nkind = "local"\n[[providers]]\nid = "a"\nkind = "local"\n', "used twice"),
        ("[roles\n", "is not valid TOML"),
    ],
)
def test_errors_name_the_key_and_the_fix(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(str(write(tmp_path, text)))


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the config file"):
        load_config(str(tmp_path / "nope.toml"))


def test_a_config_that_is_not_a_regular_file_or_too_large_is_refused_without_reading_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config("/dev/zero")
    huge = tmp_path / "plait.toml"
    huge.write_bytes(b"# " + b"x" * (11 * 1024 * 1024))
    with pytest.raises(ConfigError, match=r"is 11\.0 MiB; the limit is 10\.0 MiB"):
        load_config(str(huge))


def test_check_fails_over_past_a_provider_without_its_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "available", lambda: True)
    monkeypatch.delenv("PLAIT_TEST_DEEPSEEK_KEY", raising=False)
    report = check_config(load_config(str(write(tmp_path, CONTRACT))))
    roles = {r.role: r for r in report.roles}
    assert roles["chat"].resolves_to == "local/smollm2"
    assert roles["chat"].targets[0][1] == ("set the environment variable PLAIT_TEST_DEEPSEEK_KEY",)
    assert roles["fast"].resolves_to == "llamacpp/anything"  # a loopback server needs no key
    assert report.ok
    monkeypatch.setenv("PLAIT_TEST_DEEPSEEK_KEY", "sk-test")
    report = check_config(load_config(str(write(tmp_path, CONTRACT))))
    assert {r.role: r.resolves_to for r in report.roles}["chat"] == "deepseek/deepseek-chat"


def test_config_check_cli_shows_what_is_missing_and_never_a_secret(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        CONTRACT.replace('chat = ["deepseek/deepseek-chat", "local/smollm2"]', 'chat = "deepseek/deepseek-chat"'),
    )
    command = ["config", "check", "--config", str(path), "--json"]
    missing = run_plait(*command, env=bare_env(PATH="/usr/bin:/bin"))
    assert missing.returncode == 2, missing.stderr
    report = json.loads(missing.stdout)
    assert report["roles"]["chat"]["resolves_to"] is None
    assert "set the environment variable PLAIT_TEST_DEEPSEEK_KEY" in report["problems"][0]
    secret = "sk-very-secret-value-1234"
    present = run_plait(*command, env=bare_env(PATH="/usr/bin:/bin", PLAIT_TEST_DEEPSEEK_KEY=secret))
    assert present.returncode == 0, present.stderr
    assert json.loads(present.stdout)["roles"]["chat"]["resolves_to"] == "deepseek/deepseek-chat"
    assert json.loads(present.stdout)["providers"][0]["key"] == "PLAIT_TEST_DEEPSEEK_KEY (set)"
    assert [p["tokenizer"] for p in json.loads(present.stdout)["providers"]] == ["auto", "cl100k_base", "auto"]
    human = run_plait(*command[:-1], env=bare_env(PATH="/usr/bin:/bin", PLAIT_TEST_DEEPSEEK_KEY=secret))
    assert human.returncode == 0
    assert "deepseek/deepseek-chat" in human.stdout
    assert secret not in present.stdout + present.stderr + human.stdout + human.stderr


@pytest.mark.parametrize(
    ("roles", "node_role", "message"),
    [
        ('chat = "deepseek/deepseek-chat"', "chat", "set the environment variable PLAIT_TEST_DEEPSEEK_KEY"),
        ('chat = "llamacpp/anything"', "summarize", "the role 'summarize' is not configured in"),
    ],
)
def test_a_run_whose_role_cannot_be_served_is_refused_before_it_starts(
    tmp_path: Path, roles: str, node_role: str, message: str
) -> None:
    config = write(tmp_path, CONTRACT.split("[roles]")[0] + "[roles]\n" + roles + "\n")
    graph = tmp_path / "g.yaml"
    graph.write_text(
        "id: g\nnodes:\n  - {id: a, type: LLM_CALL, user_prompt_tpl: hi, model_role: " + node_role + "}\nedges: []\n"
    )
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    result = run_plait(
        "run", str(graph), "--config", str(config), "--db", db, "--quiet", env=bare_env(PATH="/usr/bin:/bin")
    )
    assert result.returncode == 2, result.stderr
    assert "node 'a'" in result.stderr
    assert message in result.stderr
    from plait.store import Store

    with Store(db) as store:
        assert store.runs.list() == []  # refused before the run was created: nothing is left behind
