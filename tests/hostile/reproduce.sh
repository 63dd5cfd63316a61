#!/usr/bin/env bash
# reproduce.sh BUILD — the hostile inputs found by the second hardening sweep, each typed
# as its reproduce command was, against the programs in BUILD, and each checked for what
# remat now promises instead: a clear error or a correct run, nothing outside the output
# touched, no hang. The cmocka tests cover the same findings from inside (test_bench,
# test_train_program, test_model_file, test_quiz); this is the user's side of them.
#
#   S1  plots.sh running a gnuplot command taken from a results CSV
#   S2  a bench's temporary name planted as a symbolic link to a victim file
#   D1  quiz --html writing over one of its own inputs
#   D2  a diverged run saving an all-NaN model over its last good checkpoint
#   D3  plots.sh cutting the PNGs to 0 bytes, then failing on a header-only CSV
#   H1  ranks given different flags (mpirun's `:` syntax) hanging the job
#   H2  train under `ulimit -v` too small for OpenBLAS's buffers spinning for ever
#   C1  a run whose activations pass the memory it has, ended by the kernel without a word
#   H3  a FIFO at a bench's temporary name blocking the bench for ever
#   M2  a checkpoint with a negative AdamW second moment accepted
#
# Prints one line per finding, "ok" or "FAIL" with what happened, and exits 1 if any
# failed. Run by ctest as test_reproduce.
set -u
B=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
TRAIN="$B/app/train"
GPT=(--layers 2 --d-model 32 --heads 2 --seq 16 --batch 4 --eval-every 0 --sample 0
     --threads 1 --data "$ROOT/data/corpus.txt" --quiet)
failed=0

# expect NAME CONDITION WHAT: prints the verdict of one check.
expect() {
    if eval "$2"; then echo "ok    $1: $3"; else echo "FAIL  $1: $3"; failed=1; fi
}

# A victim file outside any output, which no command here may change.
printf 'untouched\n' > victim

# The quick run's results, which the plot findings tamper with (copies of them).
"$B/bench/bench_all" --quick --results good > bench_all.log 2>&1 ||
    { echo "FAIL  setup: bench_all --quick failed"; cat bench_all.log; exit 1; }
bash "$ROOT/bench/plots.sh" good good_png > plots_good.log 2>&1 ||
    { echo "FAIL  setup: plots.sh on the quick results failed"; cat plots_good.log; exit 1; }

s1() {
    rm -rf s1 && cp -r good s1
    awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "samples") k = i }
        NR > 1 { $k = "6 rounds)\"; system \"touch pwned\"; set title \"x" } 1' \
        good/bench_placement.csv > s1/bench_placement.csv
    bash "$ROOT/bench/plots.sh" s1 s1_png > s1.log 2>&1
    local rc=$?
    expect S1 "[ $rc = 1 ] && [ ! -e pwned ] && grep -q 'bench_placement.csv' s1.log && grep -q samples s1.log" \
        "plots.sh refuses a samples field holding gnuplot commands (exit $rc), runs nothing"
}

s2_h3() {
    mkdir -p s2 && ln -s "$W/victim" s2/bench_dropout.json.tmp && mkfifo s2/bench_dropout.csv.tmp
    timeout 120 "$B/bench/bench_dropout" --quick --results s2 > s2.log 2>&1
    local rc=$?
    expect S2 "[ $rc = 0 ] && [ \"\$(cat victim)\" = untouched ] && [ -L s2/bench_dropout.json.tmp ] &&
        grep -q '\"schema\"' s2/bench_dropout.json" \
        "a link planted at the bench's old temporary name is not followed (exit $rc)"
    expect H3 "[ $rc != 124 ] && [ -p s2/bench_dropout.csv.tmp ]" \
        "a FIFO at the old temporary name does not block the bench (exit $rc)"
}

d1() {
    cp -r good d1 && cp d1/bench_dropout.json d1.before && cp "$ROOT/quiz/questions.json" bank.json
    "$B/quiz/quiz" --results d1 --html d1/bench_dropout.json > d1.log 2>&1
    local rc=$?
    "$B/quiz/quiz" --results d1 --bank bank.json --html ./bank.json > d1_bank.log 2>&1
    local rc_bank=$?
    expect D1 "[ $rc != 0 ] && [ $rc_bank != 0 ] && cmp -s d1/bench_dropout.json d1.before &&
        cmp -s bank.json '$ROOT/quiz/questions.json'" \
        "quiz --html refuses a results file (exit $rc) and its bank (exit $rc_bank) as its output"
}

d2() {
    "$TRAIN" "${GPT[@]}" --steps 2 --optimizer sgd --momentum 0.99 --save d2.st > d2_first.log 2>&1
    cp d2.st d2.before
    "$TRAIN" "${GPT[@]}" --steps 40 --resume d2.st --save d2.st --optimizer sgd --lr 10 --momentum 0.99 \
        > d2.log 2>&1
    local rc=$?
    expect D2 "[ $rc = 1 ] && grep -q 'not finite' d2.log && cmp -s d2.st d2.before" \
        "a diverged run stops with an error (exit $rc) and keeps the last good checkpoint"
}

