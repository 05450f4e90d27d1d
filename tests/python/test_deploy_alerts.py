"""deploy/prometheus/rules.yaml: promtool accepts it, its unit tests
(rules_test.yaml) pass, every alert is tested both firing and quiet, reads
only metrics gpuflowd exports, and is what prometheusrule.sh wraps for the
Prometheus Operator. (test_deploy_dashboard.py also loads the rules into a
real Prometheus scraping a real gpuflowd and checks that each evaluates.)
"""

import shutil
import subprocess

import pytest

yaml = pytest.importorskip("yaml", reason="python3-yaml (scripts/install_deps.sh)")

from conftest import ROOT  # noqa: E402
from deploy_testing import documented_metrics, metric_names_in  # noqa: E402

RULES_DIR = ROOT / "deploy" / "prometheus"
RULES = RULES_DIR / "rules.yaml"
RULES_TEST = RULES_DIR / "rules_test.yaml"
# What issue 17 asks the alerts to cover, by the alerts that do.
COVERAGE = {
    "device unhealthy": {"GpuflowDeviceUnhealthy"},
    "error ratio": {"GpuflowErrorRatioHigh"},
    "p99 latency": {"GpuflowControlLatencyHigh", "GpuflowExecuteLatencyHigh"},
    "memory pool near full": {"GpuflowMemoryPoolNearFull", "GpuflowDeviceMemoryLow"},
    "compile storms": {"GpuflowCompileStorm"},
    "sessions near the limit": {"GpuflowSessionsNearLimit", "GpuflowSessionsRefused"},
    "scrape absent": {"GpuflowTargetDown", "GpuflowMetricsAbsent"},
}


def promtool():
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool not installed (Debian package prometheus; scripts/install_deps.sh)")
    return path


def alerts():
    rules = yaml.safe_load(RULES.read_text())
    return {r["alert"]: r for g in rules["groups"] for r in g["rules"] if "alert" in r}


def test_promtool_checks_the_rules():
    run = subprocess.run([promtool(), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    count = sum(len(g["rules"]) for g in yaml.safe_load(RULES.read_text())["groups"])
    assert f"SUCCESS: {count} rules found" in run.stdout


def test_promtool_unit_tests_pass():
    run = subprocess.run([promtool(), "test", "rules", str(RULES_TEST)], capture_output=True,
                         text=True, cwd=RULES_DIR)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout


def test_every_alert_is_tested_firing_and_quiet():
    fired, quiet = set(), set()
    for test in yaml.safe_load(RULES_TEST.read_text())["tests"]:
        for case in test.get("alert_rule_test", []):
            (fired if case.get("exp_alerts") else quiet).add(case["alertname"])
    assert fired == set(alerts()), "alerts never tested firing: " + str(set(alerts()) - fired)
    assert quiet == set(alerts()), "alerts never tested quiet: " + str(set(alerts()) - quiet)


def test_alerts_cover_what_the_issue_asks():
    assert set().union(*COVERAGE.values()) == set(alerts())


def test_alerts_read_exported_metrics_of_the_gpuflow_job():
    exported = documented_metrics()
    for name, rule in alerts().items():
        used = metric_names_in(rule["expr"])
        assert used <= exported, f"{name}: {used - exported} is not in docs/metrics.md"
        assert 'job="gpuflow"' in rule["expr"], name
        assert rule["labels"]["severity"] in ("critical", "warning"), name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name


def test_prometheusrule_wraps_the_rules():
    run = subprocess.run(["sh", str(RULES_DIR / "prometheusrule.sh")], capture_output=True,
                         text=True, check=True, env={"PATH": "/usr/bin:/bin",
                                                     "RULE_LABELS": "release: prometheus"})
    rule = yaml.safe_load(run.stdout)
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
    assert rule["metadata"]["labels"] == {"app.kubernetes.io/name": "gpuflow", "release": "prometheus"}
    assert rule["spec"] == yaml.safe_load(RULES.read_text())
