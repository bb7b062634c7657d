"""PDF and DOCX to sections (pypdf, python-docx), for `parse.py`: bounded before the library
opens them (pages; the archive's members and unpacked size), and whatever the library raises on a
broken file turned into a `ParseError` naming the file. The bounds are `parse`'s constants."""

from __future__ import annotations

import io
import re
import zipfile
from typing import TYPE_CHECKING, Any

from plait.knowledge import parse
from plait.knowledge.parse import ParseError, Section, _one_line, _Sections, missing

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from docx.table import Table
    from docx.text.paragraph import Paragraph


def parse_pdf(content: bytes, name: str) -> tuple[str | None, tuple[Section, ...]]:
    """Each page's text, under the outline's headings when there is an outline, else "page N"."""
    try:
        from pypdf import PdfReader
    except ImportError as error:
        raise missing("Reading a PDF") from error
    hint = "check that the file is a complete PDF (open it in a viewer), or export it again"
    try:
        reader = PdfReader(io.BytesIO(content))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ParseError(f"{name}: the PDF is encrypted with a password", "upload a copy without the password")
        count = len(reader.pages)
    except ParseError:
        raise
    except Exception as error:  # pypdf raises many kinds on a broken file; each is the file's fault
        raise ParseError(f"{name}: not a readable PDF: {error}", hint) from error
    if count > parse.MAX_PDF_PAGES:
        raise ParseError(f"{name}: {count:,} pages, more than {parse.MAX_PDF_PAGES:,}", "split the PDF")
    texts = []
    for index in range(count):
        try:
            texts.append(reader.pages[index].extract_text() or "")
        except Exception as error:
            raise ParseError(f"{name}: page {index + 1} could not be read: {error}", hint) from error
    return _pdf_title(reader), _pdf_sections(texts, _outline(reader))


def _pdf_title(reader: Any) -> str | None:
    try:
        return str(reader.metadata.title) if reader.metadata and reader.metadata.title else None
    except Exception:  # a broken info dictionary costs the title, not the document
        return None


def _outline(reader: Any) -> list[tuple[int, tuple[str, ...]]]:
    """(page index, heading path) of each bookmark, by page; [] when the outline is absent or broken
    (the pages are still readable, with "page N" headings)."""
    entries: list[tuple[int, tuple[str, ...]]] = []

    def walk(items: list[Any], parents: tuple[str, ...]) -> None:
        path = parents
        for item in items:
            if isinstance(item, list):
                walk(item, path)  # a list holds the children of the bookmark before it
                continue
            path = (*parents, _one_line(str(item.title or "")))
            page = reader.get_destination_page_number(item)
            if path[-1] and page is not None and page >= 0:
                entries.append((page, path))

    try:
        walk(reader.outline, ())
    except Exception:
        return []
    return sorted(entries, key=lambda entry: entry[0])


def _pdf_sections(texts: list[str], outline: list[tuple[int, tuple[str, ...]]]) -> tuple[Section, ...]:
    """A bookmark whose title is a line of its page starts there (the line is the heading, not
    body); one whose title is not found starts where the page's text so far ends."""
    sections = _Sections()
    if not outline:
        for number, text in enumerate(texts, start=1):
            sections.enter((f"page {number}",))
            sections.add(text)
        return sections.finish()
    starts: dict[int, list[tuple[str, ...]]] = {}
    for page, path in outline:
        starts.setdefault(page, []).append(path)
    for index, text in enumerate(texts):
        lines = text.split("\n")
        cursor = 0
        for path in starts.get(index, []):
            wanted = path[-1].casefold()
            found = next((n for n in range(cursor, len(lines)) if _one_line(lines[n]).casefold() == wanted), None)
            if found is not None:
                sections.add("\n".join(lines[cursor:found]))
                cursor = found + 1
            sections.enter(path)
        sections.add("\n".join(lines[cursor:]))
    return sections.finish()


# -- docx ------------------------------------------------------------------------------------------

_HEADING_STYLE = re.compile(r"heading ([1-9])", re.IGNORECASE)


def _check_zip(content: bytes, name: str) -> None:
    """Refuses a zip bomb before python-docx unpacks anything."""
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            members = archive.infolist()
    except Exception as error:
        raise ParseError(f"{name}: not a DOCX file (not a zip archive): {error}", "save it as .docx") from error
    hint = "a DOCX from a word processor is far smaller: save it again, without large media"
    if len(members) > parse.MAX_ZIP_MEMBERS:
        raise ParseError(f"{name}: {len(members):,} files in the archive, more than {parse.MAX_ZIP_MEMBERS:,}", hint)
    unzipped = sum(member.file_size for member in members)
    if unzipped > parse.MAX_UNZIPPED_BYTES:
        raise ParseError(f"{name}: {unzipped:,} bytes unpacked, more than {parse.MAX_UNZIPPED_BYTES:,}", hint)


def parse_docx(content: bytes, name: str) -> tuple[str | None, tuple[Section, ...]]:
    """Paragraphs and table cells in order; "Title" and "Heading 1".."Heading 9" styles are headings."""
    _check_zip(content, name)
    try:
        import docx
    except ImportError as error:
        raise missing("Reading a DOCX") from error
    sections = _Sections()
    title: str | None = None
    try:
        document = docx.Document(io.BytesIO(content))
        for style, text in _docx_paragraphs(document.iter_inner_content()):
            heading = _HEADING_STYLE.fullmatch(style)
            if style.lower() == "title":
                title = title or _one_line(text)
                sections.heading(0, text)
            elif heading:
                sections.heading(int(heading.group(1)), text)
            else:
                sections.add(text)
        core_title = document.core_properties.title
    except Exception as error:
        raise ParseError(f"{name}: not a readable DOCX: {error}", "save it again as .docx") from error
    return _one_line(core_title) or title or sections.first_h1, sections.finish()


def _docx_paragraphs(blocks: Iterable[Paragraph | Table]) -> Iterator[tuple[str, str]]:
    """(style name, text) of each paragraph, and of each table cell's paragraphs as body text (a cell
    merged across columns is read once)."""
    from docx.table import Table

    for block in blocks:
        if isinstance(block, Table):
            seen: set[Any] = set()  # the cells' elements, kept alive so that each keeps its identity
            for row in block.rows:
                for cell in row.cells:
                    if cell._tc not in seen:
                        seen.add(cell._tc)
                        yield from (("", text) for _, text in _docx_paragraphs(cell.iter_inner_content()))
        else:
            yield (block.style.name if block.style is not None else "") or "", block.text
