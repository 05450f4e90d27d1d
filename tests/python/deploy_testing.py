"""Helpers shared by the deploy/ tests (test_deploy_*.py)."""

import importlib.machinery
import importlib.util
import re
import socket

import grpc

from conftest import ROOT

HEALTH_SCRIPT = ROOT / "deploy" / "image" / "gpuflow-health"


def load_health_script():
    """deploy/image/gpuflow-health as a module (the file has no .py suffix)."""
    loader = importlib.machinery.SourceFileLoader("gpuflow_health", str(HEALTH_SCRIPT))
    spec = importlib.util.spec_from_loader("gpuflow_health", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def health_status(channel, service):
    """grpc.health.v1 Check of `service`: SERVING, NOT_SERVING, ... or the
    gRPC code's name when the call fails (NOT_FOUND for an unknown service)."""
    health = load_health_script()
    check = channel.unary_unary("/grpc.health.v1.Health/Check")
    try:
        reply = check(health.encode_request(service), timeout=10)
    except grpc.RpcError as e:
        return e.code().name
    return health.STATUS_NAMES[health.decode_status(reply)]


def documented_metrics():
    """The metric names docs/metrics.md's table lists (gpuflow_...)."""
    text = (ROOT / "docs" / "metrics.md").read_text()
    names = set(re.findall(r"^\| `(gpuflow_[a-z0-9_]+)` \|", text, re.M))
    assert len(names) > 10, "could not read docs/metrics.md's table"
    return names


def metric_names_in(promql):
    """Base names of the gpuflow_ metrics a query reads (recording rules such
    as gpuflow:max_sessions are not metrics)."""
    names = set()
    for name in re.findall(r"\b(gpuflow_[a-z0-9_]+)", promql):
        names.add(re.sub(r"_(bucket|count|sum)$", "", name))
    return names


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
