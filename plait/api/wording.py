"""Errors in the words of HTTP: what the engine, store and evolve layers say in CLI terms, said
with routes and body fields instead, and never the database's URL.

Those layers serve the CLI and the server alike, and many of their hints name a command
(`plait runs list`) or a flag (`--force`). The server says the same thing with the route or
field that does it. Commands are matched by name, whatever sentence carries them, so a new
hint that names a known command reads right over HTTP too; a command or flag with no HTTP
counterpart left over is cut rather than sent (an HTTP client cannot run it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_Rule = tuple[re.Pattern[str], str]


def _rules(pairs: Iterable[tuple[str, str]]) -> list[_Rule]:
    return [(re.compile(pattern), replacement) for pattern, replacement in pairs]


PHRASES = _rules(
    (
        # whole sentences whose HTTP version is not a word-for-word swap
        (
            r"pass the missing or corrected fields with -i key=value or --input-file",
            "send the missing or corrected fields in `input`",
        ),
        (
            r"import the graph file with `plait graphs import FILE` \(it inlines the skills\)",
            "import the graph file "
            "where its skills are (the server never reads its own files; the CLI's import inlines the skills)",
        ),
        (
            r"store it again \(`plait graphs import FILE`, or run the graph file\)",
            "store it again (POST /api/graphs/import)",
        ),
        (r"pass --force to delete it anyway", "send `force=true` to delete it anyway"),
        (r"choose another name with --name", "choose another `name`"),
        (r"give one with --name \(or `name` in the `skill:` block\)", "send one as `name`"),
        (
            r"configure the server \(--llm, --config\)",
            "ask the server's operator to configure its models and MCP servers",
        ),
        (r"pass --llm scripted:FILE", "the server's operator configures one"),
        (
            r"`plait graphs merge (\S+) --refork --confirm`",
            r'POST /api/graphs/\1/merge with {"refork": true, '
            r'"confirm": true}',
        ),
        (
            r"`plait rollback (\S+) (\S+) --to-version N`",
            r'POST /api/runs/\1/rollback with {"target": "\2", '
            r'"to_version": N}',
        ),
        (r"`plait runs show (\S+) --ledger(?: --json)?`", r"GET /api/runs/\1/ledger"),
        # promotion (plait/runs/promote.py)
        (
            r"`plait eval run (\S+) --set (\S+) --version (\d+)`",
            r'POST /api/graphs/\1/evaluations with {"set": "\2", "version": \3}',
        ),
        (r"pass --force --note TEXT to promote anyway", "send `force: true` with a `note` to promote anyway"),
        (r"pass --note TEXT with --force", "send a `note` with `force: true`"),
        (r"pass --gate NAME", "send `gate`: NAME"),
    )
)
COMMANDS = _rules(
    (
        (r"`plait config show[^`]*`", "GET /api/settings"),
        (r"`plait settings history[^`]*`", "GET /api/settings/history"),
        (r"`plait runs list[^`]*`", "GET /api/runs"),
        (r"`plait runs show RUN_ID[^`]*`", "GET /api/runs/{id}"),
        (r"`plait runs show (\S+?)[^`]*`", r"GET /api/runs/\1"),
        (r"`plait graphs list[^`]*`", "GET /api/graphs"),
        (r"`plait graphs versions[^`]*`", "GET /api/graphs/{id}/versions"),
        (r"`plait graphs show[^`]*`", "GET /api/graphs/{id}"),
        (r"`plait graphs diff[^`]*`", "GET /api/graphs/{id}/diff"),
        (r"`plait graphs fork (?:ID|FORK)`", "POST /api/graphs/{id}/fork"),
        (r"`plait graphs fork (\S+?)`", r"POST /api/graphs/\1/fork"),
        (r"`plait graphs import[^`]*`", "POST /api/graphs/import"),
        (r"`plait validate[^`]*`", "POST /api/graphs/validate"),
        (r"`plait review[^`]*`", "POST /api/runs/{id}/nodes/{node}/review"),
        (r"`plait rerun[^`]*`", "POST /api/runs/{id}/nodes/{node}/rerun"),
        (r"`plait override[^`]*`", "POST /api/runs/{id}/nodes/{node}/override"),
        (r"`plait rollback[^`]*`", "POST /api/runs/{id}/rollback"),
        (r"`plait resume (?:RUN_ID|ID)`", "POST /api/runs/{id}/resume"),
        (r"`plait resume (\S+?)`", r"POST /api/runs/\1/resume"),
        (r"`plait replay[^`]*`", "POST /api/node-runs/{id}/replay"),
        (r"`plait templates preview[^`]*`", "POST /api/templates/preview"),
        (r"`plait chat --list`", "GET /api/chat/sessions"),
        (r"`plait eval show[^`]*`", "GET /api/graphs/{id}/eval-sets"),
        (r"`plait eval build[^`]*`", "POST /api/graphs/{id}/eval-sets"),
        (r"`plait skills list[^`]*`", "GET /api/skills"),
        (r"`plait skills show (?:NAME|\{name\})`", "GET /api/skills/{name}"),
        (r"`plait skills show (\S+?)`", r"GET /api/skills/\1"),
        (r"`plait skills add[^`]*`", "POST /api/skills"),
        (r"`plait skills update (?:NAME )?FILE`", "PUT /api/skills/{name}"),
        (r"`plait skills update (\S+?) FILE`", r"PUT /api/skills/\1"),
    )
)
LEFT_OVER = re.compile(r"\s*\(?`plait [^`]*`\)?|\s*\(?`?(?<![\w-])--[a-z][\w-]*(?:[ =][^\s,;()`]+)?`?\)?")
"""A command or flag no rule knows: cut, with the parentheses or backticks around it."""
CLI_TEXT = re.compile(r"\bplait [a-z]+|(?<![\w-])--[a-z]|(?<!\w)-i ")
"""What an HTTP error never contains (the test sweep checks every body against it too)."""


def for_http(text: str, hidden: Iterable[str] = ()) -> str:
    """`text` in HTTP terms, with each of `hidden` (the database's URL, its file) replaced."""
    for secret in hidden:
        if secret:
            text = text.replace(secret, "the database")
    for pattern, replacement in (*PHRASES, *COMMANDS):
        text = pattern.sub(replacement, text)
    if CLI_TEXT.search(text):
        text = LEFT_OVER.sub("", text)
    return text
