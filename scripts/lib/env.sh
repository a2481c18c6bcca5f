# Sourced from the checkout root by build.sh, sanitize.sh and fuzz.sh: runs setup.sh (apt
# packages, the LibTorch venv; sets CEDAR_HOME and VENV), shares one compiler cache between every
# build folder and checkout, and configures a build folder once.
source scripts/setup.sh
export CCACHE_DIR="${CCACHE_DIR:-$CEDAR_HOME/ccache}"
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
# Paths relative to the checkout, so fresh clones elsewhere hit the same cache entries.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
# The sanitizer and fuzz builds carry debug information, which would otherwise put the build
# folder's absolute path into every cache key.
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

# configure_once SOURCE_DIR BUILD_DIR [cmake arguments...]: configures BUILD_DIR with Ninja and the
# venv's Python (for LibTorch) unless it already holds a build.ninja; later runs reuse it as it is.
configure_once() {
  local source_dir="$1" build_dir="$2"
  shift 2
  [ -f "$build_dir/build.ninja" ] && return 0
  cmake -S "$source_dir" -B "$build_dir" -G Ninja -DCEDAR_PYTHON="$VENV/bin/python" "$@"
}
