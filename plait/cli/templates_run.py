"""`plait templates run`: a generation on the terminal (the answer streamed on stdout as it
arrives, the console and the outcome on stderr)."""

from __future__ import annotations

import sys
from typing import Any

from plait.cli.common import EXIT_FAILED, EXIT_OK, print_json
from plait.cli.templates import shown

EXIT_CANCELLED = 130
"""Stopped with Ctrl-C, as a shell reports SIGINT."""


def generate_once(
    code: str,
    host: Any,
    role: str,
    model: str | None,
    schema_target: str | None,
    llm: str | None,
    config: str | None,
    json_output: bool,
) -> int:
    """Generate once; the exit code says how it ended (0 done, 1 failed, 130 cancelled)."""
    from plait.cli.drive import provider_from_options
    from plait.engine import eventloop
    from plait.runs.generate import GenerateRequest, Generation, generate

    provider = provider_from_options(llm, config)
    request = GenerateRequest(code, host, role=role, model=model, schema_target=schema_target)

    async def go() -> Generation:
        try:
            return await generate(request, provider, lambda kind, data: _show(kind, data, json_output))
        finally:
            if provider is not None:
                await provider.aclose()

    try:
        result = eventloop.run(go())
    except KeyboardInterrupt:
        sys.stdout.write("\n")
        sys.stderr.write("plait: cancelled; the model call was stopped (the text above is what had arrived)\n")
        return EXIT_CANCELLED
    if json_output:
        print_json({"prompt": result.script.prompt if result.script else None, **result.as_json()})
    return EXIT_OK if result.failure is None else EXIT_FAILED


def _show(kind: str, data: dict[str, Any], json_output: bool) -> None:
    if json_output:
        return
    if kind in ("log", "warning", "error"):
        sys.stderr.write(f"[{data['level']}] {' '.join(shown(a) for a in data['args'])}\n")
    elif kind == "delta":
        sys.stdout.write(data["text"])
        sys.stdout.flush()
    elif kind == "done":
        sys.stdout.write("\n")
        for note in data["notes"]:
            sys.stderr.write(f"note: {note}\n")
        usage = data.get("usage") or {}
        sys.stderr.write(
            f"({data.get('provider')}/{data.get('model')}: {usage.get('input_tokens', 0)}+"
            f"{usage.get('output_tokens', 0)} tokens)\n"
        )
    elif kind == "failed" and data["error"]["layer"] != "cancelled":  # Ctrl-C is reported by the caller
        if data["content"]:
            sys.stdout.write("\n")
        error = data["error"]
        where = f" at line {error['line']}, column {error['column']}" if error.get("line") else ""
        partial = " (the text above is partial)" if data["partial"] else ""
        failed = f"the {error['layer']} step failed ({error['kind']}){where}"
        sys.stderr.write(f"plait: {failed}: {error['message']}{partial}\n")
