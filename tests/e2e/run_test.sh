#!/usr/bin/env bash
# End to end: `cedar run` on real Fashion-MNIST data with 2 MPI ranks, the database rows it
# writes, and the clear errors for a bad configuration and a bad data file.
# Usage: run_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-run.XXXXXX)
DB="$WORK/e2e.db"
trap 'rm -rf "$WORK"' EXIT

cat > "$WORK/small.yaml" <<YAML
name: e2e-small
suite: e2e
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 2048, test_limit: 1000}
train: {epochs: 1, batch_size: 32, threads: 1, seed: 7}
optimizer: {lr: 0.05, schedule: constant, weight_decay: 0}
algorithm: dense
YAML

out=$("${MPIRUN[@]}" -np 2 "$CEDAR" run "$WORK/small.yaml" --db "$DB" --quiet 2>&1)
rc=$?
check "cedar run exits 0 on 2 ranks" equals "$rc" 0
check "result line printed" contains "$out" "e2e-small"
check "run completed with world size 2" equals "$(q "SELECT status||','||world_size||','||backend FROM runs")" "completed,2,mpi"
# 2048 images / (2 ranks x 32) = 32 steps; LeNet-5 at 1x28x28 has 61,706 parameters.
check "one step row per step" equals "$(q "SELECT COUNT(*) FROM steps")" 32
check "payload per step = one fp32 allreduce of 61,706 gradients" equals "$(q "SELECT DISTINCT payload_bytes FROM steps")" $((4 * 61706))
check "bus bytes per step = 2(n-1)/n x payload" equals "$(q "SELECT DISTINCT bus_bytes FROM steps")" $((4 * 61706))
check "payload summed over both ranks" equals "$(q "SELECT DISTINCT payload_bytes_all FROM steps")" $((2 * 4 * 61706))
check "cumulative bytes" equals "$(q "SELECT MAX(cum_payload_bytes) FROM steps")" $((32 * 4 * 61706))
check "dense-equivalent bytes" equals "$(q "SELECT DISTINCT dense_bytes FROM steps")" $((4 * 61706))
check "one evaluation on all 1000 test images" equals "$(q "SELECT COUNT(*) FROM evals")" 1
check "accuracy well above chance (10%)" greater "$(q "SELECT final_test_accuracy FROM runs")" 0.5
check "per-rank totals for both ranks" equals "$(q "SELECT COUNT(*)||','||SUM(payload_bytes) FROM comm_totals WHERE op='allreduce'")" "2,$((2 * 32 * 4 * 61706))"
check "resolved config stored" contains "$(q "SELECT config FROM runs")" "batch_size: 32"
# The machine's load beside the run: both ranks on this host, their CPU time part of its busy time.
check "machine load: one host with both ranks" equals \
  "$(q "SELECT json_array_length(provenance, '\$.machine_load.hosts')||','||json_extract(provenance, '\$.machine_load.hosts[0].ranks') FROM runs")" "1,2"
check "machine load: the ranks used CPU time" greater \
  "$(q "SELECT json_extract(provenance, '\$.machine_load.hosts[0].run_cpu_s') FROM runs")" 0
check "machine load: other work's share lies in [0, 1]" equals \
  "$(q "SELECT json_extract(provenance, '\$.machine_load.max_other_share') BETWEEN 0 AND 1 FROM runs")" 1
# The run records the source revision this binary was built from (`cedar --version`: the code
# version, then the commit and any uncommitted changes' hash).
version=$("$CEDAR" --version)
check "code version is the build's" equals "$(q "SELECT code_version FROM runs")" "${version%% *}"
commit=$(sed -nE 's/.*\(commit ([0-9a-f]+|unknown)[,)].*/\1/p' <<< "$version")
diff=$(sed -nE 's/.*uncommitted changes sha256 ([0-9a-f]{64})\)$/\1/p' <<< "$version")
check "cedar --version names a commit" grep -qxE '[0-9a-f]{40}|unknown' <<< "$commit"
check "provenance names the build's commit" equals "$(q "SELECT json_extract(provenance, '\$.commit') FROM runs")" "$commit"
check "provenance names the build's diff hash" equals "$(q "SELECT json_extract(provenance, '\$.diff') FROM runs")" "$diff"
check "wall clock increases" equals "$(q "SELECT COUNT(*) FROM steps a JOIN steps b ON b.step = a.step + 1 WHERE b.wall_seconds < a.wall_seconds")" 0

# train.evals_per_epoch: N evenly spaced evaluations per epoch, the k-th after step ceil(k S / N)
# of the epoch's S steps. 640 images / (2 ranks x 32) = 10 steps per epoch, N = 3: after steps 4,
# 7 and 10 of each of 2 epochs; each row carries the bytes sent up to its step (the plots' x).
"${MPIRUN[@]}" -np 2 "$CEDAR" run "$WORK/small.yaml" --db "$WORK/evals.db" --quiet --set name=evals \
  --set data.train_limit=640 --set train.epochs=2 --set train.evals_per_epoch=3 > /dev/null 2>&1
