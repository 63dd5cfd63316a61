/*
 * cli.h — what every bench binary shares on its command line and its terminal: the common
 * flags, the header, the timing plan, and the ending (results written, ledger
 * checked clean, exit status).
 *
 * The flags are rows of tables parsed by base/flags.h as train's are: cli.c's common ones
 * (--quick, --results DIR, --steps N, --dropout-rng, --attention), the step's of
 * app/step_options.h (--strategy S measures only S beside none, the baseline; --policy,
 * --no-rng-replay, --offload-dir), and the bench's own (BenchInfo.own). A bench says which
 * it takes in its BenchInfo; the others are refused with a message, not ignored: a flag
 * that silently changes nothing would mislead. So is a flag it takes that changes nothing
 * in the run the others describe (--policy with --strategy full): train's check
 * (step_options_check), against the strategies the bench will run. A flag given twice is
 * refused too, rather than its first value dropped.
 *
 * Every bench ends the same way: exit 0 when it measured and wrote everything, 1 on an
 * error (a clear message on stderr), 2 for a bad flag (with the usage).
 */
#ifndef REMAT_BENCH_CLI_H
#define REMAT_BENCH_CLI_H

#include "bench/results.h"
#include "app/step_options.h"
#include "models/gpt.h"
#include "parallel/group.h"

/* What a bench says about itself, for --help, its header and its results. */
typedef struct BenchInfo {
    const char *name;     /* "bench_scaling" */
    const char *question; /* the quiz question(s) it answers, one line */
    const char *about;    /* what it measures: a few lines, each starting with two spaces */
    const char *quick;    /* what --quick runs, one line */
    const char *full;     /* what the default runs, one line */
    bool timed;           /* it times steps, so it takes --steps */
    /* The strategies the bench sweeps, so --strategy may pick one of them (NULL: it takes
     * no --strategy and places its checkpoint regions itself). */
    const StrategyKind *strategies;
    int n_strategies;
    /* The flags of a step it takes besides --strategy (STEP_FLAG_POLICY, ...): a set of
     * StepFlag (app/step_options.h). */
    unsigned step_flags;
    bool offloads; /* it offloads without --offload (bench_offload), so --offload-dir applies */
    /* It takes train's model flags --dropout-rng stream|counter and --attention
     * naive|fused (its GPT has dropout 0.1, and it does not sweep them itself). */
    bool model_flags;
    /* Its own flags, over its own options (base/flags.h), if it has any; n 0: none. A
     * row's `applies` is asked with the BenchOptions as the run, before anything runs. */
    FlagSet own;
} BenchInfo;

enum { BENCH_MAX_STEPS = 1000 }; /* the most --steps takes: a bench may hold its rounds in an array */

typedef struct BenchOptions {
    bool quick;
    const char *results_dir; /* "results" unless --results */
    int steps;               /* --steps, or 0 for the bench's default */
    bool one_strategy;       /* --strategy was given: measure step.strategy.kind (and none) only */
    StepOptions step;        /* the step flags given: step.strategy.policy is NULL for the
                                bench's own, step.offload_opts.dir NULL for the default */
    DropoutRng dropout_rng;  /* --dropout-rng (stream unless given) */
    AttentionKind attention; /* --attention (naive unless given) */
    unsigned given;          /* the common flags given (cli.c's table) */
} BenchOptions;

/* Whether the bench should measure strategy `kind`: every one of its sweep without
 * --strategy; with it, that one and none (the baseline). */
bool bench_measures(const BenchOptions *opt, StrategyKind kind);

/* The strategies of the bench's sweep that the command line leaves to measure, in order,
 * each made by bench_strategy with `policy`, into out[] (room for info->n_strategies);
 * returns how many. */
int bench_sweep(const BenchInfo *info, const BenchOptions *opt, const Policy *policy, Strategy *out);

/* Strategy `kind` with the options of the command line: --policy for selective (else
 * `policy`, which may be NULL for the default) and --no-rng-replay. */
Strategy bench_strategy(const BenchOptions *opt, StrategyKind kind, const Policy *policy);

#define BENCH_RUN (-1)

/* How a bench's comparisons are timed (bench/timing.h), after `warmup` untimed rounds:
 * with --steps N exactly N rounds; in full mode exactly `full_rounds`; in quick mode
 * until every ratio is within ±5 points, or `quick_cap` seconds of rounds have passed
 * once the fewest rounds with a 95% interval are done. Recorded in the config of
 * `results` (results_config_plan) unless it is NULL. */
TimingPlan bench_timing_plan(const BenchOptions *opt, Results *results, int warmup, int full_rounds,
                             double quick_cap);

/* Adds the plan to the results' config: warmup_rounds, min_rounds, max_rounds,
 * target_half_width and cap_seconds (0: none). */
void results_config_plan(Results *r, const TimingPlan *plan);

/* A bench's own work between bench_start and bench_finish: its config, measurements and
 * tables into `results`; returns REMAT_OK or the status of what failed. */
typedef RematStatus (*BenchRun)(const BenchOptions *opt, Results *results);

/* Every bench's main (but those run as ranks): bench_start, then `run` if it says to go
 * on, then bench_finish with run's status. Returns the exit status. */
int bench_main(const BenchInfo *info, int argc, char **argv, BenchRun run);

/* ---- a bench run as ranks (bench_zero, bench_pipeline) ---------------------------------- */

/* bench_start after dist_init's group into *g, with rank 0 alone printing, and the ranks
 * and cores in the header and config; with `name_by_ranks` the bench is named for K
 * ("bench_zero_np2"). Any other status than BENCH_RUN has ended the job (all its ranks). */
int bench_start_ranks(BenchInfo *info, bool name_by_ranks, int argc, char **argv, DistGroup *g, BenchOptions *opt,
                      Results **results);

/* bench_finish on rank 0 (when `write`, or on an error); the others check their ledger is
 * empty. A rank that failed ends the job: the others wait for it in a collective. */
int bench_finish_ranks(const BenchInfo *info, const DistGroup *g, const BenchOptions *opt, Results *results,
                       RematStatus status, bool write);

/* ---- numbers ---------------------------------------------------------------------------- */

/* Bytes in MiB, for tables. */
double mib(size_t bytes);

#endif /* REMAT_BENCH_CLI_H */
