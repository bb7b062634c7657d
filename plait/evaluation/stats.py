"""The statistics of the gate: exact, in integers, so a verdict never turns on rounding."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from math import comb


def mcnemar_p(regressions: int, fixes: int) -> float:
    """One-sided exact McNemar test that the candidate is worse: P(X >= regressions) for
    X ~ Binomial(regressions + fixes, 1/2), the chance of this many regressions among the changed
    cases if a change were as likely to be a fix. 1.0 when no case changed."""
    if regressions < 0 or fixes < 0:
        raise ValueError("counts cannot be negative")
    changed = regressions + fixes
    if changed == 0:
        return 1.0
    tail = sum(comb(changed, k) for k in range(regressions, changed + 1))
    return float(Fraction(tail, 2**changed))


def majority(passes: Sequence[bool]) -> tuple[bool, float]:
    """(passed by a strict majority, ties failing; the share of repetitions agreeing with the outcome)."""
    if not passes:
        raise ValueError("no repetitions")
    yes = sum(passes)
    passed = 2 * yes > len(passes)
    return passed, (yes if passed else len(passes) - yes) / len(passes)
