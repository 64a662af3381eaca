"""Participant, wire forms, define_task / define_on_complete, and validation never raising."""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import pickle
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_benchsdk.config import (
    DisplayConfig,
    DisplayMetric,
    DisplayOverview,
    DisplayStep,
    Participant,
    Phase,
    ScoringConfig,
    ScoringMetric,
    ScoringSuccess,
    Shape,
    Weights,
    define_benchmark_config,
    define_on_complete,
    define_task,
    validate_benchmark_config,
    validate_scoring_config,
)

# --- Participant ----------------------------------------------------------------------------


def test_participant_extras_as_attributes_and_mapping() -> None:
    sdk = object()
    p = Participant("e2b", required_env_vars=["E2B_API_KEY"], sdk=sdk, region="eu")
    assert p.name == "e2b"
    assert p.required_env_vars == ("E2B_API_KEY",)
    assert p.sdk is sdk
    assert p.extra == {"sdk": sdk, "region": "eu"}
    with pytest.raises(AttributeError, match="'e2b' has no attribute 'missing'"):
        _ = p.missing
    with pytest.raises(TypeError):
        p.extra["x"] = 1  # type: ignore[index]


def test_participant_is_immutable() -> None:
    p = Participant("a")
    with pytest.raises(AttributeError):
        p.name = "b"
    with pytest.raises(AttributeError):
        del p.name


def test_participant_equality_and_hash() -> None:
    assert Participant("a", ["X"], sdk=1) == Participant("a", ("X",), sdk=1)
    assert Participant("a", sdk=1) != Participant("a", sdk=2)
    assert Participant("a") != Participant("a", ["X"])
    assert Participant("a") != "a"
    assert hash(Participant("a", ["X"])) == hash(Participant("a", ("X",)))


def test_participant_repr() -> None:
    assert repr(Participant("e2b", required_env_vars=["K"], region="eu")) == (
        "Participant('e2b', required_env_vars=('K',), region=<str>)"
    )
    assert repr(Participant("local")) == "Participant('local')"
    source = SimpleNamespace(name="x", token="sk-secret")
    assert repr(Participant.coerce(source)) == "Participant('x', source=<SimpleNamespace>)"


def test_coerce_dict_snake_and_camel() -> None:
    assert Participant.coerce({"name": "a", "required_env_vars": ["A"], "sdk": 1}) == Participant(
        "a", ["A"], sdk=1
    )
    assert Participant.coerce({"name": "a", "requiredEnvVars": ["A"]}) == Participant("a", ["A"])
    assert Participant.coerce({"name": "a"}).required_env_vars == ()


def test_coerce_plain_object_falls_back_to_it() -> None:
    class Provider:
        name = "modal"
        required_env_vars = ("MODAL_TOKEN",)

        def create(self) -> str:
            return "sandbox"

    provider = Provider()
    p = Participant.coerce(provider)
    assert p.name == "modal"
    assert p.required_env_vars == ("MODAL_TOKEN",)
    assert p.create() == "sandbox"
    with pytest.raises(AttributeError):
        _ = p.nothing


def test_coerce_keeps_participants_and_rejects_primitives() -> None:
    p = Participant("a")
    assert Participant.coerce(p) is p
    for bad in (None, b"a", 1, ["a"]):
        with pytest.raises(TypeError):
            Participant.coerce(bad)


def test_a_string_is_a_participant_without_env_vars() -> None:
    assert Participant.coerce("json") == Participant("json")
    config = define_benchmark_config(
        benchmark_slug="s",
        benchmark_name="n",
        participants=["json", Participant("pickle", required_env_vars=["P"]), {"name": "m"}],
    )
    assert config.participants == (
        Participant("json"),
        Participant("pickle", required_env_vars=["P"]),
        Participant("m"),
    )
    assert config.participants[0].required_env_vars == ()


def test_participant_pickles_and_copies() -> None:
    p = Participant("a", ["A"], region="eu")
    assert pickle.loads(pickle.dumps(p)) == p
    assert copy.deepcopy(p) == p
    assert copy.copy(p).region == "eu"