d3() {
    rm -rf d3 d3_png && cp -r good d3 && cp -r good_png d3_png && cp -r good_png d3.before
    head -n 1 good/bench_placement.csv > d3/bench_placement.csv
    bash "$ROOT/bench/plots.sh" d3 d3_png > d3.log 2>&1
    local rc=$?
    expect D3 "[ $rc = 1 ] && grep -q 'bench_placement.csv' d3.log && diff -r -q d3.before d3_png > /dev/null" \
        "plots.sh refuses a header-only CSV (exit $rc) and leaves every PNG as it was"
}

h1() {
    local mpirun
    mpirun=$(command -v mpirun) || { echo "skip  H1: no MPI launcher"; return; }
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    timeout 120 "$mpirun" --oversubscribe -np 1 "$TRAIN" "${GPT[@]}" --steps 2 : \
        -np 1 "$TRAIN" "${GPT[@]}" --steps 3 > h1.log 2>&1
    local rc=$?
    expect H1 "[ $rc != 0 ] && [ $rc != 124 ] && grep -q 'rank 1 of 2: --steps is 3 here, 2 on rank 0' h1.log" \
        "ranks given different --steps end the job, each naming the difference (exit $rc)"
}

h2() {
    if [ "${REMAT_SANITIZED:-0}" = 1 ]; then # AddressSanitizer's shadow needs terabytes
        echo "skip  H2: a sanitized build cannot start under any address-space limit"; return
    fi
    (ulimit -v 512000 && exec timeout 120 "$TRAIN" --steps 1 --threads 2 --eval-every 0 --sample 0 \
        --data "$ROOT/data/corpus.txt") > h2.log 2>&1
    local rc=$?
    expect H2 "[ $rc = 1 ] && grep -q 'ulimit -v' h2.log" \
        "train on 2 threads under ulimit -v 500 MiB refuses at once, naming the limit (exit $rc)"
}

# C1 at a small scale: in a memory cgroup of 1 GiB made for it (v1 under this process's own
# group, or v2 where this process may make one), a GPT of 64 blocks whose step holds 3.3 GiB
# of activations. The kernel's OOM killer used to end it (exit 137); the ledger's ceiling
# now fails it with its message.
c1() {
    if [ "${REMAT_SANITIZED:-0}" = 1 ]; then # the sanitizers' own memory is not the ledger's
        echo "skip  C1: a sanitized build holds shadow memory the ledger does not count"; return
    fi
    local parent group
    parent=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
    if [ -n "$parent" ] && [ -w "/sys/fs/cgroup/memory$parent" ]; then
        group="/sys/fs/cgroup/memory$parent/remat-c1-$$"
        mkdir "$group" 2>/dev/null && echo 1073741824 > "$group/memory.limit_in_bytes" || group=""
    elif [ -w /sys/fs/cgroup/cgroup.subtree_control ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
        group="/sys/fs/cgroup/remat-c1-$$"
        mkdir "$group" 2>/dev/null && echo 1073741824 > "$group/memory.max" || group=""
    fi
    [ -n "$group" ] || { echo "skip  C1: no memory cgroup can be made here"; return; }
    sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' c1 "$group" timeout 300 "$TRAIN" \
        --layers 64 --d-model 64 --heads 4 --seq 256 --batch 16 --steps 1 --eval-every 0 --sample 0 \
        --threads 1 --data "$ROOT/data/corpus.txt" > c1.log 2>&1
    local rc=$?
    rmdir "$group"
    expect C1 "[ $rc = 1 ] && grep -q \"the ceiling of this machine's memory\" c1.log" \
        "activations past a 1 GiB memory cgroup fail the step with the ledger's message (exit $rc)"
}

m2() {
    "$TRAIN" "${GPT[@]}" --steps 2 --save m2.st > m2_first.log 2>&1
    # The header's length, then the first float of the first second moment: set it to -1.
    local n offset
    n=$(od -An -t u8 -N 8 m2.st | tr -d ' ')
    offset=$(head -c $((8 + n)) m2.st | tail -c "$n" |
        grep -o '"optim\.v\.[^"]*":{[^}]*}' | head -n 1 | sed -E 's/.*"data_offsets":\[([0-9]+),.*/\1/')
    printf '\000\000\200\277' | dd of=m2.st bs=1 seek=$((8 + n + offset)) conv=notrunc status=none
    cp m2.st m2.before
    "$TRAIN" "${GPT[@]}" --steps 4 --resume m2.st --save m2.st > m2.log 2>&1
    local rc=$?
    expect M2 "[ $rc = 1 ] && grep -q 'second moment' m2.log && cmp -s m2.st m2.before" \
        "a negative AdamW second moment is refused naming the tensor (exit $rc)"
}

s1
s2_h3
d1
d2
d3
h1
h2
c1
m2
exit $failed
