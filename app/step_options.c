/*
 * step_options.c — the table of a step's checkpointing and offload flags, its parser,
 * its checks and its help (see step_options.h).
 */
#include "app/step_options.h"

#include <string.h>

#include "parallel/zero.h"
#include "base/parse.h"

/* ---- what each flag sets ------------------------------------------------------------------ */

static RematStatus set_strategy(StepOptions *o, const char *v) { return strategy_parse(v, &o->strategy.kind); }
static RematStatus set_planner(StepOptions *o, const char *v) { return planner_parse(v, &o->planner); }
static RematStatus set_memory_budget(StepOptions *o, const char *v) { return parse_memory_size(v, &o->memory_budget); }

static RematStatus set_policy(StepOptions *o, const char *v)
{
    o->strategy.policy = policy_by_name(v);
    return o->strategy.policy ? REMAT_OK
                              : remat_fail(REMAT_EINVAL, "unknown policy '%s' (expected attention_core, dots or "
                                           "nothing_saveable)", v);
}

static RematStatus set_offload(StepOptions *o, const char *v)
{
    o->offload = true;
    return offload_policy_parse(v, &o->offload_opts.policy);
}

static RematStatus set_accumulate(StepOptions *o, const char *v)
{
    return parse_int(v, 1, 65536, &o->accumulate) ? REMAT_OK
                                                  : remat_fail(REMAT_EINVAL, "expected a whole number from 1 to "
                                                               "65536, not '%s'", v);
}

static RematStatus set_zero(StepOptions *o, const char *v)
{
    return parse_int(v, 0, ZERO_MAX_STAGE, &o->zero_stage) ? REMAT_OK
                                                           : remat_fail(REMAT_EINVAL, "expected 0, 1, 2 or 3, not '%s'", v);
}

static RematStatus set_offload_dir(StepOptions *o, const char *v)
{
    o->offload_opts.dir = v;
    return REMAT_OK;
}

/* A window of bytes instead of a count of records: the count set so that it never limits. */
static RematStatus set_offload_read_ahead(StepOptions *o, const char *v)
{
    o->offload_opts.prefetch = OFFLOAD_ANY_COUNT;
    return parse_memory_size(v, &o->offload_opts.prefetch_bytes);
}

static RematStatus set_offload_write_behind(StepOptions *o, const char *v)
{
    o->offload_opts.write_behind = OFFLOAD_ANY_COUNT;
    return parse_memory_size(v, &o->offload_opts.write_behind_bytes);
}

/* The switches, which take no value. */
static void set_switch(StepOptions *o, StepFlag flag)
{
    switch (flag) {
    case STEP_FLAG_NO_RNG_REPLAY: o->strategy.preserve_rng = false; break;
    case STEP_FLAG_DETERMINISM_CHECK: o->strategy.determinism_check = true; break;
    case STEP_FLAG_OFFLOAD_NO_CACHE: o->offload_opts.drop_cache = true; break;
    case STEP_FLAG_OFFLOAD_MMAP: o->offload_opts.io = OFFLOAD_IO_MMAP; break;
    case STEP_FLAG_OFFLOAD_DIRECT: o->offload_opts.io = OFFLOAD_IO_DIRECT; break;
    default: break;
    }
}

/* ---- when each flag applies ------------------------------------------------------------- */

/* Each returns NULL when its flag changes something in a run of scope `s`, else why it
 * would not: the end of "--policy does not apply: ...". */

static const unsigned REGION_STRATEGIES =
    1u << STRATEGY_FULL | 1u << STRATEGY_SQRT | 1u << STRATEGY_SELECTIVE | 1u << STRATEGY_BUDGET;

static const char *always(const StepOptions *o, StepScope s)
{
    (void)o, (void)s;
    return NULL;
}

static const char *with_budget(const StepOptions *o, StepScope s)
{
    (void)o;
    return s.strategies & 1u << STRATEGY_BUDGET ? NULL : "it is for --strategy budget";
}

