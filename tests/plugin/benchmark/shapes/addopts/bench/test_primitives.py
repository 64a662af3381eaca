"""Benchmarks of two codecs, parametrized as cattrs' converters are."""

import json

import pytest


class Repr:
    dumps = staticmethod(repr)


@pytest.mark.parametrize("codec", [json, Repr], ids=["json", "repr"])
def test_unstructure_ints(benchmark, codec):
    benchmark(codec.dumps, list(range(20)))


@pytest.mark.parametrize("codec", [json, Repr], ids=["json", "repr"])
def test_unstructure_strs(benchmark, codec):
    benchmark(codec.dumps, [str(i) for i in range(20)])
