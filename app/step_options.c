/*
 * step_options.c — the table of a step's checkpointing, offload and data-parallel flags
 * and the checks between them (see step_options.h); base/flags.c parses them and prints
 * their help.
 */
#include "app/step_options.h"

#include <stddef.h>

#include "base/parse.h"
#include "parallel/zero.h"

/* ---- what the flags that are more than a field set ----------------------------------- */

static const char *const POLICIES[] = {"attention_core", "dots", "nothing_saveable"};

/* A policy by its name, or by the name it has in JAX (dots_saveable) or in older runs;
 * anything else refused as every bad name is, with the names of POLICIES. */
static RematStatus set_policy(void *opts, const char *v)
{
    StepOptions *o = opts;
    o->strategy.policy = policy_by_name(v);
    return o->strategy.policy ? REMAT_OK : name_parse(&(NameTable){POLICIES, 3}, v, &(int){0});
}

static RematStatus set_offload(void *opts, const char *v)
{
    StepOptions *o = opts;
    o->offload = true;
    return name_parse(&OFFLOAD_POLICY_NAMES, v, (int *)&o->offload_opts.policy);
}

/* A window of bytes instead of a count of records: the count set so that it never limits. */
static RematStatus set_offload_read_ahead(void *opts, const char *v)
{
    StepOptions *o = opts;
    o->offload_opts.prefetch = OFFLOAD_ANY_COUNT;
    return parse_memory_size(v, &o->offload_opts.prefetch_bytes);
}

static RematStatus set_offload_write_behind(void *opts, const char *v)
{
    StepOptions *o = opts;
    o->offload_opts.write_behind = OFFLOAD_ANY_COUNT;
    return parse_memory_size(v, &o->offload_opts.write_behind_bytes);
}

/* ---- when each flag applies ------------------------------------------------------------- */

/* Each returns NULL when its flag changes something in a run of scope *run (a StepScope),
 * else why it would not: the end of "--policy does not apply: ...". */

static const unsigned REGION_STRATEGIES = ~(1u << STRATEGY_NONE); /* every strategy but none makes regions */

static const char *with_budget(const void *opts, const void *run)
{
    (void)opts;
    const StepScope *s = run;
    return s->strategies & 1u << STRATEGY_BUDGET ? NULL : "it is for --strategy budget";
}

static const char *with_selective(const void *opts, const void *run)
{
    (void)opts;
    const StepScope *s = run;
    return s->strategies & 1u << STRATEGY_SELECTIVE ? NULL : "it is the policy of --strategy selective";
}

static const char *with_regions(const void *opts, const void *run)
{
    (void)opts;
    const StepScope *s = run;
    return s->strategies & REGION_STRATEGIES ? NULL
                                            : "it changes how checkpoint regions replay, and --strategy none has none";
}

/* --no-rng-replay: regions, whose replay restores the generator that drew the masks. */
static const char *with_replayed_masks(const void *opts, const void *run)
{
    const StepScope *s = run;
    if (!(s->strategies & REGION_STRATEGIES)) return with_regions(opts, run);
    return s->counter_masks ? "--dropout-rng counter makes each mask again from its counters, so a replay has "
                              "no generator to restore and the flag would change no bit"
                            : NULL;
}

static const char *with_ranks(const void *opts, const void *run)
{
    (void)opts;
    const StepScope *s = run;
    return s->several_ranks ? NULL
                    : "it says what the ranks of mpirun shard, and this is one process, which shards nothing "
                      "(mpirun -np K build/app/train ... runs K ranks)";
}

static const char *with_offload_policy(const void *opts, const void *run)
{
    const StepOptions *o = opts;
    const StepScope *s = run;
    return o->offload_opts.policy != OFFLOAD_BOUNDARY || s->strategies & REGION_STRATEGIES
               ? NULL
               : "boundary spills the inputs checkpoint regions keep, and --strategy none has no regions "
                 "(all or large spill every saved activation)";
}

