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


# The least memory traffic of each compressor's benchmark, in memory passes (a pass reads and
# writes every fp32 element once: 8 bytes per element), compress + decompress (codec/*) or the
# whole one-rank step (reduce/*), from the bytes it must read and write per element:
MIN_TRAFFIC = {
    # read 4, write 2 (fp16); read 2, write 4
    "codec/fp16": ((4 + 2 + 2 + 4) / 8, "4 read, 2 written; 2 read, 4 written"),
    # the same, decoded into the bucket (the one-rank exchange moves no data)
    "reduce/fp16": ((4 + 2 + 2 + 4) / 8, "encode and decode into the bucket"),
    # read 4, write 1/8 (one bit); read 1/8, write 4
    "codec/sign": ((4 + 2 / 8 + 4) / 8, "4 read, 1/8 written; 1/8 read, 4 written"),
    # the same: the L1 sum is taken in the packing pass, the scale applied while decoding
    "codec/scaled_sign": ((4 + 2 / 8 + 4) / 8, "as sign (L1 sum in the packing pass)"),
    # 5-bit codes and one fp32 norm per 512 elements, written and read back
    "codec/qsgd": ((4 + 2 * (5 / 8 + 4 / 512) + 4) / 8, "4 read, 5/8 + 4/512 written and read, "
                   "4 written (the norm's bucket stays in cache)"),
    # a statistics pass (sigma, max) before the 2-bit codes: x is read twice
    "reduce/terngrad": ((4 + 4 + 2 * 2 / 8 + 4) / 8, "x read twice (statistics, codes), 2/8 "
                        "written and read, 4 written"),
    # x read once, 8 bytes per kept element written and read back, the output zero-filled
    "codec/topk": ((4 + 2 * 8 * 0.01 + 4) / 8, "4 read, 8k/n written and read, 4 written"),
    # k gathered cache lines (64 bytes each), 8 bytes per kept (index, value) pair written and read
    # back, the output zero-filled (the registry's randomk sends its indices)
    "codec/randomk": ((64 * 0.01 + 2 * 8 * 0.01 + 4) / 8, "k cache lines gathered, 8k/n written "
                      "and read, 4 written"),
    # g read; u and v read and written (u = m u + g, v += u); v read for the selection; out written
    "reduce/dgc": ((4 + 8 + 8 + 4 + 4) / 8, "g read, u and v read + written, v read, out "
                   "written"),
    # g and the last upload read for the difference norm, the bucket written with the last upload
    "reduce/lag": ((4 + 4 + 4) / 8, "g and last read, bucket written"),
}


def read_csv(path):
    import csv
    with open(path) as f:
        return list(csv.DictReader(f))


# PowerSGD's step besides its two products: M += e (M and e read, M written), then the tail
# (M read, P Q^T written into M, e written; its squared norm taken on the way): 24 bytes.
POWERSGD_REST_PASSES = 3.0
# Compression time (encode, decode, error feedback) as a share of a step's compute: the target for
# every algorithm on VGG-16 at batch 8 per rank.
STEP_COMPRESS_SHARE = 0.10


def powersgd_table(out, gb, sizes):
    """reduce/powersgd against the same two products as BLAS calls (the faster of the plain and
    the transposed form, measured alike) plus the minimum traffic of the rest of its step
    (target: <= 1.5x)."""
    rows = [n for n in sizes if f"reduce/powersgd/{n}" in gb and f"blas/powersgd_matmuls/{n}" in gb]
    if not rows:
        return
    out("")
    out(f"PowerSGD (rank 2) against plain BLAS: floor = the two products as at::mm_out calls, "
        f"plain (M Q, M^T P) or transposed ((Q^T M^T)^T, (P^T M)^T), whichever is faster, + "
        f"{POWERSGD_REST_PASSES:g} memory passes (M += e; the tail writing P Q^T and e)")
    out("")
    out("| size | cedar ms | BLAS plain ms | BLAS transposed ms | floor ms | cedar / floor | "
        "<= 1.5x |")
    out("|---|---|---|---|---|---|---|")
    for n in rows:
        cedar = gb[f"reduce/powersgd/{n}"]["real_time"]
        plain = gb[f"blas/powersgd_matmuls/{n}"]["real_time"]
        transposed = gb.get(f"blas/powersgd_matmuls_transposed/{n}", {}).get("real_time")
        blas = min(plain, transposed) if transposed is not None else plain
        floor = blas + POWERSGD_REST_PASSES * gb[f"memory_pass/{n}"]["real_time"]
        shown = f"{transposed:.2f}" if transposed is not None else ""
        out(f"| {n / 1e6:g}M | {cedar:.2f} | {plain:.2f} | {shown} | {floor:.2f} | "
            f"{cedar / floor:.2f} | {verdict(cedar / floor <= 1.5)} |")


