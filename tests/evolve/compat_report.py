"""The classifier against the corpus and the oracle: agreement, unsafe and over-cautious verdicts.

    .venv/bin/python -m tests.evolve.compat_report [--max-examples N]

Unsafe: the classifier said patch or minor and the oracle found an old value the new schema
refuses (or the hand-written level is major). Over-cautious: the classifier said major where the
hand-written level is patch or minor. The figures are quoted in docs/versions.md.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from dataclasses import dataclass

from plait.evolve.classify import Level, classify
from tests.evolve.compat_corpus import Pair, corpus
from tests.evolve.compat_oracle import MAX_EXAMPLES, Outcome, check, valid


@dataclass(frozen=True)
class Row:
    """One pair: the classifier's level, the hand-written one, and what the oracle found."""

    pair: Pair
    level: Level
    outcome: Outcome | None

    @property
    def agrees(self) -> bool:
        return self.level is self.pair.expected

    @property
    def unsafe(self) -> bool:
        broken = self.outcome is not None and self.outcome.counterexample
        return self.level <= Level.MINOR and (broken or self.pair.expected is Level.MAJOR)

    @property
    def over_cautious(self) -> bool:
        return self.level is Level.MAJOR and self.pair.expected <= Level.MINOR


def problems(pair: Pair, max_examples: int = MAX_EXAMPLES) -> list[str]:
    """What is wrong with one pair: an unsafe verdict, or a hand-written level the data refutes."""
    level = classify(pair.old, pair.new).level
    outcome = check(pair.old, pair.new, pair.witness, max_examples)
    found: list[str] = []
    broken = f"{outcome.broken[0]!r} is valid under the old schema, not under the new" if outcome.broken else ""
    if level <= Level.MINOR and outcome.counterexample:
        found.append(f"unsafe: classified {level}, but {broken}")
    if level < pair.expected:
        found.append(f"classified {level}, below the hand-written {pair.expected}")
    if pair.expected <= Level.MINOR and outcome.counterexample:
        found.append(f"the hand-written {pair.expected} is refuted: {broken}")
    if pair.expected is Level.MAJOR and not outcome.counterexample:
        found.append("no value breaks this expected major: add a witness")
    if outcome.tried == 0 and pair.old is not False:
        found.append("no value valid under the old schema was drawn: add a witness")
    found += [f"witness {w!r} is not valid under the old schema" for w in pair.witness if not valid(pair.old, w)]
    if pair.expected <= Level.PATCH:
        reverse = check(pair.new, pair.old, (), max_examples)
        if reverse.counterexample:
            found.append(f"not equivalent: {reverse.broken[0]!r} is valid under the new schema only")
    return found


def rows(pairs: list[Pair], max_examples: int | None = MAX_EXAMPLES) -> list[Row]:
    """Classify each pair; with `max_examples`, also run the oracle on it."""
    out = []
    for pair in pairs:
        level = classify(pair.old, pair.new).level
        outcome = None if max_examples is None else check(pair.old, pair.new, pair.witness, max_examples)
        out.append(Row(pair, level, outcome))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=MAX_EXAMPLES, help="values drawn per strategy and pair")
    args = parser.parse_args()
    started = time.perf_counter()
    found = rows(corpus(), args.max_examples)
    elapsed = time.perf_counter() - started
    agree = sum(r.agrees for r in found)
    print(f"pairs: {len(found)}  (oracle: {args.max_examples} values per strategy, {elapsed:.1f} s)")
    print(f"expected levels: {dict(Counter(str(r.pair.expected) for r in found))}")
    print(f"agreement with the hand-written level: {agree}/{len(found)} ({100 * agree / len(found):.1f} %)")
    majors = [r.pair for r in found if r.pair.expected is Level.MAJOR]
    confirmed = sum(1 for r in found if r.pair.expected is Level.MAJOR and r.outcome and r.outcome.counterexample)
    generated = sum(check(p.old, p.new, (), args.max_examples).counterexample for p in majors)
    print(f"expected-major pairs the oracle broke: {confirmed}/{len(majors)} ({generated} by generated values alone)")
    for title, chosen in (
        ("unsafe verdicts", [r for r in found if r.unsafe]),
        ("over-cautious verdicts", [r for r in found if r.over_cautious]),
        ("other disagreements", [r for r in found if not r.agrees and not r.unsafe and not r.over_cautious]),
    ):
        print(f"{title}: {len(chosen)}")
        for r in chosen:
            broken = f"  counterexample {r.outcome.broken[0]!r}" if r.outcome and r.outcome.broken else ""
            print(f"  - {r.pair.id}: classified {r.level}, expected {r.pair.expected}{broken}")


if __name__ == "__main__":
    main()
