/*
 * cli.c — flags, header and ending shared by the bench binaries (see cli.h).
 */
#include "bench/cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "tensor/memory.h"
#include "base/parse.h"
#include "base/platform.h"

/* ---- flags ------------------------------------------------------------------------------ */

void bench_usage(const BenchInfo *info, FILE *out)
{
    fprintf(out, "usage: %s [--quick] [--results DIR]%s%s", info->name, info->timed ? " [--steps N]" : "",
            info->strategies ? " [--strategy S]" : "");
    step_options_synopsis(info->step_flags, out);
    fprintf(out, "%s [--help]\n", info->model_flags ? " [--dropout-rng R] [--attention A]" : "");
    fprintf(out, "  %s\n%s\n", info->question, info->about);
    /* The same columns as the step flags' help (app/step_options.h). */
    fprintf(out, "  --quick             %s\n", info->quick);
    fprintf(out, "                      (default: %s)\n", info->full);
    fprintf(out, "  --results DIR       write DIR/%s.json and its CSV files (default: results)\n", info->name);
    if (info->timed)
        fprintf(out, "  --steps N           exactly N timed rounds per comparison, 1..1000 (default: the mode's;\n"
                     "                      below 6 the interval is the range, not a 95%% interval)\n");
    if (info->strategies) {
        fprintf(out, "  --strategy S        measure only S (with none, the baseline); S is one of");
        for (int k = 0; k < info->n_strategies; k++) fprintf(out, " %s", strategy_name(info->strategies[k]));
        fprintf(out, "\n");
    }
    step_options_usage(info->step_flags, false, out);
    if (info->model_flags)
        fprintf(out, "  --dropout-rng R     stream (PCG32, masks kept; default) or counter (Philox, masks\n"
                     "                      made again in backward, nothing to replay)\n"
                     "  --attention A       naive (default) or fused (one op keeping O(T) per head; needs\n"
                     "                      --dropout-rng counter, the GPT having dropout)\n");
    fprintf(out, "  --help              this text\n");
}

/* Whether the --strategy given is one of the bench's sweep. */
static bool in_sweep(const BenchInfo *info, StrategyKind kind)
{
    for (int k = 0; k < info->n_strategies; k++)
        if (info->strategies[k] == kind) return true;
    return false;
}

/* Prints "<bench>: <why>" and the usage on stderr; returns 2, the status of a bad flag. */
static int refuse(const BenchInfo *info, const char *why)
{
    fprintf(stderr, "%s: %s\n", info->name, why);
    bench_usage(info, stderr);
    return 2;
}

/* A step flag (the table of app/step_options.h): 1 when taken, 0 when `argv[*i]` is
 * none, 2 after printing why it is refused or its value is bad. */
static int parse_step_flag(const BenchInfo *info, int argc, char **argv, int *i, BenchOptions *opt)
{
    const char *flag = argv[*i];
    const unsigned which = step_options_flag(flag);
    if (!which) return 0;
    const unsigned accepted = info->step_flags | (info->strategies ? STEP_FLAG_STRATEGY : 0);
    RematStatus status = REMAT_OK;
    if (!(accepted & which))
        status = remat_fail(REMAT_EINVAL, "%s does not apply to what this bench measures (its flags are below)", flag);
    else if (step_options_parse(argc, argv, i, accepted, &opt->step) < 0)
        status = remat_last_status();
    else if (which == STEP_FLAG_STRATEGY && !in_sweep(info, opt->step.strategy.kind))
        status = remat_fail(REMAT_EINVAL, "--strategy %s is not one this bench measures", argv[*i]);
    if (status == REMAT_OK) {
        opt->one_strategy |= which == STEP_FLAG_STRATEGY;
        return 1;
    }
    return refuse(info, remat_last_error());
}

/* The run the step flags are checked against: the strategy given, else the bench's sweep,
 * else (a bench that places its regions itself) any strategy with regions. */
static StepScope bench_scope(const BenchInfo *info, const BenchOptions *opt)
{
    StepScope scope = {.offloads = info->offloads || opt->step.offload};
    if (opt->one_strategy) scope.strategies = 1u << opt->step.strategy.kind;
    for (int k = 0; !opt->one_strategy && k < info->n_strategies; k++) scope.strategies |= 1u << info->strategies[k];
    if (!opt->one_strategy && !info->strategies) scope.strategies = ~(1u << STRATEGY_NONE);
    return scope;
}

int bench_parse_args(const BenchInfo *info, int argc, char **argv, BenchOptions *opt)
{
    *opt = (BenchOptions){.results_dir = "results", .step = step_options_defaults()};
    opt->step.strategy.policy = NULL;
    enum { QUICK = 1, RESULTS = 2, STEPS = 4, DROPOUT_RNG = 8, ATTENTION = 16 };
    unsigned given = 0; /* the bench's own flags seen so far */
    char why[600];
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (!strcmp(flag, "--help") || !strcmp(flag, "-h")) {
            bench_usage(info, stdout);
            return 1;
        }
        const int step_flag = parse_step_flag(info, argc, argv, &i, opt);
        if (step_flag == 2) return 2;
        if (step_flag == 1) continue;
        const unsigned which = !strcmp(flag, "--quick")                      ? QUICK
                             : !strcmp(flag, "--results")                    ? RESULTS
                             : info->timed && !strcmp(flag, "--steps") ? STEPS
                             : info->model_flags && !strcmp(flag, "--dropout-rng") ? DROPOUT_RNG
                             : info->model_flags && !strcmp(flag, "--attention") ? ATTENTION
                                                                             : 0;
        if (!which) {
            snprintf(why, sizeof why, "unknown flag %s", flag);
            return refuse(info, why);
        }
        if (given & which) { /* the first value would be silently dropped */
            snprintf(why, sizeof why, "%s is given twice", flag);
            return refuse(info, why);
        }
        given |= which;
        if (which == QUICK) {
            opt->quick = true;
            continue;
        }
        const char *value = i + 1 < argc ? argv[++i] : NULL;
        const bool ok = value && value[0] && (which != STEPS || parse_int(value, 1, 1000, &opt->steps)) &&
                        (which != DROPOUT_RNG || dropout_rng_parse(value, &opt->dropout_rng) == REMAT_OK) &&
                        (which != ATTENTION || attention_kind_parse(value, &opt->attention) == REMAT_OK);
        if (ok && which == RESULTS) opt->results_dir = value;
        if (!ok) {
            snprintf(why, sizeof why, "bad or missing value for %s%s%.400s", flag, value ? ": " : "", value ? value : "");
            return refuse(info, why);
        }
    }
    if (opt->attention == ATTENTION_FUSED && opt->dropout_rng != DROPOUT_RNG_COUNTER)
        return refuse(info, "--attention fused needs --dropout-rng counter: the fused kernel makes its dropout mask "
                            "again in backward, which a running stream cannot do");
    return step_options_check(&opt->step, bench_scope(info, opt)) == REMAT_OK ? 0 : refuse(info, remat_last_error());
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
    s.preserve_rng = opt->step.strategy.preserve_rng;
    return s;
}

