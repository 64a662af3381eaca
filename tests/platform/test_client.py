"""The platform client against the loopback platform: methods, paths, headers, bodies, errors."""

from __future__ import annotations

import httpx
import pytest

from helpers.platform_server import API_KEY, LoopbackPlatform
from pytest_benchsdk.platform import (
    AuthError,
    BenchmarkApiError,
    BenchmarkClient,
    PlatformConnectionError,
    encode_segment,
)

SLUG = "scale/with space"


def _lifecycle(client: BenchmarkClient) -> tuple[str, dict[str, object]]:
    client.upsert_benchmark(SLUG, {"name": "Scale"})
    run = client.create_run(
        SLUG, {"totalTasks": 3, "workerCount": 1, "participants": ["e2b"], "config": {}}
    )
    run_id = str(run["run"]["id"])  # type: ignore[index]
    client.plan_workers(SLUG, run_id, "e2b")
    assignment = client.claim_worker(SLUG, run_id, "e2b", {"processKind": "process"})
    assert assignment is not None
    return run_id, assignment


def test_encode_segment_is_encode_uri_component() -> None:
    assert encode_segment("scale/with space") == "scale%2Fwith%20space"
    assert encode_segment("a-b_c.d!e~f*g'h(i)") == "a-b_c.d!e~f*g'h(i)"
    assert encode_segment("é?&=#") == "%C3%A9%3F%26%3D%23"


