/*
 * cli.c — flags, header and ending shared by the bench binaries (see cli.h).
 */
#include "bench/cli.h"

#include <stdio.h>
#include <unistd.h>

#include "base/file.h"
#include "base/platform.h"

/* ---- flags ------------------------------------------------------------------------------ */

#define AT(field) offsetof(BenchOptions, field)
enum { QUICK = 1u << 0, RESULTS = 1u << 1, STEPS = 1u << 2, MODEL_FLAGS = 1u << 3 | 1u << 4 };
static const Flag BENCH_FLAGS[] = {
    {.name = "--quick", .type = FLAG_SWITCH, .offset = AT(quick), .help = "a small configuration that runs in seconds"},
    {.name = "--results", .type = FLAG_TEXT, .offset = AT(results_dir), .value = "DIR",
     .help = "write DIR/<bench>.json and its CSV files (default: results)"},
    {.name = "--steps", .type = FLAG_INT, .offset = AT(steps), .value = "N", .lo = 1, .hi = BENCH_MAX_STEPS,
     .help = "exactly N timed rounds per comparison, 1..1000 (below 6, the range, not a 95% interval)"},
    {.name = "--dropout-rng", .type = FLAG_NAME, .offset = AT(dropout_rng), .names = &DROPOUT_RNG_NAMES, .value = "R",
     .help = "stream (PCG32, masks kept; default) or counter (Philox, masks made again)"},
    {.name = "--attention", .type = FLAG_NAME, .offset = AT(attention), .names = &ATTENTION_KIND_NAMES, .value = "A",
     .help = "naive (default) or fused (O(T) kept per head; needs --dropout-rng counter)"},
};
#undef AT

/* The tables of `info`'s bench: its common flags, the step's it takes and its own, into
 * *opt (NULL: for the help alone); returns how many. */
static int bench_flags(const BenchInfo *info, BenchOptions *opt, FlagSet sets[3])
{
    const unsigned own = QUICK | RESULTS | (info->timed ? STEPS : 0) | (info->model_flags ? MODEL_FLAGS : 0);
    sets[0] = (FlagSet){.flags = BENCH_FLAGS, .n = sizeof BENCH_FLAGS / sizeof BENCH_FLAGS[0], .opts = opt,
                        .accepted = own, .given = opt ? &opt->given : NULL};
    sets[1] = step_options_flags(opt ? &opt->step : NULL,
                                 info->step_flags | (info->strategies ? STEP_FLAG_STRATEGY : 0));
    sets[2] = info->own;
    return info->own.n ? 3 : 2;
}

/* Prints the usage of `info`'s bench to `out`. */
static void bench_usage(const BenchInfo *info, FILE *out)
{
    FlagSet sets[3];
    const int n = bench_flags(info, NULL, sets);
    fprintf(out, "usage: %s", info->name);
    for (int k = 0; k < n; k++) flags_synopsis(&sets[k], out);
    fprintf(out, " [--help]\n  %s\n%s\n", info->question, info->about);
    /* --quick and --strategy say what this bench runs; the other rows say it themselves. */
    fprintf(out, "  --quick             %s\n                      (default: %s)\n", info->quick, info->full);
    sets[0].accepted &= ~QUICK;
    sets[1].accepted &= ~STEP_FLAG_STRATEGY;
    for (int k = 0; k < n; k++) flags_usage(&sets[k], NULL, false, out);
    if (info->strategies) {
        fprintf(out, "  --strategy S        measure only S (with none, the baseline); S is one of");
        for (int k = 0; k < info->n_strategies; k++) fprintf(out, " %s", name_of(&STRATEGY_NAMES, info->strategies[k]));
        fprintf(out, "\n");
    }
    fprintf(out, "  --help              this text\n");
}

/* What the bench runs beyond what the step flags say: counter masks when its GPT
 * (model_flags) draws them from counters, offload when it offloads by itself, and, without
 * --strategy, its sweep, else (a bench that places its regions itself) any strategy with
 * regions. */
