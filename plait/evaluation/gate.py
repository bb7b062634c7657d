"""The regression gate: a candidate graph version against the baseline, case by case.

Each case is an input whose expected output a person gave (a correction) or accepted (an
approval), scored under the baseline and under the candidate. What fails the candidate is
counted in regressions, cases the baseline got right and the candidate gets wrong: the gate
asks whether there are any that matter (critical), more than allowed, significantly more than
fixes, or fewer approved outputs kept. The verdict holds its exit code and its printed lines,
both made from the same checks, so what a command prints can never disagree with how it exits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction

from plait.evaluation.rules import EvaluationError
from plait.evaluation.scoring import CaseScore
from plait.evaluation.stats import majority, mcnemar_p

LISTED = 10
"""Case ids a verdict line names before it says how many more there are."""


class CaseLabel(StrEnum):
    CORRECTED = "corrected"
    """A person corrected the output: the corrected value is expected."""
    APPROVED = "approved"
    """A person approved the output: the approved value is expected."""


class Outcome(StrEnum):
    FIXED = "fixed"
    REGRESSED = "regressed"
    STILL_WRONG = "still_wrong"
    STILL_RIGHT = "still_right"
    INCOMPARABLE = "incomparable"


class Status(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"


EXIT_CODES = {Status.PASS: 0, Status.FAIL: 1, Status.INCONCLUSIVE: 3}


@dataclass(frozen=True, slots=True)
class CasePair:
    """One case scored under both versions; `candidate` holds one score per repetition (none: not
    comparable, `reason` says why, e.g. the candidate's run failed)."""

    case_id: str
    label: CaseLabel
    baseline: CaseScore | None
    candidate: Sequence[CaseScore] = ()
    critical: bool = False
    reason: str = ""

    def __post_init__(self) -> None:
        if self.label not in CaseLabel.__members__.values():
            raise EvaluationError(
                f"case {self.case_id!r} has label {self.label!r}",
                f"label a case {' or '.join(repr(label.value) for label in CaseLabel)}",
            )
        object.__setattr__(self, "label", CaseLabel(self.label))


@dataclass(frozen=True, slots=True)
class GateRules:
    """When a candidate fails the gate (docs/evaluation.md, The gate)."""

    max_regressions: int = 0
    """Regressions allowed: by default none."""
    alpha: float = 0.05
    """Significance of the one-sided McNemar test that the candidate is worse."""
    max_approved_drop: float = 0.0
    """How much the pass rate on approved cases may drop (0.02: two points); by default not at all."""
    min_comparable: int = 10
    """Fewer comparable cases than this, and nothing failed: the verdict is inconclusive."""

    def __post_init__(self) -> None:
        wrong = [
            (name, hint)
            for name, ok, hint in (
                ("max_regressions", self.max_regressions >= 0, "0 or more"),
                ("alpha", 0 < self.alpha <= 1, "more than 0 and at most 1, e.g. 0.05"),
                ("max_approved_drop", 0 <= self.max_approved_drop <= 1, "from 0 to 1, e.g. 0.02"),
                ("min_comparable", self.min_comparable >= 0, "0 or more"),
            )
            if not ok
        ]
        if wrong:
            name, hint = wrong[0]
            raise EvaluationError(f"gate rule {name} is {getattr(self, name)!r}", f"set {name} to {hint}")


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    case_id: str
    label: CaseLabel
    outcome: Outcome
    critical: bool
    baseline_passed: bool | None
    candidate_passed: bool | None
    """By majority of the repetitions (a tie fails)."""
    agreement: float | None
    """Share of the repetitions that agree with `candidate_passed`."""
    repetitions: int
    reason: str = ""
    regressed_fields: tuple[str, ...] = ()
    fixed_fields: tuple[str, ...] = ()
    critical_fields: tuple[str, ...] = ()
    """Critical fields that regressed, or that fail in a case that regressed."""

    @property
    def critical_regression(self) -> bool:
        return bool(self.critical_fields) or (self.critical and self.outcome is Outcome.REGRESSED)


@dataclass(frozen=True, slots=True)
class FieldChange:
    """In how many cases a field regressed (passed under the baseline, fails under the candidate) and was fixed."""

    path: str
    regressed: int
    fixed: int


@dataclass(frozen=True, slots=True)
class Check:
    """One rule of the gate with its figures; `status` PASS is "this rule does not stop the candidate"."""

    name: str
    status: Status
    text: str


@dataclass(frozen=True, slots=True)
class Share:
    count: int
    of: int

    @property
    def share(self) -> float | None:
        return self.count / self.of if self.of else None


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Status
    checks: list[Check]
    cases: list[CaseOutcome]
    fields: list[FieldChange] = field(default_factory=list)
    sampling: Share = Share(0, 0)
    """Cases with several repetitions whose repetitions disagree."""
    judge: Share = Share(0, 0)
    """Judged fields whose samples disagree."""

    @property
    def exit_code(self) -> int:
        """0 pass, 1 fail, 3 inconclusive."""
        return EXIT_CODES[self.status]

    def count(self, outcome: Outcome) -> int:
        return sum(1 for case in self.cases if case.outcome is outcome)

    def lines(self) -> list[str]:
        """The verdict as printed: status and exit code first, then each rule with its figures."""
        out = [f"verdict: {self.status.value} (exit {self.exit_code})"]
        comparable = len(self.cases) - self.count(Outcome.INCOMPARABLE)
        counts = ", ".join(
            f"{self.count(o)} {o.value.replace('_', ' ')}"
            for o in (Outcome.FIXED, Outcome.REGRESSED, Outcome.STILL_RIGHT, Outcome.STILL_WRONG, Outcome.INCOMPARABLE)
        )
        out.append(f"cases: {len(self.cases)}, {comparable} comparable: {counts}")
        out.extend(f"  {'ok' if c.status is Status.PASS else c.status.value:<12} {c.text}" for c in self.checks)
        for outcome in (Outcome.REGRESSED, Outcome.FIXED):
            ids = [case.case_id for case in self.cases if case.outcome is outcome]
            if ids:
                out.append(f"{outcome.value}: {_listed(ids)}")
        gone = [f"{c.case_id} ({c.reason})" for c in self.cases if c.outcome is Outcome.INCOMPARABLE]
        if gone:
            out.append(f"incomparable: {_listed(gone)}")
        out.extend(
            f"field `{f.path}` regressed in {_cases(f.regressed)}, fixed in {_cases(f.fixed)}" for f in self.fields
        )
        sampling = _share(self.sampling, "cases with repetitions disagree", "no case has repetitions")
        judge = _share(self.judge, "judged fields have samples that disagree", "no field was judged")
        out.append(f"variance: sampling {sampling}; judge {judge}")
        return out


def decide(cases: Sequence[CasePair], rules: GateRules | None = None) -> Verdict:
    """The gate's verdict on `cases` (docs/evaluation.md, The gate). Every failing rule applies
    whatever the number of comparable cases: a regression seen is a regression."""
    rules = rules or GateRules()
    seen: set[str] = set()
    for pair in cases:
        if pair.case_id in seen:
            raise EvaluationError(
                f"case {pair.case_id!r} is given twice", "give each case once, with all its repetitions"
            )
        seen.add(pair.case_id)
    outcomes = [_outcome(pair) for pair in cases]
    checks = _checks(outcomes, rules)
    status = (
        Status.FAIL
        if any(c.status is Status.FAIL for c in checks)
        else Status.INCONCLUSIVE
        if any(c.status is Status.INCONCLUSIVE for c in checks)
        else Status.PASS
    )
    repeated = [
        o
        for o, p in zip(outcomes, cases, strict=True)
        if o.outcome is not Outcome.INCOMPARABLE and len(p.candidate) > 1
    ]
    sampling = Share(sum(1 for o in repeated if o.agreement is not None and o.agreement < 1), len(repeated))
    scores = [s for p in cases for s in ([p.baseline] if p.baseline else []) + list(p.candidate)]
    judge = Share(sum(f.split for s in scores for f in s.fields), sum(f.judged for s in scores for f in s.fields))
    return Verdict(status, checks, outcomes, _field_changes(outcomes), sampling, judge)


def _outcome(pair: CasePair) -> CaseOutcome:
    if pair.baseline is None or not pair.candidate:
        reason = pair.reason or ("no baseline score" if pair.baseline is None else "no candidate score")
        return CaseOutcome(
            pair.case_id, pair.label, Outcome.INCOMPARABLE, pair.critical, None, None, None, len(pair.candidate), reason
        )
    passed, agreement = majority([s.passed for s in pair.candidate])
    before = pair.baseline.passed
    outcome = {
        (False, True): Outcome.FIXED,
        (True, False): Outcome.REGRESSED,
        (False, False): Outcome.STILL_WRONG,
        (True, True): Outcome.STILL_RIGHT,
    }[(before, passed)]
    base = {f.path: f for f in pair.baseline.fields}
    critical = {f.path for s in (pair.baseline, *pair.candidate) for f in s.fields if f.critical}
    votes: dict[str, list[bool]] = {}
    for repetition in pair.candidate:
        for result in repetition.fields:
            votes.setdefault(result.path, []).append(result.passed)
    now = {path: majority(passes)[0] for path, passes in votes.items()}
    regressed = tuple(p for p, ok in now.items() if p in base and base[p].passed and not ok)
    fixed = tuple(p for p, ok in now.items() if p in base and not base[p].passed and ok)
    marked = [p for p in regressed if p in critical]
    if outcome is Outcome.REGRESSED:
        marked += [p for p, ok in now.items() if not ok and p in critical and p not in marked]
    return CaseOutcome(
        pair.case_id,
        pair.label,
        outcome,
        pair.critical,
        before,
        passed,
        agreement,
        len(pair.candidate),
        pair.reason,
        regressed,
        fixed,
        tuple(marked),
    )


def _checks(outcomes: list[CaseOutcome], rules: GateRules) -> list[Check]:
    comparable = [o for o in outcomes if o.outcome is not Outcome.INCOMPARABLE]
    regressions = sum(1 for o in comparable if o.outcome is Outcome.REGRESSED)
    fixes = sum(1 for o in comparable if o.outcome is Outcome.FIXED)
    checks = [_critical(comparable)]
    over = regressions > rules.max_regressions
    checks.append(
        Check(
            "regressions",
            Status.FAIL if over else Status.PASS,
            f"regressions {regressions} {'>' if over else '<='} {rules.max_regressions} allowed",
        )
    )
    p = mcnemar_p(regressions, fixes)
    worse = p < rules.alpha
    checks.append(
        Check(
            "mcnemar",
            Status.FAIL if worse else Status.PASS,
            f"McNemar p = {_p_text(p)} {'<' if worse else '>='} {rules.alpha:g} ({regressions} regressions, "
            f"{fixes} fixes)",
        )
    )
    checks.append(_approved([o for o in comparable if o.label is CaseLabel.APPROVED], rules))
    enough = len(comparable) >= rules.min_comparable
    checks.append(
        Check(
            "comparable",
            Status.PASS if enough else Status.INCONCLUSIVE,
            f"comparable cases {len(comparable)} {'>=' if enough else '<'} {rules.min_comparable} required",
        )
    )
    return checks


def _critical(comparable: list[CaseOutcome]) -> Check:
    hits = [o for o in comparable if o.critical_regression]
    if not hits:
        return Check("critical", Status.PASS, "no critical regression")
    named = [f"{o.case_id} ({', '.join(f'field `{p}`' for p in o.critical_fields) or 'a critical case'})" for o in hits]
    return Check("critical", Status.FAIL, f"critical regressions in {_cases(len(hits))}: {_listed(named)}")


def _approved(approved: list[CaseOutcome], rules: GateRules) -> Check:
    if not approved:
        return Check("approved", Status.PASS, "approved pass rate: no comparable approved case")
    before = sum(1 for o in approved if o.baseline_passed)
    after = sum(1 for o in approved if o.candidate_passed)
    drop = Fraction(before - after, len(approved))
    allowed = Fraction(repr(rules.max_approved_drop))
    failed = drop > allowed
    return Check(
        "approved",
        Status.FAIL if failed else Status.PASS,
        f"approved pass rate {before / len(approved):.1%} -> {after / len(approved):.1%} "
        f"(drop {float(drop):.1%} {'>' if failed else '<='} {float(allowed):.1%} allowed, {len(approved)} cases)",
    )


def _field_changes(outcomes: list[CaseOutcome]) -> list[FieldChange]:
    regressed: dict[str, int] = {}
    fixed: dict[str, int] = {}
    for o in outcomes:
        for path in o.regressed_fields:
            regressed[path] = regressed.get(path, 0) + 1
        for path in o.fixed_fields:
            fixed[path] = fixed.get(path, 0) + 1
    paths = set(regressed) | set(fixed)
    changes = [FieldChange(p, regressed.get(p, 0), fixed.get(p, 0)) for p in paths]
    return sorted(changes, key=lambda c: (-c.regressed, -c.fixed, c.path))


def _cases(count: int) -> str:
    return f"{count} case{'' if count == 1 else 's'}"


def _listed(items: list[str]) -> str:
    more = len(items) - LISTED
    return ", ".join(items[:LISTED]) + (f" and {more} more" if more > 0 else "")


def _share(share: Share, what: str, none: str) -> str:
    if not share.of:
        return none
    return f"{share.count} of {share.of} {what} ({share.count / share.of:.1%})"


def _p_text(p: float) -> str:
    """`p` to four significant digits, more when four would round a p below 1 up to 1 (3
    regressions against 20 fixes is 0.999967, not a certainty)."""
    for digits in range(4, 16):
        text = f"{p:.{digits}g}"
        if p >= 1 or float(text) < 1:
            return text
    return text
