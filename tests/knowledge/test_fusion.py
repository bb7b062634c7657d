"""Reciprocal-rank fusion: sums of 1/(k + rank), ties broken by best rank then by id."""

from __future__ import annotations

import math

import pytest

from plait.knowledge.fusion import RRF_K, reciprocal_rank_fusion


def test_a_hand_computed_example() -> None:
    vector, text = [7, 3, 9], [3, 5, 7]
    fused = reciprocal_rank_fusion([vector, text], k=60)
    expected = {3: 1 / 62 + 1 / 61, 7: 1 / 61 + 1 / 63, 5: 1 / 62, 9: 1 / 63}
    assert [item for item, _ in fused] == [3, 7, 5, 9]
    assert all(math.isclose(score, expected[item]) for item, score in fused)


def test_the_default_k_is_sixty() -> None:
    assert RRF_K == 60
    assert reciprocal_rank_fusion([[4]]) == [(4, 1 / 61)]


def test_equal_scores_go_to_the_better_best_rank_then_to_the_smaller_id() -> None:
    # 1 and 2 swap places: equal sums, equal best ranks -> the smaller id first.
    assert [item for item, _ in reciprocal_rank_fusion([[2, 1], [1, 2]])] == [1, 2]
    # k = 0: id 8 scores 1/1 + 1/4 + 1/4 and id 6 scores 1/2 three times, both 1.5, and 8 was
    # first somewhere; ids 0 and 1 both score 1/1 + 1/3 and were both first: the smaller id wins.
    fused = reciprocal_rank_fusion([[8, 6], [0, 6, 1, 8], [1, 6, 0, 8]], k=0)
    assert fused == [(8, 1.5), (6, 1.5), (0, 1 + 1 / 3), (1, 1 + 1 / 3)]


def test_an_id_in_one_ranking_only_still_counts() -> None:
    fused = dict(reciprocal_rank_fusion([[1, 2, 3], [2, 1]]))
    assert set(fused) == {1, 2, 3}
    assert math.isclose(fused[3], 1 / 63)


def test_nothing_in_nothing_out_and_repeats_count_once() -> None:
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []
    assert reciprocal_rank_fusion([[5, 5, 6]]) == [(5, 1 / 61), (6, 1 / 63)]


def test_a_negative_k_is_refused() -> None:
    with pytest.raises(ValueError, match="k must be"):
        reciprocal_rank_fusion([[1]], k=-1)


def test_weights_scale_each_rankings_share() -> None:
    fused = dict(reciprocal_rank_fusion([[1, 2], [2, 1]], k=10, weights=[1.0, 0.3]))
    assert fused[1] == pytest.approx(1 / 11 + 0.3 / 12)
    assert fused[2] == pytest.approx(1 / 12 + 0.3 / 11)
    assert [item for item, _ in reciprocal_rank_fusion([[1, 2], [2, 1]], k=10, weights=[1.0, 0.3])] == [1, 2]
    assert [item for item, _ in reciprocal_rank_fusion([[1, 2], [2, 1]], k=10, weights=[0.3, 1.0])] == [2, 1]


@pytest.mark.parametrize("weights", [[1.0], [1.0, -0.1]])
def test_weights_one_per_ranking_none_negative(weights: list[float]) -> None:
    with pytest.raises(ValueError, match="one weight of 0 or more per ranking"):
        reciprocal_rank_fusion([[1], [2]], weights=weights)