static StepScope bench_scope(const BenchInfo *info, const BenchOptions *opt)
{
    StepScope more = {.offloads = info->offloads,
                      .counter_masks = info->model_flags && opt->dropout_rng == DROPOUT_RNG_COUNTER};
    if (opt->one_strategy) return more;
    more.strategies = info->strategies ? 0 : ~(1u << STRATEGY_NONE);
    for (int k = 0; k < info->n_strategies; k++) more.strategies |= 1u << info->strategies[k];
    return more;
}

/* What the flags given say together; REMAT_EINVAL with the reason when it makes no sense. */
static RematStatus check_options(const BenchInfo *info, const BenchOptions *opt)
{
    bool in_sweep = false; /* the --strategy given is one of the bench's sweep */
    for (int k = 0; k < info->n_strategies; k++) in_sweep |= info->strategies[k] == opt->step.strategy.kind;
    if (opt->one_strategy && !in_sweep)
        return remat_fail(REMAT_EINVAL, "--strategy %s is not one this bench measures",
                          name_of(&STRATEGY_NAMES, opt->step.strategy.kind));
    if (opt->attention == ATTENTION_FUSED && opt->dropout_rng != DROPOUT_RNG_COUNTER)
        return remat_fail(REMAT_EINVAL, "--attention fused needs --dropout-rng counter: the fused kernel makes its "
                          "dropout mask again in backward, which a running stream cannot do");
    if (info->own.n && flags_check(&info->own, opt) != REMAT_OK) return REMAT_EINVAL; /* its own rows' rules */
    return step_options_check(&opt->step, bench_scope(info, opt));
}

/* Parses the bench's flags into *opt. Returns BENCH_RUN to run, else the exit status: 0 after
 * --help (1 if it could not be written), 2 for a bad flag or value (message and usage on stderr). */
static int bench_parse_args(const BenchInfo *info, int argc, char **argv, BenchOptions *opt)
{
    *opt = (BenchOptions){.results_dir = "results", .step = step_options_defaults()};
    FlagSet sets[3];
    const int parsed = flags_parse(sets, bench_flags(info, opt, sets), argc, argv);
    if (parsed == FLAGS_HELP) {
        bench_usage(info, stdout);
        return file_flush_stdout() == REMAT_OK ? 0 : 1; /* printed where it can be read */
    }
    opt->one_strategy = opt->step.given & STEP_FLAG_STRATEGY;
    if (parsed == FLAGS_RUN && check_options(info, opt) == REMAT_OK) return BENCH_RUN;
    fprintf(stderr, "%s: %s\n", info->name, remat_last_error());
    bench_usage(info, stderr);
    return 2;
}

bool bench_measures(const BenchOptions *opt, StrategyKind kind)
{
    return !opt->one_strategy || kind == opt->step.strategy.kind || kind == STRATEGY_NONE;
}

int bench_sweep(const BenchInfo *info, const BenchOptions *opt, const Policy *policy, Strategy *out)
{
    int n = 0;
    for (int k = 0; k < info->n_strategies; k++)
        if (bench_measures(opt, info->strategies[k])) out[n++] = bench_strategy(opt, info->strategies[k], policy);
    return n;
}

Strategy bench_strategy(const BenchOptions *opt, StrategyKind kind, const Policy *policy)
{
    Strategy s = strategy_defaults(kind);
    s.policy = opt->step.strategy.policy ? opt->step.strategy.policy : policy;
    s.replay = opt->step.strategy.replay;
    return s;
}

TimingPlan bench_timing_plan(const BenchOptions *opt, Results *results, int warmup, int full_rounds,
                             double quick_cap)
{
    TimingPlan plan = opt->quick ? timing_plan_quick(warmup, quick_cap) : timing_plan_fixed(warmup, full_rounds);
    if (opt->steps) plan = timing_plan_fixed(warmup, opt->steps);
    if (results) results_config_plan(results, &plan);
    return plan;
}