static const char *with_offload(const void *opts, const void *run)
{
    (void)opts;
    const StepScope *s = run;
    return s->offloads ? NULL : "it says how --offload spills, and --offload was not given";
}

/* ---- the table ------------------------------------------------------------------------------ */

#define AT(field) offsetof(StepOptions, field)
/* In the order of StepFlag: row k is bit k. */
static const Flag FLAGS[] = {
    {.name = "--strategy", .type = FLAG_NAME, .offset = AT(strategy.kind), .names = &STRATEGY_NAMES, .value = "S",
     .heading = "checkpointing",
     .help = "none, full (every layer a region), sqrt (segments of about\n"
             "sqrt(N) layers), selective (every layer, with a policy) or\n"
             "budget (the cheapest schedule that fits --memory-budget) (none)"},
    {.name = "--memory-budget", .type = FLAG_SIZE, .offset = AT(memory_budget), .value = "S",
     .help = "bytes the run may hold in all (params, grads, optimizer,\n"
             "activations), with a unit: B, KiB, MiB or GiB; the ledger\n"
             "refuses to go past it under every strategy, and budget plans\n"
             "the cheapest schedule that fits it"},
    {.name = "--planner", .type = FLAG_NAME, .offset = AT(planner), .names = &PLANNER_NAMES, .value = "P",
     .applies = with_budget,
     .help = "budget: dp (the exact optimum over single-level schedules,\n"
             "default), chen (Chen et al. 2016's search) or revolve\n"
             "(binomial schedules for chains of identical layers, which\n"
             "recompute layers more than once and fit tighter budgets);\n"
             "the schedule is printed before training"},
    {.name = "--policy", .type = FLAG_CUSTOM, .set = set_policy, .value = "P", .applies = with_selective,
     .help = "selective's policy: attention_core (default), dots or\nnothing_saveable"},
    {.name = "--no-rng-replay", .type = FLAG_SWITCH_OFF, .offset = AT(strategy.replay.preserve_rng),
     .applies = with_replayed_masks,
     .help = "replay regions without restoring the generator: dropout\n"
             "draws new masks and gradients come out wrong (quiz question 7)"},
    {.name = "--determinism-check", .type = FLAG_SWITCH, .offset = AT(strategy.replay.determinism_check),
     .applies = with_regions, .help = "check that every replay reproduced its first forward"},
    {.name = "--offload", .type = FLAG_CUSTOM, .set = set_offload, .value = "P", .applies = with_offload_policy,
     .heading = "offload (saved activations written to a spill file on disk, read back in backward)",
     .help = "all (every saved activation of 64 KiB or more), large (1 MiB\n"
             "or more) or boundary (the inputs checkpoint regions keep)"},
    {.name = "--offload-dir", .type = FLAG_TEXT, .offset = AT(offload_opts.dir), .value = "DIR",
     .applies = with_offload, .help = "where the spill file goes ($TMPDIR, else /tmp)"},
    {.name = "--offload-no-cache", .type = FLAG_SWITCH, .offset = AT(offload_opts.drop_cache),
     .applies = with_offload, .excludes = STEP_FLAG_OFFLOAD_DIRECT,
     .excluded = "with --offload-direct the page cache never holds the records",
     .help = "drop spilled records from the page cache: backward reads the\n"
             "disk. A step whose offload fails is redone without offload"},
    {.name = "--offload-mmap", .type = FLAG_CONST, .offset = AT(offload_opts.io), .lo = OFFLOAD_IO_MMAP,
     .applies = with_offload,
     .help = "move the bytes through a MAP_SHARED mapping of the spill file\n"
             "instead of pwritev/preadv (slower here: docs/MEASUREMENTS.md 8.7)"},
    {.name = "--offload-direct", .type = FLAG_CONST, .offset = AT(offload_opts.io), .lo = OFFLOAD_IO_DIRECT,
     .applies = with_offload, .excludes = STEP_FLAG_OFFLOAD_MMAP,
     .excluded = "the bytes move through a mapping (--offload-mmap); choose one",
     .help = "move the bytes with O_DIRECT, around the page cache: backward\n"
             "reads the disk (a file system without direct I/O is an error)"},
    {.name = "--offload-read-ahead", .type = FLAG_CUSTOM, .set = set_offload_read_ahead, .value = "S",
     .applies = with_offload,
     .help = "in backward, read ahead up to S of records (a unit: B, KiB,\n"
             "MiB or GiB; the next record whatever its size) instead of\n"
             "two records, each counted in ACT from when its read is queued"},
    {.name = "--offload-write-behind", .type = FLAG_CUSTOM, .set = set_offload_write_behind, .value = "S",
     .applies = with_offload, .excludes = STEP_FLAG_OFFLOAD_MMAP,
     .excluded = "through a mapping (--offload-mmap) pack writes before it returns",
     .help = "let up to S of records be written behind the forward instead\n"
             "of two records (16 MiB ahead and 8 MiB behind kept the GPT's\n"
             "step at its bound: docs/MEASUREMENTS.md 8.2)"},
    {.name = "--accumulate", .type = FLAG_INT, .offset = AT(accumulate), .value = "K", .lo = 1, .hi = 65536,
     .heading = "data parallelism (mpirun -np K build/app/train ...: one micro-batch per rank)",
     .help = "K micro-batches of --batch each per optimizer step, their\n"
             "gradients summed in micro-batch order: bit-identical to\n"
             "mpirun -np K with one micro-batch per rank (1)"},
    {.name = "--zero", .type = FLAG_INT, .offset = AT(zero_stage), .value = "S", .lo = 0, .hi = ZERO_MAX_STAGE,
     .applies = with_ranks,
     .help = "under mpirun, what the ranks shard: 0 nothing, 1 the optimizer\n"
             "state, 2 also the gradients, 3 also the parameters, gathered\n"
             "per layer when used (0); refused in one process"},
};
#undef AT
enum { STEP_FLAGS_N = sizeof FLAGS / sizeof FLAGS[0] };
_Static_assert(STEP_FLAGS_N == 15 && STEP_FLAGS_ALL == (1u << 15) - 1, "a StepFlag per row");

