"""The gate: outcomes per case, each rule failing and not failing with its figures, inconclusive,
repetitions, the field report, variances, and one exit code for the printed verdict."""

from __future__ import annotations

from math import comb

import pytest

from plait.evaluation import (
    CaseLabel,
    CasePair,
    CaseScore,
    EvaluationError,
    FieldResult,
    GateRules,
    Outcome,
    Status,
    Verdict,
    decide,
    majority,
    mcnemar_p,
)

OK = CaseScore(True, 1.0, [])
BAD = CaseScore(False, 0.0, [])


def case(case_id: str, before: bool, *after: bool, label: str = "corrected", critical: bool = False) -> CasePair:
    return CasePair(
        case_id, CaseLabel(label), OK if before else BAD, [OK if a else BAD for a in after], critical=critical
    )


def stable(count: int, label: str = "corrected") -> list[CasePair]:
    """`count` cases right under both versions."""
    return [case(f"s{i}", True, True, label=label) for i in range(count)]


def check(verdict: Verdict, name: str) -> tuple[Status, str]:
    found = next(c for c in verdict.checks if c.name == name)
    return found.status, found.text


# --- statistics ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [(3, 0, 0.125), (5, 0, 0.03125), (0, 0, 1.0), (0, 5, 1.0), (1, 1, 0.75), (4, 1, 6 / 32), (6, 2, 37 / 256)],
)
def test_mcnemar_p_values_computed_by_hand(b: int, c: int, p: float) -> None:
    assert mcnemar_p(b, c) == pytest.approx(p, abs=1e-15)


def test_mcnemar_p_is_the_binomial_tail() -> None:
    n = 23
    assert mcnemar_p(20, 3) == pytest.approx(sum(comb(n, k) for k in range(20, n + 1)) / 2**n)


def test_majority() -> None:
    assert majority([True, True, False]) == (True, 2 / 3)
    assert majority([True, False]) == (False, 0.5)  # a tie fails
    assert majority([False, False, False]) == (False, 1.0)


# --- outcomes ------------------------------------------------------------------------------------


def test_the_outcome_of_each_case() -> None:
    verdict = decide(
        [
            case("f", False, True),
            case("r", True, False),
            case("w", False, False),
            case("k", True, True),
            CasePair("n", CaseLabel.CORRECTED, OK, [], reason="the candidate's run failed"),
            CasePair("m", CaseLabel.APPROVED, None, [OK]),
        ],
        GateRules(min_comparable=0, max_regressions=5),
    )
    assert [(o.case_id, o.outcome) for o in verdict.cases] == [
        ("f", Outcome.FIXED),
        ("r", Outcome.REGRESSED),
        ("w", Outcome.STILL_WRONG),
        ("k", Outcome.STILL_RIGHT),
        ("n", Outcome.INCOMPARABLE),
        ("m", Outcome.INCOMPARABLE),
    ]
    assert [o.reason for o in verdict.cases[4:]] == ["the candidate's run failed", "no baseline score"]
    assert "incomparable: n (the candidate's run failed), m (no baseline score)" in verdict.lines()


def test_repetitions_decide_by_majority_and_keep_their_agreement() -> None:
    verdict = decide(
        [case("a", True, True, False, True), case("b", True, True, False), case("c", False, True, True, True)],
        GateRules(min_comparable=0, max_regressions=5),
    )
    a, b, c = verdict.cases
    assert (a.outcome, a.candidate_passed, a.agreement, a.repetitions) == (Outcome.STILL_RIGHT, True, 2 / 3, 3)
    assert (b.outcome, b.agreement) == (Outcome.REGRESSED, 0.5)  # a tie fails
    assert (c.outcome, c.agreement) == (Outcome.FIXED, 1.0)
    assert (verdict.sampling.count, verdict.sampling.of) == (2, 3)
    assert "sampling 2 of 3 cases with repetitions disagree (66.7%)" in verdict.lines()[-1]


# --- the rules -----------------------------------------------------------------------------------


