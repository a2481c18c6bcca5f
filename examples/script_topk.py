"""Top-k sparsification (Stich, Cordonnier, Jaggi, "Sparsified SGD with Memory", NeurIPS 2018)
as a Cedar script compressor: each gradient tensor of d elements is sent as its k = ceil(ratio d)
largest magnitudes and their indices. Error feedback is Cedar's (error_feedback: true).

Wire format, the built-in topk's (algorithms/topk.cpp): k int32 indices, ascending, then the k
fp32 values: 8k bytes. Equal magnitudes at the k-th: the lower index first, as the built-in.

Export:  python examples/script_topk.py script_topk.pt
Run:     algorithm: {name: script, path: script_topk.pt, ratio: 0.01, error_feedback: true}
"""
import math
import sys
from typing import Dict, List

import torch


class TopK(torch.nn.Module):
    exchange: str  # every rank's (indices, values) gathered, each decoded, then averaged
    defaults: Dict[str, float]  # the keys an experiment may set under algorithm:

    def __init__(self):
        super().__init__()
        self.exchange = "allgather"
        self.defaults = {"ratio": 0.01}
        self.ratio = 0.01

    @torch.jit.export
    def configure(self, params: Dict[str, float]) -> None:
        if not 0.0 < params["ratio"] <= 1.0:
            raise ValueError("ratio must be in (0, 1]")
        self.ratio = params["ratio"]

    @torch.jit.export
    def compress(self, x: torch.Tensor) -> List[torch.Tensor]:
        d = x.numel()
        k = min(max(math.ceil(d * self.ratio - 1e-9), 1), d)
        a = x.abs()
        kth = torch.topk(a, k, sorted=False).values.min()  # the k-th largest magnitude
        above = torch.nonzero(a > kth).flatten()
        ties = torch.nonzero(a == kth).flatten()[: k - above.numel()]  # lower indices first
        index = torch.cat([above, ties]).sort().values
        return [index.to(torch.int32), x[index]]

    @torch.jit.export
    def decompress(self, parts: List[torch.Tensor], numel: int) -> torch.Tensor:
        out = torch.zeros(numel, dtype=parts[1].dtype, device=parts[1].device)
        out[parts[0].long()] = parts[1]
        return out


if __name__ == "__main__":
    torch.jit.script(TopK()).save(sys.argv[1])
