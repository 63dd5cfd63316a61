/*
 * measure.h — how the benches measure a training step: its bytes by kind and FLOPs by
 * phase (exact, from the ledgers), its time (steps of the variants interleaved, as
 * bench/timing.h measures every comparison), and what a forward leaves alive for backward, by the tag of the op that
 * made each tensor.
 *
 * A Variant is one way of running the model's step: a checkpointing schedule
 * (schedule.h) and where what the forward saves for backward goes (RAM, or an offloader's
 * spill file). The benches compare variants of the same model on the same batch, so every
 * difference they report comes from what the variant keeps, recomputes and spills.
 *
 * What this is not: a step of its own. A measured step is models/step.h's step_run, the
 * one train runs, on a fixed batch, without data loading, evaluation or files, so that
 * only the step is on the clock.
 */
#ifndef REMAT_BENCH_MEASURE_H
#define REMAT_BENCH_MEASURE_H

#include "bench/cli.h"
#include "tensor/flops.h"
#include "models/mlp.h"
#include "models/step.h"

/* ---- batches and the models ---------------------------------------------------------------- */

/* The sizes of a bench's GPT: L blocks, d_model C, H heads, sequences of T tokens, B per
 * batch, dropout p everywhere. */
typedef struct GptShape {
    int L, C, H, T, B;
    float dropout;
} GptShape;

/* The GPT and the MLP chain bench_step times, which bench_dtr runs under budgets too. */
extern const GptShape STEP_GPT;

/* Adds the shape to a results config: model "gpt", layers, d_model, heads, seq (left out
 * when T is 0: a bench that varies it records its list), batch, dropout. */
void results_config_gpt(Results *r, const GptShape *s);

/* "L=4 D=128 H=4 T=256 B=4, dropout 0.1" into `buf`; returns `buf`. */
char *gpt_shape_str(char *buf, size_t size, const GptShape *s);

/* What a bench trains: a model, one batch it steps on again and again, and an optimizer
 * over its parameters (or none). */
typedef struct ModelBench {
    Model *model;
    struct {
        Var *x, *y; /* inputs and targets, constant Vars in MEM_ACT */
    } batch;
    Optimizer *opt; /* NULL when made without one */
} ModelBench;

/* A byte-level GPT of shape `s` (vocab 256, seq_len T, initialised from seed 1), a batch of
 * B sequences of T random tokens and random targets (seed 2: the benches measure steps,
 * not learning, so the tokens need not be text), and the optimizer from `optim` (NULL:
 * none). On error returns the status; what was built is left in *g for model_bench_free. */
RematStatus gpt_bench_create(ModelBench *g, const GptShape *s, const OptimConfig *optim);

/* The sizes of a bench's residual MLP chain: N blocks of width W, B rows per batch. */
typedef struct MlpShape {
    int N, W, B;
} MlpShape;

extern const MlpShape STEP_MLP;

/* As gpt_bench_create, for the MLP chain of shape `s` (initialised from seed 1) and a batch
 * of B examples (rows seed 2, stream 3) of the synthetic teacher task `task` (borrowed: a
 * caller that keeps it resident as the chain runs), or with `task` NULL, of a teacher of
 * seed 2 made for the batch and freed. */
RematStatus mlp_bench_create(ModelBench *g, const MlpShape *s, MlpTask *task, const OptimConfig *optim);

/* Frees what *g holds and empties it. */
void model_bench_free(ModelBench *g);

/* A training context for a bench's steps: its dropout stream seeded (seed, stream), its
 * counter-based masks keyed by `seed`, so that every run of the bench draws the same masks. */
TrainCtx bench_ctx(uint64_t seed, uint64_t stream);

/* ---- one step ----------------------------------------------------------------------------- */

typedef struct Variant {
    const char *name; /* for tables: "none", "attention only", ... */
    Schedule *schedule; /* what the forward keeps (NULL: none) */
    Offload *offload; /* not NULL: what the forward saves goes to its spill file and
                         backward reads it back (a region's replay saves in RAM) */
    DropoutRng dropout_rng;  /* where dropout masks come from (the stream unless set):
                                set on the step's TrainCtx */
    AttentionKind attention; /* a GPT's attention cores (naive unless set): set on the
                                model before its step (gpt_set_attention) */
    int threads;             /* 0: the thread count in use; otherwise set before its step
                                (platform_set_threads), so thread counts can interleave */
    size_t budget;           /* 0: none; otherwise the ledger's budget during its step (what
                                a step must fit in, and what dtr evicts under) */
} Variant;

/* What one training step did. */
typedef struct StepStats {
    double seconds;               /* the step, wall time */
    OffloadStats io;              /* what the offloader did in the step: its counts and times
                                     are the step's, io.write_seconds inside pack and
                                     io.read_seconds inside unpack (zeros without offload) */
    size_t act_stored;            /* MEM_ACT held between the forward and the backward */
    size_t start[MEM_KIND_COUNT]; /* each kind's bytes when the step began */
    size_t peak[MEM_KIND_COUNT];  /* each kind's peak during the step */
    size_t peak_resident;         /* the peak of all resident kinds together */
    uint64_t flops[PHASE_COUNT];  /* the step's FLOPs by phase */
    uint64_t matmul_flops;        /* of them, inside the matmuls (tensor/flops.h) */
    double matmul_seconds;        /* the wall time inside the matmuls */
    double phase_seconds[PHASE_COUNT]; /* the wall time each phase was current */
    long minor_faults;            /* page faults the process took during the step (getrusage's
                                     ru_minflt: fresh pages touched for the first time) */
} StepStats;

