#!/usr/bin/env bash
# remat.sh — install what is missing, build, and run remat.
#
#   ./remat.sh run        install missing packages, build, run the main job (default):
#                         the benches in quick mode, their plots, the quiz as a page
#                         (results/quiz.html), then the quiz in the terminal
#   ./remat.sh test       install missing packages, build, run every test
#   ./remat.sh sanitize   the tests again, built with AddressSanitizer + UBSan
#   ./remat.sh debug      a -O0 -g3 build in build-debug/ for stepping through in gdb
#
# Every step is idempotent: packages already installed are not touched, and a build that
# is up to date costs a second. REMAT_WERROR=ON turns compiler warnings into errors.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(build-essential cmake pkg-config libopenblas-openmp-dev libcmocka-dev libpcg-cpp-dev libcjson-dev gnuplot-nox)
JOBS=$(nproc 2>/dev/null || echo 2)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "remat: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# OpenBLAS 0.3.21 picks its kernels from a table of CPUs it knows. On a newer CPU it falls
# back to its AVX2 ("Haswell") kernels even when AVX-512 is there, which halves sgemm
# throughput. When the CPU has the AVX-512 subsets OpenBLAS's SkylakeX kernels use (and
# BF16, for Cooperlake's), ask for those — unless the environment already chose a core,
# which is then respected (bench_sgemm prints which core is in use and who chose it).
choose_blas_core() {
  [ -n "${OPENBLAS_CORETYPE:-}" ] && return 0
  local flags
  flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
  for f in avx512f avx512dq avx512bw avx512vl; do
    [[ " $flags " == *" $f "* ]] || return 0
  done
  if [[ " $flags " == *" avx512_bf16 "* ]]; then
    export OPENBLAS_CORETYPE=Cooperlake
  else
    export OPENBLAS_CORETYPE=SkylakeX
  fi
}

# build DIR BUILD_TYPE [extra cmake args...]
build() {
  local dir=$1 type=$2
  shift 2
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DREMAT_WERROR="${REMAT_WERROR:-OFF}" "$@" >/dev/null
  cmake --build "$dir" -j "$JOBS"
}

mode=${1:-run}
choose_blas_core
case "$mode" in
  run)
    install_missing
    build build Release
    ./build/bench/bench_sgemm --quick
    ./build/bench/bench_all --quick --results results
    bench/plots.sh results results/plots
    ./build/quiz/quiz --results results --html results/quiz.html
    echo "remat: results in results/, plots in results/plots/"
    echo "remat: the quiz as one page, both languages, each answer with its plot: results/quiz.html"
    ./build/quiz/quiz --results results
    ;;
  test)
    install_missing
    build build Release
    ctest --test-dir build --output-on-failure -j "$JOBS"
    ;;
  sanitize)
    install_missing
    build build-sanitize RelWithDebInfo -DREMAT_SANITIZE=ON
    ctest --test-dir build-sanitize --output-on-failure -j "$JOBS"
    ;;
  debug)
    install_missing
    build build-debug Debug
    echo "remat: debug build in build-debug/ (try: gdb --args build-debug/tests/test_memory)"
    ;;
  -h|--help|help)
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    ;;
  *)
    echo "remat.sh: unknown command '$mode' (expected run, test, sanitize or debug)" >&2
    exit 2
    ;;
esac
