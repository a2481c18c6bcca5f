"""Reads the raw outputs of bench/run.sh (results/bench/) and prints the measured ratios against
the performance targets, medians throughout.

    python bench/summarize.py compare DIR   # cedar vs PyTorch DDP step times -> DIR/compare.json
    python bench/summarize.py summary DIR   # every target -> stdout and DIR/summary.md

Inputs in DIR: compressors.json (Google Benchmark, repetitions with median aggregates),
comm.csv (bench/comm_bench), step_<model>.csv (bench/step_bench), cedar_steps.db (cedar run, the
trainer's per-step compute + communication seconds), ddp-*.json (bench/ddp_step.py).
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


def cedar_step_times(db, warmup):
    """algorithm -> step seconds (compute + communication, steps >= warmup) pooled over every
    completed run, with the runs' parameter count, threads and world size."""
    con = sqlite3.connect(db)
    out = {}
    for run_id, algo, params, threads, world in con.execute(
            "SELECT id, algorithm, parameters, threads, world_size FROM runs "
            "WHERE status = 'completed' ORDER BY id"):
        rows = [r[0] for r in con.execute(
            "SELECT compute_seconds + comm_seconds FROM steps WHERE run_id = ? AND step >= ? "
            "ORDER BY step", (run_id, warmup))]
        entry = out.setdefault(algo, {"step_seconds": [], "runs": 0, "setups": set()})
        entry["step_seconds"] += rows
        entry["runs"] += 1
        entry["setups"].add((params, threads, world))
    return out


