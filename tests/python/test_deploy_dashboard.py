"""deploy/grafana/gpuflow.json against a real Prometheus scraping a real
gpuflowd: after a scripted mix of traffic, every panel's query (with
Grafana's variables filled in as Grafana would) parses and returns data
through Prometheus' HTTP API, and deploy/prometheus/rules.yaml, loaded into
the same Prometheus, evaluates every rule without error and raises no alert
for a healthy worker.

Panels whose metrics only the CUDA backend fills (the memory pool, device
memory, NVRTC, GPU time) are listed in CUDA_ONLY: on the CPU backend (make
test) they must parse and have no data, so the list cannot hide a panel
that is broken elsewhere; with GPUFLOW_TEST_BACKEND=cuda every panel must
return data.
"""

import json
import math
import re
import time
import urllib.parse
import urllib.request

import numpy as np
import pytest

import gpuflow
from conftest import BACKEND, ROOT, Server
from deploy_testing import documented_metrics, free_port, metric_names_in
from prometheus_testing import real_prometheus

DASHBOARD = ROOT / "deploy" / "grafana" / "gpuflow.json"
RULES = ROOT / "deploy" / "prometheus" / "rules.yaml"
JOB = "gpuflow"
# Panels with no data on the CPU backend, and why.
CUDA_ONLY = {
    "Kernel cache hit ratio": "no kernel lookups on the CPU backend (0/0)",
    "NVRTC time per compile": "nothing is compiled on the CPU backend",
    "Memory pool against device memory": "no memory pool or device on the CPU backend",
    "Pool use of the device": "no memory pool or device on the CPU backend",
}
# Every other panel must return data from at least one of its targets (a
# method or phase without traffic is NaN in a quantile: a gap in Grafana).
# Issue 17's list of what the dashboard shows, by a metric some panel reads.
TOPICS = {
    "requests and errors by method and code": "gpuflow_rpc_requests_total",
    "latency quantiles from the histograms": "gpuflow_rpc_duration_seconds",
    "GPU time": "gpuflow_gpu_time_seconds",
    "execute phases": "gpuflow_execute_phase_seconds",
    "kernel cache": "gpuflow_kernel_cache_lookups_total",
    "plan cache": "gpuflow_plan_cache_lookups_total",
    "memory pool against device memory": "gpuflow_memory_pool_bytes",
    "device memory": "gpuflow_device_memory_bytes",
    "sessions": "gpuflow_sessions_active",
    "transfer rates": "gpuflow_transfer_bytes_total",
}


def load_dashboard():
    return json.loads(DASHBOARD.read_text())


def panels(dashboard):
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def fill_variables(expr):
    """What Grafana sends for this dashboard's variables: job and every
    instance (its "All" value), and a rate window that spans the whole test
    (Grafana's $__rate_interval is at least four scrape intervals)."""
    expr = expr.replace("$__rate_interval", "1m").replace("$job", JOB)
    expr = expr.replace('instance=~"$instance"', 'instance=~".*"')
    assert "$" not in expr, f"a variable the test does not fill: {expr}"
    return expr


# ---------------------------------------------------------------- static


def test_dashboard_is_a_grafana_dashboard_of_documented_metrics():
    d = load_dashboard()
    assert d["uid"] == "gpuflow" and d["schemaVersion"] >= 36
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert variables["instance"]["allValue"] == ".*"
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    exported = documented_metrics()
    titles = [p["title"] for p in panels(d)]
    assert len(titles) == len(set(titles))
    assert set(CUDA_ONLY) <= set(titles)
    for p in panels(d):
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["description"], p["title"]
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
        assert p["targets"], p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), p["title"]
        for t in p["targets"]:
            used = metric_names_in(t["expr"]) | ({"up"} if re.search(r"\bup\{", t["expr"]) else set())
            assert used and used <= exported | {"up"}, (p["title"], used - exported)
            # Every query follows the job and worker pickers.
            for selector in re.findall(r"(?:gpuflow_[a-z_]+|\bup)\{([^}]*)\}", t["expr"]):
                assert 'job="$job"' in selector, (p["title"], t["expr"])
                assert 'instance=~"$instance"' in selector, (p["title"], t["expr"])
            if "rate(" in t["expr"]:
                assert "[$__rate_interval]" in t["expr"] and not re.search(r"\[\d+[smh]\]", t["expr"])


def test_dashboard_shows_what_the_issue_asks():
    read = set().union(*(metric_names_in(t["expr"]) for p in panels(load_dashboard()) for t in p["targets"]))
    missing = {topic for topic, metric in TOPICS.items() if metric not in read}
    assert not missing
    # Errors by method and code; quantiles from the buckets.
    exprs = [t["expr"] for p in panels(load_dashboard()) for t in p["targets"]]
    assert any("by (method, code)" in e and 'code!="OK"' in e for e in exprs)
    for q in ("0.5", "0.9", "0.99"):
        assert any(f"histogram_quantile({q}," in e and "gpuflow_rpc_duration_seconds_bucket" in e
                   for e in exprs), q


# ---------------------------------------------------------------- against Prometheus


