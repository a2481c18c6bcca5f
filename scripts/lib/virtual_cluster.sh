# shellcheck shell=bash
# Sourced from the checkout root by the scripts that measure on the virtual cluster
# (scripts/network_validation.sh, scripts/scheduling.sh, bench/calibration_regime.sh), with CEDAR
# naming the cedar binary.
# take_virtual_cluster NAME: exits 4, NAME leading the message, unless running as root with no
# virtual cluster up; then lets Open MPI run as root and takes any cluster the script brings up
# down again when it exits, however it exits.
take_virtual_cluster() {
  local name="$1"
  [[ $(id -u) == 0 ]] ||
    { echo "$name: needs root (the virtual cluster's namespaces and tbf)" >&2; exit 4; }
  if $CEDAR cluster status > /dev/null 2>&1; then
    echo "$name: a virtual cluster is up: \`$CEDAR cluster down\` first" >&2
    exit 4
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  trap '$CEDAR cluster down > /dev/null 2>&1 || true' EXIT
}
