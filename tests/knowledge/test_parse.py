"""Parsing documents into heading-pathed sections: every kind, its bounds, and broken files refused
with a reason that names the file. Fixtures are built here, with the real libraries."""

from __future__ import annotations

import io
import sys
import zipfile
from collections.abc import Callable
from typing import cast

import docx
import pytest
from docx.document import Document as WordDocument
from pypdf import PdfReader, PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from plait.errors import Refusal
from plait.knowledge import parse
from plait.knowledge.parse import KnowledgeNotInstalled, ParseError, Section, document_kind, parse_document


def build_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    """A minimal valid PDF: one line of Helvetica per string, each page its own content stream."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"", b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for lines in pages:
        escaped = (line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for line in lines)
        stream = "\n".join(["BT /F1 12 Tf 14 TL 72 720 Td", *(f"({line}) Tj T*" for line in escaped), "ET"])
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream.encode("latin-1")))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            b"/Contents %d 0 R >>" % len(objects)
        )
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    info = b""
    if title is not None:
        objects.append(b"<< /Title (%s) >>" % title.encode("latin-1"))
        info = b" /Info %d 0 R" % len(objects)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, info, xref)
    return bytes(out)


PAGES = [
    ["Chapter One", "The first page (with parentheses)."],
    ["More of chapter one.", "Chapter Two", "The second chapter begins mid-page."],
    ["The third page."],
]


def rewritten(pdf: bytes, change: Callable[[PdfWriter], object]) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    change(writer)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def build_docx(build: Callable[[WordDocument], None]) -> bytes:
    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def paths(sections: tuple[Section, ...]) -> list[tuple[str, ...]]:
    return [section.heading_path for section in sections]


# -- text ------------------------------------------------------------------------------------------


def test_text_is_one_section_with_whitespace_normalised_and_paragraphs_kept() -> None:
    parsed = parse_document(b"\xef\xbb\xbfFirst   line\t here\r\n\r\n\r\n\r\nSecond paragraph  \n", name="notes.txt")
    assert parsed.kind == "text"
    assert parsed.title is None
    assert parsed.sections == (Section((), "First line here\n\nSecond paragraph"),)


def test_text_of_any_suffix_is_read_as_text_with_its_indentation() -> None:
    """Source code, configuration and reStructuredText are text files under names Plait does not
    know: their lines keep their indentation (it is meaning there), words inside still get one space."""
    source = b"def area(r):\n    if r < 0:\n        raise ValueError(r)   \n    return 3.14  *  r * r\n"
    parsed = parse_document(source, name="geometry.py")
    assert parsed.kind == "text"
    assert parsed.sections == (
        Section((), "def area(r):\n    if r < 0:\n        raise ValueError(r)\n    return 3.14 * r * r"),
    )
    assert parse_document(b"Title\n=====\n\n  indented quote", name="notes.rst").sections[0].text == (
        "Title\n=====\n\n  indented quote"
    )


def test_utf16_with_a_bom_is_read_and_invalid_utf8_is_refused() -> None:
    assert parse_document("Grüße".encode("utf-16"), name="a.txt").sections[0].text == "Grüße"
    with pytest.raises(ParseError, match=r"latin\.txt: not valid UTF-8 text \(byte 2\)") as refused:
        parse_document("Grüße".encode("latin-1"), name="latin.txt")
    assert refused.value.kind is Refusal.INVALID
    assert refused.value.code == "unparseable"
    assert refused.value.hint


@pytest.mark.parametrize("content", [b"", b"  \n\t\n  ", b"# \n\n"])
def test_blank_documents_have_no_sections(content: bytes) -> None:
    assert parse_document(content, name="blank.md").sections == ()


def test_control_characters_never_reach_a_section() -> None:
    (section,) = parse_document(b"nul\x00 here\x07 and\x0cthere", name="a.txt").sections
    assert section.text == "nul here and\nthere"


# -- markdown --------------------------------------------------------------------------------------

MARKDOWN = b"""Before any heading.

# Guide #

Intro *text*.

```python
# a comment, not a heading
x = 1
```

Install
-------

Run it.

### On Debian ###

    apt install plait

~~~
## still code
~~~