/* ---- parsing --------------------------------------------------------------------------------- */

StepOptions step_options_defaults(void)
{
    return (StepOptions){.strategy = strategy_defaults(STRATEGY_NONE), .planner = PLANNER_DP,
                         .offload_opts = OFFLOAD_DEFAULTS(OFFLOAD_ALL), .accumulate = 1};
}

FlagSet step_options_flags(StepOptions *o, unsigned accepted)
{
    return (FlagSet){.flags = FLAGS, .n = STEP_FLAGS_N, .opts = o, .accepted = accepted, .given = o ? &o->given : NULL};
}

StepScope step_options_scope(const StepOptions *o)
{
    return (StepScope){.strategies = 1u << o->strategy.kind, .offloads = o->offload};
}

RematStatus step_options_check(const StepOptions *o, StepScope scope)
{
    const FlagSet set = step_options_flags((StepOptions *)o, STEP_FLAGS_ALL);
    if (flags_check(&set, &scope) != REMAT_OK) return REMAT_EINVAL;
    const bool budget = o->strategy.kind == STRATEGY_BUDGET;
    if (budget && !o->memory_budget)
        return remat_fail(REMAT_EINVAL, "--strategy budget needs --memory-budget (e.g. 300MiB)");
    const RegionReplay *replay = &o->strategy.replay;
    if (budget && o->planner == PLANNER_REVOLVE && (!replay->preserve_rng || replay->determinism_check))
        return remat_fail(REMAT_EINVAL, "--planner revolve always replays the generator and has no determinism "
                          "check; --no-rng-replay and --determinism-check are for regions (dp, chen or the other "
                          "strategies)");
    if (budget && o->offload)
        return remat_fail(REMAT_EINVAL, "--strategy budget plans for activations in RAM; it does not combine with "
                          "--offload");
    return REMAT_OK;
}