/* The variant `v` with the model flags of the command line (--dropout-rng, --attention)
 * applied to it, for a bench that takes them; `gpt` says whether the variant runs a GPT
 * (the MLP chain has neither flag's subject, and keeps its variant as it is). */
Variant bench_variant(const BenchOptions *opt, Variant v, bool gpt);

/* One training step (models/step.h) of g's model as `v` runs it, on g's batch, with g's
 * optimizer (none: gradients only), measured: resets the ledgers' peaks and FLOP counts
 * first, then reads them and the clock. On error returns the status (the budget's OOM
 * message, a region's determinism check, ...) with the parameters not updated. */
RematStatus step_measure(ModelBench *g, const Variant *v, TrainCtx *ctx, StepStats *stats);

/* Recompute FLOP overhead: RECOMPUTE / (FORWARD + BACKWARD) FLOPs of the step. */
double flop_overhead(const StepStats *s);

/* The quantities steps_alternate times per step, in its Timing (bench/timing.h): the
 * step's seconds, of them inside the offloader's pack and unpack, in the forward and in
 * the backward, inside the matmuls, the share outside the matmuls, the step's page faults,
 * the offloader's: unpack's time blocked on reads ahead and the records it waited for,
 * its helper threads' time reading, writing and on a CPU; and each phase's share
 * (STEP_PHASE_SHARE + phase). */
enum {
    STEP_SECONDS,
    STEP_WRITE_SECONDS,
    STEP_READ_SECONDS,
    STEP_FORWARD_SECONDS,
    STEP_BACKWARD_SECONDS,
    STEP_MATMUL_SECONDS,
    STEP_OUTSIDE_MATMUL_SHARE,
    STEP_MINOR_FAULTS,
    STEP_READ_WAIT_SECONDS,
    STEP_READS_WAITED,
    STEP_THREAD_READ_SECONDS,
    STEP_THREAD_WRITE_SECONDS,
    STEP_THREAD_CPU_SECONDS,
    STEP_PHASE_SHARE,
    STEP_QUANTITIES = STEP_PHASE_SHARE + PHASE_COUNT
};

/* Runs that are not steps, timed in the same rounds as them: a reference whose time a
 * step's is divided by, round by round (bench_step's sgemm on each thread count, so that a
 * step's share of the sgemm peak is a paired ratio like any overhead). They are variants
 * n..n+count−1 of steps_alternate's Timing; `run` gets its index among them (0..count−1)
 * and puts its seconds in values[STEP_SECONDS] (the other quantities are left 0). */
typedef struct ExtraRuns {
    int count;
    TimedRun run;
    void *ctx;
} ExtraRuns;

/* Runs the n variants interleaved on g's model, optimizer and batch, as `plan` says
 * (bench/timing.h: warm-up rounds, then rounds of one step of every variant, each round
 * starting one variant later, until the plan has enough), and `extra`'s runs in the same
 * rounds (NULL: none). out[i] gets variant i's last step (its bytes and FLOPs are the same
 * every step); *timing every timed step's STEP_QUANTITIES, for timing_median and
 * timing_ratio (variant 0 is the baseline), and the caller frees it. `progress` (may be
 * NULL) advances with every run, labelled `label` (the configuration: "N=64"). On error
 * returns the status; out is then incomplete. */
RematStatus steps_alternate(ModelBench *g, const Variant *variants, int n, const ExtraRuns *extra, TrainCtx *ctx,
                            const TimingPlan *plan, Progress *progress, const char *label, StepStats *out,
                            Timing *timing);

/* ---- what a forward keeps, by tag ---------------------------------------------------------- */

typedef struct TagBytes {
    const char *tag; /* the op's tag ("attn.softmax"; "untagged" for an op without one) */
    size_t bytes;
} TagBytes;

/* The activation bytes alive after a forward, grouped by the tag of the op that made each
 * tensor (a LayerNorm's output, mean and rstd all count under its tag; a dropout's mask
 * and output under its). Whoever holds a tensor — a node on the tape, a checkpoint region
 * (its input), a selective policy's cache — it is counted once. */
typedef struct Census {
    TagBytes *tags; /* in order of first appearance; owned */
    int count;
    size_t total;   /* the sum over tags */
} Census;

/* Runs the forward of `v` on g's batch, its model under its schedule (model_loss_planned;
 * without offload, which would move what the census counts), and counts what it leaves
 * alive, by tag (the batch itself is not an op's output and is not counted). How: an op
 * hook holds a reference to every op output while the forward runs; afterwards, the
 * outputs someone else holds too are the ones the forward keeps. Runs no backward; leaves
 * no activation behind. On error returns the status and *out is empty. */
RematStatus census_forward(ModelBench *g, const Variant *v, TrainCtx *ctx, Census *out);

/* Bytes of tensors made by ops whose tag starts with `prefix` ("attn.softmax" exactly, or
 * "attn." for the attention branch). */
size_t census_bytes(const Census *c, const char *prefix);

void census_free(Census *c);

#endif /* REMAT_BENCH_MEASURE_H */
