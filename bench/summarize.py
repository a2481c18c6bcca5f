"""Reads the raw outputs of bench/run.sh (results/bench/) and prints the measured ratios against
the performance targets, medians throughout.

    python bench/summarize.py compare DIR   # cedar vs PyTorch DDP step times -> DIR/compare.json
    python bench/summarize.py summary DIR   # every target -> stdout and DIR/summary.md

Inputs in DIR: compressors.json (Google Benchmark, repetitions with median aggregates),
comm.csv (bench/comm_bench), step_<model>.csv (bench/step_bench), cedar_steps.db (cedar run, the
trainer's per-step compute + communication seconds), ddp.json (bench/ddp_step.py).
"""
import json
import os
import sqlite3
import statistics
import sys


def load_gbench(path):
    """run_name -> median aggregate row (times in ms, bytes_per_second)."""
    with open(path) as f:
        data = json.load(f)
    single, median = {}, {}
    for b in data["benchmarks"]:
        name = b.get("run_name", b["name"]).replace("/real_time", "")
        if b.get("run_type") != "aggregate":
            single.setdefault(name, b)
        elif b.get("aggregate_name") == "median":
            median[name] = b
    out = dict(single)
    out.update(median)
    return out


def cedar_step_medians(db, warmup):
    """algorithm -> (median step seconds, parameters, threads, world size) of the latest run."""
    con = sqlite3.connect(db)
    out = {}
    for run_id, algo, params, threads, world in con.execute(
            "SELECT id, algorithm, parameters, threads, world_size FROM runs "
            "WHERE status = 'completed' ORDER BY id"):
        rows = [r[0] for r in con.execute(
            "SELECT compute_seconds + comm_seconds FROM steps WHERE run_id = ? AND step >= ? "
            "ORDER BY step", (run_id, warmup))]
        if rows:
            out[algo] = {"median_s": statistics.median(rows), "steps": len(rows),
                         "parameters": params, "threads": threads, "ranks": world}
    return out


