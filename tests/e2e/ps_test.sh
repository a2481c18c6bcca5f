#!/usr/bin/env bash
# End to end: the parameter server (algorithm ps) through `cedar run` on real Fashion-MNIST with
# LeNet-5 under mpirun, checked through the database:
#  - bsp with 1 server and 2 workers takes the steps of 2-rank dense all-reduce SGD: the same
#    training losses, step by step, and the same test accuracy, bitwise (the server sums the two
#    gradients and averages them as the allreduce does); with 2 servers (the model in two
#    shards) the same again;
#  - the bytes per worker and step are the wire format's: a 32-byte header and the gradient of
#    each server's shard (runner/ps/protocol.h), from LeNet-5's shapes;
#  - ssp with bound s = 1 and worker 1 held back by the server (CEDAR_PS_HOLD_WORKER, released
#    only once worker 0 has to wait) never applies a gradient staler than 2s + 1 = 3 versions, and
#    worker 1's are stale by exactly s + 1 = 2 at most; asp with the same hold (3 updates) applies
#    worker 1's gradients at least 3 versions stale; both learn well above chance;
#  - LAG on the server (upload: lag): with xi = 0 the run is bsp's (plain SGD steps), bitwise;
#    with xi = 1 some uploads are skipped, and the workers' bytes are exactly the uploads'
#    headers and gradients (a skipped upload sends no bytes at all), learning still;
#  - the run records its workers and servers, `cedar report --staleness` shows the distribution;
#  - checkpoints (every 8 updates here) add no bytes: the replies above are the formula's;
#  - kill -9 of a worker and of the server, each held after round 20 (CEDAR_HOLD_AFTER_STEP):
#    the job ends non-zero within 30 s, the run is marked failed (by rank 0, or found stale by
#    `cedar report` when rank 0 died), its 20 rounds are in the database, which stays intact,
#    and `cedar run --resume` continues from the checkpoint of round 16 to exactly the records
#    of the uninterrupted bsp run (bitwise, bytes included); SIGTERM stops every rank at the next
#    round with a checkpoint there, and resuming from it gives the same records again;
#  - asp killed at its server resumes from the server's snapshot and completes every update once;
#  - parameters that overflow mark the run diverged, naming the update and the tensor;
#  - asp and ssp with 2 servers and 3 workers complete (no rank waits for another in a cycle),
#    evaluate at each epoch, send the formula's bytes, learn (plain SGD steps), and say they
#    write no checkpoints;
#  - bad settings are refused naming the key and value.
# Usage: ps_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-ps.XXXXXX)
DB="$WORK/ps.db"
trap 'rm -rf "$WORK"' EXIT

cat > "$WORK/ps.yaml" <<YAML
name: ps
suite: e2e
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 4096, test_limit: 1000}
train: {epochs: 2, batch_size: 32, threads: 1, seed: 7, checkpoint_every_steps: 8}
optimizer: {lr: 0.05, schedule: constant, weight_decay: 0}
algorithm: {name: ps, mode: bsp}
YAML
MODEL=61706  # LeNet-5's parameters at 1x28x28