void results_config_plan(Results *r, const TimingPlan *plan)
{
    results_config_num(r, "warmup_rounds", plan->warmup);
    results_config_num(r, "min_rounds", plan->min_rounds);
    results_config_num(r, "max_rounds", plan->max_rounds);
    results_config_num(r, "target_half_width", plan->half_width);
    results_config_num(r, "cap_seconds", plan->cap_seconds);
}

/* Prints the bench's first lines: its name and question, the mode, the BLAS and threads. */
static void bench_print_header(const BenchInfo *info, const BenchOptions *opt)
{
    const PlatformInfo p = platform_info();
    printf("remat %s: %s\n", info->name, info->question);
    printf("  %s mode; OpenBLAS %s build, core %s; %d thread%s; OpenMP waits: %s\n", opt->quick ? "quick" : "full",
           p.blas_threading, p.blas_core, p.threads, p.threads == 1 ? "" : "s", p.omp_wait);
    if (p.blas_warning) printf("  warning: %s\n", p.blas_warning);
    fflush(stdout);
}

/* Says in the header and in the results which strategy flags narrowed or changed the run,
 * so that nobody reads a narrowed run as the whole sweep. */
static void record_strategy_flags(Results *r, const BenchOptions *opt)
{
    const Strategy *s = &opt->step.strategy;
    if (opt->one_strategy) {
        printf("  only strategy %s (and none, the baseline)\n", name_of(&STRATEGY_NAMES, s->kind));
        results_config_str(r, "only_strategy", name_of(&STRATEGY_NAMES, s->kind));
    }
    if (s->policy) {
        printf("  selective's policy: %s\n", s->policy->name);
        results_config_str(r, "policy", s->policy->name);
    }
    if (!s->replay.preserve_rng) printf("  RNG replay off: dropout draws fresh masks in every replay\n");
    results_config_str(r, "rng_replay", s->replay.preserve_rng ? "on" : "off");
}

/* Says in the header and in the results which attention cores and dropout generator the
 * GPT ran with, for a bench that takes the model flags. */
static void record_model_flags(Results *r, const BenchInfo *info, const BenchOptions *opt)
{
    if (!info->model_flags) return;
    if (opt->attention != ATTENTION_NAIVE || opt->dropout_rng != DROPOUT_RNG_STREAM)
        printf("  the GPT with %s attention and %s dropout masks\n", name_of(&ATTENTION_KIND_NAMES, opt->attention),
               name_of(&DROPOUT_RNG_NAMES, opt->dropout_rng));
    results_config_str(r, "dropout_rng", name_of(&DROPOUT_RNG_NAMES, opt->dropout_rng));
    results_config_str(r, "attention", name_of(&ATTENTION_KIND_NAMES, opt->attention));
}

/* Ends a bench run; returns its exit status. With `status` REMAT_OK it writes `results`
 * into opt->results_dir and checks that the memory ledger holds nothing (a bench frees
 * everything it made); a failure of either, a `status` that is not REMAT_OK, or a standard
 * output that could not be written, prints "<bench>: <remat_last_error()>" on stderr and
 * gives 1. Frees `results` in every case. */
static int bench_finish(const BenchInfo *info, const BenchOptions *opt, Results *results, RematStatus status)
{
    if (status == REMAT_OK && !results) status = remat_fail(REMAT_ENOMEM, "no results to write");
    if (status == REMAT_OK) status = results_write(results, opt->results_dir);
    results_free(results);
    if (status == REMAT_OK && mem_live_blocks() != 0) {
        char held[256];
        status = remat_fail(REMAT_ESTATE, "the bench left %zu blocks in the memory ledger (%s): "
                            "it must free everything it makes", mem_live_blocks(),
                            mem_describe_resident(held, sizeof held));
    }
    if (status == REMAT_OK) {
        printf("\n  results: %s/%s.json (and CSV beside it)\n", opt->results_dir, info->name);
        status = file_flush_stdout();
    }
    if (status == REMAT_OK) return 0;
    fflush(stdout);
    fprintf(stderr, "%s: %s\n", info->name, remat_last_error());
    return 1;
}

