/*
 * step_options.c — the table of a step's checkpointing, offload and data-parallel flags
 * and the checks between them (see step_options.h); base/flags.c parses them and prints
 * their help.
 */
#include "app/step_options.h"

#include "parallel/pipeline.h"
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

/* ---- when each flag applies ------------------------------------------------------------- */

/* What a run is, as the table's `needs` column reads it (FlagSet.traits): the strategies
 * it may use (bit k: StrategyKind k), whether it offloads, whether its offload policy spills
 * saves that are not region inputs (all, large) and whether it has several ranks. */
enum {
    STRATEGY_BITS = 0xff,
    REGIONS = STRATEGY_BITS & ~(1u << STRATEGY_NONE), /* every strategy but none makes regions */
    OFFLOADS = 1u << 8,
    SPILLS_ANY_SAVE = 1u << 9,
    SEVERAL_RANKS = 1u << 10,
    PIPELINED = 1u << 11,
};

/* Why a flag changes nothing in a run without its traits: the end of "--x does not apply: ...". */
static const char NO_REGIONS[] = "it changes how checkpoint regions replay, and --strategy none has none";
static const char NO_OFFLOAD[] = "it says how --offload spills, and --offload was not given";

/* --no-rng-replay, given regions: a replay restores the generator that drew the masks. */
static const char *with_replayed_masks(const void *opts, const void *run)
{
    (void)opts;
    return ((const StepScope *)run)->counter_masks
               ? "--dropout-rng counter makes each mask again from its counters, so a replay has "
                 "no generator to restore and the flag would change no bit"
               : NULL;
}

/* ---- the table ------------------------------------------------------------------------------ */

