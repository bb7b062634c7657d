"""System graphs: the YAML graphs that ship inside the package (`plait/system_graphs/`), and
likewise the system prompt-script templates (`plait/system_templates/`, `sync_system_templates`).

They are stored with `source_type: system`, listed with the user's graphs, and read-only:
saving over one or deleting one is refused (fork it instead). When a newer Plait ships a
changed system graph, the next start-up (`sync_system_graphs`, called when the CLI or the
server opens the store) stores it as the graph's next version; an unchanged one is left as
is, so runs and forks keep pointing at the versions they know. The database remembers the
digest of the files it last synced, so an unchanged set costs one read.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from plait.store import Store

if TYPE_CHECKING:
    from plait.store import StoredGraph

SYSTEM_DIR = Path(__file__).resolve().parent.parent / "system_graphs"
SYNCED = "system_graphs_digest"
"""Setting: the digest of the system-graph files last stored in this database. While it matches,
start-up costs one indexed read instead of compiling every system graph."""


class SystemGraphError(Exception):
    """A shipped system graph does not validate (a packaging bug, not a user error)."""


def sync_system_graphs(store: Store, folder: Path = SYSTEM_DIR) -> list[StoredGraph]:
    """Store every system graph of `folder` (a new version only where its content changed)."""
    files = sorted(folder.glob("*.yaml"))
    digest = hashlib.sha256(b"".join(f.name.encode() + f.read_bytes() for f in files)).hexdigest()
    if store.settings.get(SYNCED) == digest:
        return []
    from plait.compile import compile_file
    from plait.evolve.save import save_graph  # only when something changed: read-only commands skip it

    stored: list[StoredGraph] = []
    for file in files:
        result = compile_file(file)
        if not result.valid or result.expanded is None:
            problems = "; ".join(d.format() for d in result.errors)
            raise SystemGraphError(f"the system graph {file.name} shipped with Plait is invalid: {problems}")
        stored.append(save_graph(store, result.expanded, source_type="system").stored)
    store.settings.set(SYNCED, digest)
    return stored


TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "system_templates"
TEMPLATES_SYNCED = "system_templates_digest"


def sync_system_templates(store: Store, folder: Path = TEMPLATES_DIR) -> int:
    """Store every system prompt-script template of `folder` as shipped (read-only rows); how
    many were stored (none while the files are unchanged since the last sync)."""
    import yaml

    files = sorted(folder.glob("*.yaml"))
    digest = hashlib.sha256(b"".join(f.name.encode() + f.read_bytes() for f in files)).hexdigest()
    if store.settings.get(TEMPLATES_SYNCED) == digest:
        return 0
    from plait.sandbox import JsSyntaxError, check_syntax

    for file in files:
        template = yaml.safe_load(file.read_text(encoding="utf-8"))
        try:
            check_syntax(template["script_code"], kind="script")
        except (JsSyntaxError, KeyError, TypeError) as exc:
            raise SystemGraphError(f"the system template {file.name} shipped with Plait is invalid: {exc}") from None
        store.templates.store_system(template)
    store.settings.set(TEMPLATES_SYNCED, digest)
    return len(files)


def open_store(url: str | None = None) -> Store:
    """The store at `url` with this Plait's system graphs stored (what the CLI and `plait serve`
    open); raises StoreError when it cannot be opened."""
    store = Store(url)
    try:
        sync_system_graphs(store)
        sync_system_templates(store)
    except Exception:
        store.close()
        raise
    return store
