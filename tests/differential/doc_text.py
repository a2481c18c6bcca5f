"""The prose of docs/differential.md that does not come from measurements (render_doc.py)."""

# name: (title, what PyTorch does, what Cedar does, why Cedar goes its way)
DIFFERENCES = {
    "fp32_average": (
        "fp16: where the halves are averaged",
        "`fp16_compress_hook` divides each rank's fp16 copy by the world size in fp16 and "
        "allreduces it in fp16, so the averaged gradient is itself rounded to fp16 (relative "
        "error up to 2^-11 per element; halves below fp16's smallest normal lose digits).",
        "algorithms/fp16.cpp allgathers the halves and averages them in fp32: (h_0 + h_1) / P.",
        "Micikevicius et al., ICLR 2018 (Sec. 3), is single-machine mixed precision: fp16 as "
        "the storage format, reductions and the weight update in fp32. It does not settle a "
        "distributed exchange; Cedar takes its rule (keep sums in fp32) as the reason to "
        "average in fp32, and MPI has no fp16 sum. The cost is traffic: Cedar's allgather sends "
        "(P - 1) 2n bytes per rank, a ring allreduce of the halves 2 (P - 1) / P 2n; equal at "
        "P = 2 (these runs), P / 2 times more above. The aligned side is PyTorch's hook "
        "itself with its averaging moved: its group reports size 1 to it, so its own fp16 "
        "division is by 1, and its dist.all_reduce is replaced by an allgather whose decoded "
        "halves are summed and divided in fp32 (tests/differential/torch_align.py). Moving "
        "the sum alone is not enough: with the fp16 division before it, halves that are odd "
        "multiples of 2^-24 lose their last bit, and that side differs from Cedar at step 0."),
    "warm_start_as_paper": (
        "PowerSGD: the warm-started Q",
        "`powerSGD_hook` orthonormalises the Q it reuses from the previous step again before "
        "P = M Q.",
        "algorithms/powersgd.cpp uses it as it is.",
        "Vogels et al., NeurIPS 2019, Algorithm 1 (Sec. 3) orthonormalises P only. "
        "Orthonormalising Q right-multiplies it by an invertible upper-triangular matrix, "
        "which leaves the orthonormalised P and P Q^T unchanged in exact arithmetic: rounding "
        "only. Kept."),
    "gram_schmidt": (
        "PowerSGD: orthonormalising P above rank 2",
        "`_orthogonalize` uses `torch.linalg.qr` (Householder) for rank > 2, Gram-Schmidt "
        "for rank <= 2.",
        "Gram-Schmidt at every rank.",
        "Vogels et al., Algorithm 1 (Sec. 3), orthonormalises by Gram-Schmidt. Both give the "
        "same column space; QR's column signs cancel in P Q^T: rounding only in exact terms, "
        "but Gram-Schmidt's loss of orthogonality grows with P's condition number, "
        "Householder's does not. Kept."),
    "no_uncompressed_error": (
        "PowerSGD: error feedback of uncompressed tensors",
        "`powerSGD_hook` keeps one error memory for the whole bucket, so the vectors and small "
        "matrices it allreduces uncompressed carry local - mean into the next step.",
        "The error memory covers the compressed matrices only.",
        "Vogels et al., Algorithm 2 (Sec. 3), feeds back the compressor's error; an exact "
        "allreduce makes none. (local - mean) sums to zero over the ranks, so it never "
        "changes the average in exact arithmetic: rounding only. Kept."),
    "gs_norm_clamp": (
        "PowerSGD: a zero column in Gram-Schmidt (not applied: never met here)",
        "`_orthogonalize_gram_schmidt` with epsilon 0 divides each column by its norm, so an "
        "all-zero column (a zero gradient matrix, e.g. a frozen layer) becomes NaN and the "
        "NaN spreads through the average.",
        "algorithms/powersgd.cpp (powersgd_orthonormalize) divides by max(norm, FLT_MIN): a "
        "zero column stays zero.",
        "The paper assumes no zero column. Where every norm is at least FLT_MIN the two are the "
        "same bits, which is why the aligned sides agree without it. Kept."),
    "first_average_after_h_steps": (
        "Post-local SGD: the first model average",
        "PeriodicModelAverager(period=H, warmup_steps=k), with warmup_steps equal to "
        "start_localSGD_iter as its documentation says, averages after the first local step "
        "(step k), then every H steps: k, k+H, ...",
        "algorithms/local-sgd averages after every H local steps counted from the switch: "
        "k+H-1, k+2H-1, ...",
        "Lin et al., ICLR 2020 (post-local SGD, Sec. 3) run local SGD from the switch: H "
        "local steps, then an average. A difference in the schedule, not rounding. PyTorch "
        "with warmup_steps = k+H-1 is Cedar's schedule (the aligned side). Kept."),
}

