"""PyTorch-ops references of Cedar's compressors, timed on the same tensor with the same torch
build and one thread: what a researcher's Python implementation (GRACE-style, tensor ops only)
costs for exactly the work bench/compressors_bench times.

    python bench/python_compressors.py OUT.json [--sizes 1000000,15000000,25000000] [--reps 5]

Each reference does one compress + decompress (codec/*) or one whole one-rank step (reduce/*),
decoding into a reused buffer as Cedar's benchmark does:
  memory_pass      out.copy_(x)
  codec/fp16       out.copy_(x.half())
  codec/sign       1 bit per element packed 8 to a byte (x < 0), unpacked to +-1
  codec/scaled_sign  the same times ||x||_1 / n
  codec/qsgd       4 bits: per bucket of 512 the L2 norm, stochastic levels floor(|x|/norm*15 + u),
                   5-bit codes (level, sign) packed 8 to 5 bytes; decoded to sign*level*norm/15
  codec/topk       1%: topk(|x|), indices sorted, values gathered; zero-fill + scatter
  codec/randomk    1%: randperm(n)[:k] sorted (GRACE's sampler), gathered; zero-fill + scatter
  reduce/terngrad  sigma in double, clip at 2.5 sigma, scaler max|g|, Bernoulli(|g|/s) ternary codes
                   packed 4 to a byte, decoded to {0, +s, -s}
  reduce/dgc       0.1%: u = 0.9u + g; v += u; 1% sample, threshold from its top 0.1%, mask,
                   trimmed to k by topk when over 1.3k; u, v cleared where sent; zero-fill + scatter
  reduce/lag       ||g - g_last||^2 against the threshold; g_last kept (no upload: the benchmark
                   feeds the same gradient every step)
  reduce/powersgd  rank 2 with error feedback and warm start: M += e; P = M Q; orthonormalise P;
                   Q = M^T P; e = M - P Q^T; the decoded gradient P Q^T
The gradient is Cedar's: torch.randn({n/1000, 1000}) from the generator Cedar's
make_generator(2024, 0, n) seeds (SplitMix64 of the four inputs); its sum is written beside the
timings so that bench/summarize.py checks both sides timed the same values.
"""
import json
import math
import statistics
import sys
import time

import torch

MASK = (1 << 64) - 1
COLUMNS = 1000


def splitmix(z):
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def make_generator(seed, rank, step, stream=0):
    """algorithms/codecs/compressor.cpp's make_generator: the same CPU generator state."""
    s = splitmix(splitmix(splitmix(splitmix(seed) ^ rank) ^ step) ^ stream)
    g = torch.Generator()
    g.manual_seed(s)
    return g