Second Top
==========
Under the second.
# Third
## Sub
Body.
"""


def test_markdown_heading_paths_title_and_body() -> None:
    parsed = parse_document(MARKDOWN, name="guide.md")
    assert parsed.kind == "markdown"
    assert parsed.title == "Guide"
    assert paths(parsed.sections) == [
        (),
        ("Guide",),
        ("Guide", "Install"),
        ("Guide", "Install", "On Debian"),
        ("Second Top",),
        ("Third", "Sub"),
    ]
    texts = {section.heading_path: section.text for section in parsed.sections}
    assert texts[()] == "Before any heading."
    assert texts[("Guide",)] == "Intro *text*.\n\n```python\n# a comment, not a heading\nx = 1\n```"
    assert texts[("Guide", "Install", "On Debian")] == "    apt install plait\n\n~~~\n## still code\n~~~"


def test_a_new_h1_resets_the_path_and_a_thematic_break_is_no_heading() -> None:
    parsed = parse_document(b"# A\n## B\ntext\n\n---\n\nmore\n# C\ntail\n", name="x.markdown")
    assert [(s.heading_path, s.text) for s in parsed.sections] == [
        (("A", "B"), "text\n\n---\n\nmore"),
        (("C",), "tail"),
    ]


def test_an_unclosed_fence_keeps_the_rest_of_the_document_as_code() -> None:
    parsed = parse_document(b"# A\n```\n# not a heading\n", name="x.md")
    assert paths(parsed.sections) == [("A",)]


def test_front_matter_and_list_items_are_not_setext_headings() -> None:
    parsed = parse_document(b"---\ntitle: x\n---\n- item\n---\n", name="x.md")
    assert paths(parsed.sections) == [()]
    assert parsed.title is None


# -- html ------------------------------------------------------------------------------------------

HTML = b"""<!DOCTYPE html>
<html><head><title>The &amp; Title</title>
<style>p { color: red }</style><script>var secret = "script text";</script>
<link rel="stylesheet" href="https://example.invalid/x.css"></head>
<body>
<p>Before &lt;any&gt; heading.</p>
<h1>Main <em>part</em></h1>
<p>Hello <b>world</b>,
   across lines.</p><div>A block<br>broken</div>
