"""junitxml carries what an iteration measured, not only its latency (issue 33)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from helpers.sessions import bench

MEASURES = bench(
    'participants=[Participant("p1")], iterations=3',
    """
    @define_task
    def task(task_index, measure):
        measure(throughput_mb_s=100.0 + task_index, label="not a number", flag=True)
    """,
)


@pytest.mark.slow
@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "xdist"])
def test_junitxml_properties_carry_the_measured_metrics(
    pytester: pytest.Pytester, xdist: bool
) -> None:
    pytester.makepyfile(bench_x=MEASURES)
    xml = pytester.path / "junit.xml"
    args = ["--bench", "--bench-dry-run", f"--junitxml={xml}", "-p", "no:cacheprovider"]
    if xdist:
        result = pytester.runpytest_inprocess(*args, "-n", "2")
    else:
        result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(passed=3)
    cases = ET.parse(xml).getroot().findall(".//testcase")
    assert len(cases) == 3
    for case in cases:
        index = int(case.attrib["name"].rsplit("-", 1)[1].rstrip("]"))
        props = {p.attrib["name"]: p.attrib["value"] for p in case.iter("property")}
        assert float(props["throughput_mb_s"]) == 100.0 + index
        assert float(props["cpu_ms"]) >= 0  # sync tasks measure their CPU time too
        # Only numbers are metrics: text and booleans stay in the record's data.
        assert "label" not in props
        assert "flag" not in props
        assert props["participant"] == "p1"
        assert props["status"] == "success"


def test_at_most_32_metrics_per_iteration(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=1',
            """
            @define_task
            def task(measure):
                measure(**{f"m{i:03d}": float(i) for i in range(100)})
            """,
        )
    )
    xml = pytester.path / "junit.xml"
    pytester.runpytest_inprocess("--bench", "--bench-dry-run", f"--junitxml={xml}")
    (case,) = ET.parse(xml).getroot().findall(".//testcase")
    names = [p.attrib["name"] for p in case.iter("property")]
    assert sum(name.startswith("m") for name in names) == 32
