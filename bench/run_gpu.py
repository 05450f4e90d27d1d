"""The issue 8 harness: gpuflow against CuPy and PyTorch on one GPU, and the
service against a bare gRPC floor, in one run. Use bench/run_gpu.sh OUTDIR
(it sets the environment and a time limit); directly:

    python3 bench/run_gpu.py --out OUTDIR [--bin-dir dist/bin] [--backend cuda] [--small]

Starts grpc_echo_server and gpuflowd (fresh kernel cache under OUTDIR/tmp),
then measures, each section on its own (a failure is recorded and the run
goes on), saving OUTDIR/results.json after each:
  latency, latency_phases (bench/latency_phases.py: where a small Execute's
  time goes), isolation (bench/isolation_bench.py: a tiny Execute beside
  another session's long matmuls), async (one Python client, 8 requests in
  flight, against one at a time), then kernels (bench/gpu_bench.py), then
  concurrency, transfers_cpp,
  transfers_python (bench/service_bench.py), then cache_warmup
  (bench/cache_warmup.py, fresh servers). The kernels stop starting new
  workloads --reserve seconds before the end of the budget.
Then bench/report.py writes results.md and ratios.png and appends a dated
section to RESULTS_section.md. Sections that would pass the time budget
are skipped, and say so.
"""

import argparse
import datetime
import json
import os
import platform
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import traceback

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)

import cache_warmup  # noqa: E402
import gpu_bench  # noqa: E402
import isolation_bench  # noqa: E402
import latency_phases  # noqa: E402
import report  # noqa: E402
import service_bench  # noqa: E402

import gpuflow  # noqa: E402
import numpy as np  # noqa: E402

SECTIONS = ("latency", "latency_phases", "isolation", "async", "kernels", "concurrency", "transfers_cpp", "transfers_shm",
            "transfers_ipc", "transfers_python", "cache_warmup")


def log(message):
    print(message, flush=True)


def command_output(cmd, cwd=ROOT):
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, cwd=cwd)
        return done.stdout.strip() if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def gpu_info():
    row = command_output(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                          "--format=csv,noheader"])
    if not row:
        return {"error": "nvidia-smi not found or failed"}
    name, driver, memory = (p.strip() for p in (row.splitlines()[0].split(",") + ["", ""])[:3])
    info = {"name": name, "driver": driver, "memory": memory, "count": len(row.splitlines())}
    m = re.search(r"CUDA Version:\s*([\d.]+)", command_output(["nvidia-smi"]) or "")
    if m:
        info["cuda_version"] = m.group(1)
    return info


def git_info():
    commit = command_output(["git", "rev-parse", "--short=12", "HEAD"])
    if commit is None:
        return {"commit": os.environ.get("GPUFLOW_COMMIT", "unknown"), "source": "GPUFLOW_COMMIT"}
    dirty = command_output(["git", "status", "--porcelain", "--untracked-files=no"])
    return {"commit": commit, "dirty": bool(dirty),
            "subject": command_output(["git", "log", "-1", "--format=%s"])}