def test_the_defaults() -> None:
    assert GateRules() == GateRules(max_regressions=0, alpha=0.05, max_approved_drop=0.0, min_comparable=10)


def test_a_clean_candidate_passes() -> None:
    verdict = decide([*stable(10), case("f", False, True)])
    assert (verdict.status, verdict.exit_code) == (Status.PASS, 0)
    assert [c.status for c in verdict.checks] == [Status.PASS] * 5
    assert verdict.lines()[0] == "verdict: pass (exit 0)"
    assert check(verdict, "regressions") == (Status.PASS, "regressions 0 <= 0 allowed")
    assert check(verdict, "mcnemar") == (Status.PASS, "McNemar p = 1 >= 0.05 (0 regressions, 1 fixes)")
    assert check(verdict, "comparable") == (Status.PASS, "comparable cases 11 >= 10 required")


def test_more_regressions_than_allowed_fail() -> None:
    cases = [
        *stable(20),
        *(case(f"r{i}", True, False) for i in range(3)),
        *(case(f"f{i}", False, True) for i in range(9)),
    ]
    failed = decide(cases, GateRules(max_regressions=2))
    assert check(failed, "regressions") == (Status.FAIL, "regressions 3 > 2 allowed")
    assert check(failed, "mcnemar")[0] is Status.PASS
    assert (failed.status, failed.exit_code) == (Status.FAIL, 1)
    assert check(decide(cases, GateRules(max_regressions=3)), "regressions") == (
        Status.PASS,
        "regressions 3 <= 3 allowed",
    )
    assert decide(cases, GateRules(max_regressions=3)).status is Status.PASS


def test_significantly_more_regressions_than_fixes_fail_by_mcnemar() -> None:
    cases = [*stable(10), *(case(f"r{i}", True, False) for i in range(5))]
    verdict = decide(cases, GateRules(max_regressions=10))
    assert check(verdict, "mcnemar") == (Status.FAIL, "McNemar p = 0.03125 < 0.05 (5 regressions, 0 fixes)")
    assert verdict.status is Status.FAIL
    fewer = decide([*stable(10), *(case(f"r{i}", True, False) for i in range(3))], GateRules(max_regressions=10))
    assert check(fewer, "mcnemar") == (Status.PASS, "McNemar p = 0.125 >= 0.05 (3 regressions, 0 fixes)")
    assert fewer.status is Status.PASS
    stricter = decide(cases, GateRules(max_regressions=10, alpha=0.01))
    assert check(stricter, "mcnemar")[0] is Status.PASS


def test_a_drop_in_the_approved_pass_rate_fails() -> None:
    approved = [*stable(19, "approved"), case("a", True, False, label="approved")]
    corrected = [case(f"f{i}", False, True) for i in range(5)]
    verdict = decide([*approved, *corrected], GateRules(max_regressions=1))
    assert check(verdict, "approved") == (
        Status.FAIL,
        "approved pass rate 100.0% -> 95.0% (drop 5.0% > 0.0% allowed, 20 cases)",
    )
    assert verdict.status is Status.FAIL
    allowed = decide([*approved, *corrected], GateRules(max_regressions=1, max_approved_drop=0.05))
    assert check(allowed, "approved") == (
        Status.PASS,
        "approved pass rate 100.0% -> 95.0% (drop 5.0% <= 5.0% allowed, 20 cases)",
    )
    assert allowed.status is Status.PASS
    none = decide(stable(10), GateRules())
    assert check(none, "approved") == (Status.PASS, "approved pass rate: no comparable approved case")


