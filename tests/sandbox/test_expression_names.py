"""What an expression's text says it reads: the outputs it names (lineage and what it is
given), and the literal paths a validator checks."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plait.sandbox.names import code_only, code_reads, member_paths, named_members


def test_paths_outside_strings_and_comments_are_found_with_their_steps() -> None:
    source = (
        "`a ${nodes.x.y} b` + 'nodes.z' // nodes.q\n"
        " + nodes['w'].f.trim() + current?.k[0] /* input.p */ + input.text.length + x.input.y"
    )
    assert member_paths(source) == [
        ("nodes", "x", "y"),
        ("nodes", "w", "f"),  # `.trim()` is a method called, not a field
        ("current", "k", 0),
        ("input", "text", "length"),
    ]


def test_blanking_keeps_positions_and_lines() -> None:
    source = "a /* x\ny */ + 'q\\'s' + `t${b}u`"
    blank = code_only(source)
    assert len(blank) == len(source)
    assert blank.count("\n") == 1
    assert "x" not in blank
    assert "q" not in blank
    assert "t" not in blank.replace("`", "")
    assert "${b}" in blank


PIECES = [
    "nodes",
    "input",
    ".a",
    "?.",
    "['x']",
    "[0]",
    "`",
    "${",
    "}",
    "{",
    "'",
    '"',
    "\\",
    "//",
    "/*",
    "*/",
    "\n",
    " ",
    "...",
]


@given(st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=5)), max_size=40).map("".join))
def test_blanking_only_turns_characters_into_spaces_and_keeps_every_line_break(source: str) -> None:
    blank = code_only(source)
    assert len(blank) == len(source)
    for kept, original in zip(blank, source, strict=True):
        assert kept == original or (kept == " " and original != "\n")


@given(
    st.lists(
        st.tuples(st.text(alphabet=st.characters(exclude_characters="'\\\n\r\u2028\u2029")), st.sampled_from("abc")),
        min_size=1,
        max_size=6,
    )
)
def test_string_literals_of_any_text_hide_their_content_and_not_the_code_after_them(
    parts: list[tuple[str, str]],
) -> None:
    source = " + ".join(f"'{text}' + nodes.{name}.v" for text, name in parts)
    assert member_paths(source) == [("nodes", name, "v") for _, name in parts]
    assert code_only(source).replace(" ", "") == "+".join(f"''+nodes.{name}.v" for _, name in parts)


@pytest.mark.parametrize(
    ("code", "language", "reads"),
    [
        ("return {n: nodes.a.n}", "js", frozenset({"a"})),
        ("function main(input, nodes, current) { return nodes.a.n }", "js", frozenset({"a"})),
        ("function main(i, ns, c) { return ns.a.n }", "js", None),  # named otherwise: any
        ("return Object.keys(nodes)", "js", None),
        ("def main(input, nodes):\n    return nodes['a']['x']", "python", frozenset({"a"})),
        ("def main(input, nodes):\n    return nodes.get('a')", "python", None),
        ("def main(inp, outs):\n    return outs['a']", "python", None),
    ],
)
def test_what_a_code_node_reads(code: str, language: str, reads: frozenset[str] | None) -> None:
    assert code_reads(code, language) == reads


def test_an_expression_that_never_names_the_binding_reads_none_of_it() -> None:
    assert named_members("input.text.length", "nodes") == frozenset()
    assert named_members("Object.keys(nodes).length") is None


def test_a_hostile_expression_is_scanned_in_time_that_grows_with_its_length() -> None:
    """What a graph author writes is scanned when the graph is validated, on a server thread. A
    600,000-use expression took several minutes when the scan copied the text before each use
    (measured here: 100 s for half as many uses); it takes a few seconds now, as does a 10 MB
    string literal. The bound is generous; a scan that grew with the square of the length would
    not end within it."""
    many_uses = "nodes.a.v + " * 600_000 + "1"
    literal = "({pad: '" + "x" * 10_000_000 + "'}).pad.length"
    finished: list[str] = []

    def scan() -> None:
        assert len(member_paths(many_uses)) == 600_000
        assert named_members(many_uses) == frozenset({"a"})
        assert member_paths(literal) == []
        assert len(code_only(literal)) == len(literal)
        finished.append("done")

    worker = threading.Thread(target=scan, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert finished == ["done"], "the scan of a hostile expression did not end within 120 s"
