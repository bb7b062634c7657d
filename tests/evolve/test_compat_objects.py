"""The classifier against generated data on the corpus's object pairs: properties in open and
closed objects, required, patternProperties, additionalProperties, propertyNames, dependencies,
property counts and unevaluatedProperties (the rest of the corpus: `test_compat_keywords.py`)."""

from __future__ import annotations

import pytest

from tests.evolve.compat_corpus import Pair
from tests.evolve.compat_corpus_structure import EXTRA, PROPERTIES
from tests.evolve.compat_report import problems

PAIRS = [*PROPERTIES, *EXTRA]


@pytest.mark.parametrize("pair", PAIRS, ids=[p.id for p in PAIRS])
def test_no_generated_value_breaks_a_safe_verdict(pair: Pair) -> None:
    assert problems(pair) == []
