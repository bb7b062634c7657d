"""The tables of stored skills, on the store's one `METADATA` (`models.py` imports this module).

A skill is named, and each change of it is a new immutable version: a graph that names
`skill: name@2` reads the same version forever, and `skill: name` the newest one when it is
compiled (the stored graph then holds that version inlined). Deleting a skill deletes its rows;
graph versions that expanded it keep working, as they hold its nodes.
"""

from __future__ import annotations

from sqlalchemy import JSON, Double, ForeignKey, Integer, String, Table, Text, text

from plait.store.models import METADATA, _optional, _required

Json = JSON(none_as_null=True)

SKILL = Table(
    "skill",
    METADATA,
    _required("name", String(64), primary_key=True),
    _optional("description", Text),
    _required("category", String(64), server_default=text("'general'")),
    _required("tags_json", Json, server_default=text("'[]'")),
    _required("created_at", Double),
    _required("updated_at", Double),
)
"""A stored skill: what lists and searches show of it; its content is in its versions."""

SKILL_VERSION = Table(
    "skill_version",
    METADATA,
    _required("name", String(64), ForeignKey("skill.name", ondelete="CASCADE"), primary_key=True),
    _required("version", Integer, primary_key=True),
    _required("parameters_json", Json, server_default=text("'[]'")),
    _required("input_mapping_json", Json, server_default=text("'{}'")),
    _required("document_json", Json),
    _required("created_at", Double),
    _required("created_by", String(200)),
    _optional("note", Text),
)
"""One immutable version of a skill: its graph document, declared parameters and input mapping."""
