#!/usr/bin/env bash
# End to end: experiments/imagenette.yaml on JPEG files in Imagenette's layout
# (train/<wnid>/*.JPEG, val/<wnid>/*.JPEG, the 10 wnids of imagenette2), written by the test:
# the suite's preflight passes on them (and names a batch the tiny set cannot fill), and the
# file's runs train for two steps through the ImageFolder reader: dense ResNet-18 on 1 rank, and
# PowerSGD on 2 ranks sending exactly (n + m)·2 values per compressed matrix, the number its
# claim states; lazy decoding trains bitwise as eager decoding and names an undecodable file.
# Usage: imagenette_test.sh CEDAR_BINARY SOURCE_DIR IMAGE_FOLDER_WRITER
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"; WRITER="$3"
WORK=$(mktemp -d /tmp/cedar-e2e-imagenette.XXXXXX)
DB="$WORK/imagenette.db"
trap 'rm -rf "$WORK"' EXIT

WNIDS=(n01440764 n02102040 n02979186 n03000684 n03028079 n03394916 n03417042 n03425413 n03445777 n03888257)
"$WRITER" "$WORK/imagenette" train 4 48 40 "${WNIDS[@]}" && "$WRITER" "$WORK/imagenette" val 2 40 48 "${WNIDS[@]}"
check "40 training and 20 validation JPEGs written" equals \
  "$(find "$WORK/imagenette/train" -name '*.JPEG' | wc -l),$(find "$WORK/imagenette/val" -name '*.JPEG' | wc -l)" "40,20"
SUITE=("$SRC/experiments/imagenette.yaml" --db "$DB" --set "data.root=$WORK/imagenette")

# The suite's preflight reads these files: 4 ranks x 32 images per step do not fit in 40 images.
out=$("$CEDAR" suite "${SUITE[@]}" --dry-run 2>&1)
check "dry run lists the 15 runs" contains "$out" "suite 'imagenette': 15 run(s)"
check "... and the batch the tiny set cannot fill" contains "$out" \
  "train.batch_size 32 x 4 rank(s) = 128 images per step, more than the 40 training images of imagenet-folder"
out=$("$CEDAR" suite "${SUITE[@]}" --set train.batch_size=4 --dry-run 2>&1)
check "with 4 images per rank every run passes its preflight" contains "$out" \
  "preflight: 15 run(s) checked: 1 data set(s), 3 model(s), in "
check "... with no problem" equals "$(echo "$out" | grep '^preflight:' | grep -c ', no problem$')" 1

# The file's base run (dense ResNet-18), then PowerSGD on 2 ranks, two steps each at 32 px.
SHORT=(--set data.image_size=32 --set train.max_steps=2 --set train.batch_size=4 --set train.threads=1
       --set train.device=cpu --quiet)
"$CEDAR" run "${SUITE[@]}" "${SHORT[@]}" > "$WORK/dense.out" 2>&1
check "dense ResNet-18 completes" equals "$(q "SELECT status||','||model||','||dataset||','||parameters FROM runs WHERE algorithm='dense'")" \
  "completed,resnet18,imagenet-folder,11181642"
check "two steps" equals "$(q "SELECT COUNT(*) FROM steps JOIN runs ON runs.id = run_id WHERE algorithm='dense'")" 2
check "evaluated on the 20 validation images" greater "$(q "SELECT COUNT(*) FROM evals JOIN runs ON runs.id = run_id WHERE algorithm='dense'")" 0
# Lazy decoding, batches prepared by the step itself: bitwise the dense run's losses (eager,
# prefetch 2 by default), the settings in the run's recorded configuration.
"$CEDAR" run "${SUITE[@]}" "${SHORT[@]}" --set name=lazy --set data.decode=lazy \
  --set data.prefetch=0 > "$WORK/lazy.out" 2>&1
losses() {
  q "SELECT group_concat(v, ' ') FROM (SELECT printf('%.17g', s.train_loss) AS v FROM steps s JOIN runs r ON r.id = s.run_id
     WHERE r.name = '$1' AND r.algorithm = 'dense' ORDER BY s.step)"
  q "SELECT group_concat(v, ' ') FROM (SELECT printf('%.17g', e.test_loss) AS v FROM evals e JOIN runs r ON r.id = e.run_id
     WHERE r.name = '$1' AND r.algorithm = 'dense' ORDER BY e.step)"
}
check "lazy decoding without prefetch trains as eager with prefetch" equals "$(losses lazy)" "$(losses imagenette)"
check "... and its settings are recorded" equals \
  "$(q "SELECT (config LIKE '%decode: lazy%') || (config LIKE '%prefetch: 0%') FROM runs WHERE name = 'lazy'")" 11
# Training files that are no JPEGs (the folders list fine): the lazy run fails at its first
# batch, naming a file.
cp -r "$WORK/imagenette" "$WORK/bad"
for f in "$WORK"/bad/train/*/*.JPEG; do printf 'not a JPEG' > "$f"; done
"$CEDAR" run "${SUITE[@]}" "${SHORT[@]}" --set "data.root=$WORK/bad" --set name=lazy-bad \
  --set data.decode=lazy > "$WORK/lazy-bad.out" 2>&1 && status=0 || status=$?
check "undecodable files stop the lazy run" greater "$status" 0
check "... naming one" contains "$(cat "$WORK/lazy-bad.out")" "$WORK/bad/train/n0"
check "... as the run's recorded error" equals \
  "$(q "SELECT status || ',' || (instr(error, '.JPEG: not a readable JPEG') > 0) FROM runs WHERE name = 'lazy-bad'")" "failed,1"
"${MPIRUN[@]}" -np 2 "$CEDAR" run "${SUITE[@]}" "${SHORT[@]}" --set algorithm=powersgd > "$WORK/powersgd.out" 2>&1
check "PowerSGD on 2 ranks completes" equals "$(q "SELECT status||','||world_size FROM runs WHERE algorithm='powersgd'")" "completed,2"
# ResNet-18, ImageNet stem, 10 classes: 11,181,642 values; rank 2 sends 82,500 of them.
check "PowerSGD sends 82,500 of 11,181,642 values per step" equals \
  "$(q "SELECT DISTINCT payload_bytes||'/'||dense_bytes FROM steps JOIN runs ON runs.id = run_id WHERE algorithm='powersgd'")" \
  "$((4 * 82500))/$((4 * 11181642))"
[ "$FAILED" -eq 0 ] || tail -n 20 "$WORK/dense.out" "$WORK/powersgd.out"
finish