def compressor_table(out, gb, py_path, sizes):
    """Per compressor and size: its minimum traffic, Cedar's time against it (target <= 2x) and
    the PyTorch-ops reference's time against Cedar's (>= 10x faster where the reference takes
    >= 20x the minimum traffic, else faster)."""
    with open(py_path) as f:
        py = json.load(f)
    out("")
    out(f"## Compressors: minimum traffic and the PyTorch reference (1 thread, torch "
        f"{py['torch']}, bench/python_compressors.py)")
    out("")
    for n in sizes:
        mine = gb.get(f"memory_pass/{n}", {}).get("gradient_sum")
        theirs = py["gradient_sum"].get(str(n))
        same = mine is not None and theirs is not None and abs(mine - theirs) <= 1e-6 * max(
            1.0, abs(mine))
        out(f"- {n / 1e6:g}M elements: gradient sum {mine} (cedar) vs {theirs} (python): "
            f"{'the same tensor' if same else 'DIFFERENT TENSORS'}")
    out("")
    out("| compressor | size | min traffic (passes) | cedar ms | cedar / min | <= 2x | "
        "python ms | python / min | speed-up | goal | verdict |")
    out("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, (passes, _) in MIN_TRAFFIC.items():
        for n in sizes:
            key = f"{name}/{n}"
            if key not in gb or f"memory_pass/{n}" not in gb:
                continue
            cedar = gb[key]["real_time"]
            floor = passes * gb[f"memory_pass/{n}"]["real_time"]
            ratio = cedar / floor
            pms = py["ms"].get(key)
            if pms is None:
                out(f"| {name} | {n / 1e6:g}M | {passes:.2f} | {cedar:.2f} | {ratio:.2f} | "
                    f"{verdict(ratio <= 2)} | | | | | |")
                continue
            speedup = pms / cedar
            need = 10.0 if pms / floor >= 20 else 1.0
            goal = ">= 10x" if need == 10 else "> 1x"
            ok = speedup >= need if need == 10 else speedup > 1
            out(f"| {name} | {n / 1e6:g}M | {passes:.2f} | {cedar:.2f} | {ratio:.2f} | "
                f"{verdict(ratio <= 2)} | {pms:.1f} | {pms / floor:.1f} | {speedup:.1f}x | {goal} | "
                f"{verdict(ok)} |")
    powersgd_table(out, gb, sizes)
    out("")
    out("Minimum traffic, per element (a pass = 8 bytes: 4 read + 4 written):")
    for name, (passes, why) in MIN_TRAFFIC.items():
        out(f"- {name}: {passes:.3f} passes — {why}")


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
                        ("signSGD sign codec", "codec/sign")):
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

    py_path = os.path.join(d, "python_compressors.json")
    if os.path.exists(py_path):
        compressor_table(out, gb, py_path, sizes)

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
            judged = r0["model"] == "vgg16"  # the target is stated for VGG-16 at batch 8
            out("Compression's share of the step: compress ÷ compute"
                + (", target ≤ 10%." if judged else " (the ≤ 10% target is VGG-16's)."))
            out("")
            out("| algorithm | step | compute | compress | communicate | MB sent per rank "
                "| compress ÷ compute | verdict |")
            out("|---|---|---|---|---|---|---|---|")
            for r in rows:
                share = float(r["compress_s"]) / float(r["compute_s"])
                out(f"| {r['algorithm']} | {1e3 * float(r['step_s']):.1f} | "
                    f"{1e3 * float(r['compute_s']):.1f} | {1e3 * float(r['compress_s']):.1f} | "
                    f"{1e3 * float(r['comm_s']):.1f} | {float(r['payload_bytes']) / 1e6:.3f} | "
                    f"{100 * share:.1f}% | "
                    f"{verdict(share <= STEP_COMPRESS_SHARE) if judged else '—'} |")
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
