"""docs/differential.md from run_pairs.py's results (run_all.sh writes it)."""
import pairs

DIFFERENCES = {
    "fp32_average": (
        "fp16: where the halves are summed",
        "`fp16_compress_hook` divides each rank's fp16 copy by the world size and allreduces it "
        "in fp16, so the averaged gradient is itself rounded to fp16 (relative error up to "
        "2^-11 per element, and values whose half is an fp16 subnormal lose digits).",
        "algorithms/fp16.cpp allgathers the halves and averages them in fp32.",
        "Micikevicius et al., ICLR 2018, use fp16 as the storage format and keep reductions and "
        "the weight update in fp32; the halves are what is sent, the sum need not be fp16 (and "
        "MPI has no fp16 sum). Kept; the payload (2 bytes per element) is the same."),
    "warm_start_as_paper": (
        "PowerSGD: the warm-started Q",
        "`powerSGD_hook` orthonormalises the Q it reuses from the previous step again before "
        "P = M Q.",
        "algorithms/powersgd.cpp uses it as it is.",
        "Vogels et al., NeurIPS 2019, Algorithm 1 orthonormalises P only. Orthonormalising Q "
        "right-multiplies it by an invertible upper-triangular matrix, which leaves the "
        "orthonormalised P and P Q^T unchanged in exact arithmetic: rounding only. Kept."),
    "gram_schmidt": (
        "PowerSGD: orthonormalising P above rank 2",
        "`_orthogonalize` uses `torch.linalg.qr` (Householder) for rank > 2, Gram-Schmidt "
        "for rank <= 2.",
        "Gram-Schmidt at every rank.",
        "The paper orthonormalises by Gram-Schmidt. Both give the same column space; QR's "
        "column signs cancel in P Q^T: rounding only. Kept."),
    "no_uncompressed_error": (
        "PowerSGD: error feedback of uncompressed tensors",
        "`powerSGD_hook` keeps one error memory for the whole bucket, so the vectors and small "
        "matrices it allreduces uncompressed carry local - mean into the next step.",
        "The error memory covers the compressed matrices only.",
        "The paper's error feedback is that of the compressor; an exact allreduce makes no error. "
        "(local - mean) sums to zero over the ranks, so it never changes the average in exact "
        "arithmetic: rounding only. Kept."),
    "first_average_after_h_steps": (
        "Post-local SGD: the first model average",
        "PeriodicModelAverager(period=H, warmup_steps=k), with warmup_steps equal to "
        "start_localSGD_iter as its documentation says, averages after the first local step "
        "(step k), then every H steps: k, k+H, ...",
        "algorithms/local-sgd averages after every H local steps counted from the switch: "
        "k+H-1, k+2H-1, ...",
        "Lin et al., ICLR 2020 (post-local SGD) run local SGD from the switch: H local steps, "
        "then an average. A real difference in the schedule, not rounding. PyTorch with "
        "warmup_steps = k+H-1 is Cedar's schedule (the aligned side, bitwise equal). Kept."),
}

NOTES = [
    "The shipped side's end-of-run differences are large (tenths) because 20 steps of SGD at 8 "
    "images per rank amplify a difference of 1e-7 to 1e-5 at its first step by orders of "
    "magnitude; a tolerance at that level would hide any bug. The checks therefore rest on the "
    "aligned side (bitwise) and on where and by how much the shipped side first differs.",
    "Dense S-SGD needs no alignment: DDP + torch.optim.SGD and Cedar give the same bits.",
    "With 2 ranks an allreduce sum is a + b on every rank whatever the algorithm, and dividing "
    "by 2 is exact; so bucket layout, the order of the summation and PyTorch's habit of "
    "dividing before the sum (or, in PowerSGD, not dividing P at all) change no bits. Larger "
    "worlds would need a tolerance for the order of summation.",
    "Batch norm: DDP runs with broadcast_buffers=False, because Cedar keeps each rank's own "
    "running statistics (DDP's default copies rank 0's into the other ranks before each "
    "forward pass; training-mode forward passes do not read them, so losses and parameters "
    "would be the same and only rank 1's buffers would differ).",
    "DDP gets one gradient bucket as Cedar (dist._DEFAULT_FIRST_BUCKET_BYTES raised to 25 MiB). "
    "With DDP's default 1 MiB first bucket ResNet-20's gradients fall into two buckets, and on "
    "gloo `powerSGD_hook`'s chained allreduces of the two buckets were issued in different "
    "orders on the two ranks (gloo: \"Received data size doesn't match expected size\").",
    "start_powerSGD_iter is 2 on both sides (Cedar's start_powersgd_iter), the smallest PyTorch "
    "accepts with error feedback and warm start; the initial Q of every compressed matrix is "
    "drawn once, orthonormalised by PyTorch's own `_orthogonalize`, and injected into both "
    "(Cedar: CEDAR_TRACE_INJECT; PyTorch: the state's Q memory), so no two generators need "
    "to agree.",
    "`batch_tensors_with_same_shape` and Cedar's `batch_same_shape` give the same bits as "
    "their unbatched forms here (compare the rank-2 rows).",
    "bf16_compress_hook has no Cedar counterpart (Cedar has no bf16 exchange): not compared.",
]