# Differences documented but not applied on any aligned side (why: in their text).
UNAPPLIED = {"powersgd": ["gs_norm_clamp"]}

NOTES = [
    "The shipped sides' end-of-run differences are large because SGD at 8 images per rank "
    "amplifies a first difference of rounding size by orders of magnitude (fp16, PowerSGD: 20 "
    "steps). Post-local SGD's are not rounding: PyTorch's extra average at step 8 moves the "
    "models apart by a whole schedule difference, and 40 steps carry it on. A tolerance at "
    "that level would hide any bug, so the checks rest on the aligned side (bit for bit), on "
    "where the shipped side first differs, and, for fp16, on a derived element-wise bound.",
    "Dense S-SGD needs no alignment: DDP + torch.optim.SGD and Cedar give the same bits.",
    "With 2 ranks an allreduce sum is a + b on every rank whatever the algorithm, and dividing "
    "by 2 is exact in fp32 (not in fp16, see fp32_average); so bucket layout, the order of "
    "the summation and PyTorch's habit of dividing before the sum (or, in PowerSGD, not "
    "dividing P at all) change no bits. Larger worlds would need a tolerance for the order "
    "of summation.",
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
    "bf16_compress_hook has no Cedar counterpart (Cedar has no bf16 exchange): not compared.",
]

BOUNDS = [
    "fp16 (checked): step 0 is the first step the difference acts on, and there both sides "
    "start from the same parameters and batches, so each rank's gradient g_i and its half "
    "h_i = fp16(g_i) are the same bits on both. Cedar's average is fl32(h_0 + h_1) / 2, "
    "within 2^-24 |g| of m = (h_0 + h_1) / 2. The hook's is fl16(a_0 + a_1) with "
    "a_i = fl16(h_i / 2): the halving is exact unless h_i / 2 falls below fp16's subnormal "
    "step 2^-24 (then off by at most 2^-25 each), and the sum, taken through fp32 by gloo, "
    "is rounded at most twice: relative u (1 + 2^-12) with u = 2^-11 in the normal range, "
    "exact where the sum is subnormal. So element by element "
    "|g_torch - g_cedar| <= (2^-11 (1 + 2^-12) + 2^-23) |g_cedar| + 2^-24 (1 + 2^-10) "
    "(compare.py: FP16_SLACK, FP16_FLOOR). Later steps are not bounded: the models differ.",
    "PowerSGD (not bounded, located): the differences are roundings passed through an "
    "orthonormalisation whose error depends on P's conditioning (Gram-Schmidt loses "
    "orthogonality in proportion to u times P's condition number, Householder QR does not), "
    "so there is no element-wise bound without P's condition number at that step, which "
    "neither side records. The checks are where they act: the shipped side's averaged "
    "gradient first differs at step 2, the first compressed step, and each difference left "
    "out alone (rank 4) is visible at its own step. Rank 4's larger first loss difference is "
    "Householder QR in place of Gram-Schmidt on a 4-column P, whose columns are less "
    "well separated than 1 or 2; its condition number was not measured.",
    "Post-local SGD (not bounded): the shipped side differs by a schedule (an extra model "
    "average), not by rounding; only the step it first acts on (9) is checked.",
]
