"""Comparison of Cedar's and PyTorch's ranks after the same training, and the verdicts against
the expectations of pairs.py."""
import torch


def rel_diff(a, b):
    """max |a - b| / max |b| (0 when both are all zero), in float64."""
    a, b = a.double(), b.double()
    scale = b.abs().max().item() if b.numel() else 0.0
    diff = (a - b).abs().max().item() if b.numel() else 0.0
    return diff / scale if scale > 0 else diff


def compare(cedar_ranks, torch_ranks):
    """Largest relative differences over ranks: per-step losses, final parameters, final
    floating-point buffers; and whether everything is bitwise equal."""
    out = {"loss": 0.0, "params": 0.0, "buffers": 0.0, "bitwise": True, "worst_param": "",
           "first_step": None, "first_loss": 0.0}
    steps = cedar_ranks[0]["loss"].numel()
    for step in range(steps):
        d = max(rel_diff(c["loss"][step:step + 1], t["loss"][step:step + 1])
                for c, t in zip(cedar_ranks, torch_ranks))
        if d > 0:  # the first step whose loss is not bitwise the same, and by how much
            out["first_step"], out["first_loss"] = step, d
            break
    for c, t in zip(cedar_ranks, torch_ranks):
        out["loss"] = max(out["loss"], max(rel_diff(c["loss"][i:i + 1], t["loss"][i:i + 1])
                                           for i in range(c["loss"].numel())))
        out["bitwise"] &= torch.equal(c["loss"], t["loss"])
        for key, tv in t.items():
            if not key.startswith("final."):
                continue
            cv = c[key]
            out["bitwise"] &= torch.equal(cv, tv)
            if not tv.is_floating_point():
                continue
            d = rel_diff(cv, tv)
            kind = "buffers" if "running_" in key else "params"
            if d > out[kind]:
                out[kind] = d
                if kind == "params":
                    out["worst_param"] = key[len("final."):]
    return out


def verdicts(name, pair, variants):
    """(ok, text) per expectation: the side that should agree (aligned, or shipped when Cedar
    documents no difference) within the pair's tolerance; each documented difference visible
    (shipped differs beyond that tolerance)."""
    tol = pair.get("tolerance", 0.0)
    agree = "aligned" if "aligned" in variants else "shipped"
    m = variants[agree]
    worst = max(m["loss"], m["params"], m["buffers"])
    out = [(worst <= tol, f"{name}: {agree} PyTorch agrees with Cedar: max rel. diff "
                          f"{worst:.3g} <= {tol:g}")]
    if agree == "aligned":
        s = variants["shipped"]
        shipped = max(s["loss"], s["params"], s["buffers"])
        out.append((shipped > tol, f"{name}: the documented differences "
                                   f"({', '.join(pair['differences'])}) are what separates "
                                   f"PyTorch as shipped: {shipped:.3g} > {tol:g}"))
        first = pair.get("first_step")
        if first is not None:
            seen = s["first_step"]
            out.append((seen is not None and seen >= first,
                        f"{name}: shipped PyTorch's losses are bitwise Cedar's before step "
                        f"{first}, the first the differences can act on: first differing "
                        f"step {seen}"))
        bound = pair.get("first_bound")
        if bound is not None:
            out.append((s["first_loss"] <= bound,
                        f"{name}: its loss there within what those differences explain: "
                        f"{s['first_loss']:.3g} <= {bound:g}"))
    return out
