"""The callgrind instrument's parts that need no valgrind: reading a dump, finding it, building
the helper (and saying what is missing), the launch's command line and environment. Counting
under valgrind is tested on real sessions (tests/plugin/runtime/test_instructions.py)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pytest_benchsdk._instruments import build, launch
from pytest_benchsdk._instruments.callgrind import (
    CallgrindCounter,
    DumpError,
    dump_count,
    dump_total,
    find_dump,
)

DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  /usr/bin/python3 -m pytest
part: 3


desc: I1 cache:
desc: Timerange: Basic block 1006426 - 1506875
desc: Trigger: Client Request: benchsdk-region-3

positions: line
events: Ir
summary: 0


ob=(3) ???
fn=(200) 0x0000000004936788
0 4

totals: 2243697
"""


def test_a_dump_s_count_is_its_totals_line() -> None:
    assert dump_total(DUMP) == 2243697


def test_the_count_is_the_events_column_of_ir() -> None:
    # With a cache simulation (--cache-sim=yes) the events are several columns.
    text = "events: Dr Ir Dw\nsummary: 9 8 7\ntotals: 30 20 10\n"
    assert dump_total(text) == 20
    assert dump_total(text, "Dw") == 10
    # callgrind leaves out trailing zero columns
    assert dump_total("events: Ir Dr\ntotals: 5\n", "Dr") == 0


#: A region's dump as callgrind writes it with --compress-strings=no: a Python function calls
#: the allocator through wrappers; realloc moves a block (memcpy, also called from elsewhere);
#: malloc's internals are called only by it.
ALLOCATING = """events: Ir
positions: line

fn=list_append
0 100
cfn=PyMem_Realloc
calls=2 0
0 4000
cfn=memcpy
calls=1 0
0 50

fn=PyMem_Realloc
0 20
cfn=_PyObject_Realloc
calls=2 0
0 3980

fn=_PyObject_Realloc
+1 300
cfn=PyMem_RawRealloc
calls=1 0
* 3680

fn=PyMem_RawRealloc
0 10
cfn=realloc
calls=1 0
0 3670

fn=realloc
0 70
cfn=_int_malloc
calls=1 0
0 3000
cfn=memcpy
calls=1 0
0 600

fn=_int_malloc
0 2000
cfn=unlink_chunk.constprop.0
calls=1 0
0 1000

fn=unlink_chunk.constprop.0
0 1000

fn=memcpy
0 650

totals: 4150
"""


def test_a_count_leaves_out_what_the_allocators_executed() -> None:
    # Out: pymalloc's realloc (300), what only the allocators call (the raw wrapper 10, glibc's
    # internals 2000 + 1000), glibc's realloc (70) and the leaf it called (memcpy, 600). In:
    # the caller (100), the wrapper it calls (20), memcpy called by the code itself (50).
    count = dump_count(ALLOCATING)
    assert count.total == 4150
    assert count.allocator == 300 + 10 + 70 + 2000 + 1000 + 600
    assert count.own == 100 + 20 + 50
    # With no allocator named, nothing is left out.
    assert dump_count(ALLOCATING, allocators=frozenset()).own == 4150


def test_a_dump_without_functions_is_its_total() -> None:
    assert dump_count(DUMP) == (2243697, 0)
    assert dump_count("events: Ir\nsummary: 17\n").own == 17


def test_without_totals_the_summary_line_counts_and_without_either_it_says_so() -> None:
    assert dump_total("events: Ir\nsummary: 17\n") == 17
    with pytest.raises(DumpError, match="no totals"):
        dump_total("events: Ir\n")


def test_a_dump_is_found_by_its_part_and_checked_by_its_label(tmp_path: Path) -> None:
    # --separate-threads=yes names it <prefix>.<pid>.<part>-<thread>.
    (tmp_path / "callgrind.out.4242.3-01").write_text(DUMP)
    found = find_dump(tmp_path, "callgrind.out", 4242, 3, "benchsdk-region-3")
    assert found.name == "callgrind.out.4242.3-01"
    # Numbered otherwise (a dump the process made that was not ours): found by its label.
    moved = tmp_path / "callgrind.out.4242.4-01"
    shutil.move(found, moved)
    assert find_dump(tmp_path, "callgrind.out", 4242, 3, "benchsdk-region-3") == moved
    with pytest.raises(DumpError, match="benchsdk-region-9"):
        find_dump(tmp_path, "callgrind.out", 4242, 9, "benchsdk-region-9")