def test_plain_object_participants_validate_with_the_same_rules() -> None:
    config = {
        "benchmark_slug": "s",
        "benchmark_name": "n",
        "participants": [
            SimpleNamespace(name="a", required_env_vars=["A"]),
            SimpleNamespace(name="a"),
            SimpleNamespace(name="b", required_env_vars="B"),
            SimpleNamespace(),
        ],
    }
    assert [(i.field, i.message) for i in validate_benchmark_config(config)] == [
        ("participants[1].name", "duplicate participant name: a"),
        ("participants[2].required_env_vars", "must be a list of strings"),
        ("participants[3].name", "must be a non-empty string"),
    ]


def test_define_coerces_plain_objects() -> None:
    source = SimpleNamespace(name="a", client="c")
    config = define_benchmark_config(benchmark_slug="s", benchmark_name="n", participants=[source])
    assert config.participants[0].name == "a"
    assert config.participants[0].client == "c"


def test_phase_and_shape_objects_are_read_by_attribute() -> None:
    config = define_benchmark_config(
        benchmark_slug="s",
        benchmark_name="n",
        participants=[Participant("a")],
        phases=[Phase("cold", 1), SimpleNamespace(name="warm", iterations=2)],
        shapes={"b": Shape("burst", stagger_delay_ms=5)},
    )
    assert config.phases == (Phase("cold", 1), Phase("warm", 2))
    assert config.shapes == {"b": Shape("burst", None, 5)}


# --- wire forms -----------------------------------------------------------------------------


def test_scoring_to_wire_omits_absent_fields() -> None:
    scoring = ScoringConfig(
        metrics=(
            ScoringMetric("tti", 10_000, Weights(0.6, 0.25, 0.15), unit="ms"),
            ScoringMetric(
                "mbps",
                100,
                Weights(0, 0, 0),
                label="MB/s",
                floor=1,
                higher_is_better=True,
                trim=0.1,
            ),
        ),
        group_by="size",
        success=ScoringSuccess({"ok": True}),
    )
    assert scoring.to_wire() == {
        "groupBy": "size",
        "success": {"requireData": {"ok": True}},
        "metrics": [
            {
                "key": "tti",
                "unit": "ms",
                "ceiling": 10_000,
                "weights": {"median": 0.6, "p95": 0.25, "p99": 0.15},
            },
            {
                "key": "mbps",
                "label": "MB/s",
                "ceiling": 100,
                "floor": 1,
                "higherIsBetter": True,
                "weights": {"median": 0, "p95": 0, "p99": 0},
                "trim": 0.1,
            },
        ],
    }
    assert ScoringConfig(metrics=()).to_wire() == {"metrics": []}


def test_display_to_wire_omits_absent_fields() -> None:
    display = DisplayConfig(
        metrics=(
            DisplayMetric("x", "X", unit="ms", direction="lower-better", decimals=1, order=0),
        ),
        steps=(DisplayStep("create", "Create"),),
        overview=DisplayOverview(default_layout="cards"),
    )
    assert display.to_wire() == {
        "metrics": [
            {
                "key": "x",
                "label": "X",
                "unit": "ms",
                "direction": "lower-better",
                "decimals": 1,
                "order": 0,
            }
        ],
        "steps": [{"key": "create", "label": "Create"}],
        "overview": {"defaultLayout": "cards"},
    }
    assert DisplayConfig().to_wire() == {}


def test_phase_and_shape_to_wire() -> None:
    assert Phase("cold", 3).to_wire() == {"name": "cold", "iterations": 3}
    assert Shape("burst").to_wire() == {"slug": "burst"}
    assert Shape("burst", "Burst", 200).to_wire() == {
        "slug": "burst",
        "name": "Burst",
        "staggerDelayMs": 200,
    }