check "evals_per_epoch run exits 0" equals "$?" 0
evals() { sqlite3 "$WORK/evals.db" "SELECT group_concat($1, ',') FROM (SELECT * FROM evals ORDER BY step)"; }
check "3 evaluations per epoch x 2 epochs, at steps ceil(k x 10 / 3)" equals "$(evals step)" "4,7,10,14,17,20"
check "... at fractional epochs" equals "$(evals epoch)" "0.4,0.7,1.0,1.4,1.7,2.0"
check "... each with the payload sent up to its step" equals "$(evals "cum_payload_bytes / $((4 * 61706))")" "4,7,10,14,17,20"
check "... each a real evaluation: the test loss falls from the first to the last" equals \
  "$(sqlite3 "$WORK/evals.db" "SELECT (SELECT test_loss FROM evals ORDER BY step DESC LIMIT 1) < (SELECT test_loss FROM evals ORDER BY step LIMIT 1)")" 1

# Mixed precision through the binary on 2 ranks: train.amp lands in the run's resolved
# configuration, each fp16 step records its loss scale, and the comparison table names the run.
"${MPIRUN[@]}" -np 2 "$CEDAR" run "$WORK/small.yaml" --db "$WORK/amp.db" --quiet --set name=amp-fp16 \
  --set data.train_limit=640 --set train.amp=fp16 > /dev/null 2>&1
check "train.amp fp16 run exits 0" equals "$?" 0
check "... its resolved configuration says so" contains "$(sqlite3 "$WORK/amp.db" "SELECT config FROM runs")" "amp: fp16"
check "... a loss scale recorded for each of its 10 steps" equals \
  "$(sqlite3 "$WORK/amp.db" "SELECT COUNT(*) FROM step_stats WHERE key = 'amp_loss_scale'")" 10
check "... named under the comparison table" contains "$("$CEDAR" report "$WORK/amp.db" --suite e2e 2>&1)" "amp-fp16 fp16"

# Overlap of the exchange with backward (small buckets: several per step) changes when buckets
# are exchanged, never what is computed: the same losses and bytes, bitwise, over 1024 images /
# (2 ranks x 32) = 16 steps.
for alg in powersgd lag dgc; do
  for ov in false true; do
    "${MPIRUN[@]}" -np 2 "$CEDAR" run "$WORK/small.yaml" --db "$WORK/overlap.db" --quiet --set name="ov-$alg-$ov" \
      --set algorithm=$alg --set train.overlap=$ov --set train.bucket_mb=0.02 --set data.train_limit=1024 \
      > /dev/null 2>&1
  done
  sums=$(for ov in false true; do sqlite3 "$WORK/overlap.db" "SELECT s.step, s.train_loss, s.payload_bytes, s.latency_steps FROM steps s
        JOIN runs r ON r.id = s.run_id WHERE r.name = 'ov-$alg-$ov' ORDER BY s.step" | md5sum; done | uniq | wc -l)
  check "$alg: overlap on and off give identical steps" equals "$sums,$(sqlite3 "$WORK/overlap.db" "SELECT COUNT(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name LIKE 'ov-$alg-%'")" "1,32"
done

# A typo'd key: one clear error naming file:line:column, non-zero exit, nothing written.
printf 'name: bad\ntrain:\n  epochs: 1\n  bach_size: 8\n' > "$WORK/typo.yaml"
out=$("$CEDAR" run "$WORK/typo.yaml" --db "$DB" 2>&1); rc=$?
check "typo'd key exits non-zero" greater "$rc" 0
check "error names file:line:column and key" contains "$out" "$WORK/typo.yaml:4:3: unknown key 'train.bach_size'"
check "no run recorded for a bad config" equals "$(q "SELECT COUNT(*) FROM runs")" 1

# A truncated IDX file: the error names the file.
mkdir -p "$WORK/bad-mnist"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  zcat "/usr/share/datasets/fashion-mnist/$f.gz" | head -c 5000 > "$WORK/bad-mnist/$f"
done
out=$("$CEDAR" run "$WORK/small.yaml" --db "$DB" --set data.root="$WORK/bad-mnist" 2>&1); rc=$?
check "truncated data exits non-zero" greater "$rc" 0
check "error names the truncated file" contains "$out" "$WORK/bad-mnist/train-"
check "earlier run intact" equals "$(q "SELECT status FROM runs WHERE id=1")" "completed"

# SIGTERM mid-run (the run holds after step 3 until it comes): the run is marked failed with
# the reason, rows already written stay.
sigterm_when_held 3 1 "$WORK/term.log" "$CEDAR" run "$WORK/small.yaml" --db "$DB" --quiet \
    --set train.epochs=50; rc=$?
check "interrupted run exits non-zero" greater "$rc" 0
check "interrupted run marked failed with the signal" contains "$(q "SELECT status||':'||error FROM runs WHERE id > 1")" "failed:interrupted by SIGTERM"
check "its step rows up to the stop kept" equals "$(q "SELECT COUNT(*) FROM steps WHERE run_id > 1")" 4
check "database integrity" equals "$(q "PRAGMA integrity_check")" "ok"

finish