def test_a_critical_case_that_regresses_fails_whatever_else_allows_it() -> None:
    cases = [*stable(30), case("c", True, False, critical=True), *(case(f"f{i}", False, True) for i in range(5))]
    verdict = decide(cases, GateRules(max_regressions=5))
    assert check(verdict, "critical") == (Status.FAIL, "critical regressions in 1 case: c (a critical case)")
    assert [c.status for c in verdict.checks if c.name != "critical"] == [Status.PASS] * 4
    assert verdict.status is Status.FAIL
    calm = decide(
        [*stable(30), case("c", True, False), *(case(f"f{i}", False, True) for i in range(5))],
        GateRules(max_regressions=5),
    )
    assert check(calm, "critical") == (Status.PASS, "no critical regression")
    assert calm.status is Status.PASS


def with_field(passed: bool, path: str = "total", critical: bool = True, case_passes: bool | None = None) -> CaseScore:
    result = FieldResult(path, "tolerance", passed, float(passed), False, "", critical=critical)
    return CaseScore(passed if case_passes is None else case_passes, 1.0, [result])


def test_a_critical_field_that_regresses_fails_the_gate() -> None:
    regressed = CasePair("c", CaseLabel.CORRECTED, with_field(True), [with_field(False)])
    verdict = decide([*stable(20), regressed], GateRules(max_regressions=5))
    assert check(verdict, "critical") == (Status.FAIL, "critical regressions in 1 case: c (field `total`)")
    # an optional critical field: the case still passes, the field regressed
    quiet = CasePair("q", CaseLabel.CORRECTED, with_field(True), [with_field(False, case_passes=True)])
    assert decide([*stable(20), quiet]).status is Status.FAIL
    # the same field without the mark
    plain = CasePair("p", CaseLabel.CORRECTED, with_field(True, critical=False), [with_field(False, critical=False)])
    assert check(decide([*stable(20), plain], GateRules(max_regressions=5)), "critical")[0] is Status.PASS


def test_a_regressed_case_whose_failing_field_is_critical_is_a_critical_regression() -> None:
    """The critical field failed under the baseline too (it was optional), but now the case fails with it."""
    before = CaseScore(True, 0.5, [FieldResult("total", "exact", False, 0.0, False, "", critical=True)])
    after = CaseScore(False, 0.0, [FieldResult("total", "exact", False, 0.0, False, "", critical=True)])
    verdict = decide([*stable(20), CasePair("c", CaseLabel.CORRECTED, before, [after])], GateRules(max_regressions=5))
    assert verdict.cases[-1].critical_fields == ("total",)
    assert verdict.status is Status.FAIL


def test_too_few_comparable_cases_are_inconclusive() -> None:
    verdict = decide([*stable(8), CasePair("x", CaseLabel.CORRECTED, OK, [], reason="timed out")])
    assert check(verdict, "comparable") == (Status.INCONCLUSIVE, "comparable cases 8 < 10 required")
    assert (verdict.status, verdict.exit_code) == (Status.INCONCLUSIVE, 3)
    assert verdict.lines()[0] == "verdict: inconclusive (exit 3)"
    assert decide(stable(8), GateRules(min_comparable=8)).status is Status.PASS
    assert decide([], GateRules()).status is Status.INCONCLUSIVE


def test_a_failure_below_the_minimum_still_fails() -> None:
    """A regression seen is a regression, however few cases could be compared."""
    assert (
        decide([*stable(2), case("c", True, False, critical=True)], GateRules(max_regressions=3)).status is Status.FAIL
    )
    assert decide([*stable(2), case("r", True, False)]).status is Status.FAIL


# --- the report ----------------------------------------------------------------------------------


def scored(**fields: bool) -> CaseScore:
    results = [FieldResult(path, "exact", ok, float(ok), True, "") for path, ok in fields.items()]
    return CaseScore(all(fields.values()), 1.0, results)


