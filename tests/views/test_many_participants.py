"""Issue 48, item 8: a run of many participants of one iteration each (a sweep over many
configurations) costs what as many iterations of one participant cost, and its report stays
readable. Guarded by counts, not the clock: the items each group start visits, the traces each
chart draws, the rows a table shows open, the rows the warnings take.
"""

from __future__ import annotations

import re

import pytest

from helpers.report_pages import figures
from helpers.sessions import SCORING, SIMPLE_TASK, bench
from pytest_benchsdk._plugin.runtime import process

#: Past the tables' open rows (200) and the charts' participants (20).
N = 240
CHARTED_PARTICIPANTS = 20

MANY = bench(
    f'participants=[Participant(f"p{{i}}") for i in range({N})], iterations=1,\nscoring={SCORING}',
    SIMPLE_TASK,
    slug="many",
    name="Many",
)


@pytest.mark.slow
def test_many_participants_scale_per_participant_and_the_report_stays_readable(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    visits = 0
    real = process._iteration_of

    def counting(item: pytest.Item) -> object:
        nonlocal visits
        visits += 1
        return real(item)

    monkeypatch.setattr(process, "_iteration_of", counting)
    pytester.makepyfile(bench_many=MANY)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-p", "no:cacheprovider", "--bench-html", "report.html"
    )
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=N)
    # Each group's start found its items in one pass over the session's items, not one pass
    # per group (N x N visits: 57,600 here, 10^8 at 10,000 participants).
    assert visits <= 3 * N

    # The terminal: each table lists the first and the last 100 participants, and counts
    # the 40 between them (-v lists every one).
    out = result.stdout.str()
    assert out.count("… 40 more participants (the 100 first and the 100 last are listed;") == 2
    assert out.count("… 40 more rows (the 100 first and the 100 last are listed;") == 1
    assert len(out.splitlines()) < 3 * 210 + 60

    text = (pytester.path / "report.html").read_text(encoding="utf-8")
    charts = figures(text)
    # The charts draw the 10 best and the 10 worst, and say so.
    assert (
        f"The charts draw the 10 best and the 10 worst ranked of the {N:,} participants "
        "that ran; the tables list every one."
    ) in text
    (bars,) = charts["glance"]["data"]
    assert len(bars["y"]) == CHARTED_PARTICIPANTS
    for key, chart in charts.items():
        names = {t.get("legendgroup") or t.get("name") for t in chart["data"]}
        assert len(chart["data"]) <= 2 * CHARTED_PARTICIPANTS + 2, key
        assert len(names) <= CHARTED_PARTICIPANTS + 2, key
    # The tables: the first and the last 100 participants open, the 40 between folded, every
    # one named once in the ranked scores.
    start = text.index(">Ranked scores<")
    scores = text[start : text.index("<th>passed / iterations</th>", start)]
    folded = re.search(r'<details class="folded"><summary>40 more participants', scores)
    assert folded is not None
    named = re.findall(r"<td>(p\d+)</td>", scores)
    assert sorted(named) == sorted(f"p{i}" for i in range(N))
    assert len(re.findall(r"<td>(p\d+)</td>", scores[: folded.start()])) == 100
    # One warning shared by every participant is one row naming them all.
    warnings = text[text.index(">Warnings<") :]
    assert warnings.count("<td>p99-few-samples</td>") == 1
    assert f"+{N - 20:,} more" in warnings
    assert f"p{N - 1}" in warnings


def test_a_folded_table_keeps_phase_rows_with_their_participant_and_v_lists_every_one() -> None:
    from pytest_benchsdk._views.text import folded_table

    rows = [["participant", "latency"]]
    for i in range(N):
        rows += [[f"p{i}", "1 ms"], [f"  p{i} · cold", "2 ms"], [f"  p{i} · warm", "1 ms"]]
    lines = folded_table(rows)
    assert len(lines) == 1 + 3 * 200 + 1
    assert lines[1 + 3 * 100].strip().startswith("… 40 more participants")
    assert lines[3 * 100].strip().startswith("p99 · warm")
    assert lines[1 + 3 * 100 + 1].strip().startswith("p140 ")  # the last 100: p140-p239
    assert lines[-1].strip().startswith("p239 · warm")
    every = folded_table(rows, verbose=1)
    assert len(every) == 1 + 3 * N
    assert not any("more participants" in line for line in every)
