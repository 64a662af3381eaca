"""The platform commands' building blocks: upstream's argv parsing (its ``cli.test.ts`` cases)
and Node's output formats (``JSON.stringify``, ``Number#toString``, ``console.table``),
compared with Node itself when it is installed."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from typing import Any

import pytest

from pytest_benchsdk.cli._platform._argv import (
    UsageError,
    parse_global_args,
    parse_subcommand_options,
)
from pytest_benchsdk.cli._platform._output import (
    console_table,
    inspect_cell,
    js_number_text,
    js_stringify,
    print_data,
)

# --- upstream's parseGlobalArgs / parseSubcommandOptions tests ---------------------------------


def test_global_options_and_positionals() -> None:
    parsed = parse_global_args(["--base-url", "http://localhost:3000", "benchmarks", "list"])
    assert parsed.values == {"base-url": "http://localhost:3000"}
    assert parsed.positionals == ["benchmarks", "list"]
    parsed = parse_global_args(["--json", "results", "my-bench"])
    assert parsed.values == {"json": True}
    assert parsed.positionals == ["results", "my-bench"]
    # Unknown options stay for the subcommand; globals are taken from anywhere.
    parsed = parse_global_args(["results", "my-bench", "--run", "run-123", "--json"])
    assert parsed.positionals == ["results", "my-bench", "--run", "run-123"]
    assert parsed.flag("json")
    parsed = parse_global_args(["--api-key=sk-abc==", "--base-url=http://h?a=b"])
    assert parsed.values == {"api-key": "sk-abc==", "base-url": "http://h?a=b"}
    assert parse_global_args(["--json=false", "--verbose=1"]).values == {
        "json": False,
        "verbose": True,
    }
    # A value-taking option consumes the next token, whatever it is.
    assert parse_global_args(["--org", "--json"]).values == {"org": "--json"}
    with pytest.raises(UsageError, match=r"^Option --format requires a value$"):
        parse_global_args(["list", "--format"])


def test_subcommand_options() -> None:
    options, positionals = parse_subcommand_options(
        ["list", "my-bench", "--limit", "10", "--run", "run-123"]
    )
    assert options == {"limit": 10, "run": "run-123"}
    assert positionals == ["list", "my-bench"]
    assert parse_subcommand_options(["my-bench", "--out=/tmp/export"]) == (
        {"out": "/tmp/export"},
        ["my-bench"],
    )
    assert parse_subcommand_options(["my-bench", "--out=/a=b=c"])[0] == {"out": "/a=b=c"}
    with pytest.raises(UsageError, match=r"^Unknown option: --unknown$"):
        parse_subcommand_options(["my-bench", "--unknown", "x"])
    with pytest.raises(UsageError, match=r"^Unknown option: --lim=3$"):
        parse_subcommand_options(["--lim=3"])  # no abbreviations
    with pytest.raises(UsageError, match=r"^Option --run requires a value$"):
        parse_subcommand_options(["my-bench", "--run"])
    with pytest.raises(UsageError, match=r"^Option --limit must be a number$"):
        parse_subcommand_options(["my-bench", "--limit", "abc"])


@pytest.mark.parametrize(
    ("text", "number"),
    [("10", 10), (" 7 ", 7), ("", 0), ("0x10", 16), ("1e2", 100), ("1.5", 1.5), ("-3", -3)],
)
def test_numbers_follow_javascripts_number(text: str, number: float) -> None:
    options, _ = parse_subcommand_options(["--max-lines", text])
    assert options == {"max-lines": number}
    assert type(options["max-lines"]) is type(number)


@pytest.mark.parametrize("text", ["Infinity", "NaN", "1e", "ten", "1_000"])
def test_non_finite_numbers_are_refused(text: str) -> None:
    with pytest.raises(UsageError, match=r"^Option --offset must be a number$"):
        parse_subcommand_options(["--offset", text])


# --- Node's formats ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (0.1, "0.1"),
        (1e-7, "1e-7"),
        (1.5e-6, "0.0000015"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (123456789012345678901, "123456789012345680000"),
        (2**53 - 1, "9007199254740991"),
        (-5.5e-10, "-5.5e-10"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (5e-324, "5e-324"),
        (float("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
        (-0.0, "0"),
    ],
)
def test_number_to_string(value: float, text: str) -> None:
    assert js_number_text(value) == text


def test_json_stringify_key_order_and_numbers() -> None:
    assert js_stringify({"b": 1.0, "2": [], "a": {}, "10": None, "01": True}) == (
        '{\n  "2": [],\n  "10": null,\n  "b": 1,\n  "a": {},\n  "01": true\n}'
    )
    assert js_stringify([1e-7, float("inf"), "é\n\u001f"]) == (
        '[\n  1e-7,\n  null,\n  "é\\n\\u001f"\n]'
    )


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("it's", '"it\'s"'),
        ("both ' and \"", "`both ' and \"`"),
        ("all ' \" `", "'all \\' \" `'"),
        ("tab\tnew\nline\\", "'tab\\tnew\\nline\\\\'"),
        ("\x7f\x1b", "'\\x7F\\x1B'"),
        ({"a": 1, "b": {"c": 2}}, "{ a: 1, b: [Object] }"),
        ({"a": 1, "b": 2, "c": 3}, "[Object]"),
        ({"k-l": [1]}, "{ 'k-l': [Array] }"),
        ([1, 2, 3, 4, 5], "[ 1, 2, 3, ... 2 more items ]"),
        ([[1], {"a": 1}], "[ [Array], [Object] ]"),
        ([], "[]"),
        ({}, "{}"),
        (-0.0, "-0"),
        (None, "null"),
    ],
)
def test_table_cells_are_util_inspect_at_depth_0(value: Any, cell: str) -> None:
    assert inspect_cell(value) == cell


def test_console_table_of_rows_and_of_an_object() -> None:
    assert console_table([{"a": 1, "b": "x"}, {"a": 2.5, "c": None}]) == (
        "┌─────────┬─────┬─────┬──────┐\n"
        "│ (index) │ a   │ b   │ c    │\n"
        "├─────────┼─────┼─────┼──────┤\n"
        "│ 0       │ 1   │ 'x' │      │\n"
        "│ 1       │ 2.5 │     │ null │\n"
        "└─────────┴─────┴─────┴──────┘"
    )
    assert console_table({"名前": "日本", "n": [1]}) == (
        "┌─────────┬───┬────────┐\n"
        "│ (index) │ 0 │ Values │\n"
        "├─────────┼───┼────────┤\n"
        "│ 名前    │   │ '日本' │\n"
        "│ n       │ 1 │        │\n"
        "└─────────┴───┴────────┘"
    )


def test_print_data_says_no_results_for_nothing() -> None:
    out: list[str] = []
    for value in (None, [], {}):
        print_data(value, json_output=False, write=out.append)
    print_data("plain", json_output=False, write=out.append)
    print_data(2.0, json_output=False, write=out.append)
    print_data([], json_output=True, write=out.append)
    assert out == ["No results.", "No results.", "No results.", "plain", "2", "[]"]


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 3 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, 1, -7, 2**40, 10**21, 123456789012345678901])
    if kind == 3:
        return rng.choice([0.5, 1.0, -2.25, 1e-7, 3.14159, 1e300, 6.02e23, 1 / 3])
    if kind == 4:
        return "".join(rng.choice("ab' \"`\n\té日\x01\\${}") for _ in range(rng.randrange(6)))
    if kind in (5, 6):
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(6))]
    keys = ["id", "name", "0", "12", "a-b", "é", "x y", "2"]
    return {rng.choice(keys): _random_json(rng, depth + 1) for _ in range(rng.randrange(5))}


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node to compare with")
def test_random_values_match_node_exactly(tmp_path: Any) -> None:
    rng = random.Random(2026)
    values = [_random_json(rng) for _ in range(400)]
    values = [v for v in values if isinstance(v, (list, dict)) and v]
    script = tmp_path / "formats.js"
    script.write_text(
        "const values = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n"
        "for (const v of values) { console.table(v); console.log(JSON.stringify(v, null, 2)); }\n"
    )
    node = subprocess.run(
        ["node", str(script)],
        input=json.dumps(values),
        capture_output=True,
        text=True,
        check=True,
    )
    # JSON.parse gives the nearest double for huge integers: feed Python the same numbers.
    parsed = json.loads(json.dumps(values))
    ours = "".join(console_table(v) + "\n" + js_stringify(v) + "\n" for v in parsed)
    assert ours.splitlines() == node.stdout.splitlines()