def gradient(n):
    return torch.randn((n // COLUMNS, COLUMNS), generator=make_generator(2024, 0, n))


SIGN_SHIFTS = torch.arange(8, dtype=torch.uint8)


def pack_bits(bits):
    """bool (n,) -> uint8 (ceil(n/8),), LSB first."""
    n = bits.numel()
    pad = (-n) % 8
    b = torch.nn.functional.pad(bits.to(torch.uint8), (0, pad)).view(-1, 8)
    return (b << SIGN_SHIFTS).sum(1, dtype=torch.uint8)


def unpack_bits(packed, n):
    return ((packed.unsqueeze(1) >> SIGN_SHIFTS) & 1).view(-1)[:n]


def sign_codec(x, out, scaled):
    payload = pack_bits(x < 0)
    scale = x.abs().sum() / x.numel() if scaled else None
    neg = unpack_bits(payload, x.numel())
    out.copy_(1 - 2 * neg.to(torch.float32))
    if scaled:
        out.mul_(scale)


QSGD_LEVELS = 15
QSGD_BUCKET = 512
SHIFT5 = 5 * torch.arange(8, dtype=torch.int64)
BYTE_SHIFTS = 8 * torch.arange(5, dtype=torch.int64)


def qsgd_codec(x, out, gen):
    n = x.numel()
    pad = (-n) % QSGD_BUCKET
    xb = torch.nn.functional.pad(x, (0, pad)).view(-1, QSGD_BUCKET)
    norms = xb.norm(dim=1, keepdim=True)
    u = torch.rand(xb.shape, generator=gen)
    scaled = xb.abs() / norms.clamp_min(1e-30) * QSGD_LEVELS
    level = torch.floor(scaled + u).clamp_max(QSGD_LEVELS).to(torch.int64)
    codes = (level | ((xb < 0).to(torch.int64) << 4)).view(-1)[:n]
    cpad = (-n) % 8
    words = (torch.nn.functional.pad(codes, (0, cpad)).view(-1, 8) << SHIFT5).sum(1)
    payload = ((words.unsqueeze(1) >> BYTE_SHIFTS) & 255).to(torch.uint8).view(-1)
    # decode
    w = (payload.view(-1, 5).to(torch.int64) << BYTE_SHIFTS).sum(1)
    c = ((w.unsqueeze(1) >> SHIFT5) & 31).view(-1)[:n]
    lv = (c & 15).to(torch.float32)
    sg = 1 - 2 * ((c >> 4) & 1).to(torch.float32)
    nb = torch.nn.functional.pad(norms.view(-1).repeat_interleave(QSGD_BUCKET), (0, 0))[:n]
    out.copy_(sg * lv * nb / QSGD_LEVELS)


TERN_SHIFTS = 2 * torch.arange(4, dtype=torch.uint8)


def terngrad(x, out, gen):
    sigma = x.double().std(unbiased=False).float()
    g = x.clamp(-2.5 * sigma, 2.5 * sigma)
    s = g.abs().max()
    b = torch.rand(g.shape, generator=gen) < g.abs() / s
    codes = (b.to(torch.uint8) * (1 + (g < 0).to(torch.uint8)))
    pad = (-codes.numel()) % 4
    payload = (torch.nn.functional.pad(codes, (0, pad)).view(-1, 4) << TERN_SHIFTS).sum(
        1, dtype=torch.uint8)
    c = ((payload.unsqueeze(1) >> TERN_SHIFTS) & 3).view(-1)[:x.numel()]
    dec = (c == 1).to(torch.float32) - (c == 2).to(torch.float32)
    out.copy_(dec * s)


def sparse_decode(out, idx, vals):
    out.zero_()
    out[idx] = vals


def topk_codec(x, out, ratio):
    k = math.ceil(x.numel() * ratio)
    _, idx = torch.topk(x.abs(), k, sorted=False)
    idx, _ = idx.sort()
    payload = torch.cat([idx.to(torch.int32).view(torch.uint8), x[idx].view(torch.uint8)])
    k4 = 4 * k
    sparse_decode(out, payload[:k4].view(torch.int32).long(), payload[k4:].view(torch.float32))


def randomk_codec(x, out, ratio, gen):
    k = math.ceil(x.numel() * ratio)
    idx, _ = torch.randperm(x.numel(), generator=gen)[:k].sort()
    vals = x[idx]
    sparse_decode(out, idx, vals)


class Dgc:
    def __init__(self, n, density=0.001, momentum=0.9):
        self.u = torch.zeros(n)
        self.v = torch.zeros(n)
        self.k = math.ceil(n * density)
        self.m = momentum

    def step(self, g, out, gen):
        self.u.mul_(self.m).add_(g)
        self.v.add_(self.u)
        n = g.numel()
        sample = self.v[torch.randint(n, (max(1, n // 100),), generator=gen)].abs()
        kk = max(1, math.ceil(sample.numel() * self.k / n))
        thr = torch.topk(sample, kk, sorted=False).values.min()
        sel = (self.v.abs() >= thr).nonzero().view(-1)
        if sel.numel() > 1.3 * self.k:
            top = torch.topk(self.v[sel].abs(), self.k, sorted=False).indices
            sel, _ = sel[top].sort()
        vals = self.v[sel]
        self.u[sel] = 0
        self.v[sel] = 0
        sparse_decode(out, sel, vals)


class Lag:
    def __init__(self, g):
        self.last = g.clone()

    def step(self, g, out):
        diff = (g - self.last).pow(2).sum()
        if diff > 1e-3:  # the parameter-move threshold; the same gradient never crosses it
            self.last.copy_(g)
        out.copy_(self.last)


class PowerSgd:
    def __init__(self, shape, rank=2):
        self.q = torch.randn(shape[1], rank, generator=make_generator(7, 0, 0))
        self.e = torch.zeros(shape)

    def step(self, g, out):
        m = g + self.e
        p = m @ self.q
        p, _ = torch.linalg.qr(p)
        self.q = m.t() @ p
        approx = p @ self.q.t()
        self.e = m - approx
        out.copy_(approx)


def timed(fn, reps):
    fn()  # warm-up: allocations and first-touch page faults
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    out_path = args[0]
    sizes = [1000000, 15000000, 25000000]
    reps = 5
    for i, a in enumerate(args):
        if a == "--sizes":
            sizes = [int(s) for s in args[i + 1].split(",")]
        if a == "--reps":
            reps = int(args[i + 1])
    torch.set_num_threads(1)
    result = {"torch": torch.__version__, "threads": torch.get_num_threads(), "reps": reps,
              "gradient_sum": {}, "ms": {}}
    for n in sizes:
        g2 = gradient(n)
        x = g2.view(-1)
        out = torch.empty(n)
        out.copy_(x)
        result["gradient_sum"][str(n)] = float(x.double().sum())
        gen = make_generator(1, 0, 0)
        dgc, lag, psgd = Dgc(n), Lag(x), PowerSgd(g2.shape)
        cases = {
            "memory_pass": lambda: out.copy_(x),
            "codec/fp16": lambda: out.copy_(x.half()),
            "codec/sign": lambda: sign_codec(x, out, False),
            "codec/scaled_sign": lambda: sign_codec(x, out, True),
            "codec/qsgd": lambda: qsgd_codec(x, out, gen),
            "codec/topk": lambda: topk_codec(x, out, 0.01),
            "codec/randomk": lambda: randomk_codec(x, out, 0.01, gen),
            "reduce/terngrad": lambda: terngrad(x, out, gen),
            "reduce/dgc": lambda: dgc.step(x, out, gen),
            "reduce/lag": lambda: lag.step(x, out),
            "reduce/powersgd": lambda: psgd.step(g2, out.view(g2.shape)),
        }
        for name, fn in cases.items():
            ms = timed(fn, reps if n <= 15000000 else max(3, reps - 2))
            result["ms"][f"{name}/{n}"] = ms
            print(f"{name:20s} {n:>10d}  {ms:9.2f} ms", flush=True)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
