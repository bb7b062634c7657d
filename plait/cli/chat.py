"""`plait chat`: design, change and run graphs in a conversation, in a terminal or a script.

Without `--once` it is a REPL: what the person types goes to the designer; its progress shows
as tool lines, its reply as it is written, a proposal as a diff panel with `y/n` to accept it,
and a question card as questions answered in turn. `/run key=value ...` runs the chat's graph,
its answers streamed; `/quit` (or an empty line at end of input) leaves. With `--once "..."`
one message is carried out and the turn's messages are printed (`--json`: as JSON on stdout),
for scripts; `--answer`, `--accept`, `--reject` and `--run` act on a session given with
`--session`. Refusals are the CLI's usual: message, hint, exit 2.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from plait.cli.common import parse_inputs, print_json, refuse, store_for
from plait.cli.options import ConfigOption, DbOption, JsonOption, LlmOption, QuietOption
from plait.errors import PlaitError

OnceOption = Annotated[str | None, typer.Option("--once", help="Send this one message, print the turn, exit.")]
SessionOption = Annotated[str | None, typer.Option("--session", help="Continue this chat (its id).")]
GraphOption = Annotated[str | None, typer.Option("--graph", help="A new chat works on this stored graph (id or slug).")]
AnswerOption = Annotated[
    list[str], typer.Option("--answer", help="Answer the open question card: ID=VALUE (repeatable; a|b for several).")
]
AcceptOption = Annotated[
    str | None, typer.Option("--accept", help="Store this draft of the chat (its id) as a new version.")
]
ForkOption = Annotated[bool, typer.Option("--fork", help="With --accept: store it as a fork instead.")]
RejectOption = Annotated[str | None, typer.Option("--reject", help="Drop this draft of the chat (its id).")]
RunOption = Annotated[bool, typer.Option("--run", help="Run the chat's graph with the -i inputs.")]
InputOption = Annotated[list[str], typer.Option("-i", "--input", help="Run input as key=value (repeatable).")]
UploadOption = Annotated[
    list[Path], typer.Option("--upload", help="With --once: keep this file in the chat first (repeatable).")
]
HistoryOption = Annotated[bool, typer.Option("--history", help="Print the chat's messages (with --session).")]
ListOption = Annotated[bool, typer.Option("--list", help="List the chats, the most recently active first.")]


def chat_command(
    once: OnceOption = None,
    session: SessionOption = None,
    graph: GraphOption = None,
    answers: AnswerOption = [],  # noqa: B006
    accept: AcceptOption = None,
    fork: ForkOption = False,
    reject: RejectOption = None,
    run: RunOption = False,
    inputs: InputOption = [],  # noqa: B006
    uploads: UploadOption = [],  # noqa: B006
    history: HistoryOption = False,
    list_chats: ListOption = False,
    db: DbOption = None,
    llm: LlmOption = None,
    config: ConfigOption = None,
    json_output: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Design and change graphs in a conversation: a draft changes no graph until you accept it."""
    from plait.cli import interrupt
    from plait.cli.chat_view import ChatView
    from plait.cli.drive import provider_from_options, session_for
    from plait.cli.options import Driving
    from plait.runs.chat import Chat, ChatPorts
    from plait.runs.model_choice import describe

    how = Driving(llm, config, json_output, quiet)
    with store_for(db) as store:
        runs = session_for(store, provider_from_options(llm, config), how)
        view = ChatView(quiet=quiet or json_output)
        chat = Chat(
            store,
            ChatPorts(
                drive=view.driver(runs),
                check_graph=runs.check_graph,
                check_run=runs.check_executable,
                llm=describe(llm, config),
                notify=view.notify,
            ),
        )
        view.watch(runs, store)
        act = _Acts(chat, view, json_output)
        try:
            if list_chats or history:
                act.listing(session if history else None)
                return
            act.uploads = uploads
            work = act.script(once, session, graph, answers, accept, fork, reject, run, parse_inputs(inputs, None))
            interrupt.run(work if work is not None else act.repl(session, graph), cleanup=runs.aclose)
        except PlaitError as exc:
            refuse(exc)
        except interrupt.Interrupted:
            raise typer.Exit(interrupt.EXIT_INTERRUPTED) from None