def test_a_missing_compiler_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"CC": str(tmp_path / "no-such-cc"), "XDG_CACHE_HOME": str(tmp_path), "PATH": ""}
    with pytest.raises(build.HelperBuildError) as raised:
        build.build_helper(env)
    message = str(raised.value)
    assert "needs a C compiler" in message
    assert "no-such-cc" in message
    assert "apt-get install gcc" in message
    assert not list((tmp_path / "pytest-benchsdk").glob("*"))


def test_a_failing_compiler_says_its_status_and_leaves_nothing_behind(tmp_path: Path) -> None:
    false = shutil.which("false")
    if false is None:
        pytest.skip("no false program")
    env = {"CC": false, "XDG_CACHE_HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")}
    with pytest.raises(build.HelperBuildError, match="exited with status 1"):
        build.build_helper(env)
    assert list((tmp_path / "pytest-benchsdk").glob("*")) == []


def test_the_compiler_is_cc_from_the_environment_with_its_arguments() -> None:
    assert build.compiler_command({"CC": "ccache gcc -m64"}) == ["ccache", "gcc", "-m64"]
    assert build.compiler_command({})[0]  # sysconfig's, else cc


def _compiler() -> str | None:
    return shutil.which(build.compiler_command()[0])


@pytest.mark.skipif(_compiler() is None, reason="no C compiler (apt-get install gcc)")
def test_the_helper_is_built_once_into_the_cache_and_tells_it_is_not_under_valgrind(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    built = build.build_helper(env)
    assert built.parent == tmp_path / "pytest-benchsdk"
    assert built.name.startswith("benchsdk_callgrind-")
    stamp = built.stat().st_mtime_ns
    assert build.build_helper(env) == built
    assert built.stat().st_mtime_ns == stamp
    assert [p.name for p in built.parent.iterdir()] == [built.name]  # no partial file left
    assert CallgrindCounter(built, tmp_path).running_on_valgrind() is False


def test_the_helper_sources_ship_in_the_package() -> None:
    names = {path.name for path in build.HELPER_DIR.iterdir()}
    assert {"benchsdk_callgrind.c", "valgrind.h", "callgrind.h"} <= names
    # The vendored headers keep their licence.
    for header in ("valgrind.h", "callgrind.h"):
        assert "BSD-style license" in (build.HELPER_DIR / header).read_text()


def test_the_session_runs_under_callgrind_counting_nothing_until_a_region(tmp_path: Path) -> None:
    command = launch.valgrind_command("/usr/bin/valgrind", tmp_path, ["/py", "-m", "pytest", "-q"])
    assert command[:5] == [
        "/usr/bin/valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--separate-threads=yes",
        "--trace-children=yes",
    ]
    assert f"--callgrind-out-file={tmp_path}/callgrind.out.%p" in command
    assert any(arg.startswith("--trace-children-skip=") and "*/git" in arg for arg in command)
    # Every dump names its functions: the allocators' part is found by name.
    assert "--compress-strings=no" in command
    assert command[-4:] == ["/py", "-m", "pytest", "-q"]


@pytest.mark.parametrize(
    ("given", "seed", "origin"),
    [(None, "0", "benchsdk"), ("random", "0", "benchsdk"), ("123", "123", "user")],
)
def test_the_hash_seed_is_fixed_unless_the_user_fixed_one_and_recorded_either_way(
    tmp_path: Path, given: str | None, seed: str, origin: str
) -> None:
    environ = {"PATH": "/bin"} if given is None else {"PATH": "/bin", "PYTHONHASHSEED": given}
    env = launch.relaunch_environment(environ, tmp_path, tmp_path / "h.so", "valgrind-3.19.0")
    assert env["PYTHONHASHSEED"] == seed
    assert env[launch.ENV_FOLDER] == str(tmp_path)
    assert env[launch.ENV_OWNER] == str(os.getpid())
    setup = launch.count_setup(10, env)
    assert setup is not None
    assert (setup.hash_seed, setup.hash_seed_from, setup.valgrind) == (
        seed,
        origin,
        "valgrind-3.19.0",
    )
    assert setup.calls == 10
    assert setup.excluded == "allocators"
    assert json.loads(env[launch.ENV_SETUP])["hash_seed"] == seed
    assert launch.count_setup(10, {}) is None


def test_a_missing_valgrind_says_what_to_install() -> None:
    with pytest.raises(launch.ValgrindMissing, match="apt-get install valgrind"):
        launch.find_valgrind({"PATH": ""})
