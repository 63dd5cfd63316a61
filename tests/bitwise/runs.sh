#!/usr/bin/env bash
# runs.sh BUILD OUT — every train configuration this folder compares: both models, every
# strategy, policy and planner, offload all/large/boundary with each way of moving bytes,
# fused attention, counter dropout, sgd, accumulation, save then resume, infeasible budgets,
# bad flags, and data parallelism with ZeRO 0-3 as 2 ranks. Each run's output (times and
# temporary paths masked), its --dump-step file and its --save file go to OUT/<name>.*
# compare.sh runs it for two builds and compares the files byte for byte.
set -u
B=$1; OUT=$(realpath -m "$2"); mkdir -p "$OUT"; rm -rf "$OUT"/*
T=$B/app/train; [ -x "$T" ] || T=$B/models/train # where train was built before app/ held it
DATA=$(cd "$(dirname "$0")/../.." && pwd)/data/corpus.txt
C="--eval-every 2 --eval-batches 2 --threads 1"
G0="--layers 2 --heads 2 --batch 2 --sample 16 --data $DATA $C"
G="$G0 --d-model 32 --seq 16 --steps 3"
M0="--model mlp --layers 8 --batch 16 $C"
M="$M0 --d-model 64 --steps 3"
export TMPDIR=$OUT.tmp; mkdir -p "$TMPDIR"
mask() { sed -E -e "s#$TMPDIR[^ ]*#TMP#g" -e "s#$OUT#OUT#g" \
  -e 's/[0-9.]+ ms(\/step)?/X ms/g' -e 's/[0-9.]+ tok(ens)?\/s/X tok\/s/g' -e 's/[0-9.]+ GFLOP\/s/X GFLOP\/s/g' -e 's/[0-9.]+ ex\/s/X ex\/s/g' -e 's/[0-9.]+ examples\/s/X examples\/s/g' -e 's#[^ ]*/data/corpus.txt#DATA#g' \
  -e 's/\(fastest [^)]*\)/(X)/' -e 's/[0-9.]+ s\b/X s/g' \
  | awk '/the process, as the operating system/{skip=1} skip&&/^$/{skip=0} !skip'; }
run() { local name=$1; shift
  local dump=(--dump-step "$OUT/$name.dump"); [[ "$*" == *accumulate* ]] && dump=()
  "$T" "$@" "${dump[@]}" --save "$OUT/$name.st" > "$OUT/$name.raw" 2>&1; echo "exit $?" >> "$OUT/$name.raw"
  mask < "$OUT/$name.raw" > "$OUT/$name.out"; rm "$OUT/$name.raw"; }
run g_none $G
run g_full $G --strategy full
run g_sqrt $G --strategy sqrt
run g_sel_attn $G --strategy selective
run g_sel_dots $G --strategy selective --policy dots
run g_sel_nothing $G --strategy selective --policy nothing_saveable
run g_budget_dp $G --strategy budget --memory-budget 700KiB
run g_budget_chen $G --strategy budget --memory-budget 700KiB --planner chen
run g_budget_revolve $G --strategy budget --memory-budget 700KiB --planner revolve
run g_budget_infeasible $G --strategy budget --memory-budget 300KiB
run g_budget_tight $G --strategy budget --memory-budget 600KiB --planner revolve
run g_budget_tight_dp $G --strategy budget --memory-budget 600KiB
run g_full_norng $G --strategy full --no-rng-replay
run g_full_detcheck $G --strategy full --determinism-check
run g_off_all $G --offload all
run g_off_large $G0 --d-model 128 --seq 64 --steps 3 --offload large
run g_off_boundary $G --strategy full --offload boundary
run g_off_mmap $G --offload all --offload-mmap
run g_off_nocache $G --offload all --offload-no-cache
run g_off_direct $G --offload all --offload-direct
run g_off_windows $G --offload all --offload-read-ahead 1MiB --offload-write-behind 1MiB
run g_counter $G --dropout-rng counter
run g_counter_full $G --dropout-rng counter --strategy full
run g_fused $G --attention fused --dropout-rng counter
run g_fused_full $G --attention fused --dropout-rng counter --strategy full
run g_fused_sel $G --attention fused --dropout-rng counter --strategy selective --policy dots
run g_nodrop_fused $G --attention fused --dropout 0
run g_sgd $G --optimizer sgd --momentum 0.5
run g_accum $G --accumulate 2
run g_accum_full $G --accumulate 2 --strategy full
run g_explain $G --strategy sqrt --explain-memory
run g_tape $G --strategy full --print-tape
run g_graph $G --dump-graph $OUT/g_graph.dot
run g_resume_a $G0 --d-model 32 --seq 16 --steps 2
run g_resume_b $G0 --d-model 32 --seq 16 --steps 3 --resume $OUT/g_resume_a.st
run m_none $M
run m_full $M --strategy full
run m_sqrt $M --strategy sqrt
run m_sel $M --strategy selective --policy dots
run m_budget_dp $M --strategy budget --memory-budget 620KiB
run m_budget_chen $M --strategy budget --memory-budget 620KiB --planner chen
run m_budget_revolve $M --strategy budget --memory-budget 620KiB --planner revolve
run m_budget_infeasible $M --strategy budget --memory-budget 100KiB
run m_off_all $M0 --d-model 256 --steps 3 --offload all
run m_off_boundary $M --strategy sqrt --offload boundary
run m_sgd $M --optimizer sgd
run m_accum $M --accumulate 3
run m_explain $M --strategy full --explain-memory
run m_resume_a $M0 --d-model 64 --steps 2
run m_resume_b $M0 --d-model 64 --steps 3 --resume $OUT/m_resume_a.st
run bad_flag $G --strategy nonsense
run bad_policy $M --policy dots
# MPI
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
mpi() { local name=$1 np=$2; shift 2
  mpirun --oversubscribe -np $np "$T" "$@" --save "$OUT/$name.st" > "$OUT/$name.raw" 2>&1; echo "exit $?" >> "$OUT/$name.raw"
  mask < "$OUT/$name.raw" > "$OUT/$name.out"; rm "$OUT/$name.raw"; }
mpi p_np2 2 $G
mpi p_zero1 2 $G --zero 1
mpi p_zero2 2 $G --zero 2
mpi p_zero3 2 $G --zero 3 --strategy full
mpi p_zero3_mlp 2 $M --zero 3