def _fmt(x):
    return "0" if x == 0 else f"{x:.2e}"


def render(results, torch_version):
    lines = [
        "# Differential tests against PyTorch",
        "",
        "Generated by `tests/differential/run_all.sh` (do not edit by hand). Cedar and PyTorch's "
        "own distributed implementations train the same model from the same state on the same "
        "batches, 2 ranks with one intra-op thread each (Cedar: MPI; PyTorch: gloo), and are "
        "compared step by step.",
        "",
        f"- PyTorch {torch_version} (Cedar's venv, CPU).",
        "- Model: CIFAR ResNet-20 (models/resnet_cifar.cpp; PyTorch: models/torch_models.py, "
        "the module bench/ddp_step.py also uses), 269,722 parameters, batch norm.",
        "- Data: Cedar's `synthetic` 32 x 32 images, no augmentation, 8 images per rank per "
        "step (tests/differential/base.yaml). Cedar writes each rank's normalised batches, its "
        "initial and final parameters and buffers, and its per-step losses "
        "(CEDAR_TRACE_DIR, runner/train/step_trace.h); PyTorch trains on exactly those batches.",
        "- Optimizer: SGD, lr 0.05 constant, momentum 0.9, weight decay 5e-4 "
        "(torch.optim.SGD on PyTorch's side).",
        "- Differences: relative, max |cedar - torch| / max |torch| per tensor, the largest over "
        "tensors and both ranks; losses per step. \"bitwise\": every loss, parameter and buffer "
        "has the same bits.",
        "- Each pair runs PyTorch twice: **shipped** (as it comes) and, where Cedar documents "
        "deliberate differences, **aligned** (PyTorch with exactly those differences applied "
        "to its own code, tests/differential/torch_align.py). The aligned side must equal Cedar "
        "bitwise (tolerance 0); the shipped side must first differ no earlier than the "
        "differences can act, and by no more there than they explain.",
        "",
        "Pairs and the PyTorch code each runs against (Cedar's `algorithm.name` in brackets):",
        "",
    ]
    for r in results:
        pair = pairs.PAIRS[r["name"]]
        cedar = ", ".join(f"{k.split('.', 1)[1]}={v}" for k, v in pair["cedar"].items()
                          if k.startswith("algorithm.") and k != "algorithm.name")
        lines.append(f"- **{r['name']}** [{pair['cedar']['algorithm.name']}"
                     f"{': ' + cedar if cedar else ''}]: {pair['module']}")
    if any(pairs.PAIRS[r["name"]]["torch"]["algorithm"] == "post-local" for r in results):
        lines.append(f"- post-local: local steps from step {pairs.SWITCH_STEP} on; PyTorch's "
                     f"PostLocalSGDState(start_localSGD_iter={pairs.SWITCH_STEP}).")
    lines += [
        "",
        "| pair | steps | side | loss | params | BN buffers | bitwise | first differing step (loss diff) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for variant, m in r["variants"].items():
            first = "-" if m["first_step"] is None else f"{m['first_step']} ({_fmt(m['first_loss'])})"
            lines.append(f"| {r['name']} | {r['steps']} | {variant} | "
                         f"{_fmt(m['loss'])} | {_fmt(m['params'])} | {_fmt(m['buffers'])} | "
                         f"{'yes' if m['bitwise'] else 'no'} | {first} |")
    lines += ["", "Checks:", ""]
    for r in results:
        for ok, text in r["verdicts"]:
            lines.append(f"- {'pass' if ok else '**FAIL**'}: {text}")
    lines += ["", "## Deliberate differences", "",
              "Each is applied by name on the aligned side; the paper decides which way Cedar "
              "goes.", ""]
    used = {d for r in results for d in pairs.PAIRS[r["name"]]["differences"]}
    for name, (title, torch_does, cedar_does, judge) in DIFFERENCES.items():
        if name not in used:
            continue
        lines += [f"### {title} (`{name}`)", "", f"- PyTorch: {torch_does}",
                  f"- Cedar: {cedar_does}", f"- Judge: {judge}", ""]
    lines += ["## Notes on the set-up", ""] + [f"- {n}" for n in NOTES] + [""]
    lines += ["## Running", "", "```sh",
              "tests/differential/run_all.sh [build/cedar]   # all pairs, rewrites this file",
              "ctest -R differential                         # dense, fp16, PowerSGD rank 2 at 4 "
              "images per rank",
              "```", ""]
    return "\n".join(lines)
