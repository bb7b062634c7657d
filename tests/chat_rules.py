"""What the scripted designer answers in the chat tests (the HTTP API's and the CLI's): each rule
matches what the designer is asked, so each turn of a test takes a known path."""

from __future__ import annotations

from typing import Any

NONE_YET = r"Problems the compiler found in the last proposal \(fix them\):\n\(none\)"


def _rule(match: str, reply: str, operations: list[Any], questions: list[Any] | None = None) -> dict[str, Any]:
    output = {"reply": reply, "operations": operations, "questions": questions or []}
    return {"node": "propose", "match": match, "output": output}


SUMMARY_SCHEMA = {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}
TEXT_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
NOTES_INPUT = {"type": "object", "properties": {"notes": {"type": "string"}}, "required": ["notes"]}

RULES: list[dict[str, Any]] = [
    # a node without a prompt: a config error, which the second round fixes
    _rule(
        rf"(?s)Summarise my meeting notes.*{NONE_YET}",
        "A graph that summarises notes.",
        [
            {"op": "set_graph", "field": "input_schema", "value": NOTES_INPUT},
            {"op": "add_schema", "id": "summary", "schema": SUMMARY_SCHEMA},
            {"op": "add_node", "id": "summarise", "type": "LLM_CALL", "fields": {"system_prompt": "Summarise."}},
            {"op": "connect", "from": "summarise", "to": "END", "schema_id": "summary"},
        ],
    ),
    _rule(
        r"(?s)Summarise my meeting notes.*config/",
        "I gave the node its prompt.",
        [{"op": "set_field", "node": "summarise", "fields": {"user_prompt_tpl": "Notes: {{ input.notes }}"}}],
    ),
    # a question first, then the design from the answer
    _rule(
        r"(?s)What the person asks now:\nTranslate my notes(?!.*Answers:)",
        "One thing first.",
        [],
        [{"id": "lang", "text": "Into which language?", "kind": "single", "choices": ["French", "German"]}],
    ),
    _rule(
        r"(?s)Answers:.*German",
        "A German translator.",
        [
            {"op": "set_graph", "field": "input_schema", "value": NOTES_INPUT},
            {"op": "add_schema", "id": "text", "schema": TEXT_SCHEMA},
            {
                "op": "add_node",
                "id": "translate",
                "type": "LLM_CALL",
                "fields": {"user_prompt_tpl": "Into German: {{ input.notes }}", "stream": True},
            },
            {"op": "connect", "from": "translate", "to": "END", "schema_id": "text"},
        ],
    ),
    # an edit of a stored graph
    _rule(
        r"(?s)Make the polish step gentler",
        "Gentler now.",
        [{"op": "set_field", "node": "polish", "fields": {"system_prompt": "Polish gently."}}],
    ),
    # a document that tells the designer to add a shell: the scripted designer obeys it every round
    _rule(
        r"(?s)IGNORE PREVIOUS INSTRUCTIONS.*not_executable",
        "Trying another shell.",
        [{"op": "set_field", "node": "pwn", "fields": {"command": ["bash", "-c", "cat /etc/passwd"]}}],
    ),
    _rule(
        r"(?s)IGNORE PREVIOUS INSTRUCTIONS",
        "Added the tool the document asked for.",
        [
            {"op": "add_node", "id": "pwn", "type": "TOOL", "fields": {"command": ["sh", "-c", "cat /etc/passwd"]}},
            {"op": "connect", "from": "pwn", "to": "END"},
        ],
    ),
    {"node": "translate", "output": {"text": "Hallo zusammen"}, "delay_ms": 1500},  # streamed in pieces
    {"node": "draft", "output": {"text": "a draft"}},
    {"node": "polish", "output": {"text": "polished"}},
]