/* How every bench starts: makes the file-size limit an error rather than a kill
 * (file_size_limit_as_error), parses the flags, checks that --results can be written,
 * prints the header, and creates the bench's Results (*results, owned by the caller until
 * bench_finish). Returns BENCH_RUN to go on, or the exit status to return right away: 0
 * after --help (1 if it could not be written), 2 for a bad flag, 1 when the results
 * directory cannot be written or the Results could not be made (the message went to
 * stderr). */
static int bench_start(const BenchInfo *info, int argc, char **argv, BenchOptions *opt, Results **results)
{
    *results = NULL;
    file_size_limit_as_error(); /* ulimit -f: "File too large", and offload redoes the step in RAM */
    const int parsed = bench_parse_args(info, argc, argv, opt);
    if (parsed != BENCH_RUN) return parsed;
    if (results_check_dir(opt->results_dir, info->name) == REMAT_OK /* before hours of measuring */
        && platform_check_address_space() == REMAT_OK) { /* before OpenBLAS spins on a buffer it cannot map */
        bench_print_header(info, opt);
        *results = results_create(info->name, info->question, opt->quick);
    }
    if (*results) {
        record_strategy_flags(*results, opt);
        record_model_flags(*results, info, opt);
        return BENCH_RUN;
    }
    return bench_finish(info, opt, NULL, remat_last_status());
}

int bench_main(const BenchInfo *info, int argc, char **argv, BenchRun run)
{
    BenchOptions opt;
    Results *results;
    const int start = bench_start(info, argc, argv, &opt, &results);
    return start == BENCH_RUN ? bench_finish(info, &opt, results, run(&opt, results)) : start;
}

/* ---- a bench run as ranks ----------------------------------------------------------------- */

int bench_start_ranks(BenchInfo *info, bool name_by_ranks, int argc, char **argv, DistGroup *g, BenchOptions *opt,
                      Results **results)
{
    if (dist_init(&argc, &argv, g) != REMAT_OK) return bench_finish(info, opt, NULL, remat_last_status());
    static char name[64];
    if (name_by_ranks) {
        snprintf(name, sizeof name, "%s_np%d", info->name, g->size);
        info->name = name;
    }
    if (g->rank != 0 && !freopen("/dev/null", "w", stdout)) dist_abort(1); /* rank 0 alone prints */
    const int start = bench_start(info, argc, argv, opt, results);
    if (start == BENCH_RUN) {
        const int cores = (int)sysconf(_SC_NPROCESSORS_ONLN), threads = platform_info().threads; /* the machine's */
        const bool over = g->size * threads > cores;
        results_config_num(*results, "ranks", g->size);
        results_config_num(*results, "cores", cores);
        results_config_str(*results, "oversubscribed", over ? "yes" : "no");
        printf("  %d rank%s, %d thread%s each, on %d cores%s\n", g->size, g->size == 1 ? "" : "s", threads,
               threads == 1 ? "" : "s", cores, over ? ": oversubscribed, times are not a cluster's" : "");
        return start;
    }
    if (start && g->size > 1) dist_abort(start);
    dist_finalize();
    return start;
}

int bench_finish_ranks(const BenchInfo *info, const DistGroup *g, const BenchOptions *opt, Results *results,
                       RematStatus status, bool write)
{
    if (status != REMAT_OK && g->size > 1) {
        fprintf(stderr, "%s: rank %d of %d: %s\n", info->name, g->rank, g->size, remat_last_error());
        dist_abort(1);
    }
    int code;
    if (g->rank == 0 && (status != REMAT_OK || write)) {
        code = bench_finish(info, opt, results, status);
    } else {
        results_free(results);
        code = mem_live_blocks() ? 1 : 0;
    }
    dist_finalize();
    return code;
}

/* ---- numbers ---------------------------------------------------------------------------- */

double mib(size_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}
