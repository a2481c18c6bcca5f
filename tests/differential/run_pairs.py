"""Runs differential pairs: Cedar (mpirun, 2 ranks, CEDAR_TRACE_DIR) and PyTorch's own
implementation (torch_side.py) over the same steps from the same state, compares per-step losses
and final parameters, and checks them against pairs.py's expectations.

    python tests/differential/run_pairs.py --cedar build/cedar [--pair NAME ...] [--doc FILE]

Exit status: 0 when every comparison meets its expectation, 1 otherwise, 77 when PyTorch's
distributed package is not available (the test is skipped).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))

try:
    import torch
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_gloo_available():
        raise ImportError("torch.distributed with gloo is not available")
except ImportError as e:
    print(f"SKIP: PyTorch is not importable here ({e}); run with Cedar's venv python "
          "(~/.cache/cedar/venv/bin/python)")
    sys.exit(77)

import cedar_trace  # noqa: E402
import compare  # noqa: E402
import pairs  # noqa: E402
import torch_align  # noqa: E402
import torch_models  # noqa: E402
import torch_side  # noqa: E402

QUERY_SEED = 20191101  # the injected initial Q of PowerSGD


def run_cedar(cedar, pair, work, inject):
    env = dict(os.environ, CEDAR_TRACE_DIR=os.path.join(work, "cedar"), OMP_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    os.makedirs(env["CEDAR_TRACE_DIR"], exist_ok=True)
    if inject:
        env["CEDAR_TRACE_INJECT"] = inject
    cmd = ["mpirun", "-np", "2", "--bind-to", "none", cedar, "run",
           os.path.join(HERE, "base.yaml"), "--db", os.path.join(work, "cedar.db"), "--quiet"]
    for key, value in pair["cedar"].items():
        cmd += ["--set", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"cedar failed ({done.returncode}): {' '.join(cmd)}\n"
                           f"{done.stdout}\n{done.stderr}")
    return [cedar_trace.load(env["CEDAR_TRACE_DIR"], r) for r in range(2)]


def torch_side_spec(pair, variant, inject):
    """`shipped`, `aligned`, or `without <difference>`: aligned with that one left out."""
    side = dict(pair["torch"], model="resnet20", optimizer=pairs.OPTIMIZER, inject=inject)
    side.update(pair.get(f"{'shipped' if variant == 'shipped' else 'aligned'}_torch", {}))
    if variant == "shipped":
        side["align"] = []
    elif variant == "aligned":
        side["align"] = list(pair["differences"])
    else:
        left_out = variant.split(" ", 1)[1]
        side["align"] = [d for d in pair["differences"] if d != left_out]
    return side


def run_pair(cedar, name, keep=None, batch_size=None, leave_one_out=False):
    if keep:
        os.makedirs(keep, exist_ok=True)
        return _run_pair(cedar, name, keep, batch_size, leave_one_out)
    # Under the build tree's test_tmp/ when ctest runs it (TEST_TMPDIR).
    with tempfile.TemporaryDirectory(prefix=f"cedar-differential-{name}-",
                                     dir=os.environ.get("TEST_TMPDIR") or None) as work:
        return _run_pair(cedar, name, work, batch_size, leave_one_out)


def _run_pair(cedar, name, work, batch_size, leave_one_out):
    pair = dict(pairs.PAIRS[name])
    if batch_size:
        pair["cedar"] = dict(pair["cedar"], **{"train.batch_size": batch_size})
    inject = None
    if pair["torch"]["algorithm"] == "powersgd":
        inject = os.path.join(work, "queries.pt")
        model = torch_models.build("resnet20")
        torch.save(torch_align.initial_queries(model, pair["torch"]["rank"],
                                               pair["torch"]["min_compression_rate"], QUERY_SEED),
                   inject)
    began = time.time()
    cedar_ranks = run_cedar(cedar, pair, work, inject)
    results = {"name": name, "steps": cedar_trace.steps(cedar_ranks[0]), "variants": {}}
    variants = ["shipped"] + (["aligned"] if pair["differences"] else [])
    if leave_one_out:
        variants += ["without " + d for d in pair.get("leave_one_out", {})]
    sides = {v: torch_side_spec(pair, v, inject) for v in variants}
    torch_ranks = torch_side.run(sides, os.path.join(work, "cedar"), work)
    for variant in variants:
        results["variants"][variant] = compare.compare(cedar_ranks, torch_ranks[variant])
    results["seconds"] = time.time() - began
    fp16 = None
    if pair["torch"]["algorithm"] == "fp16":
        fp16 = compare.fp16_step0(cedar_ranks, torch_ranks["shipped"])
        results["fp16_step0"] = fp16
    results["verdicts"] = compare.verdicts(name, pair, results["variants"],
                                           fp16[0] if fp16 else None)
    results["cedar"] = cedar_ranks  # main() compares the batched and unbatched traces
    return results


def batched_against_unbatched(results):
    """Cedar's PowerSGD rank 2 batched and unbatched traces, tensor by tensor (None when
    either pair did not run): (equal, text)."""
    by = {r["name"]: r["cedar"] for r in results}
    if "powersgd-r2" not in by or "powersgd-r2-batched" not in by:
        return None
    a, b = by["powersgd-r2"], by["powersgd-r2-batched"]
    differing = sorted({k for ra, rb in zip(a, b) for k in ra
                        if not compare.same_bits(ra[k], rb[k])})
    return (not differing,
            "Cedar's batch_same_shape PowerSGD rank 2 trace against its unbatched one (every "
            "loss, gradient, final parameter, buffer and algorithm state, both ranks): "
            + ("bit for bit equal" if not differing else
               f"{len(differing)} tensors differ, e.g. {', '.join(differing[:3])}"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cedar", required=True, help="the cedar executable")
    p.add_argument("--pair", action="append", choices=sorted(pairs.PAIRS),
                   help="a pair to run (repeatable; default: all)")
    p.add_argument("--doc", help="write the report (docs/differential.md) here")
    p.add_argument("--keep", help="keep the traces under this folder")
    p.add_argument("--batch-size", type=int,
                   help="images per rank per step (default: base.yaml's 8; ctest: 4)")
    p.add_argument("--leave-one-out", action="store_true",
                   help="also run each aligned side with one difference left out (pairs.py)")
    p.add_argument("--results", help="also save the results here (render_doc.py --results)")
    args = p.parse_args()
    names = args.pair or list(pairs.PAIRS)
    torch.set_num_threads(1)
    all_results, failed = [], False
    for name in names:
        r = run_pair(os.path.abspath(args.cedar), name,
                     os.path.join(args.keep, name) if args.keep else None, args.batch_size,
                     args.leave_one_out)
        all_results.append(r)
        for variant, m in r["variants"].items():
            print(f"{name:22s} {variant:24s} steps {r['steps']:3d}  loss {m['loss']:.3g}  "
                  f"grads {m['grads']:.3g}  params {m['params']:.3g}  "
                  f"buffers {m['buffers']:.3g}  state {m['state']}  "
                  f"bitwise {'yes' if m['bitwise'] else 'no'}  first differing gradient "
                  f"{m['first_grad_step']}, loss {m['first_step']} ({m['first_loss']:.3g})")
        if "fp16_step0" in r:
            print(f"  fp16 step 0: |dg|/bound {r['fp16_step0'][0]:.3g}, elements differing "
                  f"{r['fp16_step0'][1]}, largest normal rel. {r['fp16_step0'][2]:.3g}")
        for ok, text in r["verdicts"]:
            print(f"  {'ok  ' if ok else 'FAIL'} {text}")
            failed = failed or not ok
        sys.stdout.flush()
    batched = batched_against_unbatched(all_results)
    if batched is not None:
        print(f"  {'ok  ' if batched[0] else 'FAIL'} {batched[1]}")
        failed = failed or not batched[0]
    for r in all_results:
        del r["cedar"]
    if args.results:
        torch.save({"results": all_results, "batched": batched}, args.results)
    if args.doc:
        import provenance
        import render_doc
        with open(args.doc, "w") as f:
            f.write(render_doc.render(all_results, provenance.collect(args.cedar), batched))
        print(f"wrote {args.doc}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
