"""Every error a person can act on is a `PlaitError` with a stable code, and each surface
reports it in one place: the HTTP API with the status its kind stands for, the CLI with exit 2
and message, details and hint, never a traceback."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import sys

import pytest

import plait
from plait.api.errors import translate
from plait.errors import PlaitError, Refusal

NOT_REFUSALS = {
    # A node's failure, recorded on the node with its kind; never a refusal of the request.
    "plait.llm.types.ProviderError": "a model call failed: the node records it",
    "plait.llm.local.LocalModelMissing": "a ProviderError: the node records it",
    "plait.llm.embedded.EmbeddedModelError": "becomes LocalModelMissing, with its words, where a call needs the model",
    "plait.sandbox.errors.SandboxError": "a user expression failed: the node records it",
    "plait.sandbox.errors.JsSyntaxError": "a SandboxError",
    "plait.sandbox.errors.JsTimeoutError": "a SandboxError",
    "plait.sandbox.errors.JsMemoryError": "a SandboxError",
    "plait.sandbox.errors.JsRuntimeError": "a SandboxError",
    "plait.sandbox.errors.JsBusyError": "a SandboxError",
    "plait.sandbox.python.PythonCodeError": "a SandboxError",
    "plait.sandbox.scripts.ScriptError": "a SandboxError: a prompt script failed; its node or preview reports it",
    "plait.sandbox.scripts.HostError": "a host API refused a script's call: the script's promise is rejected",
    "plait.sandbox._context.Stopped": "control flow inside the sandbox: becomes a cancelled ScriptError",
    "plait.tools.mcp.McpFailure": "an MCP server failed during a node: the node records it",
    "plait.engine.inline_tools.ToolFailed": "a tool call failed: the model is told, the node records it",
    "plait.engine.toolbox.ToolSetError": "the node's tools cannot be offered: the node records it",
    "plait.engine.tool_loop.RoutedResultInvalid": "a routed tool result broke its schema: the node records it",
    "plait.engine.child_runs.ChildGraphError": "a node's child runs cannot start: the node records it",
    "plait.runs.batch.RecordError": "a line of a batch cannot be a run input: the failed file records it",
    "plait.runs._eval_cases.Incomparable": "a case cannot be scored on one side: its evaluation result records why",
    "plait.runs._eval_values.Unreadable": "a recorded value cannot be read at a version: the case runs whole, or why",
    "plait.runs._eval_layout.NotPlaced": "a case's values do not place its node: the case runs whole instead",
    "plait.engine.render_limits.RenderLimitError": "a template went over the render budget: the node records it",
    "plait.engine.run_budget.BudgetExceeded": "a run reached its budget starting a child: the node records it",
    "plait.engine.streaming.AnswerRejected": "a field broke the contract mid-answer: the node asks again",
    "plait.engine.ports.TemplatesUnavailable": "no stored templates for a prompt script: the node records it",
    # Turned into diagnostics or validation errors before any user sees them.
    "plait.model.limits.ValueLimitError": "raised inside pydantic validators, reported as their errors",
    "plait.compile.diagnostics.GraphLoadError": "carries diagnostics; surfaces report them as GraphInvalid",
    "plait.compile.ecma_regex.RegexRefused": "a pattern RE2 cannot run: reported as unsupported_regex or a violation",
    "plait.compile.template_types.TemplateError": "becomes a compiler diagnostic",
    "plait.compile.refs.RefError": "becomes a compiler diagnostic",
    # Bugs, control flow and adapter-local errors.
    "plait.evolve.system.SystemGraphError": "a shipped graph does not validate: a packaging bug, reported as internal",
    "plait.api.errors.ApiError": "the HTTP adapter's own error, already with its status",
    "plait.api.executor.ServiceStopping": "control flow while the server shuts down",
    "plait.cli.interrupt.Interrupted": "control flow of Ctrl-C",
    "plait.sandbox._context.Interrupted": "control flow inside the sandbox: becomes JsTimeoutError",
    "plait.sandbox._context.OutOfMemory": "control flow inside the sandbox: becomes JsMemoryError",
    "plait.sandbox._context.ContextFailed": "control flow inside the sandbox: becomes JsRuntimeError",
    "plait.engine.render_limits.OverTheLoopBudget": "control flow of rendering: the render moves to a thread",
    "plait.sandbox._process.ProcessGone": "control flow of the sandbox: becomes JsTimeoutError or JsRuntimeError",
}
"""Exception classes of Plait that are deliberately not a `PlaitError`, each with the reason."""


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(plait.__path__, "plait."):
        if module_info.name.endswith("__main__") or ".migrations" in module_info.name:
            continue  # run a program or Alembic's environment when imported
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{value.__module__}.{name}"] = value
    return found


def test_every_error_class_is_a_refusal_or_says_why_not() -> None:
    classes = _exception_classes()
    outside = {name for name, cls in classes.items() if not issubclass(cls, PlaitError)}
    assert outside - set(NOT_REFUSALS) == set(), "make these PlaitErrors, or list them in NOT_REFUSALS with why"
    assert set(NOT_REFUSALS) - set(classes) == set(), "NOT_REFUSALS lists classes that no longer exist"
    refusals = {name: cls for name, cls in classes.items() if issubclass(cls, PlaitError)}
    for expected in (
        "plait.store.errors.StoreError",
        "plait.compile.files.GraphInvalid",
        "plait.config.loader.ConfigError",
        "plait.config.mcp.MissingSecret",
        "plait.llm.select.LlmConfigError",
        "plait.llm.scripted.ScriptError",
        "plait.model.documents.DocumentError",
        "plait.evolve.migration_errors.MigrationError",
        "plait.engine.outcome.EngineError",
        "plait.runs.replay.ReplayError",
        "plait.api.app.ServerConfigError",
    ):
        assert expected in refusals


def test_every_refusal_has_a_stable_code() -> None:
    for name, cls in _exception_classes().items():
        if issubclass(cls, PlaitError) and cls is not PlaitError:
            code = cls.code or str(cls.kind)
            assert re.fullmatch(r"[a-z]+(_[a-z]+)*", code), f"{name}: code {code!r}"


def _instance(cls_path: str) -> PlaitError:
    module, _, name = cls_path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    if name == "GraphInvalid":
        from plait.compile.diagnostics import Category, Diagnostic

        return cls([Diagnostic(category=Category.CONFIG, code="no_nodes", message="the graph has no nodes")])  # type: ignore[no-any-return]
    if name == "MigrationError":
        return cls("cannot migrate", hint="add a migration", schema_id="s", from_version="1.0.0", to_version="2.0.0")  # type: ignore[no-any-return]
    if name == "AmbiguousIdError":
        return cls("prefix ab matches 2 runs", [("ab1",), ("ab2",)], False)  # type: ignore[no-any-return]
    return cls("what went wrong")  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("cls_path", "status", "code"),
    [
        ("plait.store.errors.StoreError", 409, "conflict"),
        ("plait.store.errors.NotFoundError", 404, "not_found"),
        ("plait.store.prefix.AmbiguousIdError", 409, "conflict"),
        ("plait.store.graph_admin.ReadOnlyGraph", 403, "read_only"),
        ("plait.store.run_admin.RunEnded", 409, "conflict"),
        ("plait.engine.outcome.EngineError", 409, "engine_refused"),
        ("plait.evolve.migration_errors.MigrationError", 409, "migration_failed"),
        ("plait.compile.files.GraphInvalid", 422, "graph_invalid"),
        ("plait.config.loader.ConfigError", 422, "config_invalid"),
        ("plait.config.mcp.MissingSecret", 422, "missing_secret"),
        ("plait.llm.select.LlmConfigError", 422, "llm_unavailable"),
        ("plait.llm.scripted.ScriptError", 422, "script_invalid"),
        ("plait.model.documents.DocumentError", 422, "invalid"),
        ("plait.runs.replay.ReplayError", 422, "replay_refused"),
    ],
)
def test_the_api_answers_each_refusal_with_its_status_and_code(cls_path: str, status: int, code: str) -> None:
    response = translate(_instance(cls_path))
    body = json.loads(bytes(response.body))
    assert (response.status_code, body["error"]["code"]) == (status, code)
    assert body["error"]["message"]


def test_a_refusal_keeps_its_instance_kind_and_code() -> None:
    plain = PlaitError("no such node", kind=Refusal.NOT_FOUND)
    assert (plain.kind, plain.code, str(plain)) == (Refusal.NOT_FOUND, "not_found", "no such node")
    from plait.model.documents import DocumentError

    too_big = DocumentError("the file is 3 MB", "keep it under 1 MB", code="too_large", size=3)
    assert (too_big.code, too_big.kind, too_big.hint) == ("too_large", Refusal.INVALID, "keep it under 1 MB")
    assert json.loads(bytes(translate(too_big).body))["error"]["code"] == "too_large"


def test_an_unexpected_exception_is_an_internal_error_over_http() -> None:
    response = translate(RuntimeError("boom"))
    assert response.status_code == 500
    assert json.loads(bytes(response.body))["error"]["code"] == "internal_error"


@pytest.mark.parametrize("as_json", [False, True])
def test_a_refusal_no_command_handles_exits_2_with_message_and_hint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    """The CLI's entry point reports any `PlaitError` a command lets through like the commands
    do: message, details and hint, exit 2, and no traceback."""
    import plait.cli.validate as validate
    from plait.cli.app import main
    from plait.config.loader import ConfigError

    def refused(*_args: object, **_kwargs: object) -> None:
        raise ConfigError("plait.toml: [pool] limit must be positive", "write limit = 1 or more", ["pool.limit: -1"])

    monkeypatch.setattr(validate, "run_validate", refused)
    monkeypatch.setattr(sys, "argv", ["plait", "validate", "graph.yaml", *(["--json"] if as_json else [])])
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code == 2
    out, err = capsys.readouterr()
    assert "plait: plait.toml: [pool] limit must be positive" in err
    assert "  pool.limit: -1" in err
    assert "hint: write limit = 1 or more" in err
    assert "Traceback" not in err
    if as_json:
        assert json.loads(out)["error"]["code"] == "config_invalid"
