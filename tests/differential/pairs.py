"""The differential pairs: each a Cedar algorithm and the PyTorch implementation it is compared
with, run over the same steps from the same state (run_pairs.py). A pair has one or two PyTorch
sides: `shipped`, PyTorch as it comes, and `aligned`, PyTorch with Cedar's documented deliberate
differences applied (torch_align.py), which must agree with Cedar to `tolerance`.

A tolerance of 0 (every pair's) means bit for bit (compare.same_bits): every step's loss and
averaged gradient, the final parameters and buffers, and the final algorithm state where
PyTorch's side records it; both sides run the same ATen kernels in the same order, and with 2
ranks an allreduce sum a + b is the same bits in any order. A tolerance above 0 would be a
maximum relative difference (max |cedar - torch| / max |torch| per tensor), a NaN counting as
infinite.
"""

SWITCH_STEP = 8        # post-local SGD: the first local step (Cedar's switch epoch 8/32)
STEPS_PER_EPOCH = 32   # tests/differential/base.yaml: 512 images, 8 per rank, 2 ranks

OPTIMIZER = {"lr": 0.05, "momentum": 0.9, "weight_decay": 5e-4}  # base.yaml


def _powersgd(rank, batch, steps=20):
    # start_powerSGD_iter 2: the smallest PyTorch accepts with error feedback or warm start
    # (DDP rebuilds its buckets after the first step); Cedar's start_powersgd_iter 2 matches.
    differences = ["warm_start_as_paper", "no_uncompressed_error"]
    if rank > 2:
        differences.append("gram_schmidt")
    return {
        "cedar": {"algorithm.name": "powersgd", "algorithm.rank": rank,
                  "algorithm.start_powersgd_iter": 2, "algorithm.min_compression_rate": 2,
                  "algorithm.batch_same_shape": batch, "train.max_steps": steps},
        "torch": {"algorithm": "powersgd", "rank": rank, "start_iter": 2,
                  "min_compression_rate": 2, "batch": batch},
        "module": "torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook "
                  "(PowerSGDState, powerSGD_hook%s)" % (
                      ", batch_tensors_with_same_shape=True" if batch else ""),
        "differences": differences,
        # The first compressed step (2) is the first whose averaged gradient the differences
        # can change (Q orthonormalised again; P by QR above rank 2); the uncompressed error
        # memory first acts on step 3.
        "first_grad_step": 2,
        # Aligned with one difference left out at a time (run_all.sh only): the step whose
        # averaged gradient that difference alone first changes.
        "leave_one_out": ({"warm_start_as_paper": 2, "no_uncompressed_error": 3,
                           "gram_schmidt": 2} if rank > 2 else {}),
    }


def _post_local(period, steps=40):
    return {
        "cedar": {"algorithm.name": "local-sgd", "algorithm.period": period,
                  "algorithm.post_local_switch_epoch": SWITCH_STEP / STEPS_PER_EPOCH,
                  "train.max_steps": steps, "train.epochs": 2},
        "torch": {"algorithm": "post-local", "period": period, "switch_step": SWITCH_STEP},
        "module": "torch.distributed.optim.PostLocalSGDOptimizer + "
                  "torch.distributed.algorithms.model_averaging.averagers.PeriodicModelAverager "
                  "+ ddp_comm_hooks.post_localSGD_hook (post_local_gradient_allreduce=False)",
        # PyTorch's documented use: warmup_steps = start_localSGD_iter, so its first model
        # average follows the first local step; Cedar's (and the paper's) after H local steps.
        "shipped_torch": {"averager_warmup_steps": SWITCH_STEP},
        "aligned_torch": {"averager_warmup_steps": SWITCH_STEP + period - 1},
        "differences": ["first_average_after_h_steps"],
        # PyTorch's extra average after the first local step (step 8) is the first difference:
        # step 9's gradient is taken at other parameters.
        "first_grad_step": SWITCH_STEP + 1,
        # The average changes the parameters step 9 starts from: its loss differs too.
        "loss_lag": 0,
    }


PAIRS = {
    "dense": {
        "cedar": {"algorithm.name": "dense", "train.max_steps": 20},
        "torch": {"algorithm": "dense"},
        "module": "torch.nn.parallel.DistributedDataParallel + torch.optim.SGD",
        "differences": [],
    },
    "fp16": {
        "cedar": {"algorithm.name": "fp16", "train.max_steps": 20},
        "torch": {"algorithm": "fp16"},
        "module": "torch.distributed.algorithms.ddp_comm_hooks.default_hooks.fp16_compress_hook",
        "differences": ["fp32_average"],
        # Step 0's averaged gradient is rounded to fp16 on PyTorch's side (compare.fp16_step0
        # bounds the difference element by element).
        "first_grad_step": 0,
    },
    "powersgd-r1": _powersgd(1, False),
    "powersgd-r2": _powersgd(2, False),
    "powersgd-r4": _powersgd(4, False),
    "powersgd-r2-batched": _powersgd(2, True),
    "post-local-h4": _post_local(4),
    "post-local-h16": _post_local(16),
}

# The pairs ctest runs (tests/CMakeLists.txt), at the same scale.
CI_PAIRS = ("dense", "fp16", "powersgd-r2")
