"""PyTorch's side of a differential pair: the training a Cedar trace recorded (cedar_trace.py),
run again with PyTorch's own distributed implementations on 2 gloo ranks, one intra-op thread
each. Each rank starts from Cedar's initial parameters and buffers, trains on the
batches Cedar's rank drew, and writes its per-step losses and final state.

A side is a dict (tests/differential/pairs.py): `algorithm` (dense, fp16, powersgd, post-local),
its settings, and `align`: the names of Cedar's documented deliberate differences to apply to
PyTorch's implementation (torch_align.py), or none to run PyTorch as shipped.
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.algorithms.ddp_comm_hooks import post_localSGD_hook as post_local
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
from torch.distributed.algorithms.model_averaging import averagers
from torch.distributed.optim import PostLocalSGDOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "models"))
import torch_models  # noqa: E402
import torch_align  # noqa: E402
import cedar_trace  # noqa: E402


def make_optimizer(model, side):
    opt = side["optimizer"]
    sgd = torch.optim.SGD(model.parameters(), lr=opt["lr"], momentum=opt["momentum"],
                          weight_decay=opt["weight_decay"])
    if side["algorithm"] != "post-local":
        return sgd
    # PeriodicModelAverager averages after the optimizer step when step >= warmup_steps and
    # (step - warmup_steps) % period == 0 (its step counts its own calls from 0).
    averager = averagers.PeriodicModelAverager(period=side["period"],
                                               warmup_steps=side["averager_warmup_steps"])
    return PostLocalSGDOptimizer(optim=sgd, averager=averager)


def register_hook(model, side, names):
    algorithm = side["algorithm"]
    if algorithm == "dense":
        return
    if algorithm == "fp16":
        if "fp32_average" in side["align"]:
            model.register_comm_hook(None, torch_align.fp16_fp32_average_hook)
        else:
            model.register_comm_hook(None, default_hooks.fp16_compress_hook)
        return
    if algorithm == "powersgd":
        state = powersgd.PowerSGDState(
            process_group=None, matrix_approximation_rank=side["rank"],
            start_powerSGD_iter=side["start_iter"],
            min_compression_rate=side["min_compression_rate"], use_error_feedback=True,
            warm_start=True, orthogonalization_epsilon=0,
            batch_tensors_with_same_shape=side["batch"])
        queries = torch.load(side["inject"])
        hook = torch_align.PowerSgdHook(state, queries, names, side["align"])
        model.register_comm_hook(state, hook)
        return hook
    if algorithm == "post-local":
        # post_local_gradient_allreduce=False: after the switch each rank keeps its own gradient
        # (PyTorch's default would allreduce within intra-node subgroups).
        state = post_local.PostLocalSGDState(process_group=None, subgroup=None,
                                             start_localSGD_iter=side["switch_step"],
                                             post_local_gradient_allreduce=False)
        model.register_comm_hook(state, post_local.post_localSGD_hook)
        return
    raise ValueError(f"unknown algorithm {algorithm}")


def train(rank, side, trace, out_path):
    model = torch_models.build(side["model"])
    torch_models.load_named_state(model, trace, "init.")
    names = {id(p): n for n, p in model.named_parameters()}
    # One gradient bucket, as Cedar's 25 MiB train.bucket_mb gives ResNet-20: DDP's first bucket
    # is 1 MiB unless dist._DEFAULT_FIRST_BUCKET_BYTES says otherwise (with two buckets on gloo,
    # powerSGD_hook's chained collectives of the two buckets can be issued in different orders on
    # the two ranks). broadcast_buffers=False: each rank keeps its own batch-norm statistics, as
    # Cedar does.
    dist._DEFAULT_FIRST_BUCKET_BYTES = 25 * 1024 * 1024
    ddp = DDP(model, broadcast_buffers=False, bucket_cap_mb=25)
    hook = register_hook(ddp, side, names)
    opt = make_optimizer(ddp, side)
    losses, result = [], {}
    for step in range(cedar_trace.steps(trace)):
        x, y = trace[f"x.{step}"], trace[f"y.{step}"]
        opt.zero_grad()
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
        # The gradient the update uses, after the exchange (Cedar's "grad.<step>").
        result[f"grad.{step}"] = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        opt.step()
        losses.append(loss.item())
    result["loss"] = torch.tensor(losses, dtype=torch.float64)
    if hook is not None:
        result.update(hook.final_state())
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        result["final." + name] = t.detach().clone()
    torch.save(result, out_path)
    dist.barrier()


def worker(rank, world, port, sides, trace_dir, out_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    trace = cedar_trace.load(trace_dir, rank)
    original = powersgd._orthogonalize
    for variant, side in sides.items():
        train(rank, side, trace, os.path.join(out_dir, f"torch_{variant}_rank{rank}.pt"))
        powersgd._orthogonalize = original  # torch_align may have wrapped it
    dist.destroy_process_group()


def run(sides, trace_dir, out_dir, world=2):
    """Trains each of PyTorch's sides ({variant: side}) in turn on the same `world` processes;
    returns {variant: [each rank's result dict]}."""
    import socket
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(world, port, sides, trace_dir, out_dir), nprocs=world, join=True)
    return {v: [torch.load(os.path.join(out_dir, f"torch_{v}_rank{r}.pt")) for r in range(world)]
            for v in sides}
