#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (AddressSanitizer + UndefinedBehaviorSanitizer)
# into build-fuzz/ and runs each one for a fixed time, printing the executions per target.
#   scripts/fuzz.sh --quick            # 5 s per target (CI: a smoke run; longer runs find more)
#   scripts/fuzz.sh --seconds 600      # longer
#   scripts/fuzz.sh --seconds 60 fuzz_idx fuzz_qsgd   # some targets only
#   scripts/fuzz.sh --build-only       # build the targets, run nothing
# Corpora grow in build-fuzz/corpus/<target>/ (kept between runs); seeds are regenerated in
# build-fuzz/seeds/. A crash leaves its input in build-fuzz/artifacts/ and fails the script;
# replay it with build-fuzz/<target> <file>. Targets run one per core at a time (CEDAR_FUZZ_JOBS
# overrides), each for its full time.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=10
build_only=false
targets=()
while (($#)); do
  case "$1" in
    --quick) seconds=5 ;;
    --seconds) seconds="$2"; shift ;;
    --build-only) build_only=true ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
all=(fuzz_config fuzz_idx fuzz_cifar fuzz_jpeg fuzz_qsgd fuzz_sparse fuzz_grace_codecs)
((${#targets[@]})) || targets=("${all[@]}")

source scripts/lib/env.sh
BUILD_DIR="${CEDAR_FUZZ_BUILD_DIR:-build-fuzz}"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
configure_once fuzz "$BUILD_DIR" -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j "${CEDAR_JOBS:-$(nproc)}" --target make_seeds "${targets[@]}"
$build_only && exit 0

seeds="$BUILD_DIR/seeds"
rm -rf "$seeds" && mkdir -p "$seeds/fuzz_config"
"$BUILD_DIR/make_seeds" "$seeds"
cp experiments/*.yaml "$seeds/fuzz_config/"
printf 'train: {epochs: 2}\n#set optimizer.lr=0.05\n#set algorithm={name: qsgd, bits: 2}\n' \
  >"$seeds/fuzz_config/overrides.yaml"

declare -A max_len=([fuzz_config]=4096 [fuzz_idx]=4096 [fuzz_cifar]=8192 [fuzz_jpeg]=8192
                    [fuzz_qsgd]=4096 [fuzz_sparse]=4096 [fuzz_grace_codecs]=4096)
# LibTorch is not instrumented; its static initialisation leaves allocations LeakSanitizer
# would report, so leak checking stays on for the torch-free targets only.
declare -A leaks=([fuzz_qsgd]=0 [fuzz_sparse]=0 [fuzz_grace_codecs]=0)
mkdir -p "$BUILD_DIR/artifacts"
# fuzz_one TARGET: runs one target for the set time; its log in build-fuzz/TARGET.log, its exit
# status in build-fuzz/TARGET.status.
fuzz_one() {
  local t="$1" extra=() rc=0
  mkdir -p "$BUILD_DIR/corpus/$t" "$seeds/$t"
  [ "$t" = fuzz_config ] && extra=(-dict=fuzz/config.dict)
  ASAN_OPTIONS="detect_leaks=${leaks[$t]:-1}:abort_on_error=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$BUILD_DIR/$t" -max_total_time="$seconds" -max_len="${max_len[$t]}" -timeout=20 \
      -rss_limit_mb=3072 -print_final_stats=1 -artifact_prefix="$BUILD_DIR/artifacts/$t-" \
      "${extra[@]}" "$BUILD_DIR/corpus/$t" "$seeds/$t" >"$BUILD_DIR/$t.log" 2>&1 || rc=$?
  echo "$rc" > "$BUILD_DIR/$t.status"
}
# One target per core at a time (each fuzzer is single-threaded): every target still gets its
# full time.
jobs_at_once="${CEDAR_FUZZ_JOBS:-$(nproc)}"
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs_at_once)); do wait -n || true; done
  echo "[fuzz] $t for ${seconds} s"
  fuzz_one "$t" &
done
wait
status=0
summary=""
for t in "${targets[@]}"; do
  if [ "$(cat "$BUILD_DIR/$t.status" 2>/dev/null)" = 0 ]; then
    result=ok
  else
    result=FAILED
    status=1
    tail -n 60 "$BUILD_DIR/$t.log"
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$BUILD_DIR/$t.log" | tail -1)
  corpus=$(ls "$BUILD_DIR/corpus/$t" | wc -l)
  summary+=$(printf '%-12s %-6s %10s execs  %6s corpus files' "$t" "$result" "${execs:-?}" "$corpus")$'\n'
done
echo "[fuzz] executions in ${seconds} s per target:"
printf '%s' "$summary"
exit $status
