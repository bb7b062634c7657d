"""Plait from Python: run graphs, follow their events, correct them and read them back.

    >>> import plait
    >>> result = plait.run("examples/feedback_triage.yaml", {"feedback": "It crashes"}, llm="scripted:answers.yaml")
    >>> result.status, result.output

`Client` (blocking) and `AsyncClient` (async) are one client in two forms over the same run
use cases the CLI and the HTTP service use: a run started, resumed or corrected here is the
same record `plait runs show` reads. docs/python.md has the guide.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from plait.client._async import AsyncClient
from plait.client._corrections import Corrected
from plait.client._graphs import GraphSource, SavedGraph
from plait.client._namespaces import NewToken
from plait.client._results import ClientClosed, NodeFailure, OutputMismatch, PendingReview, RunFailed, RunResult
from plait.client._sync import Client

if TYPE_CHECKING:
    from plait.llm.provider import Provider

__all__ = [
    "AsyncClient",
    "Client",
    "ClientClosed",
    "Corrected",
    "GraphSource",
    "NewToken",
    "NodeFailure",
    "OutputMismatch",
    "PendingReview",
    "RunFailed",
    "RunResult",
    "SavedGraph",
    "run",
]


def run(
    graph: GraphSource,
    input: dict[str, Any] | None = None,
    *,
    llm: str | Provider | None = None,
    db: str | os.PathLike[str] | None = None,
    config: str | os.PathLike[str] | None = None,
    output_type: Any = None,
) -> RunResult[Any]:
    """Run a graph once and return how it ended: a client opened for this one run and closed
    after it. The run is recorded in the store (`db`, default as the CLI's) like any other."""
    with Client(db, llm=llm, config=config) as client:
        return client.run(graph, input, output_type=output_type)
