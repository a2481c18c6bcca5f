"""QSGD (Alistarh, Grubic, Li, Tomioka, Vojnovic, NeurIPS 2017) as a Cedar script compressor.
Each bucket of B consecutive elements of a gradient tensor is sent as its L2 norm and, per
element, a sign and a level in [0, s], s = 2^bits - 1, drawn so that the decoding is unbiased:
    a = |x_i| s / norm,  level = floor(a) + (u < a - floor(a)),  u ~ U[0, 1)
    decoded x_i = sign(x_i) level norm / s

Wire format, the built-in qsgd's (algorithms/codecs/qsgd_codec.h): ceil(n/B) fp32 norms, then n
codes of bits+1 bits, code = level | negative << bits, packed LSB first: 4 ceil(n/B) +
ceil(n (bits+1) / 8) bytes. The norms are summed in the built-in's order (eight fp64 partial
sums), so that for the same uniforms u the bytes are the built-in's; here u comes from torch.rand
on Cedar's seeded generator, the built-in's from its counter-based generator.

Export:  python examples/script_qsgd.py script_qsgd.pt
Run:     algorithm: {name: script, path: script_qsgd.pt, bits: 4, bucket_size: 512}
"""
import sys
from typing import Dict, List

import torch


class Qsgd(torch.nn.Module):
    exchange: str
    defaults: Dict[str, float]

    def __init__(self):
        super().__init__()
        self.exchange = "allgather"  # quantized levels are decoded per rank, never summed
        self.defaults = {"bits": 4.0, "bucket_size": 512.0}
        self.bits = 4
        self.bucket = 512

    @torch.jit.export
    def configure(self, params: Dict[str, float]) -> None:
        bits, bucket = params["bits"], params["bucket_size"]
        if bits != float(int(bits)) or not 1 <= bits <= 8:
            raise ValueError("bits must be an integer from 1 to 8")
        if bucket != float(int(bucket)) or bucket < 1:
            raise ValueError("bucket_size must be a positive integer")
        self.bits, self.bucket = int(bits), int(bucket)

    @torch.jit.export
    def compress(self, x: torch.Tensor, gen: torch.Generator) -> List[torch.Tensor]:
        return self.quantize(x, torch.rand(x.numel(), generator=gen))

    @torch.jit.export
    def quantize(self, x: torch.Tensor, u: torch.Tensor) -> List[torch.Tensor]:
        n, s = x.numel(), float((1 << self.bits) - 1)
        norms = self.norms(x)
        scale = torch.where(norms > 0, torch.full_like(norms, s) / norms, 0.0)
        a = x.abs() * scale.repeat_interleave(self.bucket)[:n]
        a = torch.where(a <= s, a, s)
        whole = a.to(torch.int32)
        level = whole + (u < a - whole.float()).to(torch.int32)
        negative = ((level != 0) & (x < 0)).to(torch.int32)
        return [norms, pack(level | negative << self.bits, self.bits + 1)]

    def norms(self, x: torch.Tensor) -> torch.Tensor:
        # Sums of squares in fp64: element p of a bucket into partial sum p mod 8, row by row.
        n = x.numel()
        width = min(self.bucket, n)
        m, rows = (n + width - 1) // width, (width + 7) // 8
        squares = torch.zeros(m * width, dtype=torch.float64)
        squares[:n] = x.double() * x.double()
        laid = torch.cat([squares.view(m, width), torch.zeros(m, rows * 8 - width, dtype=torch.float64)], 1)
        p = torch.zeros(m, 8, dtype=torch.float64)
        for r in range(rows):
            p += laid[:, r * 8 : r * 8 + 8]
        total = ((p[:, 0] + p[:, 1]) + (p[:, 2] + p[:, 3])) + ((p[:, 4] + p[:, 5]) + (p[:, 6] + p[:, 7]))
        return total.sqrt().float()

    @torch.jit.export
    def decompress(self, parts: List[torch.Tensor], numel: int) -> torch.Tensor:
        norms, code = parts[0], unpack(parts[1], numel, self.bits + 1)
        levels = (1 << self.bits) - 1
        unit = norms / float(levels)
        mag = (code & levels).float() * unit.repeat_interleave(self.bucket)[:numel]
        return torch.where((code >> self.bits) == 1, -mag, mag)


def pack(code: torch.Tensor, b: int) -> torch.Tensor:
    """b-bit codes into bytes, LSB first (Cedar's bit_packing.h): one uint8 per bit, then bytes."""
    bits = ((code.unsqueeze(1) >> torch.arange(b, dtype=torch.int32)) & 1).to(torch.uint8)
    nbytes = (code.numel() * b + 7) // 8
    stream = torch.zeros(nbytes * 8, dtype=torch.uint8)
    stream[: code.numel() * b] = bits.flatten()
    weights = torch.tensor([1, 2, 4, 8, 16, 32, 64, 128], dtype=torch.uint8)
    return (stream.view(nbytes, 8) * weights).sum(1, dtype=torch.uint8)


def unpack(packed: torch.Tensor, n: int, b: int) -> torch.Tensor:
    bits = (packed.unsqueeze(1) >> torch.arange(8, dtype=torch.uint8)) & 1
    codes = bits.flatten()[: n * b].view(n, b).to(torch.int32) << torch.arange(b, dtype=torch.int32)
    return codes.sum(1, dtype=torch.int32)


if __name__ == "__main__":
    torch.jit.script(Qsgd()).save(sys.argv[1])