#define AT(field) offsetof(StepOptions, field)
/* In the order of StepFlag: row k is bit k. */
static const Flag FLAGS[] = {
    {.name = "--strategy", .type = FLAG_NAME, .offset = AT(strategy.kind), .names = &STRATEGY_NAMES, .value = "S",
     .heading = "checkpointing",
     .help = "none, full (every layer a region), sqrt (segments of about\n"
             "sqrt(N) layers), selective (every layer, with a policy), dtr\n"
             "(no plan: evict and recompute to stay in --memory-budget) or\n"
             "budget (the cheapest schedule that fits --memory-budget) (none)"},
    {.name = "--memory-budget", .type = FLAG_SIZE, .offset = AT(memory_budget), .value = "S",
     .help = "bytes the run may hold in all (params, grads, optimizer,\n"
             "activations), with a unit: B, KiB, MiB or GiB; the ledger\n"
             "refuses to go past it under every strategy, and budget plans\n"
             "the cheapest schedule that fits it"},
    {.name = "--planner", .type = FLAG_NAME, .offset = AT(planner), .names = &PLANNER_NAMES, .value = "P",
     .needs = 1u << STRATEGY_BUDGET, .unneeded = "it is for --strategy budget",
     .help = "budget: dp (the exact optimum over single-level schedules,\n"
             "default), chen (Chen et al. 2016's search), revolve\n"
             "(binomial schedules for identical layers: tighter budgets,\n"
             "layers recomputed more than once) or ops (dp choosing, per\n"
             "layer, which ops' outputs to keep); the schedule is printed\n"
             "before training"},
    {.name = "--policy", .type = FLAG_CUSTOM, .set = set_policy, .value = "P",
     .needs = 1u << STRATEGY_SELECTIVE, .unneeded = "it is the policy of --strategy selective",
     .help = "selective's policy: attention_core (default), dots or\nnothing_saveable"},
    {.name = "--no-rng-replay", .type = FLAG_SWITCH_OFF, .offset = AT(strategy.replay.preserve_rng),
     .needs = REGIONS, .unneeded = NO_REGIONS, .applies = with_replayed_masks,
     .help = "replay regions without restoring the generator: dropout\n"
             "draws new masks and gradients come out wrong (quiz question 7)"},
    {.name = "--determinism-check", .type = FLAG_SWITCH, .offset = AT(strategy.replay.determinism_check),
     .needs = REGIONS, .unneeded = NO_REGIONS, .help = "check that every replay reproduced its first forward"},
    {.name = "--offload", .type = FLAG_CUSTOM, .set = set_offload, .value = "P", .needs = REGIONS | SPILLS_ANY_SAVE,
     .unneeded = "boundary spills the inputs checkpoint regions keep, and --strategy none has no regions "
                 "(all or large spill every saved activation)",
     .heading = "offload (saved activations written to a spill file on disk, read back in backward)",
     .help = "all (every saved activation of 64 KiB or more), large (1 MiB\n"
             "or more) or boundary (the inputs checkpoint regions keep)"},
    {.name = "--offload-dir", .type = FLAG_TEXT, .offset = AT(offload_opts.dir), .value = "DIR",
     .needs = OFFLOADS, .unneeded = NO_OFFLOAD, .help = "where the spill file goes ($TMPDIR, else /tmp)"},
    {.name = "--offload-no-cache", .type = FLAG_SWITCH, .offset = AT(offload_opts.drop_cache),
     .needs = OFFLOADS, .unneeded = NO_OFFLOAD, .excludes = STEP_FLAG_OFFLOAD_DIRECT,
     .excluded = "with --offload-direct the page cache never holds the records",
     .help = "drop spilled records from the page cache: backward reads the\n"
             "disk. A step whose offload fails is redone without offload"},
    {.name = "--offload-mmap", .type = FLAG_CONST, .offset = AT(offload_opts.io), .lo = OFFLOAD_IO_MMAP,
     .needs = OFFLOADS, .unneeded = NO_OFFLOAD,
     .help = "move the bytes through a MAP_SHARED mapping of the spill file\n"
             "instead of pwritev/preadv (slower here: docs/MEASUREMENTS.md 8.7)"},
    {.name = "--offload-direct", .type = FLAG_CONST, .offset = AT(offload_opts.io), .lo = OFFLOAD_IO_DIRECT,
     .needs = OFFLOADS, .unneeded = NO_OFFLOAD, .excludes = STEP_FLAG_OFFLOAD_MMAP,
     .excluded = "the bytes move through a mapping (--offload-mmap); choose one",
     .help = "move the bytes with O_DIRECT, around the page cache: backward\n"
             "reads the disk (a file system without direct I/O is an error)"},
    /* A window of bytes instead of a count of records: the count set so that it never limits. */
    {.name = "--offload-read-ahead", .type = FLAG_SIZE, .offset = AT(offload_opts.prefetch_bytes), .value = "S",
     .lo = OFFLOAD_ANY_COUNT, .count = AT(offload_opts.prefetch), .needs = OFFLOADS, .unneeded = NO_OFFLOAD,
     .help = "in backward, read ahead up to S of records (a unit: B, KiB,\n"
             "MiB or GiB; the next record whatever its size) instead of\n"
             "two records, each counted in ACT from when its read is queued"},
    {.name = "--offload-write-behind", .type = FLAG_SIZE, .offset = AT(offload_opts.write_behind_bytes), .value = "S",
     .lo = OFFLOAD_ANY_COUNT, .count = AT(offload_opts.write_behind), .needs = OFFLOADS, .unneeded = NO_OFFLOAD,
     .excludes = STEP_FLAG_OFFLOAD_MMAP, .excluded = "through a mapping (--offload-mmap) pack writes before it returns",
     .help = "let up to S of records be written behind the forward instead\n"
             "of two records (16 MiB ahead and 8 MiB behind kept the GPT's\n"
             "step at its bound: docs/MEASUREMENTS.md 8.2)"},
    {.name = "--accumulate", .type = FLAG_INT, .offset = AT(accumulate), .value = "K", .lo = 1, .hi = 65536,
     .heading = "data parallelism (mpirun -np K build/app/train ...: one micro-batch per rank)",
     .help = "K micro-batches of --batch each per optimizer step, their\n"
             "gradients summed in micro-batch order: bit-identical to\n"
             "mpirun -np K with one micro-batch per rank (1)"},
    {.name = "--zero", .type = FLAG_INT, .offset = AT(zero_stage), .value = "S", .lo = 0, .hi = ZERO_MAX_STAGE,
     .needs = SEVERAL_RANKS,
     .unneeded = "it says what the ranks of mpirun shard, and this is one process, which shards nothing "
                 "(mpirun -np K build/app/train ... runs K ranks; --predict-only --ranks K predicts them)",
     .help = "under mpirun, what the ranks shard: 0 nothing, 1 the optimizer\n"
             "state, 2 also the gradients, 3 also the parameters, gathered\n"
             "per layer when used (0); refused in one process but with\n"
             "--predict-only --ranks K"},
    {.name = "--pipeline-stages", .type = FLAG_INT, .offset = AT(pipeline_stages), .value = "P", .lo = 2, .hi = 4096,
     .needs = SEVERAL_RANKS, .heading = "pipeline parallelism (mpirun -np P build/app/train --pipeline-stages P ...)",
     .unneeded = "a pipeline's stages are the ranks of mpirun, and this is one process",
     .help = "the GPT's blocks cut into P stages, one per rank"},
    {.name = "--micro-batches", .type = FLAG_INT, .offset = AT(micro_batches), .value = "M", .lo = 1, .hi = 4096,
     .needs = PIPELINED, .unneeded = "it says how a pipeline cuts its step, and --pipeline-stages was not given",
     .help = "M micro-batches of --batch a step, as --accumulate M (1)"},
    {.name = "--pipeline-schedule", .type = FLAG_NAME, .offset = AT(pipeline_schedule), .names = &PIPE_SCHEDULE_NAMES,
     .value = "S", .needs = PIPELINED, .unneeded = "it is the pipeline's, and --pipeline-stages was not given",
     .help = "gpipe (all forwards, then all backwards) or 1f1b (one forward, one\nbackward, the default)"},
};
#undef AT
enum { STEP_FLAGS_N = sizeof FLAGS / sizeof FLAGS[0] };
_Static_assert(STEP_FLAGS_N == 18 && STEP_FLAGS_ALL == (1u << 18) - 1, "a StepFlag per row");