<noscript>enable scripts</noscript><template><p>template text</p></template>
<h2>Sub</h2>
<ul><li>one</li><li>two</li></ul>
<table><tr><td>cell a</td><td>cell b</td></tr></table>
<h1>Second</h1>tail text
<script type="module">import("x")</script>
</body></html>"""


def test_html_headings_paragraphs_and_title() -> None:
    parsed = parse_document(HTML, name="page.html")
    assert parsed.kind == "html"
    assert parsed.title == "The & Title"
    assert [(s.heading_path, s.text) for s in parsed.sections] == [
        ((), "Before <any> heading."),
        (("Main part",), "Hello world, across lines.\n\nA block\n\nbroken"),
        (("Main part", "Sub"), "one\n\ntwo\n\ncell a cell b"),
        (("Second",), "tail text"),
    ]


def test_html_drops_scripts_styles_and_the_head() -> None:
    text = "\n".join(section.text for section in parse_document(HTML, name="page.html").sections)
    for dropped in ("secret", "color", "enable scripts", "template text", "import", "The & Title"):
        assert dropped not in text


def test_html_title_falls_back_to_the_first_h1_and_an_unclosed_head_ends_at_body_content() -> None:
    parsed = parse_document(b"<html><head><meta charset=utf-8><p>shown</p><h1>Top</h1>x", name="a.htm")
    assert parsed.title == "Top"
    assert [(s.heading_path, s.text) for s in parsed.sections] == [((), "shown"), (("Top",), "x")]


def test_html_pre_keeps_its_lines_and_text_elsewhere_is_joined() -> None:
    parsed = parse_document(b"<p>one\n  two</p><pre>a = 1\nb = 2</pre>", name="code.html")
    assert parsed.sections == (Section((), "one two\n\na = 1\nb = 2"),)


def test_html_declaring_a_legacy_charset_is_decoded_with_it() -> None:
    page = '<html><head><meta charset="windows-1252"></head><body><p>café</p></body></html>'.encode("cp1252")
    assert parse_document(page, name="old.html").sections == (Section((), "café"),)


# -- pdf -------------------------------------------------------------------------------------------


def test_pdf_without_outline_has_one_section_per_page_and_the_metadata_title() -> None:
    parsed = parse_document(build_pdf(PAGES, title="The Manual"), name="manual.pdf")
    assert parsed.kind == "pdf"
    assert parsed.title == "The Manual"
    assert [(s.heading_path, s.text) for s in parsed.sections] == [
        (("page 1",), "Chapter One\nThe first page (with parentheses)."),
        (("page 2",), "More of chapter one.\nChapter Two\nThe second chapter begins mid-page."),
        (("page 3",), "The third page."),
    ]


def test_pdf_outline_gives_heading_paths_to_page_ranges() -> None:
    def outline(writer: PdfWriter) -> None:
        one = writer.add_outline_item(title="Chapter One", page_number=0)
        writer.add_outline_item(title="Details", page_number=1, parent=one)
        writer.add_outline_item(title="Chapter Two", page_number=1)

    parsed = parse_document(rewritten(build_pdf(PAGES), outline), name="manual.pdf")
    assert parsed.title is None
    assert [(s.heading_path, s.text) for s in parsed.sections] == [
        (("Chapter One",), "The first page (with parentheses)."),
        # "Details" is no line of page 2: it starts at the top of its page
        (("Chapter One", "Details"), "More of chapter one."),
        # "Chapter Two" is a line of page 2: it starts there, and that line is its heading, not body
        (("Chapter Two",), "The second chapter begins mid-page.\n\nThe third page."),
    ]


def test_encrypted_pdf_is_read_with_an_empty_password_and_refused_with_a_real_one() -> None:
    pdf = build_pdf(PAGES)
    open_copy = rewritten(pdf, lambda writer: writer.encrypt("", owner_password="owner"))
    assert len(parse_document(open_copy, name="open.pdf").sections) == 3
    locked = rewritten(pdf, lambda writer: writer.encrypt("secret"))
    with pytest.raises(ParseError, match=r"locked\.pdf: the PDF is encrypted"):
        parse_document(locked, name="locked.pdf")


@pytest.mark.parametrize(
    "content", [b"%PDF-1.4 nothing else", build_pdf(PAGES)[:300], b"%PDF-1.7\n" + bytes(range(256))]
)
def test_corrupt_pdf_is_refused_with_its_name(content: bytes) -> None:
    with pytest.raises(ParseError, match=r"^broken\.pdf: not a readable PDF: .+") as refused:
        parse_document(content, name="broken.pdf")
    assert refused.value.hint


def test_a_page_that_cannot_be_read_is_named() -> None:
    def break_page_two(writer: PdfWriter) -> None:
        resources = cast(DictionaryObject, writer.pages[1]["/Resources"].get_object())
        fonts = cast(DictionaryObject, resources["/Font"].get_object())
        font = DictionaryObject(cast(DictionaryObject, fonts["/F1"].get_object()))  # page 2's own copy
        cmap = DecodedStreamObject()  # a /ToUnicode map of 16 million entries: pypdf refuses it
        cmap.set_data(b"begincmap\n1 beginbfrange\n<000000> <ffffff> <0041>\nendbfrange\nendcmap\n")
        font[NameObject("/ToUnicode")] = writer._add_object(cmap)
        fonts[NameObject("/F1")] = writer._add_object(font)

    with pytest.raises(ParseError, match=r"^big\.pdf: page 2 could not be read: .*ToUnicode"):
        parse_document(rewritten(build_pdf(PAGES), break_page_two), name="big.pdf")


def test_pdf_page_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse, "MAX_PDF_PAGES", 2)
    with pytest.raises(ParseError, match=r"long\.pdf: 3 pages, more than 2"):
        parse_document(build_pdf(PAGES), name="long.pdf")


# -- docx ------------------------------------------------------------------------------------------


def handbook(d: WordDocument) -> None:
    d.add_paragraph("The Handbook", style="Title")
    d.add_paragraph("Preface.")
    d.add_heading("Install", level=1)
    d.add_paragraph("Get   it.")
    d.add_heading("On Debian", level=2)
    d.add_paragraph("apt install plait")
    table = d.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Key"
    table.cell(0, 1).text = "Value"
    table.cell(1, 0).merge(table.cell(1, 1)).text = "merged cell"
    d.add_heading("Use", level=1)
    d.add_paragraph("Run it.")


def test_docx_headings_title_and_table_cells() -> None:
    parsed = parse_document(build_docx(handbook), name="handbook.docx")
    assert parsed.kind == "docx"
    assert parsed.title == "The Handbook"
    assert [(s.heading_path, s.text) for s in parsed.sections] == [
        (("The Handbook",), "Preface."),
        (("The Handbook", "Install"), "Get it."),
        (("The Handbook", "Install", "On Debian"), "apt install plait\n\nKey\n\nValue\n\nmerged cell"),
        (("The Handbook", "Use"), "Run it."),
    ]


def test_docx_core_title_wins() -> None:
    def titled(document: WordDocument) -> None:
        handbook(document)
        document.core_properties.title = "Core Title"

    assert parse_document(build_docx(titled), name="h.docx").title == "Core Title"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"PK\x03\x04 not really a zip", "not a DOCX file"),
        (build_docx(handbook)[:2000], "not a DOCX file"),
        (b"plain words", "not a DOCX file"),
    ],
)
def test_corrupt_docx_is_refused_with_its_name(content: bytes, reason: str) -> None:
    with pytest.raises(ParseError, match=rf"^report\.docx: {reason}"):
        parse_document(content, name="report.docx")


def test_a_zip_that_is_no_word_document_is_refused_with_its_name() -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("word/other.xml", "<x/>")
    with pytest.raises(ParseError, match=r"^report\.docx: not a readable DOCX: "):
        parse_document(archive.getvalue(), name="report.docx")


def test_zip_bomb_is_refused_before_it_is_opened(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse, "MAX_UNZIPPED_BYTES", 1_000_000)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as out:
        out.writestr("word/document.xml", b"\x00" * 2_000_000)  # compresses to about 2 KB
    assert len(archive.getvalue()) < 10_000
    with pytest.raises(ParseError, match=r"^bomb\.docx: 2,000,000 bytes unpacked, more than 1,000,000"):
        parse_document(archive.getvalue(), name="bomb.docx")


def test_a_zip_of_too_many_members_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse, "MAX_ZIP_MEMBERS", 10)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as out:
        for number in range(11):
            out.writestr(f"word/part{number}.xml", "<x/>")
    with pytest.raises(ParseError, match=r"many\.docx: 11 files in the archive, more than 10"):
        parse_document(archive.getvalue(), name="many.docx")


def test_a_missing_library_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    pdf, word = build_pdf(PAGES), build_docx(handbook)
    monkeypatch.setitem(sys.modules, "pypdf", None)  # what `import pypdf` meets when it is not installed
    monkeypatch.setitem(sys.modules, "docx", None)
    for content, name in ((pdf, "a.pdf"), (word, "a.docx")):
        with pytest.raises(KnowledgeNotInstalled, match="needs the knowledge extra") as refused:
            parse_document(content, name=name)
        assert refused.value.hint == "pip install 'plait[knowledge]'"


# -- kinds and bounds ------------------------------------------------------------------------------


def test_kind_by_media_type_then_suffix_then_content() -> None:
    pdf, word = build_pdf(PAGES), build_docx(handbook)
    assert document_kind("a.txt", "text/markdown; charset=utf-8", b"# x") == "markdown"
    assert document_kind("a.bin", "application/pdf", b"") == "pdf"
    assert document_kind("notes.MD", None, b"") == "markdown"
    assert document_kind("page.htm", "application/octet-stream", b"") == "html"
    assert document_kind("upload", None, pdf) == "pdf"
    assert document_kind("upload", None, word) == "docx"
    assert document_kind("upload", None, b"  <!DOCTYPE html><p>x") == "html"
    assert document_kind("upload", None, b"just words") == "text"
    assert document_kind(".md", None, b"x") == "text"  # a dot file, not a suffix
    assert document_kind("notes.md", "text/plain", b"# x") == "markdown"  # what browsers send for .md
    assert document_kind("page.html", "text/plain", b"<p>x") == "html"
    assert document_kind("notes.txt", "text/plain", b"# x") == "text"
    assert parse_document(word, name="upload").sections[0].heading_path == ("The Handbook",)


@pytest.mark.parametrize("content", [bytes(range(256)) * 4, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"ok\x00binary"])
def test_unknown_binary_is_refused_naming_the_kinds_read(content: bytes) -> None:
    with pytest.raises(
        ParseError, match=r"^blob: not a document Plait can read \(it reads text, markdown, html, pdf, docx\)"
    ):
        parse_document(content, name="blob")


def test_document_size_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse, "MAX_DOCUMENT_BYTES", 10)
    with pytest.raises(ParseError, match=r"big\.txt: 11 bytes, more than 10"):
        parse_document(b"x" * 11, name="big.txt")
    assert parse_document(b"x" * 10, name="big.txt").sections == (Section((), "x" * 10),)
