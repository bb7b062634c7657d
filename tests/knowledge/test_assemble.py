"""Context assembly: passages chosen by relevance within a budget, shown in their order with
markers, the cost of what is shown known before it is joined."""

from __future__ import annotations

import random
import re

from plait.knowledge.assemble import BY_ORDER, SEPARATOR, _Costs, _Layout, assemble, marker, passages
from plait.llm.tokens import tiktoken_counter

QUESTION = "Which harbour has the lighthouse painted green?"


def document(parts: int = 30, answer_in: int = 22) -> str:
    def part(k: int) -> str:
        body = " ".join(f"Section {k} lists the ferry timetable and fares for route {k}, line {i}." for i in range(5))
        extra = " The harbour of Port Ellen has the lighthouse painted green." if k == answer_in else ""
        return f"# Guide\n\n## Route {k}\n\n{body}{extra}"

    return "\n\n".join(part(k) for k in range(1, parts + 1))


def test_passages_follow_sections_and_show_their_heading_path() -> None:
    found = passages(document(parts=3))
    assert [p.position for p in found] == [0, 1, 2]
    assert [p.shown.split("\n")[0] for p in found] == ["Guide > Route 1", "Guide > Route 2", "Guide > Route 3"]
    assert all(p.chars < len(p.shown) for p in found)


def test_the_relevant_passage_is_kept_in_order_within_the_token_budget() -> None:
    counter = tiktoken_counter("o200k_base")
    assembly = assemble([document()], QUESTION, None, 300, counter.count)
    (value,) = assembly.values
    assert assembly.ranked_by == "minilm-l6-int8"
    assert 21 in value.kept
    assert list(value.kept) == sorted(value.kept)
    assert "Port Ellen" in value.shown
    assert counter.count(value.shown) <= 300
    assert counter.count(value.shown) > 200  # what fits is used
    omitted = [int(n) for n in re.findall(r"…\[(\d+) passages? omitted\]…", value.shown)]
    assert sum(omitted) + len(value.kept) == value.passages == 30
    assert value.counted
    assert assemble([document()], QUESTION, None, 300, counter.count) == assembly  # the same choice again


def test_several_values_share_one_budget_and_their_best_passages_win() -> None:
    other = document(parts=10, answer_in=0)
    assembly = assemble([other, document()], QUESTION, 1500, None, len)
    assert sum(len(v.shown) for v in assembly.values if v.kept) <= 1500
    assert 21 in assembly.values[1].kept


def test_without_a_question_passages_are_taken_in_order() -> None:
    assembly = assemble([document()], "  ", 1000, None, len)
    (value,) = assembly.values
    assert assembly.ranked_by == BY_ORDER
    assert value.kept == tuple(range(len(value.kept)))
    assert value.shown.endswith(marker(30 - len(value.kept)))


def test_a_value_nothing_of_which_fits_is_one_uncounted_marker() -> None:
    (value,) = assemble([document()], QUESTION, 10, None, len).values
    assert value.shown == "…[30 passages omitted]…"
    assert value.kept == ()
    assert not value.counted
    assert value.omitted_chars == len(document())


def test_the_cost_of_a_layout_is_known_before_it_is_joined() -> None:
    """Each passage kept adds what `change` said: the characters of the joined text, markers and
    separators included, for any order of choosing."""
    found = passages(document())
    costs = _Costs(len, tokens=False)
    chooser = random.Random(7)
    for _ in range(20):
        layout = _Layout(costs, [costs.of(p.shown) for p in found])
        total = 0
        for position in chooser.sample(range(len(found)), chooser.randint(1, len(found))):
            total += layout.change(position)[0]
            layout.add(position)
            assert total == len(layout.text(found)), layout.kept
    assert marker(1) == "…[1 passage omitted]…"
    assert SEPARATOR == "\n\n"