/* ---- parsing --------------------------------------------------------------------------------- */

StepOptions step_options_defaults(void)
{
    return (StepOptions){.strategy = strategy_defaults(STRATEGY_NONE), .planner = PLANNER_DP,
                         .offload_opts = OFFLOAD_DEFAULTS(OFFLOAD_ALL), .accumulate = 1,
                         .micro_batches = 1, .pipeline_schedule = PIPE_1F1B};
}

FlagSet step_options_flags(StepOptions *o, unsigned accepted)
{
    return (FlagSet){.flags = FLAGS, .n = STEP_FLAGS_N, .opts = o, .accepted = accepted, .given = o ? &o->given : NULL};
}

RematStatus step_options_check(const StepOptions *o, StepScope more)
{
    FlagSet set = step_options_flags((StepOptions *)o, STEP_FLAGS_ALL);
    set.traits = ((1u << o->strategy.kind | more.strategies) & STRATEGY_BITS) |
                 (o->offload || more.offloads ? OFFLOADS : 0) |
                 (o->offload_opts.policy != OFFLOAD_BOUNDARY ? SPILLS_ANY_SAVE : 0) |
                 (more.several_ranks ? SEVERAL_RANKS : 0) | (o->pipeline_stages ? PIPELINED : 0);
    if (flags_check(&set, &more) != REMAT_OK) return REMAT_EINVAL;
    const bool budget = o->strategy.kind == STRATEGY_BUDGET, dtr = o->strategy.kind == STRATEGY_DTR;
    if ((budget || dtr) && !o->memory_budget)
        return remat_fail(REMAT_EINVAL, "--strategy %s needs --memory-budget (e.g. 300MiB)", budget ? "budget" : "dtr");
    if (dtr && (o->offload || more.several_ranks))
        return remat_fail(REMAT_EINVAL, "--strategy dtr evicts activations from RAM in one process; it does not "
                          "combine with %s", o->offload ? "--offload" : "mpirun's ranks");
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
