#!/usr/bin/env bash
# Every banded network profile a validation document was modeled with is what `cedar network fit`
# writes from the calibrations' timings kept beside it: for docs/X-data/calibration/R-a.yaml,
# R-b.yaml, ... (the calibrations of one set of links), `cedar network fit` with the profile's own
# name and the band edges its measured_on names (or --segments where it says it was fitted in
# segments) writes docs/X-data/R.yaml byte for byte. Any difference fails, with its diff.
#   tests/checks/refit_profiles.sh ROOT CEDAR
# Exit 0: all equal; 1: a difference or a failed fit; 77: no document keeps such timings.
set -uo pipefail
ROOT="$1"
CEDAR="$2"
# shellcheck source=tests/checks/check_steps.sh
source "$(dirname "$0")/check_steps.sh"
cd "$ROOT" || exit 1
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
shopt -s nullglob
failed=0 checked=0
for first in docs/*-data/calibration/*-a.yaml; do
  data="${first%/calibration/*}"
  links="$(basename "${first%-a.yaml}")"
  timings=("${first%-a.yaml}"-[a-z].yaml)
  profile="$data/$links.yaml"
  [[ ${#timings[@]} -ge 2 && -f $profile ]] || continue
  name="$(sed -n 's/^  - name: "\(.*\)"$/\1/p' "$profile")"
  # "...; size bands from 1 MiB, 8 MiB" -> --bands 1MiB,8MiB
  edges="$(sed -n 's/^    measured_on: ".*; size bands from \(.*\)"$/\1/p' "$profile" | sed 's/ //g')"
  shape=(--bands "$edges")
  grep -q '^    measured_on: ".*; size bands in segments between the sizes timed"$' "$profile" &&
    shape=(--segments)
  if [[ -z $name || (-z $edges && ${shape[0]} == --bands) ]]; then
    echo "FAIL: $profile: no name, or neither size bands nor segments in its measured_on"
    failed=1
    continue
  fi
  run_or_report "$out/$links.log" "cedar network fit ${timings[*]}" \
    "$CEDAR" network fit "${timings[@]}" --out "$out/$links.yaml" --name "$name" "${shape[@]}" ||
    { failed=1; continue; }
  checked=$((checked + 1))
  same_or_report "$profile" "$out/$links.yaml" \
    "$profile is not what its calibrations' timings fit to (diff above)" || failed=1
done
if ((checked == 0 && failed == 0)); then
  echo "skip: no document keeps the timings of its banded profiles"
  exit 77
fi
echo "refit: $checked profile(s) fitted again from their timings and compared"
exit "$failed"
