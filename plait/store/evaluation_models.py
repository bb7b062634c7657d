"""The tables of evaluations, on the store's one `METADATA` (`models.py` imports this module).

An evaluation set is a frozen list of cases taken from a graph's field ledger: each case is an
input a person judged (corrected: the corrected value is expected; approved: the approved value
is), with what the graph produced then. Sets are never edited: refreshing one writes a new
revision under the same name, so a verdict always names exactly the cases it was reached on.

An evaluation scores a candidate version of the graph on a set, against a baseline (the
recorded outputs, or a fresh run of the old version), and keeps one result per case, side and
repetition, each pointing at the ordinary run that produced it. A graph's promoted version, and
every promotion with the gate that allowed it or the note that overrode it, are kept beside.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Double,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)

from plait.store.models import METADATA, Id, _optional, _required

Json = JSON(none_as_null=True)

EVAL_SET = Table(
    "eval_set",
    METADATA,
    _required("id", Id, primary_key=True),
    _required("graph_id", Id, ForeignKey("prompt_graph_def.id", ondelete="CASCADE")),
    _required("name", String(120)),
    # 1 for a new name; each refresh of the set is the next revision, its own immutable cases.
    _required("revision", Integer),
    # What the cases were taken from: {"sources": [...], "since": .., "nodes": [...], "level": ..}.
    _required("built_from_json", Json),
    _required("cases", Integer),
    _required("created_by", String(200)),
    _required("created_at", Double),
    UniqueConstraint("graph_id", "name", "revision", name="uq_eval_set_revision"),
)
"""A named, immutable set of evaluation cases of one graph."""

EVAL_CASE = Table(
    "eval_case",
    METADATA,
    _required("id", Id, primary_key=True),
    _required("set_id", Id, ForeignKey("eval_set.id", ondelete="CASCADE")),
    _required("position", Integer),
    _required("level", String(8)),  # node | run
    _required("label", String(16)),  # corrected | approved
    _required("critical", Boolean, server_default=false()),
    _required("source_run_id", Id),
    _optional("node_run_id", Id),  # None for a run-level case
    _optional("node_id", String(128)),
    _required("graph_version", Integer),
    # The ledger version of the node's value (or of the run's output) that is expected.
    _required("ledger_version", Integer),
    # A node-level case: {"input": run input, "upstream": {node: value read}, "read": {owner: version}};
    # a run-level case: the run input.
    _required("input_json", Json),
    _optional("original_json", Json),
    _optional("expected_json", Json),
    # The out-edge schemas the expected value was written under: [{"id", "version"}].
    _required("schemas_json", Json, server_default=text("'[]'")),
    _optional("judged_by", String(200)),
    _optional("judged_at", Double),
    _optional("note", Text),
    UniqueConstraint("set_id", "position", name="uq_eval_case_position"),
    Index("idx_eval_case_source", "source_run_id"),
)
"""One case: what was asked, what came out, what a person said it should be."""

EVALUATION = Table(
    "evaluation",
    METADATA,
    _required("id", Id, primary_key=True),
    _required("set_id", Id, ForeignKey("eval_set.id", ondelete="CASCADE")),
    _required("graph_id", Id),
    _required("candidate_version", Integer),
    # None: the baseline is each case's recorded output (it costs nothing); else the version run afresh.
    _optional("baseline_version", Integer),
    _required("repetitions", Integer, server_default=text("1")),
    _required("rules_json", Json),
    _required("status", String(16)),  # pending | running | completed | failed
    _optional("verdict_json", Json),
    _optional("error_json", Json),
    _required("created_by", String(200)),
    _required("created_at", Double),
    _optional("completed_at", Double),
    Index("idx_evaluation_set", "set_id"),
    Index("idx_evaluation_graph", "graph_id", "candidate_version"),
)
"""A candidate version scored on a set against a baseline, and the gate's verdict."""

EVAL_RESULT = Table(
    "eval_result",
    METADATA,
    _required("evaluation_id", Id, ForeignKey("evaluation.id", ondelete="CASCADE"), primary_key=True),
    _required("case_id", Id, ForeignKey("eval_case.id", ondelete="CASCADE"), primary_key=True),
    _required("side", String(16), primary_key=True),  # candidate | baseline
    _required("repetition", Integer, primary_key=True),
    _optional("run_id", Id),  # the run that produced the output (None: the recorded output)
    _optional("output_json", Json),
    _optional("score_json", Json),
    _optional("passed", Boolean),
    # Why the case could not be scored on this side (None: it was).
    _optional("incomparable", Text),
    _required("created_at", Double),
)
"""One case's output on one side, its score, and the run behind it."""

GRAPH_PROMOTION = Table(
    "graph_promotion",
    METADATA,
    _required("id", Id, primary_key=True),
    _required("graph_id", Id, ForeignKey("prompt_graph_def.id", ondelete="CASCADE")),
    _required("version", Integer),
    _optional("previous_version", Integer),
    _optional("evaluation_id", Id),
    # The gate was overridden: who did it is `promoted_by`, why is `note`.
    _required("forced", Boolean, server_default=false()),
    _optional("note", Text),
    _required("promoted_by", String(200)),
    _required("promoted_at", Double),
    Index("idx_graph_promotion_graph", "graph_id", "promoted_at"),
)
"""Every change of a graph's promoted version (the newest row is the one in effect)."""
