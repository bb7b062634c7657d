"""The nodes of knowledge bases: PARSE, CHUNK and INDEX make a document searchable (the
ingestion system graph chains them, one document per MAP item), RETRIEVE searches.

Their outputs have fixed shapes (`plait.engine.knowledge_outputs` holds the schemas), so a
person can correct one like any output: a corrected PARSE re-chunks and re-indexes what follows,
a corrected RETRIEVE gives its downstream the hits that should have come back.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field

from plait.model.common import NonEmptyStr, PlaitModel
from plait.model.node_base import INPUT_PATH, NodeBase, NodeType

MAX_TOP_K = 50
MIN_CHUNK_TOKENS = 16
MAX_CHUNK_TOKENS = 512


class ParseNode(NodeBase):
    """Reads one stored knowledge-base document (text, Markdown, HTML, PDF or DOCX) into sections
    under their headings. It reads the document from the store, never a path."""

    type: Literal[NodeType.PARSE] = NodeType.PARSE
    document: NonEmptyStr
    """A template giving the document's id, e.g. `{{ input.document_id }}`."""


class ChunkNode(NodeBase):
    """Splits the sections PARSE gave (`current`) into chunks under a token bound, never across
    two sections."""

    type: Literal[NodeType.CHUNK] = NodeType.CHUNK
    max_tokens: Annotated[int, Field(ge=MIN_CHUNK_TOKENS, le=MAX_CHUNK_TOKENS)] | None = None
    """Default: the knowledge base's own bound."""


class IndexNode(NodeBase):
    """Makes the chunks CHUNK gave (`current`) the document's searchable chunks: embeds only
    texts the knowledge base has no vector for, keeps unchanged chunks, marks dropped ones removed."""

    type: Literal[NodeType.INDEX] = NodeType.INDEX


class RetrieveMode(StrEnum):
    KEYWORD = "keyword"
    """Full-text search (BM25 on SQLite, `ts_rank_cd` on PostgreSQL)."""
    DENSE = "dense"
    """Cosine similarity of sentence embeddings."""
    HYBRID = "hybrid"
    """Both, fused by reciprocal rank."""


class RetrieveFilters(PlaitModel):
    """Which chunks may come back: all conditions hold."""

    documents: list[NonEmptyStr] | None = None
    """Only chunks of documents with these names."""
    metadata: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """Only chunks of documents whose metadata has these values."""
    heading: str | None = None
    """Only chunks under a heading path starting with this (e.g. `Install > Debian`)."""


class RetrieveSettings(PlaitModel):
    """How a RETRIEVE searches, given by the run input (`settings_from`): each field set here
    replaces the node's own."""

    mode: RetrieveMode | None = None
    top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K)] | None = None
    min_score: float | None = None
    filters: RetrieveFilters | None = None
    expand: Literal["chunk", "section"] | None = None


class RetrieveNode(NodeBase):
    """Searches a knowledge base; its output is the query, the index generation it saw and the
    hits, each with its chunk id, document, heading path, text, score and ranks."""

    type: Literal[NodeType.RETRIEVE] = NodeType.RETRIEVE
    knowledge_base: NonEmptyStr
    """The knowledge base's name, or a template giving it (`{{ input.kb }}`)."""
    query: NonEmptyStr
    """A template giving the text to search for, e.g. `{{ input.question }}`."""
    settings_from: Annotated[str, Field(pattern=f"^{INPUT_PATH.pattern}$")] | None = None
    """A path into the run input (`input.search`) holding `RetrieveSettings`: one graph serves
    searches with settings chosen per run (`plait kb search` is a run of such a graph)."""
    mode: RetrieveMode = RetrieveMode.HYBRID
    top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K)] = 5
    min_score: float | None = None
    """Hits scoring less are left out: cosine similarity in `dense` mode, BM25 in `keyword`
    mode, the fused reciprocal-rank score in `hybrid` mode."""
    filters: RetrieveFilters = Field(default_factory=RetrieveFilters)
    expand: Literal["chunk", "section"] = "chunk"
    """`section`: each hit's text is its whole section (the chunks under the same headings)."""