def start_echo(binary, log_path):
    """grpc_echo_server on a free port; returns (process, port)."""
    log_file = open(log_path, "a")
    proc = subprocess.Popen([binary, "--port=0"], stdout=subprocess.PIPE, stderr=log_file, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    line = proc.stdout.readline().strip() if ready else ""
    if not line.isdigit():
        proc.kill()
        raise RuntimeError(f"grpc_echo_server did not print its port (got {line!r}); see {log_path}")
    return proc, int(line)


class Run:
    def __init__(self, args):
        self.args = args
        self.out = os.path.abspath(args.out)
        self.tmp = os.path.join(self.out, "tmp")
        shutil.rmtree(self.tmp, ignore_errors=True)
        os.makedirs(self.tmp)
        self.t0 = time.monotonic()
        self.end = self.t0 + args.budget
        self.procs = []
        self.results = {"meta": self.meta(), "sections": {}}
        self.save()

    def meta(self):
        a = self.args
        now = datetime.datetime.now(datetime.timezone.utc)
        import grpc

        return {
            "date": now.strftime("%Y-%m-%d"),
            "time_utc": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "git": git_info(),
            "gpu": gpu_info(),
            "host": {"name": platform.node(), "cpu_cores": os.cpu_count(), "os": platform.platform(),
                     "python": platform.python_version()},
            "versions": {"numpy": np.__version__, "grpcio": grpc.__version__},
            "backend": a.backend,
            "small": a.small,
            "bin_dir": a.bin_dir,
            "command": "bench/run_gpu.sh OUTDIR" + (" (SMALL=1)" if a.small else ""),
            "budget_s": a.budget,
        }

    def save(self):
        path = os.path.join(self.out, "results.json")
        with open(path + ".tmp", "w") as f:
            json.dump(self.results, f, indent=1, default=str)
        os.replace(path + ".tmp", path)

    def left(self):
        return self.end - time.monotonic()

    def section(self, name, need_s, fn):
        """Runs fn() as section `name` unless skipped or out of time."""
        sections = self.results["sections"]
        if name in self.args.skip:
            sections[name] = {"skipped": "--skip"}
        elif self.left() < need_s:
            sections[name] = {"skipped": f"time budget ({self.left():.0f} s left, needs ~{need_s} s)"}
        else:
            log(f"== {name} ({self.left():.0f} s of budget left)")
            t = time.monotonic()
            try:
                sections[name] = fn()
            except Exception as e:  # noqa: BLE001 - recorded, the run goes on
                traceback.print_exc()
                partial = sections.get(name)  # what the section saved before failing
                sections[name] = partial if isinstance(partial, dict) else {}
                sections[name]["error"] = gpu_bench.short_error(e)
            if isinstance(sections[name], dict):
                sections[name]["section_s"] = round(time.monotonic() - t, 2)
        if "skipped" in sections[name]:
            log(f"== {name}: skipped ({sections[name]['skipped']})")
        self.save()

    def binary(self, name):
        return os.path.join(self.args.bin_dir, name)

    def start_servers(self):
        self.echo_proc, echo_port = start_echo(self.binary("grpc_echo_server"),
                                               os.path.join(self.tmp, "echo.log"))
        self.procs.append(self.echo_proc)
        self.echo_target = f"localhost:{echo_port}"
        self.server_proc, port, start_s = cache_warmup.start_server(
            self.binary("gpuflowd"), self.args.backend, self.tmp, os.path.join(self.tmp, "kernels"),
            ("--max_session_memory_limit=64GiB", "--default_session_memory_limit=16GiB",
             "--max_array_bytes=32GiB", "--max_sessions=64", "--allow_shared_memory",
             "--allow_cuda_ipc", *self.args.server_flag))
        self.procs.append(self.server_proc)
        with open(os.path.join(self.tmp, "pids"), "w") as f:
            f.write(f"{self.echo_proc.pid}\n{self.server_proc.pid}\n")
        self.target = f"127.0.0.1:{port}"
        self.client = gpuflow.connect(self.target, timeout=30)
        info = self.client.info()
        self.results["meta"]["server"] = {"backend": info.backend, "device": info.device,
                                          "version": info.version, "start_s": start_s}
        log(f"gpuflowd {info.version} at {self.target}: {info.backend}, {info.device}; "
            f"echo at {self.echo_target}")
        if info.backend != self.args.backend:
            raise RuntimeError(f"asked for backend {self.args.backend}, server runs {info.backend}")
        self.session = self.client.session(label="run_gpu", memory_limit=64 << 30)
        self.echo = service_bench.EchoClient(self.echo_target, self.gen_dir)
        self.gen_dir = self.echo.gen_dir  # None when the stubs could not be made
        self.results["meta"]["echo_client"] = self.echo.mode
        self.save()

    def stop_main_server(self):
        for closing in (lambda: self.session.close(), lambda: self.client.close(),
                        lambda: self.echo.close()):
            try:
                closing()
            except Exception:  # noqa: BLE001
                pass
        for proc in self.procs:
            if proc.poll() is None:
                cache_warmup.stop_server(proc)
        self.procs = []

    def run(self):
        a = self.args
        plan = service_bench.default_plan(a.small)
        self.gen_dir = None if a.no_codegen else os.path.join(self.tmp, "echo_gen")
        self.start_servers()
        self.section("latency", 10, lambda: service_bench.measure_latency(
            self.session, self.echo, plan["latency_n"]))
        self.section("latency_phases", 10, lambda: latency_phases.measure(
            self.target, plan["latency_n"] // 4, 50))
        self.section("isolation", 20, lambda: isolation_bench.measure_isolation(
            self.target, plan["latency_n"] // 2, 256 if a.small else 8192, log=log))
        self.section("async", 10, lambda: service_bench.measure_async(
            self.session, plan["latency_n"] // 2))
        self.section("kernels", 60, self.kernels)
        self.section("concurrency", 40, lambda: service_bench.measure_concurrency(
            self.target, self.echo_target, plan["concurrency"], plan["duration"], self.gen_dir, log))
        self.section("transfers_cpp", 40, lambda: service_bench.cpp_transfers(
            self.binary("transfer_bench"), self.target, self.echo_target, plan["cpp_sizes"], log=log))
        self.section("transfers_python", 40, lambda: service_bench.python_transfers(
            self.session, self.echo, plan["py_sizes"], log=log))
        self.section("transfers_shm", 30, lambda: service_bench.shm_transfers(
            self.session, plan["shm_sizes"], log=log))
        self.section("transfers_ipc", 20, lambda: service_bench.ipc_transfers(
            self.session, plan["ipc_sizes"], log=log))
        self.stop_main_server()
        self.section("cache_warmup", 30, self.cache_warmup)

    def kernels(self):
        a = self.args
        tools = gpu_bench.Tools(not a.no_cupy, not a.no_torch, not a.no_compile)
        for note in tools.notes:
            log(note)
        self.results["meta"]["versions"].update(tools.versions())
        self.results["meta"]["tool_notes"] = tools.notes
        wls = gpu_bench.workloads(a.small)
        if a.only:
            wls = [w for w in wls if w.key in a.only.split(",")]
        out = {"workloads": {}}

        def partial(results):
            out["workloads"] = results
            self.results["sections"]["kernels"] = out
            self.save()

        # Leave time for the cache warm-up and the report.
        runner = gpu_bench.Runner(self.session, tools, small=a.small,
                                  deadline=self.end - a.reserve, log=log)
        out["workloads"] = runner.run_all(wls, on_result=partial)
        out["inputs_downloaded"] = runner.downloaded_inputs
        return out

    def cache_warmup(self):
        shape = (256, 256) if self.args.small else (4096, 4096)
        x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
        workdir = os.path.join(self.tmp, "warmup")
        os.makedirs(workdir, exist_ok=True)
        trial = cache_warmup.run_trial(self.binary("gpuflowd"), self.args.backend, x,
                                       self.args.warmup_repeats, workdir)
        trial["graph"] = f"softmax(axis=-1) float32 {shape}"
        return trial

    def close(self):
        self.stop_main_server()
        self.results["meta"]["wall_s"] = round(time.monotonic() - self.t0, 1)
        self.save()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    default_bin = os.path.join(ROOT, "dist", "bin")
    if not os.path.exists(os.path.join(default_bin, "gpuflowd")):
        default_bin = os.path.join(ROOT, "build", "bin")
    parser.add_argument("--bin-dir", default=default_bin)
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--small", action="store_true", help="tiny sizes, to try the harness")
    parser.add_argument("--budget", type=float, default=540, help="seconds for the whole run")
    parser.add_argument("--reserve", type=float, default=150,
                        help="seconds of the budget kept from the kernels for the sections after "
                             "them (a workload started before that point may overrun it)")
    parser.add_argument("--skip", default="", help=f"comma-separated sections of {SECTIONS}")
    parser.add_argument("--only", help="comma-separated kernel workload keys")
    parser.add_argument("--server-flag", action="append", default=[],
                        help="a flag for gpuflowd (repeatable), e.g. "
                             "--server-flag=--reduction_blocks_per_sm=8")
    parser.add_argument("--no-cupy", action="store_true")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--no-codegen", action="store_true", help="echo client without grpc_tools")
    parser.add_argument("--warmup-repeats", type=int, default=5)
    parser.add_argument("--no-section", action="store_true",
                        help="do not append to RESULTS_section.md")
    args = parser.parse_args()
    args.skip = [s for s in args.skip.split(",") if s]
    unknown = set(args.skip) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}")

    def on_term(signum, frame):
        raise SystemExit(f"stopped by signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    run = Run(args)
    status = 0
    try:
        run.run()
    except BaseException as e:  # noqa: BLE001 - the report is written whatever happened
        traceback.print_exc()
        run.results["error"] = gpu_bench.short_error(e)
        status = 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        run.close()
        report.write_all(run.out, run.results, append_section=not args.no_section)
        log(f"wrote {run.out}/results.json, results.md, ratios.png (if matplotlib), "
            f"RESULTS_section.md in {run.results['meta']['wall_s']} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