def compare(d):
    runs = sorted(f for f in os.listdir(d) if f.startswith("ddp-") and f.endswith(".json"))
    if not runs:
        sys.exit(f"compare: no ddp-*.json in {d}")
    ddp = None
    for f in runs:
        with open(os.path.join(d, f)) as fh:
            r = json.load(fh)
        if ddp is None:
            ddp = r
            ddp["runs"] = 1
            continue
        for key in ("parameters", "ranks", "threads", "batch", "warmup"):
            if r[key] != ddp[key]:
                sys.exit(f"compare: {f} has {key} {r[key]}, {runs[0]} has {ddp[key]}")
        for v in ("ddp", "ddp_powersgd"):
            ddp[v]["step_seconds"] += r[v]["step_seconds"]
        ddp["runs"] += 1
    warmup = ddp["warmup"]
    cedar = cedar_step_times(os.path.join(d, "cedar_steps.db"), warmup)
    problems = []
    for algo in ("dense", "powersgd"):
        if algo not in cedar or not cedar[algo]["step_seconds"]:
            problems.append(f"no completed cedar run of {algo} in cedar_steps.db")
            continue
        for params, threads, world in cedar[algo]["setups"]:
            if params != ddp["parameters"]:
                problems.append(f"parameter counts differ: cedar {params}, PyTorch "
                                f"{ddp['parameters']}")
            if threads != ddp["threads"] or world != ddp["ranks"]:
                problems.append(f"cedar {algo} ran {world} ranks x {threads} threads, PyTorch "
                                f"{ddp['ranks']} x {ddp['threads']}")
    if problems:
        sys.exit("compare: " + "; ".join(sorted(set(problems))))
    rows = []
    for algo, ref in (("dense", "ddp"), ("powersgd", "ddp_powersgd")):
        c = statistics.median(cedar[algo]["step_seconds"])
        p = statistics.median(ddp[ref]["step_seconds"])
        rows.append({"cedar": algo, "pytorch": ref, "cedar_s": c, "pytorch_s": p, "ratio": c / p,
                     "cedar_steps": len(cedar[algo]["step_seconds"]),
                     "cedar_runs": cedar[algo]["runs"],
                     "pytorch_steps": len(ddp[ref]["step_seconds"]), "pytorch_runs": ddp["runs"]})
    result = {"parameters": ddp["parameters"], "ranks": ddp["ranks"], "threads": ddp["threads"],
              "batch": ddp["batch"], "warmup": warmup, "torch": ddp["torch"], "rows": rows}
    with open(os.path.join(d, "compare.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(f"ResNet-20, {ddp['parameters']} parameters on both sides, {ddp['ranks']} ranks x "
          f"{ddp['threads']} thread, batch {ddp['batch']} per rank; median step over the timed "
          f"steps of every run (warm-up {warmup} steps per run)")
    print(f"{'cedar':10s} {'ms':>8s} {'steps':>6s}   {'PyTorch':14s} {'ms':>8s} {'steps':>6s}   "
          f"cedar/PyTorch")
    for r in rows:
        print(f"{r['cedar']:10s} {1e3 * r['cedar_s']:8.1f} {r['cedar_steps']:6d}   "
              f"{r['pytorch']:14s} {1e3 * r['pytorch_s']:8.1f} {r['pytorch_steps']:6d}   "
              f"{r['ratio']:.3f}")


def verdict(ok):
    return "met" if ok else "MISSED"


def read_csv(path):
    import csv
    with open(path) as f:
        return list(csv.DictReader(f))


def summary(d):
    lines = []
    out = lines.append
    gb = load_gbench(os.path.join(d, "compressors.json"))
    thp_path = os.path.join(d, "compressors_thp.json")
    thp = load_gbench(thp_path) if os.path.exists(thp_path) else {}

    def ms(name, src=gb):
        return src[name]["real_time"] if name in src else float("nan")

    def gbps(name, src=gb):
        return src[name]["bytes_per_second"] / 1e9 if name in src else float("nan")

    sizes = sorted({int(k.split("/")[-1]) for k in gb if k.startswith("memory_pass/")})
    big = max(sizes)
    machine = os.path.join(d, "machine.txt")
    if os.path.exists(machine):
        with open(machine) as f:
            out("    " + "\n    ".join(f.read().strip().splitlines()))
        out("")
    out("## Targets (medians)")
    out("")
    out("| target | measured | ratio | goal | verdict |")
    out("|---|---|---|---|---|")
    sel, mem, topk, topk_abs = (ms(f"dgc_select/{big}"), ms(f"memory_pass/{big}"),
                                ms(f"torch_topk/{big}"), ms(f"torch_topk_abs/{big}"))
    n = f"{big / 1e6:g}M"
    out(f"| DGC selection at 0.1%, {n} elements, vs a memory pass | {sel:.1f} vs {mem:.1f} ms | "
        f"{sel / mem:.2f}x the time | <= 3x | {verdict(sel / mem <= 3)} |")
    out(f"| DGC selection vs torch::topk(v, k), {n} | {sel:.1f} vs {topk:.1f} ms | "
        f"{topk / sel:.1f}x faster | >= 5x | {verdict(topk / sel >= 5)} |")
    out(f"| DGC selection vs torch::topk(abs(v), k), {n} | {sel:.1f} vs {topk_abs:.1f} ms | "
        f"{topk_abs / sel:.1f}x faster | >= 5x | {verdict(topk_abs / sel >= 5)} |")
    for label, name in (("QSGD 4-bit codec", "codec/qsgd"),
                        ("TernGrad, whole step on one rank", "reduce/terngrad"),
                        ("signSGD sign codec", "codec/sign"),
                        ("top-k 1% codec", "codec/topk"),
                        ("random-k 1% codec", "codec/randomk")):
        for s in sizes:
            r = gbps(f"{name}/{s}") / gbps(f"memory_pass/{s}")
            out(f"| {label}, {s / 1e6:g}M, vs a memory pass | {gbps(f'{name}/{s}'):.2f} vs "
                f"{gbps(f'memory_pass/{s}'):.2f} GB/s | {r:.2f} | >= 0.50 | {verdict(r >= 0.5)} |")

    comm_path = os.path.join(d, "comm.csv")
    if os.path.exists(comm_path):
        by = {(r["op"], r["path"], int(r["bytes"])): r for r in read_csv(comm_path)}
        for (op, path, size), r in sorted(by.items()):
            if op != "allreduce" or path != "cedar" or size < (1 << 20):
                continue
            m = by[(op, "mpi", size)]
            c_bw, m_bw = float(r["busbw_gbps"]), float(m["busbw_gbps"])
            paired = float(r["paired_ratio"])
            c_range = f"{float(r['busbw_min_gbps']):.3f}-{float(r['busbw_max_gbps']):.3f}"
            m_range = f"{float(m['busbw_min_gbps']):.3f}-{float(m['busbw_max_gbps']):.3f}"
            out(f"| allreduce busbw, {size >> 20} MiB, cedar vs MPI_Allreduce | {c_bw:.3f} "
                f"({c_range}) vs {m_bw:.3f} ({m_range}) GB/s | "
                f"{paired:.3f} (of medians {c_bw / m_bw:.3f}) | >= 0.95 | "
                f"{verdict(paired >= 0.95)} |")

    cmp_path = os.path.join(d, "compare.json")
    if os.path.exists(cmp_path):
        with open(cmp_path) as f:
            cmp = json.load(f)
        for r in cmp["rows"]:
            out(f"| step time, cedar {r['cedar']} vs PyTorch {r['pytorch']} (ResNet-20) | "
                f"{1e3 * r['cedar_s']:.1f} vs {1e3 * r['pytorch_s']:.1f} ms | {r['ratio']:.3f} | "
                f"<= 1 | {verdict(r['ratio'] <= 1)} |")
    out("")
    out("Bandwidths in parentheses: the range over the repetitions; the allreduce ratio is the")
    out("median of the per-repetition ratios of the two paths timed back to back (the ratio of")
    out("the medians beside it). Codec throughput counts the fp32 gradient bytes (4 per element)")
    out("of one compress + decompress.")

    if thp:
        out("")
        out("## The same kernels with THP_MEM_ALLOC_ENABLE=1 (LibTorch allocations on huge pages)")
        out("")
        out("| kernel | " + " | ".join(f"{s / 1e6:g}M ratio to memory pass" for s in sizes) + " |")
        out("|---|" + "---|" * len(sizes))
        for label, name in (("QSGD 4-bit codec", "codec/qsgd"), ("TernGrad", "reduce/terngrad"),
                            ("signSGD sign codec", "codec/sign")):
            cells = []
            for s in sizes:
                r = gbps(f"{name}/{s}", thp) / gbps(f"memory_pass/{s}", thp)
                cells.append(f"{r:.2f} ({gbps(f'{name}/{s}', thp):.2f} GB/s)")
            out(f"| {label} | " + " | ".join(cells) + " |")

    out("")
    out("## Compressor throughput, one thread (GB/s of fp32 gradient, median)")
    out("")
    out("| benchmark | " + " | ".join(f"{s / 1e6:g}M" for s in sizes) + " |")
    out("|---|" + "---|" * len(sizes))
    names = sorted({k.rsplit("/", 1)[0] for k in gb}, key=lambda k: (
        0 if k == "memory_pass" else 1 if k.startswith("codec/") else 2 if k.startswith("reduce/")
        else 3, k))
    for name in names:
        out(f"| {name} | " + " | ".join(
            f"{gbps(f'{name}/{s}'):.3f}" if f"{name}/{s}" in gb else "" for s in sizes) + " |")

    if os.path.exists(comm_path):
        rows = read_csv(comm_path)
        out("")
        out(f"## Collectives, {rows[0]['ranks']} ranks: busbw in GB/s (median over repetitions)")
        out("")
        out("| size | allreduce cedar | allreduce MPI | allgather cedar | allgather MPI | wrong |")
        out("|---|---|---|---|---|---|")
        by = {(r["op"], r["path"], int(r["bytes"])): r for r in rows}
        for size in sorted({int(r["bytes"]) for r in rows}):
            cells, wrong = [], 0
            for op in ("allreduce", "allgather"):
                for path in ("cedar", "mpi"):
                    r = by.get((op, path, size))
                    cells.append(f"{float(r['busbw_gbps']):.3f}" if r else "")
                    wrong += int(r["wrong"]) if r else 0
            label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
            out(f"| {label} | " + " | ".join(cells) + f" | {wrong} |")

    for f in sorted(os.listdir(d)):
        if f.startswith("step_") and f.endswith(".csv"):
            rows = read_csv(os.path.join(d, f))
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
