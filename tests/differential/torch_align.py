"""Cedar's documented deliberate differences from PyTorch's implementations, applied to PyTorch's
own code so that a pair can also be compared with them taken out (docs/differential.md). Each
name below is one difference; a side lists the ones it applies in its `align`.

  fp32_average                fp16: the halves are decoded and averaged in fp32 (Cedar's
                              algorithms/fp16.cpp); fp16_compress_hook sums them in fp16.
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
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd

ALL = ("fp32_average", "warm_start_as_paper", "gram_schmidt", "no_uncompressed_error")


def fp16_fp32_average_hook(process_group, bucket):
    """fp16_compress_hook with Cedar's arithmetic: each rank's gradients rounded to fp16, then
    summed and divided by the world size in fp32."""
    group = process_group if process_group is not None else dist.group.WORLD
    buffer = bucket.buffer()
    decoded = buffer.to(torch.float16).to(buffer.dtype)

    def average(fut):
        buffer.copy_(fut.value()[0].div_(group.size()))
        return buffer

    return dist.all_reduce(decoded, group=group, async_op=True).get_future().then(average)


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

    def __call__(self, state, bucket):
        if state.iter >= state.start_powerSGD_iter and bucket.index() not in state.p_memory_dict:
            self._inject(bucket)
        fut = powersgd.powerSGD_hook(state, bucket)
        if "no_uncompressed_error" in self.align and state.use_error_feedback:
            fut = fut.then(functools.partial(self._drop_uncompressed_error, bucket))
        return fut
