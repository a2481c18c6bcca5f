"""PyTorch's side of bench/compare.sh: CIFAR ResNet-20 trained data-parallel with
torch.nn.parallel.DistributedDataParallel over gloo on CPU, plain and with PyTorch's PowerSGD
communication hook, timing each step.

    python bench/ddp_step.py --ranks 2 --batch 32 --threads 1 --warmup 5 --steps 20 --out FILE

The model is models/resnet_cifar.cpp written again in PyTorch (models/torch_models.py, shared
with the differential tests in tests/differential/).
Optimizer: torch.optim.SGD(lr 0.1, momentum 0.9, weight decay 5e-4), Cedar's defaults.
Each rank draws a fresh random batch (batch x 3 x 32 x 32, 10 classes) before each step, outside
the timed region, as Cedar's loader hands over a ready batch. A step is timed from zero_grad to the
end of optimizer.step() on rank 0 (DDP's allreduce overlaps the backward pass and completes
inside it). PowerSGD: rank 2, min_compression_rate 2, error feedback, warm start (Cedar's powersgd
defaults); start_powerSGD_iter 2, the smallest PyTorch accepts with error feedback, so every timed
step is compressed once warm-up steps >= 2.
Writes a JSON object: parameter count, per-variant step times (seconds) and their medians.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from torch_models import ResNetCifar  # noqa: E402  (the one PyTorch version of Cedar's models)


def time_variant(args, rank, hook):
    torch.manual_seed(1)  # DDP broadcasts rank 0's parameters anyway
    model = DDP(ResNetCifar(20), bucket_cap_mb=25)
    if hook:
        state = powersgd.PowerSGDState(process_group=None, matrix_approximation_rank=2,
                                       start_powerSGD_iter=2, min_compression_rate=2,
                                       use_error_feedback=True, warm_start=True)
        model.register_comm_hook(state, powersgd.powerSGD_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    gen = torch.Generator().manual_seed(7 + rank)
    times = []
    for step in range(args.warmup + args.steps):
        x = torch.randn(args.batch, 3, 32, 32, generator=gen)
        y = torch.randint(10, (args.batch,), generator=gen)
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        t1 = time.perf_counter()
        if step >= args.warmup:
            times.append(t1 - t0)
    dist.barrier()
    return times


def worker(rank, args, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    result = {
        "parameters": sum(p.numel() for p in ResNetCifar(20).parameters()),
        "ranks": args.ranks, "threads": args.threads, "batch": args.batch,
        "torch": torch.__version__, "warmup": args.warmup, "steps": args.steps,
    }
    for name, hook in (("ddp", False), ("ddp_powersgd", True)):
        times = time_variant(args, rank, hook)
        result[name] = {"step_seconds": times, "median_s": statistics.median(times)}
    dist.destroy_process_group()
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        for name in ("ddp", "ddp_powersgd"):
            print(f"{name:14s} median step {1e3 * result[name]['median_s']:8.1f} ms "
                  f"({args.steps} steps, {args.ranks} ranks x {args.threads} thread(s))")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--batch", type=int, default=32, help="images per rank per step")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps (>= 2 for PowerSGD)")
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--out", help="JSON file to write (required unless --print-parameters)")
    p.add_argument("--print-parameters", action="store_true",
                   help="print the model's parameter count and exit")
    args = p.parse_args()
    if args.print_parameters:
        print(sum(p.numel() for p in ResNetCifar(20).parameters()))
        return
    if not args.out:
        p.error("--out is required")
    if args.warmup < 2:
        p.error("--warmup must be >= 2 (PowerSGD starts compressing at step 2)")
    mp.spawn(worker, args=(args, free_port()), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
