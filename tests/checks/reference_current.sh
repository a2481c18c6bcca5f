#!/usr/bin/env bash
# docs/reference.md is what `cedar list --markdown` prints from the registries today: an algorithm,
# model, data set or key added, removed or redocumented without regenerating the page fails here.
#   tests/checks/reference_current.sh ROOT CEDAR
# Regenerate: build/cedar list --markdown > docs/reference.md
set -uo pipefail
ROOT="$1"
CEDAR="$2"
if ! diff -u "$ROOT/docs/reference.md" <("$CEDAR" list --markdown); then
  echo "FAIL: docs/reference.md is not current; regenerate it: build/cedar list --markdown > docs/reference.md"
  exit 1
fi
echo "docs/reference.md is current"