def test_coerce_round_trips_wire() -> None:
    wire = {
        "groupBy": "g",
        "success": {"requireData": {"ok": True}},
        "metrics": [{"key": "x", "ceiling": 1, "weights": {"median": 1, "p95": 0, "p99": 0}}],
    }
    assert ScoringConfig.coerce(wire).to_wire() == wire
    display = {"metrics": [{"key": "x", "label": "X"}], "overview": {"defaultMetric": "x"}}
    assert DisplayConfig.coerce(display).to_wire() == display


# --- define_task / define_on_complete -------------------------------------------------------


def sync_task(participant: object) -> None:
    pass


async def async_task(participant: object) -> None:
    pass


class CallableTask:
    def __call__(self, participant: object) -> None:
        pass


@pytest.mark.parametrize(
    "fn",
    [sync_task, async_task, CallableTask(), functools.partial(sync_task), lambda participant: None],
    ids=["sync", "async", "callable-object", "partial", "lambda"],
)
def test_define_task_returns_the_same_callable(fn: Any) -> None:
    assert define_task(fn) is fn
    assert define_on_complete(fn) is fn


@pytest.mark.parametrize("bad", [[], None, "task", 1, {"run": sync_task}])
def test_define_task_rejects_non_functions(bad: object) -> None:
    with pytest.raises(TypeError, match=r"^define_task requires a task function\.$"):
        define_task(bad)
    with pytest.raises(TypeError, match="define_on_complete requires"):
        define_on_complete(bad)


def test_define_task_as_decorator() -> None:
    @define_task
    def task(participant: object) -> int:
        return 1

    assert task(None) == 1


# --- never raises ---------------------------------------------------------------------------

json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)

FIELDS = [
    "benchmark_slug",
    "benchmark_name",
    "participants",
    "iterations",
    "phases",
    "concurrency",
    "stagger_delay_ms",
    "group_by",
    "shapes",
    "default_providers",
    "dimensions",
    "on_score",
    "on_complete",
    "scoring",
    "custom_cli_flags",
    "display",
    "close_after_ms",
    "unknown",
]

VALID = {"benchmark_slug": "s", "benchmark_name": "n", "participants": [{"name": "a"}]}


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(FIELDS), value=json_like, nested=json_like)
def test_validation_never_raises(field: str, value: Any, nested: Any) -> None:
    config = {**VALID, field: value}
    issues = validate_benchmark_config(config)
    assert all(isinstance(i.field, str) and isinstance(i.message, str) for i in issues)
    assert isinstance(validate_scoring_config(value, nested), (str, type(None)))
    # Values placed one level down (inside participants, phases, shapes, scoring, display).
    deep = {
        **VALID,
        "participants": [{"name": "a", "required_env_vars": value}, value],
        "phases": [{"name": "p", "iterations": value}, value],
        "shapes": {"s": {"slug": value, "name": value, "stagger_delay_ms": value}, "t": value},
        "display": {"metrics": [{"key": "x", "label": value, "unit": value}], "overview": value},
    }
    validate_benchmark_config(deep)
    validate_scoring_config(
        {"metrics": [{"key": "x", "ceiling": value, "weights": nested}], "success": value}
    )
    with contextlib.suppress(ValueError):
        define_benchmark_config(config)


def test_hostile_values_do_not_raise() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)

    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("no")

        @property
        def name(self) -> str:
            raise RuntimeError("no")

    issues = validate_benchmark_config(
        {
            **VALID,
            "iterations": cyclic,
            "concurrency": Hostile(),
            "stagger_delay_ms": 10**400,
            "participants": [Hostile()],
            "shapes": {"s": {"slug": Hostile()}, "t": {"slug": cyclic}},
        }
    )
    fields = [i.field for i in issues]
    assert fields == [
        "participants[0].name",
        "iterations",
        "concurrency",
        "stagger_delay_ms",
        "shapes['s'].slug",
        "shapes['t'].slug",
    ]
    assert validate_scoring_config({"metrics": [{"key": "x", "ceiling": math.nan}]}) is not None
