"""Compression codecs from the standard library, compared on the same payload.

Run: pytest examples/bench_codecs.py --bench --bench-dry-run
"""

from __future__ import annotations

import bz2
import lzma
import random
import time
import zlib

from pytest_benchsdk import Participant, Phase, define_benchmark_config, define_task

# A deterministic, moderately compressible payload (~256 KiB of word salad).
_WORDS = [b"bench", b"pytest", b"participant", b"phase", b"median", b"tail", b"p99", b"score"]
_rng = random.Random(7)
PAYLOAD = b" ".join(_rng.choice(_WORDS) for _ in range(40_000))

config = define_benchmark_config(
    benchmark_slug="stdlib-codecs",
    benchmark_name="Standard-library codecs",
    participants=[
        Participant("zlib", compress=zlib.compress, decompress=zlib.decompress),
        Participant("bz2", compress=bz2.compress, decompress=bz2.decompress),
        Participant("lzma", compress=lzma.compress, decompress=lzma.decompress),
    ],
    # "cold" runs first for each participant; "warm" repeats with caches warmed up.
    phases=[Phase("cold", 2), Phase("warm", 5)],
    dimensions={"payload_bytes": len(PAYLOAD)},
    display={
        "metrics": [
            {"key": "compress_ms", "label": "Compress", "unit": "ms", "direction": "lower-better"},
            {"key": "ratio", "label": "Ratio", "unit": "x", "direction": "higher-better"},
        ],
        "steps": [
            {"key": "compress", "label": "Compress"},
            {"key": "roundtrip", "label": "Roundtrip"},
        ],
    },
    scoring={
        "metrics": [
            {
                "key": "compress_ms",
                "ceiling": 250,
                "weights": {"median": 0.4, "p95": 0.15, "p99": 0.05},
            },
            {
                "key": "ratio",
                "ceiling": 400,
                "higher_is_better": True,
                "weights": {"median": 0.4, "p95": 0.0, "p99": 0.0},
            },
        ],
    },
)


@define_task
def task(participant, step, measure):
    started = time.perf_counter()
    compressed = step("compress", lambda: participant.compress(PAYLOAD))
    measure(compress_ms=(time.perf_counter() - started) * 1000)
    measure(ratio=len(PAYLOAD) / len(compressed))
    restored = step("roundtrip", lambda: participant.decompress(compressed))
    assert restored == PAYLOAD, "roundtrip changed the payload"