def compare(d):
    with open(os.path.join(d, "ddp.json")) as f:
        ddp = json.load(f)
    warmup = ddp["warmup"]
    cedar = cedar_step_medians(os.path.join(d, "cedar_steps.db"), warmup)
    problems = []
    for algo in ("dense", "powersgd"):
        if algo not in cedar:
            problems.append(f"no completed cedar run of {algo} in cedar_steps.db")
            continue
        c = cedar[algo]
        if c["parameters"] != ddp["parameters"]:
            problems.append(f"parameter counts differ: cedar {c['parameters']}, "
                            f"PyTorch {ddp['parameters']}")
        if c["threads"] != ddp["threads"] or c["ranks"] != ddp["ranks"]:
            problems.append(f"cedar {algo} ran {c['ranks']} ranks x {c['threads']} threads, "
                            f"PyTorch {ddp['ranks']} x {ddp['threads']}")
    if problems:
        sys.exit("compare: " + "; ".join(sorted(set(problems))))
    rows = []
    for algo, ref in (("dense", "ddp"), ("powersgd", "ddp_powersgd")):
        c, p = cedar[algo]["median_s"], ddp[ref]["median_s"]
        rows.append({"cedar": algo, "pytorch": ref, "cedar_s": c, "pytorch_s": p,
                     "ratio": c / p})
    result = {"parameters": ddp["parameters"], "ranks": ddp["ranks"], "threads": ddp["threads"],
              "batch": ddp["batch"], "warmup": warmup, "steps": ddp["steps"], "rows": rows}
    with open(os.path.join(d, "compare.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(f"ResNet-20, {ddp['parameters']} parameters on both sides, {ddp['ranks']} ranks x "
          f"{ddp['threads']} thread, batch {ddp['batch']} per rank, median of {ddp['steps']} steps "
          f"after {warmup}")
    print(f"{'cedar':10s} {'ms':>8s}   {'PyTorch':14s} {'ms':>8s}   cedar/PyTorch")
    for r in rows:
        print(f"{r['cedar']:10s} {1e3 * r['cedar_s']:8.1f}   {r['pytorch']:14s} "
              f"{1e3 * r['pytorch_s']:8.1f}   {r['ratio']:.3f}")


def verdict(ok):
    return "met" if ok else "MISSED"


def summary(d):
    lines = []
    out = lines.append
    gb = load_gbench(os.path.join(d, "compressors.json"))

    def ms(name):
        return gb[name]["real_time"] if name in gb else float("nan")

    def gbps(name):
        return gb[name]["bytes_per_second"] / 1e9 if name in gb else float("nan")

    sizes = sorted({int(k.split("/")[-1]) for k in gb if k.startswith("memory_pass/")})
    big = max(sizes)
    out("## Targets (medians)")
    out("")
    out("| target | measured | ratio | goal | verdict |")
    out("|---|---|---|---|---|")
    sel, mem, topk, topk_abs = (ms(f"dgc_select/{big}"), ms(f"memory_pass/{big}"),
                                ms(f"torch_topk/{big}"), ms(f"torch_topk_abs/{big}"))
    n = f"{big / 1e6:g}M"
    out(f"| DGC selection, 0.1% of {n} vs memory pass | {sel:.1f} ms vs {mem:.1f} ms | "
        f"{sel / mem:.2f}x | <= 3x | {verdict(sel / mem <= 3)} |")
    out(f"| DGC selection vs torch::topk(v, k), {n} | {sel:.1f} ms vs {topk:.1f} ms | "
        f"{topk / sel:.1f}x faster | >= 5x | {verdict(topk / sel >= 5)} |")
    out(f"| DGC selection vs torch::topk(abs(v), k), {n} | {sel:.1f} ms vs {topk_abs:.1f} ms | "
        f"{topk_abs / sel:.1f}x faster | >= 5x | {verdict(topk_abs / sel >= 5)} |")
    for label, name in (("QSGD 4-bit codec", "codec/qsgd"), ("TernGrad (one rank)", "reduce/terngrad"),
                        ("signSGD sign codec", "codec/sign")):
        for s in sizes:
            r = gbps(f"{name}/{s}") / gbps(f"memory_pass/{s}")
            out(f"| {label}, {s / 1e6:g}M | {gbps(f'{name}/{s}'):.2f} vs "
                f"{gbps(f'memory_pass/{s}'):.2f} GB/s | {r:.2f} | >= 0.50 | {verdict(r >= 0.5)} |")

    comm_path = os.path.join(d, "comm.csv")
    if os.path.exists(comm_path):
        import csv
        with open(comm_path) as f:
            rows = list(csv.DictReader(f))
        by = {(r["op"], r["path"], int(r["bytes"])): r for r in rows}
        for (op, path, size), r in sorted(by.items()):
            if op != "allreduce" or path != "cedar" or size < (1 << 20):
                continue
            c = float(r["busbw_gbps"])
            m = float(by[(op, "mpi", size)]["busbw_gbps"])
            out(f"| allreduce busbw, {size >> 20} MiB, cedar vs MPI_Allreduce | {c:.3f} vs "
                f"{m:.3f} GB/s | {c / m:.3f} | >= 0.95 | {verdict(c / m >= 0.95)} |")

    cmp_path = os.path.join(d, "compare.json")
    if os.path.exists(cmp_path):
        with open(cmp_path) as f:
            cmp = json.load(f)
        for r in cmp["rows"]:
            out(f"| step time, cedar {r['cedar']} vs PyTorch {r['pytorch']} (ResNet-20) | "
                f"{1e3 * r['cedar_s']:.1f} vs {1e3 * r['pytorch_s']:.1f} ms | {r['ratio']:.3f} | "
                f"<= 1 | {verdict(r['ratio'] <= 1)} |")

    out("")
    out("## Compressor throughput, one thread (GB/s of fp32 gradient, median)")
    out("")
    out("| benchmark | " + " | ".join(f"{s / 1e6:g}M" for s in sizes) + " |")
    out("|---|" + "---|" * len(sizes))
    names = sorted({k.rsplit("/", 1)[0] for k in gb}, key=lambda k: (
        0 if k == "memory_pass" else 1 if k.startswith("codec/") else 2 if k.startswith("reduce/")
        else 3, k))
    for name in names:
        out(f"| {name} | " + " | ".join(f"{gbps(f'{name}/{s}'):.3f}" for s in sizes) + " |")

    for f in sorted(os.listdir(d)):
        if f.startswith("step_") and f.endswith(".csv"):
            import csv
            with open(os.path.join(d, f)) as fh:
                rows = list(csv.DictReader(fh))
            if not rows:
                continue
            r0 = rows[0]
            out("")
            out(f"## One training step, {r0['model']}, batch {r0['batch']} per rank, "
                f"{r0['ranks']} ranks x {r0['threads']} thread (median ms)")
            out("")
            out("| algorithm | step | compute | compress | communicate | MB sent per rank |")
            out("|---|---|---|---|---|---|")
            for r in rows:
                out(f"| {r['algorithm']} | {1e3 * float(r['step_s']):.1f} | "
                    f"{1e3 * float(r['compute_s']):.1f} | {1e3 * float(r['compress_s']):.1f} | "
                    f"{1e3 * float(r['comm_s']):.1f} | {float(r['payload_bytes']) / 1e6:.3f} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write(text)
    print(text, end="")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("compare", "summary"):
        sys.exit(__doc__)
    {"compare": compare, "summary": summary}[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
