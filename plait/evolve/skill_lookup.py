"""Stored skills for commands that compile without storing (`plait validate`, `plait graphs show
FILE`, a dry run of a file): the store is opened only when a graph names a stored skill, so
validating a graph that names none loads no database driver (`tests/cli/test_cli.py` checks what
`plait validate` imports)."""

from __future__ import annotations

from pathlib import Path

from plait.compile.skill_params import SkillSource, StoredSkill


def skill_source_at(db: str | None) -> SkillSource:
    """Stored skills of the database `db` (default: the one found from here), never created or
    migrated; a database that cannot be read has no skills."""

    def find(name: str, version: int | None) -> StoredSkill | None:
        from sqlalchemy.exc import SQLAlchemyError

        from plait.evolve.skills import skill_source
        from plait.store import Store, StoreError, database_url

        url = database_url(db)
        if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
            return None
        try:
            with Store(url, migrate=False) as store:
                return skill_source(store)(name, version)
        except (StoreError, SQLAlchemyError):
            return None

    return find
