"""What `plait chat` shows a person: tool lines for the designer's rounds, its reply as it is
written, a proposal as a diff panel, question cards, and the runs it starts as they go.

Progress and streamed text go to stderr, so `--once` output on stdout stays what the turn left.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from plait.cli.streamed import StreamView
from plait.engine.events import Event, NodeCompleted, NodeFailed, NodePartial, NodeStarted, RunCompleted, RunFailed

_STYLES = {"+": "green", "-": "red", "~": "yellow"}


class ChatView:
    """Prints a chat for a person; `quiet` keeps progress and streamed text off stderr."""

    def __init__(self, *, quiet: bool) -> None:
        self.quiet = quiet
        self.out = Console(highlight=False, soft_wrap=True)
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)
        self._designer_runs: set[str] = set()
        self._written: dict[str, int] = {}
        """Designer run -> how much of its reply was written so far."""
        self._replies: dict[str, str] = {}
        """Designer run -> its reply as streamed (not printed again with its message)."""
        self._stream = StreamView()

    # -- progress ---------------------------------------------------------------------------------

    def notify(self, _session_id: str, event: dict[str, Any]) -> None:
        """The chat's progress: a tool line per designer round and per run it starts."""
        if event.get("event") == "designer_run":
            self._designer_runs.add(str(event["run_id"]))
        if self.quiet:
            return
        if event.get("event") == "round":
            self.err.print(f"[dim]· designer, round {event['round']}[/dim]")
        elif event.get("event") == "run":
            self.err.print(f"[dim]· run {event['run_id']} started[/dim]")

    def watch(self, runs: Any, store: Any) -> None:
        """Follow the engine's events: the designer's reply as it is written, other runs' nodes."""
        if not self.quiet:
            runs.events.subscribe(self._on_event)

    def driver(self, runs: Any) -> Callable[[str], Awaitable[Any]]:
        """How the chat drives a run here: streamed, so a person sees the answer as it comes."""

        async def drive(run_id: str) -> Any:
            if not self.quiet:
                runs.stream(run_id, True)
            return await runs.finish(run_id)

        return drive

    def _on_event(self, event: Event) -> None:
        if event.run_id in self._designer_runs:
            if isinstance(event, NodePartial) and isinstance(event.value, dict):
                self._reply_so_far(event.run_id, str(event.value.get("reply") or ""))
            elif isinstance(event, (NodeCompleted, NodeFailed)) and self._written.get(event.run_id):
                sys.stderr.write("\n")
            return
        self._stream.on_event(event)
        if isinstance(event, NodeStarted):
            self.err.print(f"[dim]· {event.node_id} started[/dim]")
        elif isinstance(event, NodeCompleted):
            self.err.print(f"[dim]· {event.node_id} done[/dim]")
        elif isinstance(event, (RunCompleted, RunFailed)):
            self.err.print(
                f"[dim]· run {event.run_id} {'completed' if isinstance(event, RunCompleted) else 'failed'}[/dim]"
            )

    def _reply_so_far(self, run_id: str, reply: str) -> None:
        written = self._written.get(run_id, 0)
        self._replies[run_id] = reply
        if len(reply) > written:
            sys.stderr.write(reply[written:])
            sys.stderr.flush()
            self._written[run_id] = len(reply)

    # -- messages ---------------------------------------------------------------------------------

    def say(self, text: str) -> None:
        if not self.quiet:
            self.err.print(text)

    def refused(self, exc: Any) -> None:
        self.err.print(f"[red]{exc.message}[/red]" + (f"\n  hint: {exc.hint}" if exc.hint else ""))

    def message(self, message: Any) -> None:
        """One stored message, as a person reads it (a reply already streamed is not repeated)."""
        content = message.content
        if content.get("text") and content["text"] == self._replies.get(message.run_id):
            content = {**content, "text": ""}
        kind = str(message.kind)
        if kind == "text" and str(message.role) == "user":
            return
        if kind == "draft":
            self._draft(message, content)
        elif kind == "questions":
            if content.get("text"):
                self.out.print(content["text"])
            for question in content["questions"]:
                choices = f" ({', '.join(question.get('choices') or [])})" if question.get("choices") else ""
                self.out.print(f"  ? [{question['id']}] {question['text']}{choices}")
            self.out.print(f"[dim]answer with --answer ID=VALUE --session {message.session_id}[/dim]")
        elif kind == "run":
            self._run(content)
        elif kind == "error":
            self.out.print(f"[red]{content.get('text')}[/red]")
        else:
            self.out.print(content.get("text") or content)

    def _draft(self, message: Any, content: dict[str, Any]) -> None:
        status = content.get("status")
        if content.get("text"):
            self.out.print(content["text"])
        if status in ("accepted", "rejected"):
            return
        body = Text()
        for line in content.get("lines") or ["(no change)"]:
            body.append(line + "\n", style=_STYLES.get(line[:1], ""))
        for error in content.get("errors") or []:
            body.append(f"! {error['category']}/{error['code']}: {error['message']}\n", style="red")
        body.rstrip()
        title = f"draft {message.draft_id} · {status} · {content.get('rounds', 1)} round(s)"
        self.out.print(Panel(body, title=title, expand=False))

    def _run(self, content: dict[str, Any]) -> None:
        status = content.get("status")
        if status == "pending":
            self.out.print(f"run {content['run_id']} of {content['graph']} v{content['version']} started")
            return
        self.out.print(f"run {content['run_id']}: {status}")
        if content.get("output") is not None:
            self.out.print_json(data=content["output"])
        error = (content.get("error") or {}).get("node_error") or content.get("error")
        if error:
            self.out.print(f"[red]{error.get('message')}[/red]")

    # -- asking -----------------------------------------------------------------------------------

    def ask(self, questions: list[dict[str, Any]]) -> dict[str, Any]:
        """Each question of a card answered at the prompt (a choice by its number or its text)."""
        answers: dict[str, Any] = {}
        for question in questions:
            choices = question.get("choices") or []
            for number, choice in enumerate(choices, 1):
                self.out.print(f"    {number}. {choice}")
            raw = _read(f"{question['text']} > ")
            picked = [_choice(part.strip(), choices) for part in raw.split(",")] if choices else [raw]
            answers[question["id"]] = picked if question.get("kind") == "multiple" else picked[0]
        return answers

    def confirm(self, prompt: str) -> bool:
        return _read(f"{prompt} [y/n] ").strip().lower() in ("y", "yes")


def _read(prompt: str) -> str:
    try:
        return input(prompt)
    except EOFError:
        return ""


def _choice(given: str, choices: list[str]) -> str:
    if given.isdigit() and 1 <= int(given) <= len(choices):
        return choices[int(given) - 1]
    return given
