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