static const char *with_selective(const StepOptions *o, StepScope s)
{
    (void)o;
    return s.strategies & 1u << STRATEGY_SELECTIVE ? NULL : "it is the policy of --strategy selective";
}

static const char *with_regions(const StepOptions *o, StepScope s)
{
    (void)o;
    return s.strategies & REGION_STRATEGIES ? NULL
                                            : "it changes how checkpoint regions replay, and --strategy none has none";
}

static const char *with_offload_policy(const StepOptions *o, StepScope s)
{
    return o->offload_opts.policy != OFFLOAD_BOUNDARY || s.strategies & REGION_STRATEGIES
               ? NULL
               : "boundary spills the inputs checkpoint regions keep, and --strategy none has no regions "
                 "(all or large spill every saved activation)";
}

static const char *with_offload(const StepOptions *o, StepScope s)
{
    (void)o;
    return s.offloads ? NULL : "it says how --offload spills, and --offload was not given";
}

static const char *with_offload_unmapped(const StepOptions *o, StepScope s)
{
    if (o->given & STEP_FLAG_OFFLOAD_MMAP) return "the bytes move through a mapping (--offload-mmap); choose one";
    return with_offload(o, s);
}

static const char *with_offload_written_behind(const StepOptions *o, StepScope s)
{
    if (o->given & STEP_FLAG_OFFLOAD_MMAP) return "through a mapping (--offload-mmap) pack writes before it returns";
    return with_offload(o, s);
}

static const char *with_offload_cached(const StepOptions *o, StepScope s)
{
    if (o->given & STEP_FLAG_OFFLOAD_DIRECT) return "with --offload-direct the page cache never holds the records";
    return with_offload(o, s);
}

/* ---- the table ------------------------------------------------------------------------------ */

typedef struct FlagSpec {
    const char *name;
    StepFlag flag;
    const char *value; /* what its value is called in the usage; NULL: a switch */
    const char *help;  /* its help, each continuation line starting with a newline */
    RematStatus (*set)(StepOptions *o, const char *value); /* a flag with a value; NULL: a switch */
    const char *(*applies)(const StepOptions *o, StepScope s); /* NULL if it changes the run, else why not */
} FlagSpec;

