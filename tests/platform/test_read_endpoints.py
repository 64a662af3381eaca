"""The client's read endpoints (what the platform commands use) against the loopback platform:
paths, query strings, headers, envelopes, artifact downloads with gunzip, and failures."""

from __future__ import annotations

import pytest

from helpers.platform import seed_run
from helpers.platform_server import API_KEY, LoopbackPlatform
from pytest_benchsdk.platform import BenchmarkApiError, BenchmarkClient, PlatformConnectionError
from pytest_benchsdk.platform._client import decode_artifact_body, form_query

SLUG = "sandbox-tti"
BASE = f"/api/v1/benchmarks/{SLUG}"


def _last(server: LoopbackPlatform, route: str) -> tuple[str, dict[str, list[str]], str]:
    request = server.calls(route)[-1]
    return request.raw_path, request.query, request.method


@pytest.mark.slow
def test_runs_across_benchmarks_and_results_paths_and_queries(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    run_id, _ = seed_run(platform_client)
    c = platform_client
    runs = c.list_all_runs(limit=5, offset=0, benchmark_slug=SLUG)
    assert [r["id"] for r in runs] == [run_id]
    assert runs[0]["organizationSlug"] == "acme"
    assert _last(loopback_platform, "list_all_runs") == (
        "/api/v1/benchmarks/runs",
        {"limit": ["5"], "offset": ["0"], "benchmarkSlug": [SLUG]},
        "GET",
    )
    assert c.list_all_runs() == runs
    assert loopback_platform.calls("list_all_runs")[-1].query == {}

    overview = c.get_benchmark_results(SLUG, limit=1)
    assert overview["benchmark"]["slug"] == SLUG
    assert [item["run"]["id"] for item in overview["items"]] == [run_id]
    assert _last(loopback_platform, "benchmark_results") == (
        f"{BASE}/results",
        {"limit": ["1"]},
        "GET",
    )

    results = c.get_run_results(SLUG, run_id)
    assert results["overall"]["taskCount"] == 4
    assert results["overall"]["errorCount"] == 1
    by_participant = {p["participantSlug"]: p for p in results["participants"]}
    assert by_participant["modal"]["successRate"] == 0.5
    assert {(s["participantSlug"], s["stepName"]) for s in results["steps"]} == {
        ("e2b", "create"),
        ("e2b", "exec"),
        ("modal", "create"),
        ("modal", "exec"),
    }
    assert _last(loopback_platform, "run_results")[0] == f"{BASE}/runs/{run_id}/results"

    tasks = c.get_run_task_results(SLUG, run_id, bucket_size=5, failure_limit=2)
    assert tasks["failures"] == [
        {"participantSlug": "modal", "provider": None, "taskIndex": 1, "errorCode": "boom"}
    ]
    assert _last(loopback_platform, "run_task_results")[:2] == (
        f"{BASE}/runs/{run_id}/results/tasks",
        {"bucketSize": ["5"], "failureLimit": ["2"]},
    )
    assert c.get_run_timeline(SLUG, run_id, bucket_ms=250)["eventRate"]["bucketMs"] == 250
    assert loopback_platform.calls("run_timeline")[-1].query == {"bucketMs": ["250"]}
    assert c.get_run_imports(SLUG, run_id)["summary"]["eventBatches"] == 2


def test_iterations_query_is_url_search_params(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    run_id, _ = seed_run(platform_client)
    data = platform_client.get_run_step_iterations(
        SLUG, run_id, participant="modal", steps=["exec"]
    )
    assert [(r["participantSlug"], r["taskIndex"], r["status"]) for r in data["steps"]] == [
        ("modal", 0, "success"),
        ("modal", 1, "error"),
    ]
    platform_client.get_run_step_iterations(SLUG, run_id, steps=["create", "exec"])
    first, second = loopback_platform.calls("iterations")
    assert first.raw_path == f"{BASE}/runs/{run_id}/iterations"
    assert first.query == {"type": ["steps"], "participant": ["modal"], "steps": ["exec"]}
    # URLSearchParams writes the comma of a list as %2C.
    assert second.raw_query == "type=steps&steps=create%2Cexec"
    assert first.raw_query == "type=steps&participant=modal&steps=exec"
    tasks = platform_client.get_run_task_iterations(SLUG, run_id)
    assert len(tasks["tasks"]) == 4
    assert loopback_platform.calls("iterations")[-1].query == {"type": ["tasks"]}


def test_form_query_encodes_as_url_search_params() -> None:
    assert form_query({"steps": "a,b", "p": "x y~z*", "none": None}) == "?steps=a%2Cb&p=x+y%7Ez*"
    assert form_query({"p": "é"}) == "?p=%C3%A9"
    assert form_query({}) == ""


def test_participant_logs_and_max_lines(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    lines = (
        "2026-01-02T03:04:05.678Z [task 0] [info] first",
        "2026-01-02T03:04:06.000Z [task 1] [warn] second",
        "  error: boom",
    )
    run_id, assignments = seed_run(platform_client, log_lines=lines)
    answer = platform_client.get_participant_logs(SLUG, run_id, "e2b", max_lines=2)
    (worker,) = answer["workers"]
    assert worker["workerId"] == assignments["e2b"]["workerId"]
    assert worker["log"]["totalLines"] == 3
    assert worker["log"]["lines"] == [
        {"n": 2, "ts": "2026-01-02T03:04:06.000Z", "level": "warn", "msg": "[task 1] second"},
        {"n": 3, "ts": None, "level": "info", "msg": "  error: boom"},
    ]
    raw, query, _ = _last(loopback_platform, "participant_logs")
    assert raw == f"{BASE}/runs/{run_id}/participants/e2b/logs"
    assert query == {"maxLines": ["2"]}


def test_artifacts_list_get_and_download_with_gunzip(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    run_id, assignments = seed_run(
        platform_client, participants=("e2b",), log_lines=("gzipped line é",), gzip_log=True
    )
    worker = str(assignments["e2b"]["workerId"])
    listed = platform_client.list_run_artifacts(SLUG, run_id, limit=10)
    assert [(a["kind"], a["name"]) for a in listed] == [
        ("coordinator.log", "worker.log"),
        ("system-metrics", "metrics.jsonl"),
    ]
    assert loopback_platform.calls("run_artifacts")[-1].query == {"limit": ["10"]}
    assert platform_client.list_worker_artifacts(SLUG, run_id, worker) == listed
    log_id = str(listed[0]["id"])
    found = platform_client.get_worker_artifact(SLUG, run_id, worker, log_id)
    assert found["artifact"]["contentType"] == "application/gzip"
    assert found["downloadUrl"].startswith(loopback_platform.root_url + "/_download/")
    assert platform_client.download_worker_artifact(SLUG, run_id, worker, log_id) == (
        "gzipped line é\n"
    )
    (download,) = loopback_platform.calls("download")
    assert "authorization" not in download.headers
    metrics = platform_client.download_worker_artifact(SLUG, run_id, worker, str(listed[1]["id"]))
    assert '"memRssMb":50' in metrics
    with pytest.raises(BenchmarkApiError, match=r"^Artifact download failed with 404$"):
        platform_client.download_artifact(loopback_platform.root_url + "/_download/nope")


def test_decode_artifact_body_falls_back_to_the_raw_bytes() -> None:
    assert decode_artifact_body(b"plain", "application/gzip", decompress=False) == "plain"
    assert decode_artifact_body(b"\xffok", "text/plain", decompress=False) == "\ufffdok"


def test_account_endpoints_send_only_the_bearer(loopback_platform: LoopbackPlatform) -> None:
    with BenchmarkClient(
        base_url=loopback_platform.api_url, api_key=API_KEY, org_slug="other", timeout=5
    ) as client:
        me = client.get_me()
        assert me["user"]["email"] == "ada@example.com"
        assert me["activeOrganizationId"] is None
        assert client.list_organizations() == [{"id": "org_1", "name": "Acme", "slug": "acme"}]
        answer = client.set_active_organization("acme")
    assert answer["organization"]["slug"] == "acme"
    assert answer["accessToken"].startswith("org-access-token")
    me_call, orgs_call, use_call = loopback_platform.calls()
    assert (me_call.method, me_call.raw_path) == ("GET", "/api/v1/me")
    assert (orgs_call.method, orgs_call.raw_path) == ("GET", "/api/v1/organizations")
    assert (use_call.method, use_call.raw_path) == ("POST", "/api/v1/organizations")
    assert use_call.json == {"slug": "acme"}
    assert use_call.headers["content-type"] == "application/json"
    for call in (me_call, orgs_call, use_call):
        assert call.headers["authorization"] == f"Bearer {API_KEY}"
        assert "x-org-slug" not in call.headers
    assert "content-type" not in me_call.headers


def test_account_failures_name_the_call(loopback_platform: LoopbackPlatform) -> None:
    with BenchmarkClient(base_url=loopback_platform.api_url, api_key="wrong-key-123") as client:
        with pytest.raises(BenchmarkApiError, match=r"^Me request failed: 401 Unauthorized$"):
            client.get_me()
        loopback_platform.fault("list_organizations", status=503)
        with pytest.raises(BenchmarkApiError) as caught:
            client.list_organizations()
        assert str(caught.value) == "Organizations request failed: 503 Service Unavailable"
    with BenchmarkClient(base_url=loopback_platform.api_url, api_key=API_KEY) as client:
        with pytest.raises(BenchmarkApiError) as caught:
            client.set_active_organization("nope")
        assert str(caught.value) == "Set active organization failed: 404 Not Found"
        assert "Organization not found" in caught.value.body


def test_read_faults_surface_as_api_and_connection_errors(
    loopback_platform: LoopbackPlatform, platform_client: BenchmarkClient
) -> None:
    run_id, _ = seed_run(platform_client, participants=("e2b",))
    loopback_platform.fault("run_results", status=503, body={"error": "warming up"})
    with pytest.raises(BenchmarkApiError) as caught:
        platform_client.get_run_results(SLUG, run_id)
    assert caught.value.status == 503
    assert "warming up" in caught.value.body
    loopback_platform.fault("participant_logs", drop=True)
    with pytest.raises(PlatformConnectionError):
        platform_client.get_participant_logs(SLUG, run_id, "e2b")
    assert API_KEY not in str(caught.value)