def test_the_field_report_counts_regressions_and_fixes_per_path() -> None:
    cases = [
        CasePair(
            f"r{i}",
            CaseLabel.CORRECTED,
            scored(**{"chapters[].start": True, "title": True}),
            [scored(**{"chapters[].start": False, "title": True})],
        )
        for i in range(7)
    ]
    cases.append(CasePair("f", CaseLabel.CORRECTED, scored(title=False), [scored(title=True)]))
    cases.append(
        CasePair(
            "g", CaseLabel.CORRECTED, scored(**{"chapters[].start": False}), [scored(**{"chapters[].start": True})]
        )
    )
    verdict = decide(cases, GateRules(max_regressions=10))
    assert [(f.path, f.regressed, f.fixed) for f in verdict.fields] == [("chapters[].start", 7, 1), ("title", 0, 1)]
    lines = verdict.lines()
    assert "field `chapters[].start` regressed in 7 cases, fixed in 1 case" in lines
    assert "regressed: r0, r1, r2, r3, r4, r5, r6" in lines
    assert "fixed: f, g" in lines


def test_a_field_passes_under_the_candidate_by_majority_of_its_repetitions() -> None:
    pair = CasePair("a", CaseLabel.CORRECTED, scored(x=True), [scored(x=False), scored(x=True), scored(x=False)])
    assert decide([pair], GateRules(max_regressions=5, min_comparable=0)).cases[0].regressed_fields == ("x",)


def test_judge_variance_counts_judged_fields_whose_samples_disagree() -> None:
    def judged(*samples: bool) -> FieldResult:
        return FieldResult(
            "s", "judge", True, 1.0, True, "", samples=samples, judged=1, split=int(len(set(samples)) > 1)
        )

    pair = CasePair(
        "a",
        CaseLabel.CORRECTED,
        CaseScore(True, 1.0, [judged(True, True, True)]),
        [CaseScore(True, 1.0, [judged(True, False, True)])],
    )
    verdict = decide([pair], GateRules(min_comparable=0))
    assert (verdict.judge.count, verdict.judge.of) == (1, 2)
    assert verdict.lines()[-1] == (
        "variance: sampling no case has repetitions; judge 1 of 2 judged fields have samples that disagree (50.0%)"
    )


def test_the_exit_code_and_the_printed_verdict_come_from_the_same_checks() -> None:
    for cases, rules in [
        (stable(10), GateRules()),
        ([*stable(10), case("r", True, False)], GateRules()),
        (stable(3), GateRules()),
    ]:
        verdict = decide(cases, rules)
        assert verdict.lines()[0] == f"verdict: {verdict.status.value} (exit {verdict.exit_code})"
        failing = [c for c in verdict.checks if c.status is not Status.PASS]
        assert (verdict.status is Status.PASS) == (not failing)
        for c in failing:
            assert any(line.strip().startswith(c.status.value) and c.text in line for line in verdict.lines())


def test_verdicts_are_deterministic() -> None:
    cases = [*stable(12), case("r", True, False, True), case("f", False, True, False, True)]
    assert decide(cases, GateRules(max_regressions=1)) == decide(cases, GateRules(max_regressions=1))


def test_wrong_inputs_are_refused() -> None:
    with pytest.raises(EvaluationError, match="case 'a' has label 'liked'") as refused:
        CasePair("a", "liked", OK, [OK])  # type: ignore[arg-type]
    assert refused.value.hint == "label a case 'corrected' or 'approved'"
    assert CasePair("a", "approved", OK, [OK]).label is CaseLabel.APPROVED  # type: ignore[arg-type]
    with pytest.raises(EvaluationError, match="given twice"):
        decide([case("a", True, True), case("a", True, True)])
    with pytest.raises(EvaluationError, match="gate rule alpha is 0") as wrong_alpha:
        GateRules(alpha=0)
    assert wrong_alpha.value.hint == "set alpha to more than 0 and at most 1, e.g. 0.05"
    with pytest.raises(EvaluationError, match="gate rule max_regressions is -1"):
        GateRules(max_regressions=-1)


def test_a_p_value_below_one_is_never_printed_as_one() -> None:
    from plait.evaluation.gate import _p_text

    assert _p_text(mcnemar_p(3, 20)) == "0.99997"  # 1 - 277/2**23: many fixes, few regressions
    assert _p_text(1.0) == "1"
    assert _p_text(0.0107421875) == "0.01074"
