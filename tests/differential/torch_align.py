"""Cedar's documented deliberate differences from PyTorch's implementations, applied to PyTorch's
own code so that a pair can also be compared with them taken out (docs/differential.md). Each
name below is one difference; a side lists the ones it applies in its `align`.

  fp32_average                fp16: the halves are decoded, summed and divided by the world
                              size in fp32 (Cedar's algorithms/fp16.cpp); fp16_compress_hook
                              divides them in fp16 and sums them in fp16.
  warm_start_as_paper         PowerSGD: the warm-started Q is used as it is (Vogels et al. 2019,
                              Algorithm 1); powerSGD_hook orthonormalises it again every step.
  gram_schmidt                PowerSGD: P is orthonormalised by Gram-Schmidt at every rank;
                              powerSGD_hook uses torch.linalg.qr (Householder) above rank 2.
  no_uncompressed_error       PowerSGD: error feedback covers the compressed matrices only;
                              powerSGD_hook's memory also holds (local - mean) for the vectors and
                              small matrices it allreduces uncompressed.
"""
import functools

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd

ALL = ("fp32_average", "warm_start_as_paper", "gram_schmidt", "no_uncompressed_error")


class _Done:
    """What dist.all_reduce(async_op=True) returns, for a result already computed."""

    def __init__(self, value):
        self._future = torch.futures.Future()
        self._future.set_result([value])

    def get_future(self):
        return self._future


class _SizeOne:
    """A process group that tells the hook its size is 1, so that the hook's own division by
    the world size (before the sum) divides by 1, exactly; _all_reduce_fp32_average divides
    the fp32 sum by the real size instead."""

    def __init__(self, group):
        self.group = group

    def size(self):
        return 1


def _all_reduce_fp32_average(tensor, group=None, async_op=False, op=None):
    """dist.all_reduce of an fp16 tensor replaced by Cedar's average: every rank's halves
    gathered, decoded and added in fp32 in rank order, then divided by the world size."""
    real = group.group
    parts = [torch.empty_like(tensor) for _ in range(real.size())]
    dist.all_gather(parts, tensor, group=real)
    total = parts[0].float()
    for part in parts[1:]:
        total.add_(part.float())
    return _Done(total.div_(real.size()))


def fp16_fp32_average_hook(process_group, bucket):
    """PyTorch's own fp16_compress_hook with its averaging moved to fp32: its group reports
    size 1 (the hook's fp16 division before the sum becomes a division by 1) and its
    dist.all_reduce sums the decoded halves in fp32 and divides by the world size. The cast to
    fp16 and the copy of the result into the bucket are the hook's, unchanged."""
    group = process_group if process_group is not None else dist.group.WORLD
    original = dist.all_reduce
    dist.all_reduce = _all_reduce_fp32_average
    try:
        return default_hooks.fp16_compress_hook(_SizeOne(group), bucket)
    finally:
        dist.all_reduce = original


def compressed_layout(shapes, rank, min_compression_rate):
    """powerSGD_hook's choice for a list of gradient shapes: for each, (n, m, r) when compressed
    else None, by the hook's own _should_compress."""
    out = []
    for shape in shapes:
        n = shape[0]
        m = 1
        for s in shape[1:]:
            m *= s
        r = min(n, m, rank)
        out.append((n, m, r) if powersgd._should_compress(n, m, r, min_compression_rate)[0]
                   else None)
    return out


def initial_queries(model, rank, min_compression_rate, seed):
    """One orthonormal m x r Q per compressed parameter ("query.<name>", Cedar's PowerSGD state
    key), drawn and orthonormalised as powerSGD_hook draws its own."""
    gen = torch.Generator().manual_seed(seed)
    queries = {}
    named = list(model.named_parameters())
    layout = compressed_layout([p.shape for _, p in named], rank, min_compression_rate)
    for (name, _), nmr in zip(named, layout):
        if nmr is None:
            continue
        _, m, r = nmr
        q = torch.randn(1, m, r, generator=gen)
        powersgd._orthogonalize(q, 0)
        queries["query." + name] = q[0].contiguous()
    return queries