static const FlagSpec FLAGS[] = {
    {"--strategy", STEP_FLAG_STRATEGY, "S",
     "none, full (every layer a region), sqrt (segments of about\n"
     "sqrt(N) layers), selective (every layer, with a policy) or\n"
     "budget (the cheapest schedule that fits --memory-budget) (none)", set_strategy, always},
    {"--memory-budget", STEP_FLAG_MEMORY_BUDGET, "S",
     "budget: bytes a training step may hold in all (params, grads,\n"
     "optimizer, activations), with a unit: B, KiB, MiB or GiB", set_memory_budget, with_budget},
    {"--planner", STEP_FLAG_PLANNER, "P",
     "budget: dp (the exact optimum over single-level schedules,\n"
     "default), chen (Chen et al. 2016's search) or revolve\n"
     "(binomial schedules for chains of identical layers, which\n"
     "recompute layers more than once and fit tighter budgets);\n"
     "the schedule is printed before training", set_planner, with_budget},
    {"--policy", STEP_FLAG_POLICY, "P", "selective's policy: attention_core (default), dots or\nnothing_saveable", set_policy, with_selective},
    {"--no-rng-replay", STEP_FLAG_NO_RNG_REPLAY, NULL,
     "replay regions without restoring the generator: dropout\n"
     "draws new masks and gradients come out wrong (quiz question 7)", NULL, with_regions},
    {"--determinism-check", STEP_FLAG_DETERMINISM_CHECK, NULL, "check that every replay reproduced its first forward",
     NULL, with_regions},
    {"--offload", STEP_FLAG_OFFLOAD, "P",
     "all (every saved activation of 64 KiB or more), large (1 MiB\n"
     "or more) or boundary (the inputs checkpoint regions keep)", set_offload, with_offload_policy},
    {"--offload-dir", STEP_FLAG_OFFLOAD_DIR, "DIR", "where the spill file goes ($TMPDIR, else /tmp)", set_offload_dir, with_offload},
    {"--offload-no-cache", STEP_FLAG_OFFLOAD_NO_CACHE, NULL,
     "drop spilled records from the page cache: backward reads the\n"
     "disk. A step whose offload fails is redone without offload", NULL, with_offload_cached},
    {"--offload-mmap", STEP_FLAG_OFFLOAD_MMAP, NULL,
     "move the bytes through a MAP_SHARED mapping of the spill file\n"
     "instead of pwritev/preadv (slower here: see offload/README.md)", NULL, with_offload},
    {"--offload-direct", STEP_FLAG_OFFLOAD_DIRECT, NULL,
     "move the bytes with O_DIRECT, around the page cache: backward\n"
     "reads the disk (a file system without direct I/O is an error)", NULL, with_offload_unmapped},
    {"--offload-read-ahead", STEP_FLAG_OFFLOAD_READ_AHEAD, "S",
     "in backward, read ahead up to S of records (a unit: B, KiB,\n"
     "MiB or GiB; the next record whatever its size) instead of\n"
     "two records, each counted in ACT from when its read is queued", set_offload_read_ahead, with_offload},
    {"--offload-write-behind", STEP_FLAG_OFFLOAD_WRITE_BEHIND, "S",
     "let up to S of records be written behind the forward instead\n"
     "of two records (16 MiB ahead and 8 MiB behind kept the GPT's\n"
     "step at its bound: offload/README.md)", set_offload_write_behind, with_offload_written_behind},
    {"--accumulate", STEP_FLAG_ACCUMULATE, "K",
     "K micro-batches of --batch each per optimizer step, their\n"
     "gradients summed in micro-batch order: bit-identical to\n"
     "mpirun -np K with one micro-batch per rank (1)", set_accumulate, always},
    {"--zero", STEP_FLAG_ZERO, "S",
     "under mpirun, what the ranks shard: 0 nothing, 1 the optimizer\n"
     "state, 2 also the gradients, 3 also the parameters, gathered\n"
     "per layer when used (0); one process shards nothing", set_zero, always},
};
enum { N_FLAGS = sizeof FLAGS / sizeof FLAGS[0] };

static const unsigned OFFLOAD_FLAGS =
    STEP_FLAG_OFFLOAD | STEP_FLAG_OFFLOAD_DIR | STEP_FLAG_OFFLOAD_NO_CACHE | STEP_FLAG_OFFLOAD_MMAP |
    STEP_FLAG_OFFLOAD_DIRECT | STEP_FLAG_OFFLOAD_READ_AHEAD | STEP_FLAG_OFFLOAD_WRITE_BEHIND;
static const unsigned DATA_PARALLEL_FLAGS = STEP_FLAG_ACCUMULATE | STEP_FLAG_ZERO;

/* ---- parsing --------------------------------------------------------------------------------- */

StepOptions step_options_defaults(void)
{
    return (StepOptions){.strategy = strategy_defaults(STRATEGY_NONE), .planner = PLANNER_DP,
                         .offload_opts = offload_defaults(OFFLOAD_ALL), .accumulate = 1};
}

unsigned step_options_flag(const char *name)
{
    for (int k = 0; k < N_FLAGS; k++)
        if (!strcmp(name, FLAGS[k].name)) return FLAGS[k].flag;
    return 0;
}

int step_options_parse(int argc, char **argv, int *i, unsigned accepted, StepOptions *o)
{
    const FlagSpec *spec = NULL;
    for (int k = 0; k < N_FLAGS && !spec; k++)
        if (!strcmp(argv[*i], FLAGS[k].name)) spec = &FLAGS[k];
    if (!spec) return 0;
    if (!(accepted & spec->flag)) {
        remat_fail(REMAT_EINVAL, "%s does not apply here", spec->name);
        return -1;
    }
    if (o->given & spec->flag) { /* the first value would be silently dropped */
        remat_fail(REMAT_EINVAL, "%s is given twice", spec->name);
        return -1;
    }
    const char *value = NULL;
    if (spec->value) {
        value = *i + 1 < argc ? argv[*i + 1] : NULL;
        if (!value || !value[0]) {
            remat_fail(REMAT_EINVAL, "%s needs a value (%s)", spec->name, spec->value);
            return -1;
        }
    }
    if (!spec->set) set_switch(o, spec->flag);
    else if (spec->set(o, value) != REMAT_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", remat_last_error()); /* remat_fail writes where it reads */
        remat_fail(REMAT_EINVAL, "%s: %s", spec->name, why);
        return -1;
    }
    if (value) ++*i;
    o->given |= spec->flag;
    return 1;
}

