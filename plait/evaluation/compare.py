"""The leaf rules: one expected value against one actual value, as (passed, score, detail)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from plait.evaluation.rules import EvaluationError
from plait.evaluation.text import Similarity, normalised, word_f1

Judge = Callable[[str, Any, Any, int], Sequence[bool]]
"""`judge(path, expected, actual, samples)`: one verdict per sample, True when `actual` says what
`expected` says. Called synchronously; the runs layer builds it on a model."""
SHOWN = 60
"""Characters of a value a detail quotes."""


@dataclass(frozen=True, slots=True)
class Compared:
    passed: bool
    score: float
    detail: str
    samples: tuple[bool, ...] = ()


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: 1 == 1.0, but true is not 1 and "1" is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def show(value: Any) -> str:
    """A value as JSON, cut to `SHOWN` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


def _differ(expected: Any, actual: Any) -> str:
    return f"expected {show(expected)}, got {show(actual)}"


def exact(expected: Any, actual: Any) -> Compared:
    if json_equal(expected, actual):
        return Compared(True, 1.0, "equal")
    return Compared(False, 0.0, _differ(expected, actual))


def tolerance(expected: Any, actual: Any, absolute: float, relative: float) -> Compared:
    """Within the larger of `absolute` and `relative` x the larger magnitude."""
    if not is_number(actual):
        return Compared(False, 0.0, _differ(expected, actual))
    off = abs(float(expected) - float(actual))
    allowed = max(absolute, relative * max(abs(float(expected)), abs(float(actual))))
    if off <= allowed:
        return Compared(True, 1.0, "equal" if off == 0 else f"off by {off:.3g} ({allowed:.3g} allowed)")
    return Compared(False, 0.0, f"{_differ(expected, actual)} (off by {off:.3g}, {allowed:.3g} allowed)")


def normalised_equal(expected: str, actual: Any) -> Compared:
    if isinstance(actual, str) and normalised(expected) == normalised(actual):
        return Compared(True, 1.0, "equal" if expected == actual else "equal once normalised")
    return Compared(False, 0.0, _differ(expected, actual))


def meaning(expected: str, actual: Any, similarity: Similarity, threshold: float) -> Compared:
    """Cosine similarity of the two texts (clipped to 0..1), passing at `threshold` or above."""
    if not isinstance(actual, str):
        return Compared(False, 0.0, _differ(expected, actual))
    if normalised(expected) == normalised(actual):
        return Compared(True, 1.0, "same text")
    raw = float(similarity(expected, actual))
    if math.isnan(raw):
        raise EvaluationError(
            "the similarity returned NaN", "give a similarity that returns a cosine from -1 to 1", code="bad_similarity"
        )
    value = min(1.0, max(0.0, raw))
    return Compared(value >= threshold, value, f"similarity {value:.2f} (at least {threshold:g} needed)")


def words(expected: str, actual: Any, threshold: float, why: str = "") -> Compared:
    """Word-level F1, passing at `threshold` or above; `why` says why words stand in for meaning."""
    if not isinstance(actual, str):
        return Compared(False, 0.0, _differ(expected, actual))
    value = word_f1(expected, actual)
    return Compared(value >= threshold, value, f"word F1 {value:.2f} (at least {threshold:g} needed){why}")


def judged(path: str, expected: Any, actual: Any, judge: Judge | None, samples: int) -> Compared:
    """The judge's majority over `samples` verdicts (a tie fails); equal values pass unasked."""
    if json_equal(expected, actual):
        return Compared(True, 1.0, "equal (the judge was not asked)")
    if judge is None:
        raise EvaluationError(
            f"field `{path}` is scored by a judge (x-eval rule: judge), and no judge was given",
            "pass judge=... to score(), or score the field by another rule",
            code="judge_missing",
        )
    verdicts = tuple(judge(path, expected, actual, samples))
    if not all(isinstance(v, bool) for v in verdicts):
        raise EvaluationError(
            f"the judge of field `{path}` answered {show(list(verdicts))}",
            "a judge returns a list of booleans, one per sample",
            code="bad_judge",
        )
    if not verdicts:
        return Compared(False, 0.0, "the judge gave no verdict")
    yes = sum(verdicts)
    passed = 2 * yes > len(verdicts)
    return Compared(passed, yes / len(verdicts), f"judge: {yes} of {len(verdicts)} samples say it matches", verdicts)
