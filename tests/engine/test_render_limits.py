"""The render budget: whatever a template does, its rendering ends within its limits of output,
steps and text built, and fails naming the limit; a large render happens on a thread, never on
the event loop; what a node rendered is recorded as a bounded prefix that says it was cut."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from plait.compile.templates import parse_template
from plait.engine.render import RECORD_CHARS, arender, render
from plait.engine.render_limits import RenderLimitError
from plait.model.enums import RunStatus
from plait.runs.replay import ReplayError, recorded_request
from plait.store import Store
from tests.engine.test_engine import graph_file, script, start_run
from tests.runs.test_corrections import drive_with, newest

BUILT = "built more text"
STEPS = "took more steps"
PRINTED = "printed more than"

HOSTILE = [
    ("{{ 'a' * input.n }}", {"n": 200_000_000}, BUILT),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", {}, STEPS),
    ("{% set ns = namespace(s='a') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", {}, BUILT),
    ("{% set ns = namespace(l=[1]) %}{% for i in range(60) %}{% set ns.l = ns.l + ns.l %}{% endfor %}", {}, BUILT),
    ("{{ 'a' | center(1000000000) }}", {}, BUILT),
    ("{{ range(100000) | join('x' * 1000) }}", {}, BUILT),
    ("{{ 10 ** (10 ** 8) }}", {}, BUILT),
    ("{{ '%*s' % (1000000000, 'a') }}", {}, "width taken from a value"),
    ("{{ '{:>1000000000}'.format('a') }}", {}, BUILT),
    ("{{ ('a' * 1000).replace('a', 'x' * 100000) }}", {}, BUILT),
    ("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}", {}, STEPS),
    ("{% for x in range(10) recursive %}{{ loop(range(100000)) }}{% endfor %}", {}, STEPS),
    ("{{ ([[1, 2, 3]] * 100000) | sum(start=[]) }}", {}, "only numbers can be summed"),
    ("{{ [1] | batch(1000000000, 'x') | list }}", {}, STEPS),
    ("{% for i in range(100000) %}{{ input.s }}{% endfor %}", {"s": "y" * 100}, PRINTED),
]  # fmt: skip


@pytest.mark.parametrize(("template", "given", "limit"), HOSTILE, ids=[t for t, _, _ in HOSTILE])
def test_a_hostile_template_stops_at_its_render_limit(template: str, given: dict[str, Any], limit: str) -> None:
    with pytest.raises(RenderLimitError, match=limit):
        render(parse_template(template), {"input": given})


def test_ordinary_templates_render_as_before() -> None:
    names = {"input": {"x": [1, 2, 3], "d": {"k": "v"}}}
    template = (
        "{% for i in input.x if i > 1 %}{{ i }}{{ ',' if not loop.last }}{% endfor %} {{ input.x | join('-') }} "
        "{{ input.d | tojson }} {{ 'ab' ~ 'cd' }} {{ 'x' * 3 }} {{ '%05d' % 42 }} {{ '{}!'.format('hi') }}"
    )
    assert render(parse_template(template), names) == '2,3 1-2-3 {"k": "v"} abcd xxx 00042 hi!'


def test_a_large_render_runs_on_a_thread_and_a_small_one_on_the_event_loop() -> None:
    """`where()` prints the thread rendering; the large render starts on the loop, goes over
    what the loop may take, and is rendered again from the start on a thread."""

    async def threads() -> tuple[int, str, str]:
        names = {"input": {"n": 2_000_000}, "where": lambda: threading.get_ident()}
        small = await arender(parse_template("{{ where() }}"), names)
        large = await arender(parse_template("{{ where() }}:{{ 'a' * input.n }}"), names)
        return threading.get_ident(), small, large

    loop_thread, small, large = asyncio.run(threads())
    assert small == str(loop_thread)
    where, _, text = large.partition(":")
    assert where != str(loop_thread)
    assert text == "a" * 2_000_000


def test_a_node_over_the_budget_fails_as_render_and_a_large_prompt_is_recorded_in_part(tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [{"id": "m", "type": "LLM_CALL", "user_prompt_tpl": "{{ 'a' * input.n }}"}], [])
    provider = script(tmp_path, [{"node": "m", "text": "done"}])
    with Store(f"sqlite:///{tmp_path / 'plait.db'}") as store:
        over = start_run(store, graph, {"n": 200_000_000})
        assert drive_with(store, over, provider).status == RunStatus.FAILED
        error = newest(store, over)["m"].error or {}
        assert error["kind"] == "render"
        assert "node 'm': the template built more text" in error["message"]

        large = start_run(store, graph, {"n": 3 * RECORD_CHARS})
        assert drive_with(store, large, provider).status == RunStatus.COMPLETED
        record = newest(store, large)["m"]
    prompt = (record.input_snapshot or {})["rendered_user_prompt"]
    assert prompt == "a" * RECORD_CHARS + f"…[{2 * RECORD_CHARS} more characters not kept in this record]"
    with pytest.raises(ReplayError, match="too long to keep whole in its record"):
        recorded_request(record)