StepScope step_options_scope(const StepOptions *o)
{
    return (StepScope){.strategies = 1u << o->strategy.kind, .offloads = o->offload};
}

RematStatus step_options_check(const StepOptions *o, StepScope scope)
{
    for (int k = 0; k < N_FLAGS; k++) {
        const char *why = o->given & FLAGS[k].flag ? FLAGS[k].applies(o, scope) : NULL;
        if (why) return remat_fail(REMAT_EINVAL, "%s does not apply: %s", FLAGS[k].name, why);
    }
    const bool budget = o->strategy.kind == STRATEGY_BUDGET;
    if (budget && !o->memory_budget)
        return remat_fail(REMAT_EINVAL, "--strategy budget needs --memory-budget (e.g. 300MiB)");
    if (budget && o->planner == PLANNER_REVOLVE && (!o->strategy.preserve_rng || o->strategy.determinism_check))
        return remat_fail(REMAT_EINVAL, "--planner revolve always replays the generator and has no determinism "
                          "check; --no-rng-replay and --determinism-check are for regions (dp, chen or the other "
                          "strategies)");
    if (budget && o->offload)
        return remat_fail(REMAT_EINVAL, "--strategy budget plans for activations in RAM; it does not combine with "
                          "--offload");
    return REMAT_OK;
}

/* ---- help -------------------------------------------------------------------------------------- */

/* One flag's help: the flag and its value in a column of 20, its lines beside it. */
static void usage_line(const FlagSpec *spec, FILE *out)
{
    char head[32];
    snprintf(head, sizeof head, "%s%s%s", spec->name, spec->value ? " " : "", spec->value ? spec->value : "");
    if (strlen(head) > 19) fprintf(out, "  %s\n%22s", head, ""); /* too long for its column: a line of its own */
    else fprintf(out, "  %-19s ", head);
    for (const char *c = spec->help; *c; c++) {
        fputc(*c, out);
        if (*c == '\n') fprintf(out, "%22s", "");
    }
    fputc('\n', out);
}

/* The help lines of the flags of `group` in `accepted`, under `heading` when asked. */
static void usage_group(unsigned accepted, unsigned group, const char *heading, FILE *out)
{
    if (heading && (accepted & group)) fprintf(out, "%s\n", heading);
    for (int k = 0; k < N_FLAGS; k++)
        if ((accepted & FLAGS[k].flag) && (FLAGS[k].flag & group)) usage_line(&FLAGS[k], out);
}

void step_options_usage(unsigned accepted, bool headings, FILE *out)
{
    usage_group(accepted, STEP_FLAGS_ALL & ~OFFLOAD_FLAGS & ~DATA_PARALLEL_FLAGS, headings ? "checkpointing" : NULL,
                out);
    usage_group(accepted, OFFLOAD_FLAGS,
                headings ? "offload (saved activations written to a spill file on disk, read back in backward)" : NULL,
                out);
    usage_group(accepted, DATA_PARALLEL_FLAGS,
                headings ? "data parallelism (mpirun -np K build/app/train ...: one micro-batch per rank)" : NULL,
                out);
}

void step_options_synopsis(unsigned accepted, FILE *out)
{
    for (int k = 0; k < N_FLAGS; k++) {
        if (!(accepted & FLAGS[k].flag)) continue;
        fprintf(out, " [%s%s%s]", FLAGS[k].name, FLAGS[k].value ? " " : "", FLAGS[k].value ? FLAGS[k].value : "");
    }
}
