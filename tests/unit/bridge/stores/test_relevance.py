"""The shipped calibration: what its scores mean, and the default threshold in step with it."""

from __future__ import annotations

from memory_bridge import Settings
from memory_bridge.stores._relevance import Evidence, calibration, coverage


def test_the_default_threshold_is_the_measured_one() -> None:
    assert Settings.flat_fields()["search_score_threshold"][1].default == calibration().threshold


def test_scores_are_in_0_1_and_grow_with_the_evidence() -> None:
    shipped = calibration()
    weak, close = (
        Evidence(coverage=0.0, cosine=0.1, unheld=0.0),
        Evidence(coverage=0.5, cosine=0.7, unheld=0.0),
    )
    assert 0.0 <= shipped.score("hybrid", weak) < shipped.threshold < shipped.score("hybrid", close) <= 1.0
    assert shipped.score("dify", Evidence(0.0, store_score=0.1)) < shipped.score(
        "dify", Evidence(0.0, store_score=0.8)
    )


def test_words_a_large_store_never_holds_pull_a_close_guess_below_the_threshold() -> None:
    shipped = calibration()
    for model in ("hybrid", "lexical"):
        known = Evidence(coverage=0.5, cosine=0.45, unheld=0.0, telling=1.0)
        unknown = Evidence(coverage=0.5, cosine=0.45, unheld=0.7, telling=1.0)
        assert shipped.score(model, unknown) < shipped.threshold < shipped.score(model, known), model


def test_a_store_too_small_to_tell_is_not_held_to_what_it_lacks() -> None:
    shipped = calibration()
    for model in ("hybrid", "lexical"):
        small = Evidence(coverage=0.5, cosine=0.45, unheld=0.7, telling=0.0)
        assert shipped.score(model, small) == shipped.score(model, Evidence(coverage=0.5, cosine=0.45)), model


def test_a_hit_holding_every_query_word_passes_whatever_its_cosine() -> None:
    shipped = calibration()
    assert shipped.score("hybrid", Evidence(coverage=1.0, cosine=0.05)) >= shipped.threshold


def test_coverage_counts_whole_stemmed_words_and_ignores_stop_words() -> None:
    passages = [("deploy.md", "Deploys go blue/green"), ("other.md", "florps are not words"), ("x", "the of")]
    assert coverage("deploying blue", passages) == [1.0, 0.0, 0.0]
    assert coverage("the of", passages) == [0.0, 0.0, 0.0]  # stop words only: nothing to cover
    assert coverage("flor", passages)[1] == 0.0  # whole words, not prefixes