def _shares_storage(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _orthogonalize(state, align, original, matrices, epsilon=0):
    if "warm_start_as_paper" in align and any(
            _shares_storage(matrices, q) for q in state.q_memory_dict.values()):
        return
    if "gram_schmidt" in align:
        powersgd._orthogonalize_gram_schmidt(matrices, epsilon)
        return
    original(matrices, epsilon)


class PowerSgdHook:
    """powerSGD_hook with the initial Q of every compressed matrix taken from `queries` (the
    file Cedar also loads) instead of the state's generator, and the differences in `align`."""

    def __init__(self, state, queries, names, align):
        self.state, self.queries, self.names, self.align = state, queries, names, set(align)
        if self.align & {"warm_start_as_paper", "gram_schmidt"}:
            powersgd._orthogonalize = functools.partial(_orthogonalize, state, self.align,
                                                        powersgd._orthogonalize)
        self.__name__ = self.__qualname__ = "powerSGD_hook"
        self.members, self.offsets = {}, {}  # per bucket: compressed (name, Q size); (name, offset)

    def _layout(self, bucket):
        shapes = [g.shape for g in bucket.gradients()]
        return compressed_layout(shapes, self.state.matrix_approximation_rank,
                                 self.state.min_compression_rate)

    def _inject(self, bucket):
        # The hook's layout: matrices grouped by shape in order of first appearance, each Q an
        # m x r block of the bucket's Q memory.
        groups = {}
        for p, nmr in zip(bucket.parameters(), self._layout(bucket)):
            if nmr is not None:
                groups.setdefault(nmr[:2], []).append((self.names[id(p)], nmr))
        members = [x for group in groups.values() for x in group]
        idx = bucket.index()
        self.members[idx] = [(name, m * r) for name, (_, m, r) in members]
        self.state.p_memory_dict[idx] = torch.empty(sum(n * r for _, (n, _, r) in members))
        self.state.q_memory_dict[idx] = torch.cat(
            [self.queries["query." + name].reshape(-1) for name, _ in members])

    def _drop_uncompressed_error(self, bucket, fut):
        error = self.state.error_dict.get(bucket.index())
        if error is not None:
            offset = 0
            for g, nmr in zip(bucket.gradients(), self._layout(bucket)):
                if nmr is None:
                    error[offset:offset + g.numel()].zero_()
                offset += g.numel()
        return fut.value()

    def final_state(self):
        """The hook's Q and error memory per compressed parameter, flattened, under Cedar's
        state keys ("algorithm.query.<name>", "algorithm.error.<name>")."""
        out = {}
        for idx, members in self.members.items():
            q, offset = self.state.q_memory_dict[idx], 0
            for name, size in members:
                out["algorithm.query." + name] = q[offset:offset + size].clone()
                offset += size
            error = self.state.error_dict.get(idx)
            if error is not None:
                at = dict(self.offsets[idx])
                for name, _ in members:
                    start, numel = at[name]
                    out["algorithm.error." + name] = error[start:start + numel].clone()
        return out

    def __call__(self, state, bucket):
        offsets, start = [], 0
        for p, g in zip(bucket.parameters(), bucket.gradients()):
            offsets.append((self.names[id(p)], (start, g.numel())))
            start += g.numel()
        self.offsets[bucket.index()] = offsets
        if state.iter >= state.start_powerSGD_iter and bucket.index() not in state.p_memory_dict:
            self._inject(bucket)
        fut = powersgd.powerSGD_hook(state, bucket)
        if "no_uncompressed_error" in self.align and state.use_error_feedback:
            fut = fut.then(functools.partial(self._drop_uncompressed_error, bucket))
        return fut