run() {  # run NAME RANKS --set ...
  local name="$1" np="$2"; shift 2
  "${MPIRUN[@]}" -np "$np" "$CEDAR" run "$WORK/ps.yaml" --db "$DB" --quiet --set name="$name" "$@" 2>&1
}
steps_of() { q "SELECT s.step, s.train_loss FROM steps s JOIN runs r ON r.id = s.run_id
                WHERE r.name = '$1' ORDER BY s.step" | md5sum; }
id_of() { q "SELECT id FROM runs WHERE name='$1'"; }
# The asynchronous runs (ssp, asp) take plain SGD steps at lr 0.2: with momentum 0.9 on top of the
# momentum asynchrony itself implies (Mitliagkas et al., 2016), their accuracy after these 256
# updates depends on how the pushes interleave. Measured with momentum 0.9 and lr 0.05: asp
# without a hold ended at 0.34 to 0.72 (23 of 37 runs under 0.5), asp resumed after the server's
# kill at 0.38 to 0.76 (4 of 31); with these settings the held ssp, the held asp and the resumed
# asp (5 runs each) ended at 0.63 to 0.75.
ASYNC=(--set optimizer.momentum=0 --set optimizer.lr=0.2)

run dense 2 --set algorithm=dense > /dev/null
check "dense on 2 ranks completed" equals "$(q "SELECT status FROM runs WHERE name='dense'")" completed
out=$(run bsp 3)
check "ps bsp exits 0 on 3 ranks" equals "$?" 0
B=$(id_of bsp)
check "bsp: completed; 3 ranks = 2 workers + 1 server" equals \
  "$(q "SELECT status||','||world_size||','||workers||','||servers FROM runs WHERE id=$B")" "completed,3,2,1"
# 4096 images / (2 workers x 32) = 64 rounds per epoch, 2 epochs.
check "bsp: one row per round" equals "$(q "SELECT COUNT(*) FROM steps WHERE run_id=$B")" 128
check "bsp: the training losses of dense all-reduce SGD, bitwise" equals "$(steps_of bsp)" "$(steps_of dense)"
check "bsp: the same test accuracy" equals \
  "$(q "SELECT final_test_accuracy FROM runs WHERE id=$B")" "$(q "SELECT final_test_accuracy FROM runs WHERE name='dense'")"
check "bsp: payload per worker and step = 32 + 4 x 61,706" equals \
  "$(q "SELECT DISTINCT payload_bytes FROM steps WHERE run_id=$B")" $((32 + 4 * MODEL))
check "bsp: both workers' pushes per round" equals \
  "$(q "SELECT DISTINCT payload_bytes_all FROM steps WHERE run_id=$B")" $((2 * (32 + 4 * MODEL)))
# The server answers 127 rounds with 16 + 4n bytes, the last with a 16-byte stop, to each worker;
# its 15 checkpoints add nothing (the reply's own header says checkpoint).
check "bsp: the server's replies" equals \
  "$(q "SELECT payload_bytes FROM comm_totals WHERE run_id=$B AND rank=0 AND op='send'")" \
  $((2 * (127 * (16 + 4 * MODEL) + 16)))
check "bsp: cumulative bytes per worker = 128 x (32 + 4 x 61,706)" equals \
  "$(q "SELECT MAX(cum_payload_bytes) FROM steps WHERE run_id=$B")" $((128 * (32 + 4 * MODEL)))
proj=$("$CEDAR" project "$DB" --run-id "$B" --network 1gbe --workers 16 2>&1)
check "cedar project: costs bsp on the server's link, P counting workers" contains "$proj" \
  "Parameter server: 1 server(s) and 2 workers measured"
check "bsp: staleness 0 throughout" equals \
  "$(q "SELECT COUNT(*)||','||MAX(value) FROM step_stats WHERE run_id=$B AND key='staleness'")" "128,0.0"

run bsp2 4 --set algorithm.servers=2 > /dev/null
B2=$(id_of bsp2)
check "bsp, 2 servers: completed with 2 workers" equals \
  "$(q "SELECT status||','||workers||','||servers FROM runs WHERE id=$B2")" "completed,2,2"
check "bsp, 2 servers: the same losses, bitwise" equals "$(steps_of bsp2)" "$(steps_of dense)"
check "bsp, 2 servers: payload per worker and step = 2 x 32 + 4 x 61,706" equals \
  "$(q "SELECT DISTINCT payload_bytes FROM steps WHERE run_id=$B2")" $((64 + 4 * MODEL))
check "bsp, 2 servers: the shards are balanced (the largest tensor is 48,000 of 61,706)" equals \
  "$(q "SELECT COUNT(*) FROM comm_totals WHERE run_id=$B2 AND rank IN (0, 1) AND op='send' AND payload_bytes > 0")" 2

# LAG with xi = 0 against plain bsp: 2048 images, 32 rounds per epoch, are enough to compare.
run bsp-plain 3 --set optimizer.momentum=0 --set data.train_limit=2048 > /dev/null
run lag0 3 --set algorithm.upload=lag --set algorithm.xi=0 --set data.train_limit=2048 > /dev/null
check "lag, xi = 0: completed" equals "$(q "SELECT status FROM runs WHERE name='lag0'")" completed
check "lag, xi = 0: bsp's training losses (plain SGD), bitwise" equals "$(steps_of lag0)" "$(steps_of bsp-plain)"
check "lag, xi = 0: every worker uploads every round" equals \
  "$(q "SELECT MIN(value) FROM step_stats WHERE run_id=$(id_of lag0) AND key='uploads'")" 2.0
run lag 3 --set algorithm.upload=lag --set algorithm.xi=1 > /dev/null
L=$(id_of lag)
uploads=$(q "SELECT CAST(SUM(value) AS INTEGER) FROM step_stats WHERE run_id=$L AND key='uploads'")
check "lag, xi = 1: some uploads skipped ($uploads of 256 sent)" greater 256 "$uploads"
# Each worker: a 32-byte header and 4n bytes per upload, nothing for a skip, and its goodbye.
check "lag: the workers' bytes = uploads x (32 + 4n) + goodbyes" equals \
  "$(q "SELECT SUM(payload_bytes) FROM comm_totals WHERE run_id=$L AND rank > 0 AND op='send'")" \
  $((uploads * (32 + 4 * MODEL) + 2 * 32))
check "lag: every round's bytes are its uploads' (32 + 4n each), a skip's none" equals \
  "$(q "SELECT COUNT(*) FROM steps s JOIN step_stats v ON v.run_id = s.run_id AND v.step = s.step AND v.key = 'uploads' WHERE s.run_id=$L AND s.payload_bytes_all != CAST(v.value AS INTEGER) * $((32 + 4 * MODEL))")" 0
check "lag: learns (accuracy > 50%)" greater "$(q "SELECT final_test_accuracy FROM runs WHERE id=$L")" 0.5
err=$(run bad 3 --set algorithm.upload=lag --set algorithm.mode=asp)
check "lag outside bsp is refused" contains "$err" "LAG's rule is stated for synchronous rounds"

CEDAR_PS_HOLD_WORKER=1:1000000 run ssp 3 --set algorithm.mode=ssp --set algorithm.staleness=1 "${ASYNC[@]}" > /dev/null
S=$(id_of ssp)
check "ssp: completed" equals "$(q "SELECT status FROM runs WHERE id=$S")" completed
check "ssp: 2 x 128 gradients applied" equals "$(q "SELECT COUNT(*) FROM steps WHERE run_id=$S")" 256
check "ssp: no gradient staler than 2s + 1 = 3" equals \
  "$(q "SELECT MAX(value) <= 3 FROM step_stats WHERE run_id=$S AND key='staleness'")" 1
worker1=(run_id=$S AND step IN \(SELECT step FROM step_stats WHERE run_id=$S AND key=\'worker\' AND value=1\))
check "ssp: the held worker's gradients are 1 to s + 1 = 2 stale" equals \
  "$(q "SELECT MIN(value)||','||MAX(value) FROM step_stats WHERE ${worker1[*]} AND key='staleness'")" "1.0,2.0"
check "ssp: learns (accuracy > 50%, chance 10%)" greater "$(q "SELECT final_test_accuracy FROM runs WHERE id=$S")" 0.5

# (No checkpoints here: one waits until every worker waits, which would release the held push.)
CEDAR_PS_HOLD_WORKER=1:3 run asp 3 --set algorithm.mode=asp --set train.checkpoint=false "${ASYNC[@]}" > /dev/null
A=$(id_of asp)
check "asp: completed" equals "$(q "SELECT status FROM runs WHERE id=$A")" completed
worker1=(run_id=$A AND step IN \(SELECT step FROM step_stats WHERE run_id=$A AND key=\'worker\' AND value=1\))
check "asp: the held worker's gradients are at least 3 versions stale" equals \
  "$(q "SELECT COUNT(*) > 0 AND MIN(value) >= 3 FROM step_stats WHERE ${worker1[*]} AND key='staleness'")" 1
check "asp: learns (accuracy > 50%)" greater "$(q "SELECT final_test_accuracy FROM runs WHERE id=$A")" 0.5

# Two servers, three workers: replies and shards are posted, so no server waits for a worker busy
# with the other server (with blocking sends of these 100-kB shards the ranks wait for one another
# in a cycle). 4096 / (3 x 32) = 42 steps per worker and epoch: 252 gradients per server.
for mode in asp ssp; do
  out=$(run "$mode-2s" 5 --set algorithm.mode=$mode --set algorithm.staleness=1 --set algorithm.servers=2 \
    "${ASYNC[@]}")
  rc=$?
  check "$mode, 2 servers: exits 0" equals "$rc" 0
  [ "$rc" = 0 ] || echo "$out" | tail -n 20
  M=$(id_of "$mode-2s")
  check "$mode, 2 servers: completed with 3 workers and 2 servers" equals \
    "$(q "SELECT status||','||workers||','||servers FROM runs WHERE id=$M")" "completed,3,2"
  check "$mode, 2 servers: server 0 applied 2 x 42 x 3 gradients, one row each" equals \
    "$(q "SELECT COUNT(*)||','||MAX(step) FROM steps WHERE run_id=$M")" "252,251"
  check "$mode, 2 servers: evaluated at both epoch boundaries" equals \
    "$(q "SELECT COUNT(*) FROM evals WHERE run_id=$M")" 2
  check "$mode, 2 servers: a worker's step sends 2 headers and its gradient" equals \
    "$(q "SELECT DISTINCT payload_bytes FROM steps WHERE run_id=$M")" $((64 + 4 * MODEL))
  check "$mode, 2 servers: says it writes no checkpoints" contains "$out" "no checkpoints in mode $mode with 2 servers"
  # asp's staleness has no bound, so its accuracy depends on how the pushes interleave: 36 runs
  # of asp with 2 servers, idle and beside CPU hogs, ended at 0.548 to 0.726, one beside CI's
  # sanitizer build at 0.453; with lr 1e-9 (no learning) it ends at 0.095. Hence 0.25 for asp.
  floor=0.5; [ "$mode" = asp ] && floor=0.25
  check "$mode, 2 servers: learns (accuracy > $floor, chance 0.1)" greater \
    "$(q "SELECT final_test_accuracy FROM runs WHERE id=$M")" "$floor"
done
check "ssp, 2 servers: no gradient staler than (W - 1)(2s + 1) = 6 at server 0" equals \
  "$(q "SELECT MAX(value) <= 6 FROM step_stats WHERE run_id=$(id_of ssp-2s) AND key='staleness'")" 1

# The comparison table's bus bytes, compute and throughput are per worker: asp's rows are one
# worker's step each, bsp's one round of every worker. Both runs push 128 steps of 32 + 4n bytes
# per worker (asp: 256 pushes of 2 workers).
csv=$("$CEDAR" report "$DB" --suite e2e --format csv 2>&1)
bus_of() { echo "$csv" | awk -F, -v run="$1" '$1 == run { print $12 }'; }
check "comparison: asp's bus MB per rank is a worker's, as bsp's" equals "$(bus_of asp)" "$(bus_of bsp)"

report=$("$CEDAR" report "$DB" --suite e2e --staleness 2>&1)
check "report --staleness: a row per parameter-server run" contains "$report" "| asp | 3 | 2 | 1 |"
check "report --staleness: bsp's distribution" contains "$report" "| 0 | 0 | 0 | 0x128 |"

for victim in 1 0; do
  name="kill-$victim"
  CEDAR_HOLD_AFTER_STEP=20 CEDAR_HOLD_FILE="$WORK/hold-$victim" "${MPIRUN[@]}" -np 3 "$CEDAR" run \
      "$WORK/ps.yaml" --db "$DB" --quiet --set name="$name" > "$WORK/$name.log" 2>&1 &
  job=$!
  pid=$(wait_held "$WORK/hold-$victim" 3 "$victim" "$job")
  check "kill rank $victim: every rank holds after round 20" greater "$pid" 0
  K=$(id_of "$name")
  check "kill rank $victim: the last checkpoint is round 16's" equals \
    "$(awk '{print $2}' "$DB.checkpoints/run-$(q "SELECT uuid FROM runs WHERE id=$K")/LATEST")" 16
  start=$(date +%s)
  kill -9 "$pid"
  wait "$job"; rc=$?
  took=$(( $(date +%s) - start ))
  K=$(id_of "$name")
  check "kill rank $victim: the job ends non-zero" greater "$rc" 0
  check "kill rank $victim: ... within 30 s (took $took s)" greater 30 "$took"
  if [ "$victim" = 0 ]; then
    "$CEDAR" report "$DB" > /dev/null 2>&1
    check "kill the server: cedar report finds the run stale and marks it failed" contains \
      "$(q "SELECT status||': '||error FROM runs WHERE id=$K")" "failed: stale"
  else
    check "kill a worker: rank 0 marks the run failed" equals "$(q "SELECT status FROM runs WHERE id=$K")" failed
  fi
  check "kill rank $victim: the 20 rounds before the hold are recorded" equals \
    "$(q "SELECT COUNT(*) FROM steps WHERE run_id=$K")" 20
  check "kill rank $victim: database intact" equals "$(q "PRAGMA integrity_check")" ok
  out=$(run "$name" 3 --resume); rc=$?
  check "kill rank $victim: --resume continues run $K and completes" equals "$rc,$(id_of "$name")" "0,$K"
  check "kill rank $victim: the resumed run's records are the uninterrupted run's, bitwise" equals \
    "$(metrics "$DB" "$name" | md5sum)" "$(metrics "$DB" bsp | md5sum)"
done

sigterm_when_held 12 3 "$WORK/term.log" "${MPIRUN[@]}" -np 3 "$CEDAR" run "$WORK/ps.yaml" \
    --db "$DB" --quiet --set name=term; rc=$?
T=$(id_of term)
check "SIGTERM: the job exits non-zero" greater "$rc" 0
check "SIGTERM: every rank stops at the next round, with a checkpoint there" equals \
  "$(q "SELECT status||': '||error FROM runs WHERE id=$T")" \
  "failed: interrupted by SIGTERM at update 13 (checkpoint written)"
run term 3 --resume > /dev/null
check "SIGTERM: the resumed run's records are the uninterrupted run's, bitwise" equals \
  "$(metrics "$DB" term | md5sum)" "$(metrics "$DB" bsp | md5sum)"

CEDAR_HOLD_AFTER_STEP=20 CEDAR_HOLD_FILE="$WORK/hold-asp" "${MPIRUN[@]}" -np 3 "$CEDAR" run \
    "$WORK/ps.yaml" --db "$DB" --quiet --set name=asp-killed --set algorithm.mode=asp \
    "${ASYNC[@]}" > "$WORK/asp-killed.log" 2>&1 &
job=$!
pid=$(wait_held "$WORK/hold-asp" 1 0 "$job")
kill -9 "$pid"; wait "$job"
"$CEDAR" report "$DB" > /dev/null 2>&1
AK=$(id_of asp-killed)
snapshot=$(awk '{print $2}' "$DB.checkpoints/run-$(q "SELECT uuid FROM runs WHERE id=$AK")/LATEST")
check "asp killed at its server after update 20: a snapshot from update 16 on ($snapshot)" equals \
  "$([ "$snapshot" -ge 16 ] && [ "$snapshot" -le 20 ] && echo yes)" yes
run asp-killed 3 --set algorithm.mode=asp "${ASYNC[@]}" --resume > /dev/null
check "asp resumed from the server's snapshot: completed, each of 256 updates recorded once" equals \
  "$(q "SELECT r.status||','||COUNT(DISTINCT s.step)||','||COUNT(*)||','||MAX(s.step) FROM runs r JOIN steps s ON s.run_id = r.id WHERE r.id=$AK")" \
  "completed,256,256,255"
check "asp resumed: learns (accuracy > 50%)" greater \
  "$(q "SELECT final_test_accuracy FROM runs WHERE id=$AK")" 0.5

run nan 3 --set optimizer.lr=1e30 > /dev/null
check "overflowing parameters: the run is marked diverged, naming the update and the tensor" \
  contains "$(q "SELECT status||': '||error FROM runs WHERE name='nan'")" \
  "diverged: update 2: the parameters of conv1.weight are not finite (server 0)"

err=$(run bad 3 --set algorithm.servers=3)
check "servers >= world size is refused" contains "$err" "algorithm.servers 3 leaves no worker among world size 3"
err=$(run bad 3 --set algorithm.mode=hogwild)
check "an unknown mode is refused" contains "$err" "hogwild"
err=$(run bad 3 --set algorithm.staleness=-1)
check "a negative staleness is refused" contains "$err" "staleness"
err=$(run bad 3 --set train.overlap=true)
check "train.overlap is refused" contains "$err" "train.overlap is not supported with algorithm ps"
finish