def test_headers_and_path_encoding(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    platform_client.upsert_benchmark(SLUG, {"name": "Scale"})
    (req,) = loopback_platform.calls("upsert_benchmark")
    assert req.method == "PUT"
    assert req.raw_path == "/api/v1/benchmarks/scale%2Fwith%20space"
    assert req.headers["authorization"] == f"Bearer {API_KEY}"
    assert req.headers["content-type"] == "application/json"
    assert "x-api-key" not in req.headers
    assert "x-org-slug" not in req.headers
    assert req.json == {"name": "Scale"}


def test_org_headers(loopback_platform: LoopbackPlatform) -> None:
    with BenchmarkClient(
        base_url=loopback_platform.api_url + "//", api_key=API_KEY, org_slug="acme", org_id="o1"
    ) as client:
        client.list_benchmarks(limit=1)
    with BenchmarkClient(base_url=loopback_platform.api_url, token=API_KEY, org_id="o1") as client:
        client.list_benchmarks()
    first, second = loopback_platform.calls("list_benchmarks")
    assert first.raw_path == "/api/v1/benchmarks"
    assert first.query == {"limit": ["1"]}
    assert first.headers["x-org-slug"] == "acme"
    assert "x-organization-id" not in first.headers
    assert second.headers["x-organization-id"] == "o1"
    assert second.query == {}


def test_bearer_precedence_and_missing_credentials() -> None:
    env = {"BENCHMARKS_PLATFORM_TOKEN": "tok_env_123456", "BENCHMARKS_PLATFORM_API_KEY": "k"}
    assert BenchmarkClient(env=env).secrets == ("tok_env_123456",)
    assert BenchmarkClient(api_key="key_abc", env=env).secrets == ("key_abc",)
    assert BenchmarkClient(token="tok", api_key="key_abc", env=env).secrets == ("tok",)
    assert BenchmarkClient(env={"BENCHMARKS_PLATFORM_API_KEY": "k2"}).secrets == ("k2",)
    client = BenchmarkClient(api_key="key_abc", env={})
    assert client.base_url == "https://platform.computesdk.com/api/v1"
    with pytest.raises(AuthError, match="A platform API key or OAuth token is required"):
        BenchmarkClient(env={})


@pytest.mark.slow
def test_every_endpoint_method_path_and_body(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    c = platform_client
    assert c.list_benchmarks(limit=1, offset=0) == []
    run_id, assignment = _lifecycle(c)
    worker_id = str(assignment["workerId"])
    attempt_id = str(assignment["attemptId"])
    assert assignment["taskRange"] == {"start": 0, "end": 3, "count": 3}
    assert c.get_benchmark(SLUG)["name"] == "Scale"
    assert c.get_run(SLUG, run_id)["id"] == run_id
    assert [r["id"] for r in c.list_runs(SLUG)] == [run_id]
    assert c.upsert_participant(SLUG, run_id, "modal")["slug"] == "modal"
    assert {p["slug"] for p in c.list_participants(SLUG, run_id)} == {"e2b", "modal"}
    assert len(c.list_workers(SLUG, run_id, "e2b")) == 1
    c.heartbeat(
        SLUG,
        run_id,
        worker_id,
        {"attemptId": attempt_id, "progressDone": 1, "progressTotal": 3, "currentStep": None},
    )
    record = {"taskIndex": 0, "status": "success", "latencyMs": 1.5}
    answer = c.submit_task_results(
        SLUG,
        run_id,
        worker_id,
        {"attemptId": attempt_id, "sequenceNumber": 0, "isFinal": True, "records": [record]},
    )
    assert answer["accepted"] == 1
    created = c.upload_artifact(
        SLUG,
        run_id,
        worker_id,
        attempt_id=attempt_id,
        kind="coordinator.log",
        body="line é\n",
        content_type="text/plain",
        name="worker.log",
    )
    c.complete_worker(SLUG, run_id, worker_id, attempt_id)
    c.submit_run_summary(SLUG, run_id, {"run": {"triggeredBy": "manual"}, "results": []})

    routes = [(r.route, r.method, r.raw_path) for r in loopback_platform.requests]
    base = "/api/v1/benchmarks/scale%2Fwith%20space"
    worker = f"{base}/runs/{run_id}/workers/{worker_id}"
    assert routes == [
        ("list_benchmarks", "GET", "/api/v1/benchmarks"),
        ("upsert_benchmark", "PUT", base),
        ("create_run", "POST", f"{base}/runs"),
        ("plan", "POST", f"{base}/runs/{run_id}/participants/e2b/workers"),
        ("claim", "POST", f"{base}/runs/{run_id}/participants/e2b/workers/claim"),
        ("get_benchmark", "GET", base),
        ("get_run", "GET", f"{base}/runs/{run_id}"),
        ("list_runs", "GET", f"{base}/runs"),
        ("upsert_participant", "PUT", f"{base}/runs/{run_id}/participants/modal"),
        ("list_participants", "GET", f"{base}/runs/{run_id}/participants"),
        ("list_workers", "GET", f"{base}/runs/{run_id}/participants/e2b/workers"),
        ("heartbeat", "POST", f"{worker}/heartbeat"),
        ("events", "POST", f"{worker}/events"),
        ("create_artifact", "POST", f"{worker}/artifacts"),
        ("upload", "PUT", "/_upload/" + created["uploadUrl"].rsplit("/", 1)[1]),
        ("complete", "POST", f"{worker}/complete"),
        ("summary", "POST", f"{base}/runs/{run_id}/summary"),
    ]
    bodies = {r.route: r.json for r in loopback_platform.requests if r.route != "upload"}
    assert bodies["plan"] == {}
    assert bodies["claim"] == {"processKind": "process"}
    assert bodies["upsert_participant"] == {}
    # currentStep null is omitted, as upstream does.
    assert bodies["heartbeat"] == {"attemptId": attempt_id, "progressDone": 1, "progressTotal": 3}
    assert bodies["events"] == {
        "type": "task_results",
        "attemptId": attempt_id,
        "sequenceNumber": 0,
        "isFinal": True,
        "records": [record],
    }
    assert bodies["create_artifact"] == {
        "attemptId": attempt_id,
        "kind": "coordinator.log",
        "contentType": "text/plain",
        "name": "worker.log",
        "metadata": {"sizeBytes": len("line é\n".encode())},
    }
    assert bodies["complete"] == {"attemptId": attempt_id}
    upload = loopback_platform.calls("upload")[0]
    assert "authorization" not in upload.headers
    assert upload.headers["content-type"] == "text/plain"
    assert upload.body == "line é\n".encode()


def test_fail_and_release_bodies(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    run_id, assignment = _lifecycle(platform_client)
    worker_id, attempt_id = str(assignment["workerId"]), str(assignment["attemptId"])
    platform_client.release_worker(SLUG, run_id, worker_id, attempt_id)
    assert loopback_platform.calls("release")[0].json == {"attemptId": attempt_id}
    platform_client.fail_worker(SLUG, run_id, worker_id, attempt_id, "TypeError", "kaboom")
    (fail,) = loopback_platform.calls("fail")
    assert fail.json == {
        "attemptId": attempt_id,
        "errorCode": "TypeError",
        "errorMessage": "kaboom",
    }


def test_empty_events_send_nothing(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    assert platform_client.submit_task_results(SLUG, "r", "w", {"records": []}) == {}
    assert loopback_platform.requests == []


def test_claim_none_and_duplicate_batch(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    run_id, assignment = _lifecycle(platform_client)
    assert platform_client.claim_worker(SLUG, run_id, "e2b") is None
    body = {
        "attemptId": assignment["attemptId"],
        "sequenceNumber": 0,
        "isFinal": False,
        "records": [{"taskIndex": 0, "status": "success"}],
    }
    worker_id = str(assignment["workerId"])
    assert platform_client.submit_task_results(SLUG, run_id, worker_id, body)["duplicate"] is False
    assert platform_client.submit_task_results(SLUG, run_id, worker_id, body)["duplicate"] is True
    assert len(loopback_platform.records(run_id)) == 1


def test_client_side_limits(platform_client: BenchmarkClient) -> None:
    many = [{"taskIndex": i, "status": "success"} for i in range(5001)]
    with pytest.raises(ValueError, match=r"^Benchmark task result batches are limited to 5000"):
        platform_client.submit_task_results(SLUG, "r", "w", {"records": many})
    steps = [{"name": f"s{i}", "status": "success"} for i in range(101)]
    with pytest.raises(ValueError, match=r"^Benchmark task result records are limited to 100 "):
        platform_client.submit_task_results(
            SLUG, "r", "w", {"records": [{"taskIndex": 0, "status": "success", "steps": steps}]}
        )
    samples = [{"step": f"s{i}", "active": 1, "target": 1} for i in range(21)]
    with pytest.raises(ValueError, match=r"^Benchmark heartbeat concurrency is limited to 20 "):
        platform_client.heartbeat(SLUG, "r", "w", {"attemptId": "a", "concurrency": samples})
    dup = [{"step": "s", "active": 1, "target": 1}] * 2
    with pytest.raises(ValueError, match="must be unique per heartbeat"):
        platform_client.heartbeat(SLUG, "r", "w", {"attemptId": "a", "concurrency": dup})


def test_api_error_mapping(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    loopback_platform.fault("list_benchmarks", status=503, body={"error": "bad things"})
    with pytest.raises(BenchmarkApiError) as info:
        platform_client.list_benchmarks()
    err = info.value
    assert err.status == 503
    assert str(err) == "Benchmark API request failed: 503 Service Unavailable"
    assert "bad things" in err.body
    assert err.transient

    with pytest.raises(BenchmarkApiError) as info:
        platform_client.get_benchmark("missing")
    assert info.value.status == 404
    assert not info.value.transient

    loopback_platform.fault("list_benchmarks", status=429, retry_after="7")
    with pytest.raises(BenchmarkApiError) as info:
        platform_client.list_benchmarks()
    assert info.value.status == 429
    assert info.value.retry_after == 7.0


def test_wrong_key_is_401_and_never_echoed(loopback_platform: LoopbackPlatform) -> None:
    with (
        BenchmarkClient(base_url=loopback_platform.api_url, api_key="bp_wrong_key_999") as c,
        pytest.raises(BenchmarkApiError) as info,
    ):
        c.list_benchmarks()
    assert info.value.status == 401


def test_empty_body_is_empty_object(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    loopback_platform.fault("list_runs", status=200, body={})
    assert platform_client.request("GET", "/benchmarks/x/runs") == {}


def test_transport_errors_are_redacted(loopback_platform: LoopbackPlatform) -> None:
    loopback_platform.fault("list_benchmarks", drop=True)
    with (
        BenchmarkClient(base_url=loopback_platform.api_url, api_key=API_KEY) as c,
        pytest.raises(PlatformConnectionError) as info,
    ):
        c.list_benchmarks()
    assert API_KEY not in str(info.value)
    assert "GET /benchmarks" in str(info.value)


def test_explicit_timeout(loopback_platform: LoopbackPlatform) -> None:
    loopback_platform.fault("list_benchmarks", delay=1.0)
    timeout = httpx.Timeout(0.2)
    with (
        BenchmarkClient(base_url=loopback_platform.api_url, api_key=API_KEY, timeout=timeout) as c,
        pytest.raises(PlatformConnectionError) as info,
    ):
        c.list_benchmarks()
    assert info.value.timeout


def test_connection_refused() -> None:
    server = LoopbackPlatform()
    url = server.api_url
    server.stop()  # never started: the port is closed now
    with (
        BenchmarkClient(base_url=url, api_key=API_KEY, timeout=2.0) as c,
        pytest.raises(PlatformConnectionError),
    ):
        c.list_benchmarks()


def test_presigned_upload_failure_message(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    loopback_platform.fault("upload", status=500)
    with pytest.raises(BenchmarkApiError, match=r"^Benchmark artifact upload failed with 500$"):
        platform_client.upload_presigned(loopback_platform.root_url + "/_upload/x", b"x", "a/b")
