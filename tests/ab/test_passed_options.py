"""Which of the command line's options the side sessions of benchmarked tests take."""

from __future__ import annotations

from pytest_benchsdk._plugin.ab.benchmarked_tests import passed_options


def test_plugins_and_ini_overrides_pass_in_every_spelling() -> None:
    args = [
        "--bench", "--bench-ab=HEAD", "-k", "work", "tests/",
        "-p", "no:randomly", "-pmyplugin", "-o", "a=1", "-ob=2", "-o=c=3",
        "--override-ini", "d=4", "--override-ini=e=5",
    ]  # fmt: skip
    assert passed_options(args) == [
        "-p", "no:randomly", "-p", "myplugin",
        "-o", "a=1", "-o", "b=2", "-o", "c=3", "-o", "d=4", "-o", "e=5",
    ]  # fmt: skip


def test_nothing_else_passes() -> None:
    assert passed_options(["--bench", "-x", "-q", "--bench-ab", "main", "-k", "p"]) == []
    assert passed_options(["-p"]) == []  # a flag without its value (pytest refuses it first)
