"""Scoring a graph version's outputs against the outputs people corrected or approved, and the
regression gate that compares a candidate version with the baseline case by case.

Pure: no store, no engine, no I/O. What compares texts by meaning (an embedding similarity) and
what judges a field (a model) are passed in by the caller (docs/evaluation.md).
"""

from plait.evaluation.compare import Judge, json_equal
from plait.evaluation.gate import (
    EXIT_CODES,
    CaseLabel,
    CaseOutcome,
    CasePair,
    Check,
    FieldChange,
    GateRules,
    Outcome,
    Share,
    Status,
    Verdict,
    decide,
)
from plait.evaluation.rules import (
    ABSOLUTE_TOLERANCE,
    ARRAY_THRESHOLD,
    JUDGE_SAMPLES,
    KEYWORD,
    MEANING_THRESHOLD,
    RELATIVE_TOLERANCE,
    WORDS_THRESHOLD,
    EvalSettingsError,
    EvaluationError,
    FieldSettings,
    Rule,
)
from plait.evaluation.scoring import CaseScore, FieldResult, score
from plait.evaluation.stats import majority, mcnemar_p
from plait.evaluation.text import Similarity, embedding_similarity, normalised, word_f1

__all__ = [
    "ABSOLUTE_TOLERANCE",
    "ARRAY_THRESHOLD",
    "EXIT_CODES",
    "JUDGE_SAMPLES",
    "KEYWORD",
    "MEANING_THRESHOLD",
    "RELATIVE_TOLERANCE",
    "WORDS_THRESHOLD",
    "CaseLabel",
    "CaseOutcome",
    "CasePair",
    "CaseScore",
    "Check",
    "EvalSettingsError",
    "EvaluationError",
    "FieldChange",
    "FieldResult",
    "FieldSettings",
    "GateRules",
    "Judge",
    "Outcome",
    "Rule",
    "Share",
    "Similarity",
    "Status",
    "Verdict",
    "decide",
    "embedding_similarity",
    "json_equal",
    "majority",
    "mcnemar_p",
    "normalised",
    "score",
    "word_f1",
]