class _Acts:
    """What `plait chat` does: one scripted action, or the REPL."""

    def __init__(self, chat: Any, view: Any, json_output: bool) -> None:
        self.chat, self.view, self.json_output = chat, view, json_output
        self.uploads: list[Path] = []
        """Files `--once` keeps in the chat before its message."""

    def script(
        self,
        once: str | None,
        session: str | None,
        graph: str | None,
        answers: list[str],
        accept: str | None,
        fork: bool,
        reject: str | None,
        run: bool,
        run_input: dict[str, Any],
    ) -> Any:
        """The coroutine of the one scripted action asked for, or None for the REPL."""
        acting = [a for a in (once, answers, accept, reject, run) if a]
        if not acting:
            return None
        if len(acting) > 1:
            raise PlaitError("give one of --once, --answer, --accept, --reject or --run", "run them one at a time")
        if once is not None:
            return self._once(session, graph, once)
        sid = self._needs_session(session)
        if answers:
            return self._print(self.chat.answer(sid, _answers(answers)))
        if accept is not None:
            return self._print_now(lambda: [self.chat.accept(sid, accept, fork=fork)])
        if reject is not None:
            return self._print_now(lambda: [self.chat.reject(sid, reject)])
        return self._run(sid, run_input)

    @staticmethod
    def _needs_session(session: str | None) -> str:
        if session is None:
            raise PlaitError("this needs the chat it acts on", "give --session ID (printed by `plait chat --once`)")
        return session

    async def _once(self, session: str | None, graph: str | None, text: str) -> None:
        sid = session or self.chat.open(_title(text), graph).id
        self.view.say(f"chat {sid}")
        for path in self.uploads:
            self.chat.keep_upload(sid, path.name, _read_file(path))
        await self._print(self.chat.send(sid, text))

    async def _print(self, turn: Any) -> None:
        self.show(await turn)

    async def _print_now(self, act: Callable[[], list[Any]]) -> None:
        self.show(act())

    async def _run(self, session: str, run_input: dict[str, Any]) -> None:
        started = self.chat.start(session, run_input)
        self.show([started, await self.chat.follow(session, started.run_id)])

    def listing(self, session: str | None) -> None:
        """The chats (no session), or one chat's messages."""
        if session is None:
            chats = self.chat.store.chat.list_sessions()
            if self.json_output:
                print_json(
                    [{"id": c.id, "title": c.title, "graph_id": c.graph_id, "updated_at": c.updated_at} for c in chats]
                )
            for listed in [] if self.json_output else chats:
                self.view.say(f"{listed.id}  {listed.title}")
            return
        self.show(self.chat.store.chat.messages(self.chat.session(session).id))

    def show(self, messages: list[Any]) -> None:
        if self.json_output:
            print_json([_message_json(m) for m in messages])
        else:
            for message in messages:
                self.view.message(message)

    async def repl(self, session: str | None, graph: str | None) -> None:
        """Read messages until /quit or the end of input."""
        sid = session or self.chat.open("Chat", graph).id
        self.view.say(f"chat {sid}: say what the graph should do; /run key=value ... runs it, /quit leaves")
        while True:
            line = await asyncio.to_thread(_read, "you> ")
            if line is None or line.strip() == "/quit":
                return
            try:
                await self._one(sid, line.strip())
            except PlaitError as exc:
                self.view.refused(exc)

    async def _one(self, sid: str, line: str) -> None:
        if not line:
            return
        if line.startswith("/run"):
            await self._run(sid, parse_inputs(line.split()[1:], None))
            return
        messages = await self.chat.send(sid, line)
        while True:
            self.show(messages[1:])
            last = messages[-1]
            if last.kind == "questions":
                given = await asyncio.to_thread(self.view.ask, last.content["questions"])
                messages = await self.chat.answer(sid, given)
                continue
            if last.kind == "draft" and last.content.get("status") == "proposed":
                if await asyncio.to_thread(self.view.confirm, "Accept this draft?"):
                    self.show([self.chat.accept(sid, last.draft_id)])
                else:
                    self.show([self.chat.reject(sid, last.draft_id)])
            return


def _read(prompt: str) -> str | None:
    try:
        return input(prompt)
    except EOFError:
        return None


def _read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise PlaitError(f"--upload {path}: {exc.strerror}", "give a file that exists and can be read") from None


def _title(text: str) -> str:
    words = text.split()
    return " ".join(words[:6])[:200] or "Chat"


def _answers(given: list[str]) -> dict[str, Any]:
    """`ID=VALUE` pairs; `a|b` is a multiple choice."""
    answers: dict[str, Any] = {}
    for item in given:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise PlaitError(f"--answer {item!r} is not ID=VALUE", "write e.g. --answer lang=German")
        answers[key] = value.split("|") if "|" in value else value
    return answers


def _message_json(message: Any) -> dict[str, Any]:
    return {
        "session_id": message.session_id,
        "seq": message.seq,
        "role": str(message.role),
        "kind": str(message.kind),
        "content": message.content,
        "draft_id": message.draft_id,
        "run_id": message.run_id,
    }
