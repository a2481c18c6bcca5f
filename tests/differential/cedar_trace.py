"""Cedar's traces (runner/train/step_trace.h): what one rank of a `cedar run` with
CEDAR_TRACE_DIR=DIR trained on and ended with, in DIR/rank<r>.pt."""
import os

import torch
import torch.jit._pickle


def load(trace_dir, rank):
    """Rank `rank`'s trace: a dict of tensors, "init.<name>", "x.<step>", "y.<step>", "loss",
    "final.<name>", "algorithm.<key>"."""
    # torch::pickle_save tags the dictionary's type with a function weights_only must allow.
    with torch.serialization.safe_globals([torch.jit._pickle.restore_type_tag]):
        return torch.load(os.path.join(trace_dir, f"rank{rank}.pt"))


def steps(trace):
    return trace["loss"].numel()