TimingPlan bench_timing_plan(const BenchOptions *opt, int warmup, int full_rounds, double quick_cap)
{
    if (opt->steps) return timing_plan_fixed(warmup, opt->steps);
    return opt->quick ? timing_plan_quick(warmup, quick_cap) : timing_plan_fixed(warmup, full_rounds);
}

void results_config_plan(Results *r, const TimingPlan *plan)
{
    results_config_num(r, "warmup_rounds", plan->warmup);
    results_config_num(r, "min_rounds", plan->min_rounds);
    results_config_num(r, "max_rounds", plan->max_rounds);
    results_config_num(r, "target_half_width", plan->half_width);
    results_config_num(r, "cap_seconds", plan->cap_seconds);
}

void bench_print_header(const BenchInfo *info, const BenchOptions *opt)
{
    const PlatformInfo p = platform_info();
    printf("remat %s: %s\n", info->name, info->question);
    printf("  %s mode; OpenBLAS %s build, core %s; %d thread%s; OpenMP waits: %s\n", opt->quick ? "quick" : "full",
           p.blas_threading, p.blas_core, p.threads, p.threads == 1 ? "" : "s", p.omp_wait);
    if (platform_check() != REMAT_OK) printf("  warning: %s\n", remat_last_error());
    fflush(stdout);
}

/* Says in the header and in the results which strategy flags narrowed or changed the run,
 * so that nobody reads a narrowed run as the whole sweep. */
static void record_strategy_flags(Results *r, const BenchOptions *opt)
{
    const Strategy *s = &opt->step.strategy;
    if (opt->one_strategy) {
        printf("  only strategy %s (and none, the baseline)\n", strategy_name(s->kind));
        results_config_str(r, "only_strategy", strategy_name(s->kind));
    }
    if (s->policy) {
        printf("  selective's policy: %s\n", s->policy->name);
        results_config_str(r, "policy", s->policy->name);
    }
    if (!s->preserve_rng) printf("  RNG replay off: dropout draws fresh masks in every replay\n");
    results_config_str(r, "rng_replay", s->preserve_rng ? "on" : "off");
}

/* Says in the header and in the results which attention cores and dropout generator the
 * GPT ran with, for a bench that takes the model flags. */
static void record_model_flags(Results *r, const BenchInfo *info, const BenchOptions *opt)
{
    if (!info->model_flags) return;
    if (opt->attention != ATTENTION_NAIVE || opt->dropout_rng != DROPOUT_RNG_STREAM)
        printf("  the GPT with %s attention and %s dropout masks\n", attention_kind_name(opt->attention),
               dropout_rng_name(opt->dropout_rng));
    results_config_str(r, "dropout_rng", dropout_rng_name(opt->dropout_rng));
    results_config_str(r, "attention", attention_kind_name(opt->attention));
}

int bench_start(const BenchInfo *info, int argc, char **argv, BenchOptions *opt, Results **results)
{
    *results = NULL;
    file_size_limit_as_error(); /* ulimit -f: "File too large", and offload redoes the step in RAM */
    const int parsed = bench_parse_args(info, argc, argv, opt);
    if (parsed == 1) return file_flush_stdout() == REMAT_OK ? 0 : 1; /* --help, printed where it can be read */
    if (parsed) return 2;
    if (results_check_dir(opt->results_dir, info->name) != REMAT_OK) {
        fprintf(stderr, "%s: %s\n", info->name, remat_last_error()); /* before hours of measuring */
        return 1;
    }
    bench_print_header(info, opt);
    *results = results_create(info->name, info->question, opt->quick);
    if (*results) {
        record_strategy_flags(*results, opt);
        record_model_flags(*results, info, opt);
        return BENCH_RUN;
    }
    fprintf(stderr, "%s: %s\n", info->name, remat_last_error());
    return 1;
}

int bench_finish(const BenchInfo *info, const BenchOptions *opt, Results *results, RematStatus status)
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
    if (status != REMAT_OK) {
        fflush(stdout);
        fprintf(stderr, "%s: %s\n", info->name, remat_last_error());
        return 1;
    }
    printf("\n  results: %s/%s.json (and CSV beside it)\n", opt->results_dir, info->name);
    if (file_flush_stdout() != REMAT_OK) {
        fprintf(stderr, "%s: %s\n", info->name, remat_last_error());
        return 1;
    }
    return 0;
}

/* ---- numbers ---------------------------------------------------------------------------- */

double mib(size_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}
