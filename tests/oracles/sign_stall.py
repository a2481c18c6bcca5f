#!/usr/bin/env python3
"""The scaled-sign control's stall on sign-counterexample, predicted without Cedar's code.

On the construction of datasets/regression.cpp (3 workers, least squares in d = 4 dimensions,
theta starting at 0, two workers' targets at b + 1 and one's at b - 10), every worker's sign
vector is constant across coordinates, so the scaled sign averaged over workers moves all
coordinates alike and the spread of theta - b never changes: the run stalls where the mean of
theta - b is the optimum's, at a gap (1/(2d)) sum_k (b_k - mean b)^2. b is drawn from
std::mt19937_64(seed ^ 0x51C4C0DE5EED) as 2U - 1 with U = (x >> 11) * 2^-53; the generator is
written here from the C++ standard's definition and checked against its known answer.

Reads a results database (or a gzipped SQL dump) and compares every completed run named
scaled-sign-* with the prediction for its seed. Exit 0 when all agree within 1e-5 relative
(the data and model are float32 and float64), 1 otherwise, 77 when there are no such runs.
  tests/oracles/sign_stall.py docs/sign_counterexample.sql.gz
"""
import gzip
import sqlite3
import sys

MASK = (1 << 64) - 1


class Mt19937_64:
    def __init__(self, seed):
        self.mt = [seed & MASK]
        for i in range(1, 312):
            prev = self.mt[i - 1]
            self.mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK)
        self.index = 312

    def __call__(self):
        if self.index >= 312:
            for k in range(312):
                y = (self.mt[k] & 0xFFFFFFFF80000000) | (self.mt[(k + 1) % 312] & 0x7FFFFFFF)
                v = self.mt[(k + 156) % 312] ^ (y >> 1)
                self.mt[k] = v ^ 0xB5026F5AA96619E9 if y & 1 else v
            self.index = 0
        x = self.mt[self.index]
        self.index += 1
        x ^= (x >> 29) & 0x5555555555555555
        x ^= (x << 17) & 0x71D67FFFEDA60000
        x ^= (x << 37) & 0xFFF7EEE000000000
        x ^= x >> 43
        return x & MASK


def predicted_stall(seed, dim=4):
    rng = Mt19937_64(seed ^ 0x51C4C0DE5EED)
    b = [2 * ((rng() >> 11) * 2.0**-53) - 1 for _ in range(dim)]
    mean = sum(b) / dim
    return sum((x - mean) ** 2 for x in b) / (2 * dim)


def open_results(path):
    if path.endswith(".gz"):
        db = sqlite3.connect(":memory:")
        with gzip.open(path, "rt") as f:
            db.executescript(f.read())
        return db
    return sqlite3.connect(path)


def main():
    # The C++ standard ([rand.predef]): the 10000th output of a default-constructed
    # mt19937_64 (seed 5489) is 9981545732273789042.
    rng = Mt19937_64(5489)
    for _ in range(9999):
        rng()
    if rng() != 9981545732273789042:
        print("FAIL: the mt19937_64 written here does not give the standard's known answer")
        return 1
    db = open_results(sys.argv[1])
    rows = db.execute(
        "SELECT r.name, r.seed, (SELECT value FROM step_stats WHERE run_id = r.id AND key = 'gap' "
        "ORDER BY step DESC LIMIT 1) FROM runs r WHERE r.name LIKE 'scaled-sign-%' "
        "AND r.status = 'completed' ORDER BY r.name, r.seed").fetchall()
    if not rows:
        print("skip: no completed scaled-sign-* runs")
        return 77
    worst = 0.0
    for name, seed, gap in rows:
        want = predicted_stall(seed)
        rel = abs(gap - want) / want
        worst = max(worst, rel)
        print(f"{name} seed {seed}: measured {gap:.6g}, predicted {want:.6g}, relative {rel:.2g}")
    print(f"{len(rows)} runs; largest relative difference {worst:.2g}")
    return 0 if worst <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
