"""A real Prometheus for the tests that check what it scrapes and evaluates
(test_observability.py, test_deploy_dashboard.py)."""

import contextlib
import shutil
import socket
import subprocess

import pytest


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def real_prometheus(tmp, job, metrics_port, rule_files=(), evaluation_interval=None):
    """Runs Prometheus scraping 127.0.0.1:metrics_port every 200 ms as `job`
    (skips the test when it is not installed); yields (its base URL, the
    process, its log path) and stops it afterwards."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus not installed (Debian package prometheus; scripts/install_deps.sh)")
    web_port = _free_port()
    config = tmp / "prometheus.yml"
    text = "global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\n"
    if evaluation_interval is not None:
        text += f"  evaluation_interval: {evaluation_interval}\n"
    if rule_files:
        text += "rule_files: [" + ", ".join(f"'{f}'" for f in rule_files) + "]\n"
    text += (f"scrape_configs:\n  - job_name: {job}\n    static_configs:\n"
             f"      - targets: ['127.0.0.1:{metrics_port}']\n")
    config.write_text(text)
    log_path = tmp / "prometheus.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp / 'data'}",
         f"--web.listen-address=127.0.0.1:{web_port}", "--log.level=warn"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        yield f"http://127.0.0.1:{web_port}", proc, log_path
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
