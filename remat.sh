#!/usr/bin/env bash
# remat.sh — install what is missing, build, and run remat.
#
#   ./remat.sh run        install missing packages, build, run the main job (default):
#                         the benches in quick mode (bench_zero as 2 and 4 ranks,
#                         bench_pipeline as 2), their plots, the quiz as a page
#                         (results/quiz.html), then the quiz in the terminal
#   ./remat.sh test       install missing packages, build, run every test
#   ./remat.sh sanitize   the tests again, built with AddressSanitizer + UBSan
#   ./remat.sh debug      a -O0 -g3 build in build-debug/ for stepping through in gdb
#   ./remat.sh tour       that build, then every gdb session of docs/TOUR.md run as typed
#   ./remat.sh fuzz [S]   the libFuzzer targets of tests/fuzz (clang, ASan + UBSan, in
#                         build-fuzz/), each run S seconds (default 60) from its seed corpus;
#                         fails on any finding, which is left in build-fuzz/findings/
#   ./remat.sh valgrind   the tests (but test_bench) under valgrind's memcheck: errors and
#                         leaks fail them; in build-valgrind/; slow: over an hour
#
# Every step is idempotent: packages already installed are not touched, and a build that
# is up to date costs a second. REMAT_WERROR=ON turns compiler warnings into errors.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(build-essential cmake pkg-config libopenblas-openmp-dev libcmocka-dev libpcg-cpp-dev librandom123-dev librandom123-doc zlib1g-dev libcjson-dev gnuplot-nox libopenmpi-dev openmpi-bin)
# clang's libFuzzer and sanitizer runtimes, and its OpenMP (remat's loops use OpenMP).
FUZZ_PACKAGES=(clang libclang-rt-14-dev libomp-dev)
JOBS=$(nproc 2>/dev/null || echo 2)

# install_missing [extra packages...]: PACKAGES and the extra ones, those not installed.
install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}" "$@"; do
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

# OpenMP (libgomp) lets a thread that waits at a barrier spin about 300000 times before it
# sleeps. When another process holds one of the cores, the thread that lost its core holds
# up every barrier while its partner spins on the other, and a 2-thread step takes several
# times as long as on 1 thread (docs/MEASUREMENTS.md, section 7). A short spin keeps
# the quiet machine's speed and loses little on a busy one: unless the environment already
# chose how threads wait, spin 1000 times, then sleep. The benches record the setting.
limit_openmp_spin() {
  [ -n "${OMP_WAIT_POLICY:-}" ] || [ -n "${GOMP_SPINCOUNT:-}" ] || export GOMP_SPINCOUNT=1000
}

# fuzz SECONDS: builds the fuzz targets and runs each for SECONDS from its seed corpus in
# tests/fuzz/corpus/<target>/ (read only; what the fuzzer learns goes to
# build-fuzz/corpus/<target>/), with tests/fuzz/<target>.dict when there is one. A crash, sanitizer report, leak or timeout stops that
# target, leaves the input in build-fuzz/findings/ and fails the whole run.
fuzz() {
  local seconds=$1 failed=()
  CC=clang CXX=clang++ build build-fuzz RelWithDebInfo -DREMAT_FUZZ=ON -DREMAT_BUILD_TESTS=OFF --target fuzz_targets
  mkdir -p build-fuzz/findings
  for corpus in tests/fuzz/corpus/*/; do
    local name
    name=$(basename "$corpus")
    mkdir -p "build-fuzz/corpus/$name"
    local dict=()
    [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
    echo "remat: fuzz_$name for ${seconds}s"
    if ! nice -n 19 "build-fuzz/tests/fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=10 -max_len=65536 \
        "${dict[@]}" -print_final_stats=1 -artifact_prefix="build-fuzz/findings/$name-" \
        "build-fuzz/corpus/$name" "$corpus" 2>"build-fuzz/fuzz_$name.log"; then
      failed+=("$name")
      tail -n 40 "build-fuzz/fuzz_$name.log" >&2
    fi
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "build-fuzz/fuzz_$name.log" || true
  done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "remat: fuzzing found something in: ${failed[*]} (inputs in build-fuzz/findings/)" >&2
    return 1
  fi
}

# build DIR BUILD_TYPE [extra cmake args...] [--target T]
build() {
  local dir=$1 type=$2 target=()
  shift 2
  local args=()
  while [ $# -gt 0 ]; do
    if [ "$1" = --target ]; then target=(--target "$2"); shift 2; else args+=("$1"); shift; fi
  done
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DREMAT_WERROR="${REMAT_WERROR:-OFF}" "${args[@]}" >/dev/null
  cmake --build "$dir" -j "$JOBS" "${target[@]}"
}

mode=${1:-run}
choose_blas_core
limit_openmp_spin
case "$mode" in
  run)
    install_missing
    build build Release
    ./build/bench/bench_sgemm --quick --results results
    ./build/bench/bench_all --quick --results results
    ./build/bench/bench_dtr --quick --results results   # quiz question 4 quotes its unit chain
    # bench_zero runs as ranks (quiz question 8 quotes it at 2 and 4); the variables let
    # root start them, and 4 ranks oversubscribe a machine of fewer cores.
    for ranks in 2 4; do
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 \
        mpirun --oversubscribe -np "$ranks" ./build/bench/bench_zero --quick --results results
    done
    # bench_pipeline runs as ranks too, a stage each: 2 on 2 cores, 1 thread each.
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 \
      mpirun --oversubscribe -np 2 ./build/bench/bench_pipeline --quick --results results
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
  tour)
    install_missing gdb
    build build-debug Debug
    ctest --test-dir build-debug --output-on-failure -R '^test_tour$'
    ;;
  fuzz)
    install_missing "${FUZZ_PACKAGES[@]}"
    fuzz "${2:-60}"
    ;;
  valgrind)
    install_missing valgrind
    # Valgrind's virtual CPU has no AVX-512: build without -march=native and have OpenBLAS
    # use its AVX2 kernels. Every memcheck error and every leak (definite or possible)
    # fails the test, but for the OpenMP pool threads' own storage (tests/valgrind.supp).
    # test_bench is left out: it runs every bench, hours under valgrind. Tests that
    # measure the resident set skip that under REMAT_UNDER_VALGRIND: it is valgrind's.
    export OPENBLAS_CORETYPE=Haswell REMAT_UNDER_VALGRIND=1
    build build-valgrind RelWithDebInfo -DREMAT_NATIVE=OFF \
      "-DCMAKE_CROSSCOMPILING_EMULATOR=valgrind;--quiet;--error-exitcode=99;--leak-check=full;--show-leak-kinds=definite,possible;--errors-for-leak-kinds=definite,possible;--suppressions=$PWD/tests/valgrind.supp"
    ctest --test-dir build-valgrind --output-on-failure -j "$JOBS" -E '^test_bench$'
    ;;
  -h|--help|help)
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
    ;;
  *)
    echo "remat.sh: unknown command '$mode' (expected run, test, sanitize, debug, tour, fuzz or valgrind)" >&2
    exit 2
    ;;
esac
