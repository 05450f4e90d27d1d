"""Smoke runs of the latency benchmarks on the test server (issue 15: CI
keeps a CPU-backend run of them). They report figures and assert no timing:
what is checked is that each runs to the end, answers correctly and reports
every field the harness renders."""

import os
import sys

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
sys.path.insert(0, BENCH)

from conftest import BACKEND  # noqa: E402

import isolation_bench  # noqa: E402
import latency_phases  # noqa: E402
import report  # noqa: E402

BACKEND_IS_CPU = BACKEND == "cpu"


def test_latency_phases_reports_every_call_and_phase(server):
    result = latency_phases.measure(server.target, n=20, warmup=5)
    assert result["answer_ok"]
    for key in ("keepalive_raw", "execute_raw", "execute_raw_bytes", "execute_session",
                "execute_raw_prepared",
                "remote_array_get", "remote_array_get_prebuilt", "fused_get"):
        assert result[key]["n"] == 20 and result[key]["p50_us"] > 0
    phases = result["server_phases"]
    for phase in ("queue", "convert", "validate", "plan", "run", "transfer", "total"):
        assert f"{phase}_p50_us" in phases
    # Every timed raw call repeats the warm-up's request: all from the caches.
    assert result["request_cache_hits"] == 20 and result["plan_cache_hits"] == 20
    assert phases["validate_p50_us"] == 0 and phases["convert_p50_us"] == 0
    assert phases["total_p50_us"] >= phases["run_p50_us"]
    # The Execute by handle neither converts, validates nor plans.
    prepared = result["server_phases_prepared"]
    assert prepared["validate_p50_us"] == 0 and prepared["plan_p50_us"] == 0
    assert "get_minus_raw_us" in result
    assert result["server_total_bytes_p50_us"] > 0
    text = report.latency_phases_section(result)
    assert "KeepAlive" in text and "total" in text and "by handle" in text
    assert "as bytes" in text


def test_isolation_bench_runs_both_cases(server):
    result = isolation_bench.measure_isolation(server.target, n=30, size=64, warmup=5,
                                               log=lambda *_: None)
    assert "error" not in result
    assert result["alone"]["n"] == 30 and result["under_load"]["n"] == 30
    assert result["matmuls_during"] > 0
    assert "beside a loop" in report.isolation_section(result)


def test_kernel_gaps_runs_an_unfusable_plan(server):
    import kernel_gaps

    result = kernel_gaps.measure(server.target, n_repeat=5, max_duration=0.5)
    assert result["answer_ok"]
    # Ten rounds of a reduction and the elementwise step it feeds.
    assert result["steps"] == 2 * kernel_gaps.ROUNDS
    assert set(result["kinds"]) == {"reduction", "elementwise"}
    assert result["host_per_run_us"] > 0


def test_shm_transfers_report_every_path(make_server):
    import gpuflow as gf
    import service_bench

    srv = make_server("--allow_shared_memory")
    with gf.connect(srv.target) as client, client.session() as s:
        result = service_bench.shm_transfers(s, [(1 << 20, 2, 1)], log=lambda *_: None)
    (row,) = result["sizes"]
    assert "error" not in row, row
    for key in ("memcpy_gbps", "grpc_upload_gbps", "grpc_download_gbps", "shm_upload_gbps",
                "shm_download_gbps", "region_upload_gbps", "region_download_gbps"):
        assert row[key] > 0
    assert "region up" in report.shm_section(result)


def test_fleet_bench_spreads_sessions_over_its_workers():
    import fleet_bench
    from conftest import server_binary

    result = fleet_bench.measure(server_binary(), backend=os.environ.get(
        "GPUFLOW_TEST_BACKEND", "cpu"), clients=4, duration=0.3, max_workers=2)
    one, two = result["rows"]
    assert one["workers"] == 1 and two["workers"] == 2
    assert sorted(two["sessions"].values()) == [2, 2]
    assert one["requests_per_s"] > 0 and two["requests_per_s"] > 0


def test_multi_device_bench_uses_every_device(make_server):
    import multi_device_bench

    srv = make_server("--devices=3") if BACKEND_IS_CPU else make_server("--devices=all")
    result = multi_device_bench.measure(srv.target, n=48, seconds=0.3)
    assert result["answer_ok"] and result["placed_as_asked"]
    if BACKEND_IS_CPU:
        assert result["devices"] == [0, 1, 2]
    else:
        assert len(result["devices"]) >= 1
    assert result["one_device_per_s"] > 0 and result["all_devices_per_s"] > 0
    assert result["speedup"] > 0
