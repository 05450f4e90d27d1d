"""Renders a harness run (OUTDIR/results.json, from bench/run_gpu.py):
OUTDIR/results.md (Markdown tables), OUTDIR/ratios.png (GPU-time ratios
gpuflow/CuPy and gpuflow/torch.compile; needs matplotlib, skipped with a
note otherwise) and, once per run, a dated section appended to
OUTDIR/RESULTS_section.md, to paste into bench/RESULTS.md.

    python3 bench/report.py OUTDIR [--append-section]
"""

import argparse
import json
import os
import sys


def ms(v):
    if v is None:
        return "—"
    if v < 0.1:
        return f"{v * 1e3:.1f} µs"
    return f"{v:.3f} ms" if v < 100 else f"{v:.1f} ms"


def us(v):
    return "—" if v is None else f"{v:.0f}"


def ratio(v):
    return "—" if v is None else f"{v:.2f} ×"


def gbps(v):
    return "—" if v is None else f"{v:.2f}"


def size_label(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# ------------------------------------------------------------------ kernels


def time_of(r):
    """GPU time of a variant result, ms (None unless measured and checked)."""
    if not isinstance(r, dict) or "error" in r or "skipped" in r:
        return None
    return r.get("gpu_ms")


def summarize(w):
    """The row's figures: gpuflow's first variant, CuPy's fastest."""
    gf_name, gf = next(iter((w.get("gpuflow") or {"—": {}}).items()))
    cupy = {k: v for k, v in (w.get("cupy") or {}).items() if time_of(v) is not None}
    cupy_name = min(cupy, key=lambda k: cupy[k]["gpu_ms"]) if cupy else None
    torch = w.get("torch") or {}
    s = {
        "gpuflow_variant": gf_name,
        "gpuflow": gf,
        "gpuflow_ms": time_of(gf),
        "cupy_variant": cupy_name,
        "cupy_ms": cupy[cupy_name]["gpu_ms"] if cupy_name else None,
        "torch_eager_ms": time_of(torch.get("eager")),
        "torch_compile_ms": time_of(torch.get("compile")),
    }
    g = s["gpuflow_ms"]
    for key in ("cupy", "torch_eager", "torch_compile"):
        other = s[f"{key}_ms"]
        s[f"ratio_{key}"] = g / other if g and other else None
    return s


def gpuflow_cell(gf, field="gpu_ms"):
    if not gf:
        return "—"
    if "skipped" in gf:
        return "skipped"
    if "error" in gf:
        return "**check failed**" if gf["error"].startswith("AssertionError") else "**error**"
    return ms(gf.get(field))


def kernel_rows(workloads):
    rows = []
    for key, w in workloads.items():
        if "skipped" in w or "error" in w:
            why = w.get("skipped") or w.get("error")
            rows.append([w.get("label", key), f"{'skipped' if 'skipped' in w else '**error**'}: "
                         f"{why[:80]}"] + ["—"] * 8)
            continue
        s = summarize(w)
        gf = s["gpuflow"]
        speed = "—"
        if gf.get("tflops"):
            speed = f"{gf['tflops']:.3g} TFLOP/s"
        elif gf.get("effective_tbps"):
            speed = f"{gf['effective_tbps']:.3g} TB/s"
        wall = "—"
        if gf.get("wall_p50_ms") is not None:
            wall = f"{ms(gf['wall_p50_ms'])} / {ms(gf['wall_p99_ms'])} ({gf['wall_n']})"
        cupy = "—" if s["cupy_ms"] is None else f"{ms(s['cupy_ms'])} ({s['cupy_variant']})"
        rows.append([
            w["label"] + ("" if s["gpuflow_variant"] in ("graph", "—") else f" [{s['gpuflow_variant']}]"),
            gpuflow_cell(gf), gpuflow_cell(gf, "host_ms"), wall, cupy, ms(s["torch_eager_ms"]),
            ms(s["torch_compile_ms"]), ratio(s["ratio_cupy"]), ratio(s["ratio_torch_compile"]), speed,
        ])
    return rows


KERNEL_HEADER = ["workload (float32 unless said)", "gpuflow GPU", "gpuflow server host",
                 "Execute wall p50 / p99 (calls)", "CuPy (fastest form)", "torch eager",
                 "torch.compile", "gpuflow / CuPy", "gpuflow / torch.compile", "gpuflow rate"]


def variant_notes(workloads):
    """Every variant's figure, first-call cost and error, one line each."""
    lines = []
    for key, w in workloads.items():
        if "skipped" in w or "error" in w:
            lines.append(f"- {w.get('label', key)}: {'skipped' if 'skipped' in w else 'error'}: "
                         f"{w.get('skipped') or w.get('error')}")
            continue
        parts = []
        for tool in ("gpuflow", "cupy", "torch"):
            for name, r in (w.get(tool) or {}).items():
                if not isinstance(r, dict):
                    continue
                if "error" in r:
                    text = f"error: {r['error'][:160]}"
                elif "skipped" in r:
                    text = f"skipped ({r['skipped'][:80]})"
                else:
                    t = r.get("gpu_ms")
                    text = ms(t) if t is not None else f"host {ms(r.get('host_ms'))}"
                    first = r.get("first_compile_s", r.get("first_call_s"))
                    if first:
                        text += f", first call {first:.2f} s"
                    check = r.get("check") or {}
                    err = check.get("max_rel_err", check.get("max_abs_err"))
                    if err is not None:
                        text += f", max err {err:.1e}"
                parts.append(f"{tool} {name}: {text}")
        if "setup_s" in w:
            parts.append(f"setup {w['setup_s']:.1f} s, total {w.get('total_s', 0):.1f} s")
        lines.append(f"- {w.get('label', key)}: " + "; ".join(parts))
    return "\n".join(lines)


# ------------------------------------------------------------------ service


def latency_section(lat):
    floor = lat.get("echo_unary_64B", {}).get("p50_us")
    rows = []
    for key, label in (("echo_unary_64B", "bare gRPC echo, unary 64 B (floor)"),
                       ("gpuflow_keepalive", "gpuflow KeepAlive"),
                       ("gpuflow_tiny_execute", "gpuflow Execute `x + 1`, 16 floats resident, output stored")):
        r = lat.get(key)
        if not r:
            continue
        rel = ratio(r["p50_us"] / floor) if floor else "—"
        extra = f" (server's own total p50 {r['server_total_p50_us']:.0f} µs)" if "server_total_p50_us" in r else ""
        rows.append([label + extra, us(r["p50_us"]), us(r["p99_us"]), r["n"], rel])
    return table(["call (one client, in a loop)", "p50 µs", "p99 µs", "calls", "p50 / floor"], rows)


def latency_phases_section(lp):
    rows = []
    for key, label in (("keepalive_raw", "KeepAlive, raw stub (the floor for our own server)"),
                       ("execute_raw", "Execute of a prebuilt 10-op chain, raw stub, 16 KiB inline"),
                       ("execute_raw_bytes", "the same request serialised once, sent as bytes"),
                       ("execute_session", "the same graph through `Session.execute`"),
                       ("execute_raw_prepared", "the same graph prepared, by handle, raw stub"),
                       ("remote_array_get", "the same expression as RemoteArrays, `.get()`"),
                       ("remote_array_get_prebuilt", "`.get()` of one prebuilt expression"),
                       ("fused_get", "a `gpuflow.fuse` of the chain, `.get()`")):
        r = lp.get(key)
        if r:
            rows.append([label, us(r["p50_us"]), us(r["p99_us"]), r["n"]])
    text = table(["call (one client, in a loop)", "p50 µs", "p99 µs", "calls"], rows)
    for key, what in (("server_phases", "the raw-stub Execute"),
                      ("server_phases_prepared", "the Execute by handle")):
        phases = lp.get(key, {})
        if phases:
            text += (f"\n\nThe server's own `Timings` of {what}, p50 µs: " + ", ".join(
                f"{k.replace('_p50_us', '')} {v:.1f}" for k, v in phases.items()) + ".")
    if "execute_raw_minus_keepalive_us" in lp:
        text += f" Raw Execute − KeepAlive: {lp['execute_raw_minus_keepalive_us']:.0f} µs."
    if "execute_raw_bytes_minus_keepalive_us" in lp:
        text += (" Sent as bytes − KeepAlive: "
                 f"{lp['execute_raw_bytes_minus_keepalive_us']:.0f} µs.")
    if "get_minus_raw_us" in lp:
        text += f" RemoteArray `.get()` − raw Execute: {lp['get_minus_raw_us']:.0f} µs."
    return text


def shm_section(shm):
    """Rows of service_bench.shm_transfers: GB/s each way per path."""
    rows = []
    for r in shm.get("sizes", []):
        if "error" in r:
            rows.append([size_label(r['bytes']), r["error"], "", "", "", "", "", ""])
            continue
        rows.append([size_label(r['bytes']), f"{r['memcpy_gbps']:.1f}",
                     f"{r['grpc_upload_gbps']:.2f}", f"{r['grpc_download_gbps']:.2f}",
                     f"{r['shm_upload_gbps']:.2f}", f"{r['shm_download_gbps']:.2f}",
                     f"{r['region_upload_gbps']:.2f}", f"{r['region_download_gbps']:.2f}"])
    return table(["size", "memcpy GB/s (floor)", "gRPC up", "gRPC down", "shm up (staged copy)",
                  "shm down (staged copy)", "region up (data in place)", "region down"], rows)


def ipc_section(ipc):
    """Rows of service_bench.ipc_transfers: GB/s each way per path."""
    if "skipped" in ipc:
        return f"Skipped: {ipc['skipped']}"
    rows = []
    for r in ipc.get("sizes", []):
        if "error" in r:
            rows.append([size_label(r["bytes"]), r["error"], "", "", "", "", ""])
            continue
        rows.append([size_label(r["bytes"]), f"{r['d2d_gbps']:.0f}", f"{r['asarray_gbps']:.0f}",
                     f"{r['to_torch_gbps']:.0f}", f"{r['region_upload_gbps']:.0f}",
                     f"{r['region_download_gbps']:.0f}", f"{r['register_us']:.0f}"])
    return table(["size", "torch device copy GB/s (floor)", "gf.asarray(tensor)",
                  "gf.to_torch(x, 'cuda')", "region up (tensor registered)", "region down",
                  "register µs"], rows)


def isolation_section(iso):
    rows = []
    for key, label in (("alone", "alone"), ("under_load", f"beside a loop of {iso.get('matmul')}")):
        r = iso.get(key)
        if r:
            rows.append([label, us(r["p50_us"]), us(r["p99_us"]), r["n"]])
    text = table(["tiny Execute of one session", "p50 µs", "p99 µs", "calls"], rows)
    if iso.get("matmuls_during") is not None:
        text += (f"\n\n{iso['matmuls_during']} matmuls ran meanwhile (p50 "
                 f"{iso.get('matmul_p50_ms') or float('nan'):.1f} ms each); p50 under load / alone "
                 f"{ratio(iso.get('ratio_p50'))}.")
    return text


def async_section(a):
    return table(["one Python client, tiny Execute", "req/s"], [
        ["one call at a time (`Session.execute`)", f"{a['sync_rps']:.0f}"],
        [f"{a['in_flight']} in flight (`Session.execute_async`)", f"{a['async_rps']:.0f}"],
    ]) + f"\n\nIn flight / one at a time: {ratio(a.get('ratio'))} ({a['n']} calls each)."


def concurrency_section(conc):
    rows = []
    for row in conc.get("rounds", []):
        e, g = row.get("echo", {}), row.get("gpuflow", {})
        rows.append([
            row["clients"],
            f"{e['requests_per_s']:.0f}" if "requests_per_s" in e else f"error: {e.get('error', '')[:60]}",
            f"{g['requests_per_s']:.0f}" if "requests_per_s" in g else f"error: {g.get('error', '')[:60]}",
            ratio(row.get("ratio")),
            f"{us(g.get('p50_us'))} / {us(g.get('p99_us'))}",
            f"{us(e.get('p50_us'))} / {us(e.get('p99_us'))}",
        ])
    head = (f"Each client a process, calling in a loop for {conc.get('duration_s')} s "
            f"({conc.get('cpu_cores')} CPU cores shared by clients and servers).\n\n")
    return head + table(["clients", "echo req/s (floor)", "gpuflow tiny Execute req/s", "gpuflow / echo",
                         "gpuflow p50 / p99 µs", "echo p50 / p99 µs"], rows)


def transfer_rows(section):
    rows = []
    for r in section.get("sizes", []):
        if "error" in r and "upload" not in r:
            rows.append([size_label(r["bytes"]), f"error: {r['error'][:100]}"] + ["—"] * 5)
            continue
        row = [size_label(r["bytes"])]
        for d in ("upload", "download"):
            x = r.get(d, {})
            row += [gbps(x.get("gpuflow_gbps")), gbps(x.get("echo_gbps")), ratio(x.get("ratio"))]
        rows.append(row)
    return rows


TRANSFER_HEADER = ["array", "upload gpuflow GB/s", "upload floor GB/s", "ratio",
                   "download gpuflow GB/s", "download floor GB/s", "ratio"]


def warmup_section(trial):
    rows = []
    for phase in ("cold", "disk_warm", "precompiled"):
        r = trial.get(phase)
        if not r:
            continue
        rows.append([phase, f"{r['first_wall_ms']:.2f}", f"{r['first_server_ms']:.2f}",
                     f"{r['first_compile_ms']:.2f}", f"{r['warm_wall_ms']:.3f}",
                     f"{r['first_wall_ms'] - r['warm_wall_ms']:.2f}", f"{r['start_to_serving_ms']:.0f}"])
    return (f"{trial.get('graph', 'softmax')}, one trial, fresh kernel cache directory, a new "
            "gpuflowd per phase.\n\n" + table(
                ["phase", "first Execute wall ms", "first server total ms", "compile in first ms",
                 "memory-warm wall ms (median)", "first - warm ms", "start to serving ms"], rows))


# ---------------------------------------------------------------- rendering


def header_lines(results):
    m = results.get("meta", {})
    gpu = m.get("gpu", {})
    git = m.get("git", {})
    server = m.get("server", {})
    versions = m.get("versions", {})
    host = m.get("host", {})
    tools = ", ".join(f"{k} {versions[k]}" for k in ("cupy", "torch", "numpy", "grpcio") if k in versions)
    lines = [
        f"Command: `{m.get('command', 'bench/run_gpu.sh OUTDIR')}` on {host.get('name', '?')} "
        f"({host.get('cpu_cores', '?')} CPU cores, Python {host.get('python', '?')}), "
        f"commit {git.get('commit', '?')}{' (with uncommitted changes)' if git.get('dirty') else ''}, "
        f"{m.get('time_utc', m.get('date', '?'))}, wall time {m.get('wall_s', '?')} s.",
        f"GPU: {gpu.get('name', gpu.get('error', '?'))}, driver {gpu.get('driver', '?')}, "
        f"CUDA {gpu.get('cuda_version', '?')} (nvidia-smi); gpuflowd {server.get('version', '?')} "
        f"with the {server.get('backend', m.get('backend', '?'))} backend ({server.get('device', '?')}); "
        f"{tools}.",
    ]
    for note in m.get("tool_notes", []):
        lines.append(f"Note: {note}")
    if results.get("error"):
        lines.append(f"**The run stopped early**: {results['error']}")
    return "\n".join(lines)


def render_body(results, level="###"):
    sections = results.get("sections", {})
    parts = []

    def add(title, key, render):
        s = sections.get(key)
        if s is None:
            return
        parts.append(f"{level} {title}\n")
        if "skipped" in s:
            parts.append(f"Skipped: {s['skipped']}\n")
        elif "error" in s and len(s) <= 2:
            parts.append(f"**Error**: {s['error']}\n")
        else:
            if "error" in s:
                parts.append(f"**The section stopped early**: {s['error']}\n")
            parts.append(render(s) + "\n")

    def kernels(s):
        w = s.get("workloads", {})
        text = ("GPU times are medians of CUDA events (gpuflow: the server's Benchmark RPC; CuPy: "
                "cupyx.profiler.benchmark; PyTorch: torch.cuda.Event), each result checked against "
                "a float64 reference first. Ratios below 1 mean gpuflow is faster. Server host: "
                "host time per Benchmark repeat. Execute wall: the Python client's whole Execute, "
                "output stored in the session.\n\n")
        return text + table(KERNEL_HEADER, kernel_rows(w)) + "\n\nEvery form measured:\n\n" + variant_notes(w)

    add("Kernels: gpuflow, CuPy, PyTorch on the same GPU", "kernels", kernels)
    add("Round-trip latency against the gRPC floor", "latency", latency_section)
    add("Where a small Execute's time goes (bench/latency_phases.py)", "latency_phases",
        latency_phases_section)
    add("Isolation: a tiny Execute beside another session's long matmuls", "isolation",
        isolation_section)
    add("One client with requests in flight", "async", async_section)
    add("Throughput with concurrent clients", "concurrency", concurrency_section)
    add("Transfers, C++ client (bench/transfer_bench), 1 MiB chunks", "transfers_cpp",
        lambda s: table(TRANSFER_HEADER, transfer_rows(s)))
    add("Transfers, Python client (gpuflow client; echo client written the same way), 1 MiB chunks",
        "transfers_python", lambda s: table(TRANSFER_HEADER, transfer_rows(s)))
    add("Same-host transfers: shared memory beside gRPC and memcpy (Python client)",
        "transfers_shm", shm_section)
    add("Same-GPU transfers: CUDA IPC beside a device copy (Python client, PyTorch tensors)",
        "transfers_ipc", ipc_section)
    add("First request on a fresh server: cold and warm kernel cache", "cache_warmup", warmup_section)
    return "\n".join(parts)


def plot_ratios(results, path):
    """ratios.png; returns a note when there is nothing to draw or no matplotlib."""
    workloads = results.get("sections", {}).get("kernels", {}).get("workloads", {})
    labels, cupy, compiled = [], [], []
    for w in workloads.values():
        if "label" not in w or "skipped" in w or "error" in w:
            continue
        s = summarize(w)
        if s["ratio_cupy"] is None and s["ratio_torch_compile"] is None:
            continue
        labels.append(w["label"])
        cupy.append(s["ratio_cupy"])
        compiled.append(s["ratio_torch_compile"])
    if not labels:
        return "ratios.png not drawn: no workload has a CuPy or torch.compile figure."
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        return f"ratios.png not drawn: matplotlib is not available ({type(e).__name__})."
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(labels) + 2), 5.5))
    x = range(len(labels))
    width = 0.38
    for offset, values, name, color in ((-width / 2, cupy, "gpuflow / CuPy", "#4c72b0"),
                                        (width / 2, compiled, "gpuflow / torch.compile", "#dd8452")):
        xs = [i + offset for i, v in zip(x, values) if v is not None]
        vs = [v for v in values if v is not None]
        bars = ax.bar(xs, vs, width, label=name, color=color)
        for bar, v in zip(bars, vs):
            ax.annotate(f"{v:.2f}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=7)
    values = [v for v in cupy + compiled if v]
    if values and max(values) / min(values) > 20:
        ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("GPU-time ratio (below 1: gpuflow faster)")
    m = results.get("meta", {})
    ax.set_title(f"gpuflow GPU time / other tool, {m.get('gpu', {}).get('name', '?')}, "
                 f"{m.get('date', '')}, commit {m.get('git', {}).get('commit', '?')}", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def write_all(out, results=None, append_section=False):
    if results is None:
        with open(os.path.join(out, "results.json")) as f:
            results = json.load(f)
    m = results.get("meta", {})
    note = plot_ratios(results, os.path.join(out, "ratios.png"))
    if note:
        print(note, flush=True)
    body = render_body(results)
    head = header_lines(results)
    extra = f"\n{note}\n" if note else "\n![GPU-time ratios](ratios.png)\n"
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(f"# gpuflow benchmark harness, {m.get('date', '?')}\n\n{head}\n{extra}\n{body}")
    marker = os.path.join(out, "tmp", "section.done")
    if append_section and not os.path.exists(marker):
        gpu = m.get("gpu", {})
        title = (f"## {m.get('date', '?')} — bench/run_gpu.sh, {gpu.get('name', m.get('backend', '?'))} "
                 f"(driver {gpu.get('driver', '?')}, CUDA {gpu.get('cuda_version', '?')})")
        with open(os.path.join(out, "RESULTS_section.md"), "a") as f:
            f.write(f"{title}\n\n{head}\n\n{render_body(results, level='###')}\n")
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        open(marker, "w").close()
    return note


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--append-section", action="store_true",
                        help="append to RESULTS_section.md unless this run already did")
    args = parser.parse_args()
    write_all(args.out, append_section=args.append_section)
    print(f"wrote {args.out}/results.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
