"""The relative summary's sentence (every view renders it): an order only when the
comparison finds one."""

from __future__ import annotations

from pytest_benchsdk._views.text import relative_sentence
from pytest_benchsdk.results._model import RelativeRow, RelativeSummary


def _summary(*rows: RelativeRow) -> RelativeSummary:
    return RelativeSummary(
        reference="b",
        metric="ms",
        label="ms",
        unit="ms",
        statistic="median",
        lower_is_better=True,
        level=0.95,
        rows=rows,
    )


def test_a_clear_difference_names_the_order() -> None:
    row = RelativeRow("a", 2.5, 2.1, 2.9, "improved")
    assert relative_sentence(_summary(row), row) == (
        "b: 2.50× faster than a on ms median, 95 % CI 2.10–2.90×"
    )


def test_no_clear_difference_names_no_order() -> None:
    row = RelativeRow("a", 1.0, 0.97, 1.03, "unchanged")
    sentence = relative_sentence(_summary(row), row)
    assert sentence == "b and a: no clear difference on ms median (1.00×, 95 % CI 0.970–1.03×)"
    assert "faster" not in sentence


def test_an_interval_that_leaves_out_one_names_the_test_that_decided() -> None:
    # Issue 46: "no clear difference (1.84×, 95 % CI 1.08–1.93×)" contradicted its interval.
    row = RelativeRow(
        "a", 1.84, 1.08, 1.93, "unchanged", decided_by="mann-whitney", p_value=0.1, alpha=0.05
    )
    assert relative_sentence(_summary(row), row) == (
        "b and a: no clear difference on ms median (1.84×, 95 % CI 1.08–1.93×; decided by the "
        "Mann–Whitney test, p = 0.1 ≥ 0.05)"
    )
    noise = RelativeRow(
        "a", 1.03, 1.01, 1.05, "unchanged", decided_by="noise-threshold", noise_threshold=0.02
    )
    assert relative_sentence(_summary(noise), noise) == (
        "b and a: no clear difference on ms median (1.03×, 95 % CI 1.01–1.05×; the interval "
        "does not clear the 2 % noise threshold)"
    )