def _traffic(client):
    """Every kind of call the panels show, including failures. Returns a
    session left open, for the session panels."""
    rng = np.random.default_rng(7)
    client.info()
    with client.session(label="dashboard") as s:
        x = rng.random((256, 384), dtype=np.float32)
        w = rng.random((384, 64), dtype=np.float32)
        s.upload(x, name="x")
        s.upload(w, name="w")
        for i in range(6):
            g = gpuflow.Graph()
            a = g.array("x")
            y = g.add(g.mul(g.sqrt(g.add(g.mul(a, a), 1)), 2), 1)
            outputs = [y, g.softmax(a, axis=-1), g.op("sum", a, axes=[1]),
                       g.op("matmul", a, g.array("w")), g.op("cumsum", a, axis=1)]
            s.execute(g, outputs=outputs, profile=i % 2 == 0)
        g = gpuflow.Graph()
        s.execute(g, outputs={"z": g.exp(g.array("x"))})
        s.download("z")
        s.list()
        s.info("x")
        s.keep_alive()
        s.delete("z")
        for bad in ("no_such_op", "sqrt"):
            g = gpuflow.Graph()
            try:  # an unknown op, then an unknown array
                s.execute(g, outputs=[g.op(bad, g.array("x" if bad != "sqrt" else "nope"))])
            except gpuflow.Error:
                pass
            else:
                raise AssertionError("expected the bad graph to fail")
    kept = client.session(label="kept")
    kept.upload(np.arange(1000, dtype=np.float64), name="y")
    return kept


def _api(base, path, **params):
    url = f"{base}/api/v1/{path}?" + urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as e:  # a query that does not parse: 400, with the reason
        return json.loads(e.read())


def _finite_values(result, result_type):
    if result_type == "vector":
        values = [float(r["value"][1]) for r in result]
    elif result_type == "matrix":
        values = [float(v[1]) for r in result for v in r["values"]]
    else:
        values = [float(result[1])]
    return [v for v in values if math.isfinite(v)]


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    """(a gpuflowd with traffic done, Prometheus' base URL, the time the
    traffic was scraped by)."""
    tmp = tmp_path_factory.mktemp("prometheus")
    metrics_port = free_port()
    srv = Server(f"--metrics_port={metrics_port}", "--metrics_address=127.0.0.1",
                 f"--kernel_cache_dir={tmp / 'kernels'}")
    client = None
    try:
        with real_prometheus(tmp, JOB, metrics_port, rule_files=[RULES],
                             evaluation_interval="500ms") as (base, proc, log):
            def value(promql):
                try:
                    reply = _api(base, "query", query=promql)
                except OSError:
                    return None  # not listening yet
                results = reply.get("data", {}).get("result", [])
                return float(results[0]["value"][1]) if results else None

            deadline = time.monotonic() + 60
            while value(f'up{{job="{JOB}"}}') != 1:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            client = gpuflow.connect(srv.target)
            _traffic(client)
            # Wait for a scrape that has all of it (the last call is an upload).
            promql = f'sum(gpuflow_rpc_requests_total{{job="{JOB}", method="UploadArray"}})'
            while value(promql) != 3:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            time.sleep(1.5)  # a few rule evaluations over the scraped traffic
            yield srv, base, time.time()
    finally:
        if client is not None:
            client.close()
        assert srv.stop() == 0, srv.log()


def test_every_panel_query_returns_data(prometheus):
    _, base, now = prometheus
    problems, empty_on_cpu = [], []
    for p in panels(load_dashboard()):
        with_data = 0
        for t in p["targets"]:
            expr = fill_variables(t["expr"])
            if t.get("instant"):
                reply = _api(base, "query", query=expr, time=now)
            else:  # what a time series or heatmap panel asks: a range
                reply = _api(base, "query_range", query=expr, start=now - 30, end=now, step=1)
            if reply["status"] != "success":
                problems.append(f"{p['title']}: {expr}: {reply.get('error')}")
                continue
            data = reply["data"]
            if _finite_values(data["result"], data["resultType"]):
                with_data += 1
        if p["title"] in CUDA_ONLY and BACKEND == "cpu":
            if with_data:
                empty_on_cpu.append(p["title"])
        elif with_data == 0:
            problems.append(f"{p['title']}: no target returned data")
    assert not problems, "\n".join(problems)
    assert not empty_on_cpu, f"listed as CUDA-only but have data on the CPU backend: {empty_on_cpu}"


def test_every_latency_and_phase_panel_has_data_for_the_traffic_sent(prometheus):
    # The methods and phases the traffic exercised, not only "some" data.
    _, base, now = prometheus
    expect_methods = {"Execute", "UploadArray", "DownloadArray", "CreateSession", "ListArrays"}
    expr = fill_variables(
        'histogram_quantile(0.99, sum by (method, le) (rate(gpuflow_rpc_duration_seconds_bucket'
        '{job="$job", instance=~"$instance"}[$__rate_interval])))')
    result = _api(base, "query", query=expr, time=now)["data"]["result"]
    seen = {r["metric"]["method"] for r in result if math.isfinite(float(r["value"][1]))}
    assert expect_methods <= seen
    expr = fill_variables(
        'sum by (phase) (rate(gpuflow_execute_phase_seconds_count'
        '{job="$job", instance=~"$instance"}[$__rate_interval]))')
    result = _api(base, "query", query=expr, time=now)["data"]["result"]
    phases = {r["metric"]["phase"] for r in result if float(r["value"][1]) > 0}
    expected = {"validate", "plan", "launch", "transfer"} | ({"gpu"} if BACKEND == "cuda" else set())
    assert expected <= phases


def test_alert_rules_evaluate_cleanly_and_stay_quiet(prometheus):
    _, base, _ = prometheus
    groups = _api(base, "rules")["data"]["groups"]
    rules = [r for g in groups for r in g["rules"]]
    assert {g["name"] for g in groups} == {"gpuflow"}
    assert len(rules) == 11
    for r in rules:
        assert r["health"] == "ok", (r["name"], r.get("lastError"))
    active = [a for a in _api(base, "alerts")["data"]["alerts"]]
    assert active == [], active
