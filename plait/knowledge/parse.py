"""Documents to sections: plain text, Markdown, HTML, PDF and DOCX, from bytes only.

A section is a heading path and the body under it, so a chunk can say where it comes from and
never mixes two parts of a document. Parsing never reads a file or the network (links and images
are ignored), and every document is bounded before a library opens it: its bytes, a PDF's pages, a
DOCX's members and unpacked size. Whatever pypdf, python-docx or zipfile raise on a broken file
becomes a `ParseError` that names the file, so a person learns what to fix rather than meeting an
internal error. pypdf and python-docx are imported where needed: the core install lacks them.
"""

from __future__ import annotations

import codecs
import io
import re
import zipfile
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Literal

from plait.errors import PlaitError, Refusal

if TYPE_CHECKING:
    pass

MAX_DOCUMENT_BYTES = 50 * 1024 * 1024
MAX_PDF_PAGES = 2_000
MAX_ZIP_MEMBERS = 2_000
MAX_UNZIPPED_BYTES = 200 * 1024 * 1024
"""A DOCX's members' declared sizes, summed: zipfile never unpacks a member past its declared size,
so this bounds what opening the document can allocate (a zip bomb is refused before it is opened)."""
KINDS = ("text", "markdown", "html", "pdf", "docx")
INSTALL_HINT = "pip install 'plait[knowledge]'"

_MEDIA_TYPES = {
    "text/plain": "text", "text/markdown": "markdown", "text/x-markdown": "markdown", "text/html": "html",
    "application/xhtml+xml": "html", "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
}  # fmt: skip
_SUFFIXES = {
    "txt": "text", "md": "markdown", "markdown": "markdown", "html": "html", "htm": "html", "pdf": "pdf", "docx": "docx"
}  # fmt: skip


@dataclass(frozen=True)
class Section:
    """A heading path (() before any heading) and the body under it, paragraphs kept ("\\n\\n")."""

    heading_path: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class ParsedDocument:
    kind: str
    title: str | None
    sections: tuple[Section, ...]


class ParseError(PlaitError):
    """The document cannot be read: the message says what and where, the hint how to fix it."""

    kind = Refusal.INVALID
    code = "unparseable"


class KnowledgeNotInstalled(PlaitError):
    """A library knowledge bases need (pypdf, python-docx, semchunk) is missing from this install."""

    kind = Refusal.CONFLICT
    code = "knowledge_not_installed"


def missing(what: str) -> KnowledgeNotInstalled:
    return KnowledgeNotInstalled(f"{what} needs the knowledge extra, which is not installed", INSTALL_HINT)


def document_kind(name: str, media_type: str | None, content: bytes) -> str:
    """The kind by the declared media type, then the name's suffix, then the bytes themselves. A
    declared `text/plain` yields to the suffix: browsers and mail send it for Markdown files."""
    declared = (media_type or "").split(";")[0].strip().lower()
    stem, dot, suffix = name.rpartition(".")
    by_suffix = _SUFFIXES.get(suffix.lower()) if dot and stem else None
    if declared in _MEDIA_TYPES and not (declared == "text/plain" and by_suffix in ("markdown", "html")):
        return _MEDIA_TYPES[declared]
    if by_suffix is not None:
        return by_suffix
    if b"%PDF-" in content[:1024]:
        return "pdf"
    if content.startswith(b"PK\x03\x04") and _holds_word_document(content):
        return "docx"
    try:
        text = _decode(content, name, html=True)
    except ParseError:
        text = "\x00"
    if "\x00" in text[:8192]:
        raise ParseError(
            f"{name}: not a document Plait can read (it reads {', '.join(KINDS)})",
            "convert it to PDF, DOCX, HTML, Markdown or UTF-8 text",
        )
    head = text[:1024].lstrip().lower()
    return "html" if head.startswith("<!doctype html") or "<html" in head else "text"


def parse_document(content: bytes, *, name: str, media_type: str | None = None) -> ParsedDocument:
    """Sections in document order, empty ones dropped; a blank document has none (not an error)."""
    if len(content) > MAX_DOCUMENT_BYTES:
        raise ParseError(f"{name}: {len(content):,} bytes, more than {MAX_DOCUMENT_BYTES:,}", "split the document")
    kind = document_kind(name, media_type, content)
    if kind in ("pdf", "docx"):
        from plait.knowledge._office import parse_docx, parse_pdf  # reads this module's bounds

        title, sections = (parse_pdf if kind == "pdf" else parse_docx)(content, name)
    elif kind == "html":
        title, sections = _parse_html(_decode(content, name, html=True))
    elif kind == "markdown":
        title, sections = _parse_markdown(_decode(content, name))
    else:
        # A text file may be code, a configuration or verse: its indentation is part of its meaning.
        title, sections = None, _Sections().finish([_decode(content, name)], spacing="indent")
    return ParsedDocument(kind=kind, title=_one_line(title) or None, sections=sections)


