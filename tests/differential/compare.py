"""Comparison of Cedar's and PyTorch's ranks after the same training, and the verdicts against
the expectations of pairs.py.

"Bitwise" is exact: every tensor has the same dtype, shape and bit pattern (floats compared as
integers of their width, so -0.0 differs from 0.0 and a NaN never equals anything), integer
buffers such as num_batches_tracked included. Relative differences treat a NaN on either side as
an infinite difference."""
import math

import torch

_INT_OF = {torch.float32: torch.int32, torch.float64: torch.int64,
           torch.float16: torch.int16, torch.bfloat16: torch.int16}


def same_bits(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype in _INT_OF:
        return torch.equal(a.contiguous().view(_INT_OF[a.dtype]),
                           b.contiguous().view(_INT_OF[b.dtype]))
    return torch.equal(a, b)


def rel_diff(a, b):
    """max |a - b| / max |b| in float64 (the difference itself when b is all zero); infinite
    when either side holds a NaN."""
    if b.numel() == 0:
        return 0.0
    a, b = a.double(), b.double()
    if torch.isnan(a).any() or torch.isnan(b).any():
        return math.inf
    diff = (a - b).abs().max().item()
    scale = b.abs().max().item()
    return diff / scale if scale > 0 else diff


def abs_diff(a, b):
    if b.numel() == 0:
        return 0.0
    a, b = a.double(), b.double()
    if torch.isnan(a).any() or torch.isnan(b).any():
        return math.inf
    return (a - b).abs().max().item()


def first_differing(cedar_ranks, torch_ranks, prefix):
    """The first step whose `prefix`<step> tensor differs in its bits on some rank, or None."""
    steps = cedar_ranks[0]["loss"].numel()
    for step in range(steps):
        key = f"{prefix}{step}"
        if any(key in t and not same_bits(c[key], t[key])
               for c, t in zip(cedar_ranks, torch_ranks)):
            return step
    return None


def compare(cedar_ranks, torch_ranks):
    """Largest relative (and absolute, for losses) differences over ranks: per-step losses, every
    step's exchanged gradient, final parameters, final floating-point buffers and final algorithm
    state; whether all of them (integer buffers too) have the same bits; and the first step
    whose loss, and whose gradient, differs."""
    out = {"loss": 0.0, "loss_abs": 0.0, "grads": 0.0, "params": 0.0, "buffers": 0.0,
           "state": None, "bitwise": True, "worst_param": "", "first_step": None,
           "first_loss": 0.0, "first_loss_abs": 0.0, "first_grad_step": None}
    for c, t in zip(cedar_ranks, torch_ranks):
        loss_c, loss_t = c["loss"], t["loss"]
        out["bitwise"] &= same_bits(loss_c, loss_t)
        for i in range(loss_t.numel()):
            out["loss"] = max(out["loss"], rel_diff(loss_c[i:i + 1], loss_t[i:i + 1]))
            out["loss_abs"] = max(out["loss_abs"], abs_diff(loss_c[i:i + 1], loss_t[i:i + 1]))
        for key, tv in t.items():
            head = key.split(".", 1)[0]
            if head not in ("final", "grad", "algorithm"):
                continue
            cv = c[key]
            if head == "algorithm":  # the hook keeps them flat, Cedar in their shapes
                cv, tv = cv.reshape(-1), tv.reshape(-1)
            out["bitwise"] &= same_bits(cv, tv)
            if not tv.is_floating_point():
                continue
            d = rel_diff(cv, tv)
            if head == "grad":
                out["grads"] = max(out["grads"], d)
            elif head == "algorithm":
                out["state"] = max(out["state"] or 0.0, d)
            else:
                kind = "buffers" if "running_" in key else "params"
                if d > out[kind]:
                    out[kind] = d
                    if kind == "params":
                        out["worst_param"] = key[len("final."):]
    step = None
    for i in range(cedar_ranks[0]["loss"].numel()):
        if not all(same_bits(c["loss"][i:i + 1], t["loss"][i:i + 1])
                   for c, t in zip(cedar_ranks, torch_ranks)):
            step = i
            break
    if step is not None:
        out["first_step"] = step
        out["first_loss"] = max(rel_diff(c["loss"][step:step + 1], t["loss"][step:step + 1])
                                for c, t in zip(cedar_ranks, torch_ranks))
        out["first_loss_abs"] = max(abs_diff(c["loss"][step:step + 1], t["loss"][step:step + 1])
                                    for c, t in zip(cedar_ranks, torch_ranks))
    out["first_grad_step"] = first_differing(cedar_ranks, torch_ranks, "grad.")
    return out


def worst(m):
    return max(m["loss"], m["grads"], m["params"], m["buffers"], m["state"] or 0.0)


# fp16 step 0, Cedar against fp16_compress_hook as shipped, element by element, with g Cedar's
# average, h_i = fp16(g_i) each rank's half and u = 2^-11 fp16's unit roundoff. Cedar computes
# fl32(h_0 + h_1) / 2: within 2^-24 |g| of the exact mean m = (h_0 + h_1) / 2. The hook computes
# a_i = fl16(h_i / 2), exact unless h_i / 2 is below fp16's smallest subnormal step 2^-24 (then
# off by at most 2^-25 each), and sums them in fp16 through fp32 (gloo), at most two roundings:
# a relative error of u (1 + 2^-12) in the normal range, none where the sum is subnormal (a sum
# of multiples of 2^-24 below 2^-14 is exact). Hence
#   |g_torch - g_cedar| <= (u (1 + 2^-12) + 2^-23) |g_cedar| + 2^-24 (1 + 2u) + 2^-40,
# the last term covering Cedar's own rounding of the subnormal part. FP16_SLACK is the
# coefficient of |g|, FP16_FLOOR the subnormal term.
FP16_SLACK = 2.0 ** -11 * (1 + 2.0 ** -12) + 2.0 ** -23
FP16_FLOOR = 2.0 ** -24 * (1 + 2.0 ** -10) + 2.0 ** -40


def fp16_step0(cedar_ranks, torch_ranks):
    """The largest |g_torch - g_cedar| / (FP16_SLACK |g_cedar| + FP16_FLOOR) over step 0's
    averaged gradient on every rank (<= 1: within the bound), how many elements differ, and the
    largest relative difference among elements whose |g| is at least fp16's smallest normal."""
    ratio, differ, rel = 0.0, 0, 0.0
    for c, t in zip(cedar_ranks, torch_ranks):
        gc, gt = c["grad.0"].double(), t["grad.0"].double()
        if torch.isnan(gc).any() or torch.isnan(gt).any():
            return math.inf, gc.numel(), math.inf
        d = (gt - gc).abs()
        ratio = max(ratio, (d / (FP16_SLACK * gc.abs() + FP16_FLOOR)).max().item())
        differ = max(differ, int((c["grad.0"] != t["grad.0"]).sum()))
        normal = gc.abs() >= 2.0 ** -14
        if normal.any():
            rel = max(rel, (d[normal] / gc.abs()[normal]).max().item())
    return ratio, differ, rel


def verdicts(name, pair, variants, fp16_ratio=None):
    """(ok, text) per expectation. The side that should agree (aligned, or shipped when Cedar
    documents no difference): bitwise when the tolerance is 0, else within it. Shipped, when
    there is an aligned side: not bitwise, its gradient first differing at the stated step and
    its losses not before. Each side with one difference left out: not bitwise, first at the
    step that difference acts on. fp16: step 0's averaged gradient within FP16_SLACK/FLOOR."""
    tol = pair.get("tolerance", 0.0)
    agree = "aligned" if "aligned" in variants else "shipped"
    m = variants[agree]
    if tol == 0:
        out = [(m["bitwise"], f"{name}: {agree} PyTorch equals Cedar bit for bit (losses, every "
                              f"step's gradient, final parameters, buffers"
                              f"{', algorithm state' if m['state'] is not None else ''})")]
    else:
        out = [(worst(m) <= tol, f"{name}: {agree} PyTorch agrees with Cedar: max rel. diff "
                                 f"{worst(m):.3g} <= {tol:g}")]
    if agree != "aligned":
        return out
    s = variants["shipped"]
    first = pair.get("first_grad_step")
    out.append((not s["bitwise"] and s["first_grad_step"] == first,
                f"{name}: shipped PyTorch differs, its averaged gradient first at step "
                f"{s['first_grad_step']} (stated: {first})"))
    # A different gradient first shows in the next step's loss; post-local's extra average
    # (after the update) already in the same step's (pairs.py: loss_lag).
    lag = pair.get("loss_lag", 1)
    out.append((s["first_step"] is not None and s["first_step"] >= first + lag,
                f"{name}: shipped PyTorch's losses bit for bit Cedar's before step "
                f"{first + lag}: first differing loss at step {s['first_step']}"))
    for d, step in pair.get("leave_one_out", {}).items():
        v = variants.get("without " + d)
        if v is None:
            continue
        out.append((not v["bitwise"] and v["first_grad_step"] == step,
                    f"{name}: aligned without `{d}` differs from Cedar, its gradient first at "
                    f"step {v['first_grad_step']} (stated: {step})"))
    if fp16_ratio is not None:
        out.append((fp16_ratio <= 1.0,
                    f"{name}: step 0's averaged gradient, Cedar against the shipped hook, "
                    f"element-wise |dg| <= (2^-11 (1 + 2^-12) + 2^-23) |g| + 2^-24 (1 + 2^-10): "
                    f"largest |dg| / bound {fp16_ratio:.3g}"))
    return out
