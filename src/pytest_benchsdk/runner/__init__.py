"""Programmatic runs without pytest: the Python counterparts of ``@benchsdk/runner``'s exports.

* :func:`run_benchmark` (``runBenchmark``): a benchmark's iterations, the results store, the
  platform, scores, ``on_complete`` and the summary, through the same session and plans as a
  pytest session; :func:`run_benchmark_worker` (``runBenchmarkWorker``);
* :func:`run_worker` (``runWorker``): a queue-driven worker's loop;
  :class:`BenchmarkReporter` / :func:`claim_benchmark_reporter`: one claimed worker, by hand;
* :func:`parse_cli_args` (``parseCliArgs``): ``bench run``'s flags with upstream's messages;
* :func:`create_api_client` (``createApiClient``): ``(client, auth)``;
* :data:`BENCHSDK_RUNNER_VERSION`: the upstream runner version whose behaviour this matches;
* ``pytest-benchsdk run <bench_file.py> [flags]`` (:func:`main`): upstream ``bench run``.
"""

from __future__ import annotations

from pytest_benchsdk._base.public import publish
from pytest_benchsdk._session import SessionOptions
from pytest_benchsdk.platform import BenchmarkReporter, claim_benchmark_reporter, create_api_client
from pytest_benchsdk.runner._argv import CliArgs, parse_cli_args
from pytest_benchsdk.runner._cli import main
from pytest_benchsdk.runner._run import BenchmarkRunResult, run_benchmark, run_benchmark_worker
from pytest_benchsdk.runner._worker import WorkerResult, run_worker

#: The version of upstream ``@benchsdk/runner`` whose behaviour, flags and wire format this
#: package matches (upstream's own constant is its package version).
BENCHSDK_RUNNER_VERSION = "0.5.2"

__all__ = [
    "BENCHSDK_RUNNER_VERSION",
    "BenchmarkReporter",
    "BenchmarkRunResult",
    "CliArgs",
    "SessionOptions",
    "WorkerResult",
    "claim_benchmark_reporter",
    "create_api_client",
    "main",
    "parse_cli_args",
    "run_benchmark",
    "run_benchmark_worker",
    "run_worker",
]

publish(__name__, globals())