# -- text ------------------------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_SPACES = re.compile(r"[^\S\n]+")
_BLANK_RUNS = re.compile(r"\n{3,}")
Spacing = Literal["collapse", "indent", "verbatim"]


def _normalise(text: str, *, spacing: Spacing = "collapse") -> str:
    """One blank line between paragraphs, no trailing spaces and no control characters (a NUL
    from a PDF would not even fit in PostgreSQL's text). Within lines, `spacing`: "collapse" one
    space between words, lines trimmed; "indent" the same but each line keeps its indentation;
    "verbatim" as written."""
    text = _CONTROL.sub("", re.sub(r"\r\n?|[\x0b\x0c\x85\u2028\u2029]", "\n", text))
    if spacing == "collapse":
        lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
        return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()
    if spacing == "indent":
        lines = [_indented(line) for line in text.split("\n")]
    else:
        lines = [line.rstrip() for line in text.split("\n")]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip("\n")


def _indented(line: str) -> str:
    body = line.lstrip()
    return line[: len(line) - len(body)] + _SPACES.sub(" ", body).rstrip() if body else ""


def _one_line(text: str | None) -> str:
    return " ".join(_CONTROL.sub("", text or "").split())


def _decode(content: bytes, name: str, *, html: bool = False) -> str:
    """UTF-8 (a BOM allowed), UTF-16 when a BOM says so, or the charset an HTML page declares in its
    first kilobyte: guessing a legacy encoding would store mojibake that no search finds."""
    encoding = "utf-16" if content.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else "utf-8-sig"
    declared = re.search(rb"""charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", content[:1024]) if html else None
    try:
        return content.decode(encoding)
    except UnicodeDecodeError as error:
        problem = f"{name}: not valid {encoding.removesuffix('-sig').upper()} text (byte {error.start})"
    if declared is not None:
        try:
            return content.decode(declared.group(1).decode("ascii"))
        except (LookupError, UnicodeDecodeError) as error:
            problem = f"{name}: not valid {declared.group(1).decode('ascii')} text: {error}"
    raise ParseError(problem, "save it as UTF-8")


class _Sections:
    """Builds sections as a reader meets headings: a heading of level n ends every open heading of
    level n or deeper (level 0, a DOCX title, ends all of them)."""

    def __init__(self) -> None:
        self._open: list[tuple[int, str]] = []
        self._parts: list[tuple[tuple[str, ...], list[str]]] = [((), [])]
        self.first_h1: str | None = None

    def heading(self, level: int, text: str) -> None:
        text = _one_line(text)
        if not text:
            return
        while self._open and self._open[-1][0] >= level:
            self._open.pop()
        self._open.append((level, text))
        if level == 1 and self.first_h1 is None:
            self.first_h1 = text
        self.enter(tuple(heading for _, heading in self._open))

    def enter(self, path: tuple[str, ...]) -> None:
        if path != self._parts[-1][0]:
            self._parts.append((path, []))

    def add(self, text: str) -> None:
        self._parts[-1][1].append(text)

    def pop_line(self) -> str:
        return self._parts[-1][1].pop()

    def finish(
        self, first: list[str] | None = None, *, joiner: str = "\n\n", spacing: Spacing = "collapse"
    ) -> tuple[Section, ...]:
        if first is not None:
            self._parts[0][1].extend(first)
        bodies = ((path, _normalise(joiner.join(parts), spacing=spacing)) for path, parts in self._parts)
        return tuple(Section(path, body) for path, body in bodies if body)


# -- markdown --------------------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_NOT_A_TITLE_LINE = re.compile(r"^(?: {4}|\t| {0,3}(?:[-*+>]|\d+[.)])(?:\s|$))")


def _parse_markdown(text: str) -> tuple[str | None, tuple[Section, ...]]:
    """ATX and setext headings outside fenced code; the body kept as written, code included."""
    sections = _Sections()
    lines = re.split(r"\r\n?|\n", text)
    fence = ""
    front_matter_end = _front_matter_end(lines)
    previous_is_text = False
    for number, line in enumerate(lines):
        if fence:
            closing = _FENCE.match(line)
            run = closing.group(1) if closing else ""
            if run[:1] == fence[0] and len(run) >= len(fence) and not line.strip().lstrip(fence[0]):
                fence = ""
            sections.add(line)
            previous_is_text = False
            continue
        if number < front_matter_end:
            sections.add(line)
            continue
        opening = _FENCE.match(line)
        atx = _ATX.match(line)
        setext = _SETEXT.match(line)
        if opening and not (opening.group(1)[0] == "`" and "`" in line.strip()[len(opening.group(1)) :]):
            fence = opening.group(1)
            sections.add(line)
        elif atx:
            sections.heading(len(atx.group(1)), atx.group(2) or "")
        elif setext and previous_is_text:
            title = sections.pop_line()
            sections.heading(1 if setext.group(1)[0] == "=" else 2, title)
        else:
            sections.add(line)
            previous_is_text = bool(line.strip()) and not _NOT_A_TITLE_LINE.match(line)
            continue
        previous_is_text = False
    return sections.first_h1, sections.finish(joiner="\n", spacing="verbatim")


def _front_matter_end(lines: list[str]) -> int:
    """The lines of a YAML front matter block (`---` ... `---`): text, never a setext heading."""
    if not lines or lines[0].strip() != "---":
        return 0
    for number, line in enumerate(lines[1:200], start=1):
        if line.strip() in ("---", "..."):
            return number + 1
    return 0


# -- html ------------------------------------------------------------------------------------------

_SKIPPED = {"script", "style", "noscript", "template"}
_IN_HEAD = {"title", "meta", "link", "style", "script", "base", "noscript", "template", "head", "html"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_BLOCKS = {
    "address", "article", "aside", "blockquote", "body", "br", "caption", "dd", "details", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "li", "main", "nav", "ol", "p", "pre",
    "section", "summary", "table", "tbody", "thead", "tfoot", "tr", "ul",
}  # fmt: skip


class _HTMLText(HTMLParser):
    """Text by paragraph under h1-h6; the head's and scripts' text dropped, except <title>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections = _Sections()
        self.title: list[str] = []
        self._skipping = 0
        self._in_head = False
        self._in_title = False
        self._heading: int | None = None
        self._text: list[str] = []
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self._skipping += 1
        elif tag == "head":
            self._in_head = True
        elif tag == "title":
            self._in_title = True
        elif tag not in _IN_HEAD:
            self._in_head = False  # body content: the head ended, whether or not it said so
        if self._skipping or self._in_head or self._in_title:
            return
        if tag in _HEADINGS:
            self._flush()
            self._heading = int(tag[1])
        elif tag in ("td", "th"):
            self._text.append(" ")
        elif tag in _BLOCKS:
            self._flush()
        self._pre += tag == "pre"

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skipping = max(0, self._skipping - 1)
        elif tag == "head":
            self._in_head = False
        elif tag == "title":
            self._in_title = False
        elif self._skipping:
            return
        elif tag in _HEADINGS and self._heading is not None:
            self.sections.heading(self._heading, "".join(self._text))
            self._text, self._heading = [], None
        elif tag in _BLOCKS:
            self._flush()
            self._pre = max(0, self._pre - (tag == "pre"))

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        if self._in_title:
            self.title.append(data)
        elif not self._in_head:
            self._text.append(data if self._pre else re.sub(r"\s+", " ", data))

    def close(self) -> None:
        super().close()
        if self._heading is not None:
            self.sections.heading(self._heading, "".join(self._text))
            self._text, self._heading = [], None
        self._flush()

    def _flush(self) -> None:
        if self._heading is None:  # a block inside a heading is part of the heading
            text = "".join(self._text).strip()
            if text:
                self.sections.add(text)
            self._text = []


def _parse_html(text: str) -> tuple[str | None, tuple[Section, ...]]:
    parser = _HTMLText()
    parser.feed(text)
    parser.close()
    return _one_line("".join(parser.title)) or parser.sections.first_h1, parser.sections.finish()


# -- pdf -------------------------------------------------------------------------------------------


def _holds_word_document(content: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            return "word/document.xml" in archive.namelist()
    except Exception:
        return False
