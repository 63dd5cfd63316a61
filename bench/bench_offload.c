/*
 * bench_offload.c — quiz question 6: offloading saved activations to disk, alone and
 * combined with recomputation, and what it costs.
 *
 * The MLP chain and the GPT, with AdamW, run whole training steps under each
 * configuration of CONFIGS, taking turns one step each, round after round
 * (bench/timing.h). offload+sqrt spills sqrt's segment inputs (policy boundary) without
 * prefetch: a record read ahead would sit in RAM through a whole replay, which is what
 * spilling them avoids. Each configuration that uses the page cache runs once with it kept
 * and once with it dropped after every forward, so that backward reads the disk; quick
 * mode runs only what quiz question 6 quotes. Each step is set against its overlap bound,
 * from the in-RAM step's forward and backward and the disk's bandwidth (measured here first).
 * Last, pack and unpack of one record alone, 4 KiB to 4 MiB, both ways of moving bytes
 * taking turns: the fixed cost per record that offload's min_bytes is about
 * (offload/README.md).
 *
 * What it is not: a test. It asserts nothing about time; tests/test_bench.c checks the
 * bytes of a --quick run.
 */
#define _GNU_SOURCE /* O_DIRECT */

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "base/platform.h"
#include "bench/measure.h"
#include "autograd/ops.h"

static const BenchInfo INFO = {
    .name = "bench_offload",
    .question = "quiz question 6: offloading activations to disk frees resident memory, and combines "
                "with recomputation",
    .about = "  The MLP chain and the GPT under none, sqrt and offload's configurations: step time, peak\n"
             "  ACT and DISK, time in pack and unpack, each step against its overlap bound from the disk's\n"
             "  bandwidth (measured first, O_DIRECT), where it waited; then one record of 4 KiB to 4 MiB.",
    .quick = "the configurations quiz question 6 quotes; MLP N=16 W=256 B=64, GPT L=4 D=128\n"
             "                      H=4 T=64 B=4; rounds until +-5 points or 3.5 s (MLP), 0.5 s (GPT)",
    .full = "MLP N=32 W=2048 B=256, GPT L=4 D=256 H=4 T=128 B=8, 7 timed rounds after a warm-up round",
    .timed = true,
    .step_flags = STEP_FLAG_OFFLOAD_DIR,
    .offloads = true,
};

/* The windows rows (full mode only) read up to 16 MiB ahead and write up to 8 MiB behind: a
 * GPT layer spills about 22 MiB, an MLP block 4 MiB. */
enum { WARMUP_ROUNDS = 1, WINDOW_AHEAD = 16 << 20, WINDOW_BEHIND = 8 << 20 };
enum { DISK_WRITE, DISK_READ }; /* the disk's two ways, measured first */

/* ---- the configurations ----------------------------------------------------------------- */

typedef struct Config {
    const char *name;
    StrategyKind strategy;
    bool offload;
    OffloadPolicy policy;
    int prefetch;
    bool drop_cache;
    OffloadIo io;
    bool quick; /* timed in quick mode too: what quiz question 6 quotes, and sqrt with offload */
    bool windows;   /* read ahead and write behind by windows of bytes (Setup), not of records */
    int io_threads; /* 0: the default, one */
} Config;

/* sqrt: sqrt(N) checkpointing in RAM; offload: every saved activation spilled (policy all);
 * prefetch: two records read ahead by the helper thread; mmap: the bytes through a
 * mapping instead of pwritev/preadv; direct: O_DIRECT, no page cache; windows: up to 16
 * MiB read ahead and 8 MiB written behind rather than two records, on one and two threads.
 * Unnamed fields are 0: policy all, no prefetch, pwritev, the page cache kept. */
static const Config CONFIGS[] = {
    {"none", STRATEGY_NONE, .quick = true},
    {"sqrt", STRATEGY_SQRT, .quick = true},
    {"offload", STRATEGY_NONE, .offload = true},
    {"offload+prefetch", STRATEGY_NONE, .offload = true, .prefetch = OFFLOAD_PREFETCH, .quick = true},
    {"offload+sqrt", STRATEGY_SQRT, .offload = true, .policy = OFFLOAD_BOUNDARY, .quick = true},
    {"offload+prefetch (mmap)", STRATEGY_NONE, .offload = true, .prefetch = OFFLOAD_PREFETCH, .io = OFFLOAD_IO_MMAP},
    {"offload", STRATEGY_NONE, .offload = true, .drop_cache = true},
    {"offload+prefetch", STRATEGY_NONE, .offload = true, .prefetch = OFFLOAD_PREFETCH, .drop_cache = true,
     .quick = true},
    {"offload+sqrt", STRATEGY_SQRT, .offload = true, .policy = OFFLOAD_BOUNDARY, .drop_cache = true},
    {"offload+prefetch (mmap)", STRATEGY_NONE, .offload = true, .prefetch = OFFLOAD_PREFETCH, .drop_cache = true,
     .io = OFFLOAD_IO_MMAP},
    {"offload+prefetch (direct)", STRATEGY_NONE, .offload = true, .prefetch = OFFLOAD_PREFETCH,
     .io = OFFLOAD_IO_DIRECT},
    {"offload+windows (direct)", STRATEGY_NONE, .offload = true, .prefetch = OFFLOAD_ANY_COUNT,
     .io = OFFLOAD_IO_DIRECT, .windows = true, .io_threads = 1},
    {"+windows, 2 thr (direct)", STRATEGY_NONE, .offload = true, .prefetch = OFFLOAD_ANY_COUNT,
     .io = OFFLOAD_IO_DIRECT, .windows = true, .io_threads = 2},
};
enum { N_CONFIGS = sizeof CONFIGS / sizeof CONFIGS[0] };

static const char *const IO_NAMES[] = {[OFFLOAD_IO_SYSCALLS] = "pwritev", [OFFLOAD_IO_MMAP] = "mmap",
                                       [OFFLOAD_IO_DIRECT] = "direct"};

typedef struct Setup {
    const Config *configs[N_CONFIGS]; /* what runs: every configuration, or in quick mode the quick ones */
    int n_configs;
    const char *dir;    /* where the spill file goes: --offload-dir, else $TMPDIR, else /tmp */
    const Estimate *disk; /* the spill directory's disk, bytes per second [DISK_WRITE], [DISK_READ];
                             NULL if it could not be measured */
    TimingPlan mlp_plan, gpt_plan; /* the steps' rounds, per model */
    TimingPlan records; /* pack + unpack of one record, per size, the two ways interleaved */
} Setup;

/* Configuration c made ready to step on model m, as variant *v: its schedule and its
 * offloader (NULL without offload), which the caller frees. */
static RematStatus config_create(const Config *c, const Model *m, const Setup *setup, Variant *v)
{
    const Strategy s = strategy_defaults(c->strategy);
    *v = (Variant){.name = c->name, .schedule = schedule_for_strategy(&s, m->n_layers)};
    if (!v->schedule || !c->offload) return v->schedule ? REMAT_OK : remat_last_status();
    OffloadOptions oo = OFFLOAD_DEFAULTS(c->policy);
    oo.dir = setup->dir;
    oo.prefetch = c->prefetch;
    oo.drop_cache = c->drop_cache;
    oo.io = c->io;
    if (c->windows) {
        oo.prefetch_bytes = WINDOW_AHEAD;
        oo.write_behind = OFFLOAD_ANY_COUNT;
        oo.write_behind_bytes = WINDOW_BEHIND;
    }
    if (c->io_threads) oo.io_threads = c->io_threads;
    v->offload = offload_create(&oo);
    return v->offload ? REMAT_OK : remat_last_status();
}

/* ---- training steps under each configuration ------------------------------------------- */

/* One record of the steps table: a configuration's step on one model (its last, `step`).
 * The offload fields are left out of a step in RAM, cached_after_forward out of one that
 * keeps the page cache, the bound's out of a run that could not measure the disk. */
typedef struct StepRow {
    const char *model;
    int layers;
    const char *config, *strategy;
    bool offloads, cache_dropped;
    const char *policy;
    int prefetch;
    const char *io, *page_cache;
    StepStats step;
    size_t records_per_step, disk_written_per_step;
    double flop_overhead;
    Estimate step_seconds, time_overhead, write_seconds, read_seconds;
    size_t cached_after_forward;
    Estimate forward_seconds, backward_seconds, bound_seconds, vs_bound;
    size_t prefetch_bytes, write_behind_bytes;
    int io_threads;
    Estimate read_wait_seconds;
    double reads_waited;
    Estimate thread_read_seconds, thread_read_bandwidth, thread_write_seconds, thread_write_bandwidth;
    Estimate thread_cpu_seconds;
    /* printed only: the bound's terms (the in-RAM twin's forward F and backward B, the disk's
     * time W and R for the bytes spilled) */
    Estimate twin_forward, twin_backward;
    double disk_write, disk_read;
} StepRow;

/* Printed as three tables: the steps (0), each offload step against its overlap bound (1),
 * where each offload step waited and what its helper threads did (2). */
static const ResultsColumn STEP_COLUMNS[] = {
    COLUMN(StepRow, model, STR, ""), COLUMN(StepRow, layers, INT, "layers"),
    COLUMN(StepRow, config, STR, "", SHOW_IN(7u, "configuration", "", 24, 0)), COLUMN(StepRow, strategy, STR, ""),
    COLUMN(StepRow, policy, STR, "", WHEN(StepRow, offloads)),
    COLUMN(StepRow, prefetch, INT, "records", WHEN(StepRow, offloads)),
    COLUMN(StepRow, io, STR, "", WHEN(StepRow, offloads)),
    COLUMN(StepRow, page_cache, STR, "", WHEN(StepRow, offloads), SHOW_IN(7u, "cache", "", 8, 0)),
    COLUMN_AS("peak_act", StepRow, step.peak[MEM_ACT], SIZE, "bytes", SHOW("peak ACT", "MiB", 9, 2)),
    COLUMN_AS("peak_disk", StepRow, step.peak[MEM_DISK], SIZE, "bytes", SHOW("peak DISK", "MiB", 9, 2)),
    COLUMN_AS("act_stored", StepRow, step.act_stored, SIZE, "bytes"),
    COLUMN_AS("peak_resident", StepRow, step.peak_resident, SIZE, "bytes"),
    COLUMN(StepRow, records_per_step, SIZE, "records", WHEN(StepRow, offloads)),
    COLUMN(StepRow, disk_written_per_step, SIZE, "bytes", WHEN(StepRow, offloads)),
    COLUMN_AS("recompute_flops", StepRow, step.flops[PHASE_RECOMPUTE], U64, "FLOPs"),
    COLUMN(StepRow, flop_overhead, DOUBLE, "ratio", SHOW("FLOPs+", "%", 6, 1)),
    COLUMN_TIMED(StepRow, step_seconds, "seconds", SHOW("median step", "ms", 24, 1)),
    COLUMN_TIMED(StepRow, time_overhead, "ratio", SHOW("vs none (95% interval, rounds)", "+%", 27, 1)),
    COLUMN_TIMED(StepRow, write_seconds, "seconds per step, inside pack", WHEN(StepRow, offloads),
                 SHOW("write/step", "ms", 18, 1)),
    COLUMN_TIMED(StepRow, read_seconds, "seconds per step, inside unpack", WHEN(StepRow, offloads),
                 SHOW("read/step", "ms", 18, 1)),
    COLUMN(StepRow, cached_after_forward, SIZE, "bytes", WHEN(StepRow, cache_dropped)),
    COLUMN_TIMED(StepRow, forward_seconds, "seconds"), COLUMN_TIMED(StepRow, backward_seconds, "seconds"),
    COLUMN_PRINTED(StepRow, twin_forward, ESTIMATE, SHOW_IN(2u, "F", "ms", 18, 1)),
    COLUMN_PRINTED(StepRow, disk_write, DOUBLE, SHOW_IN(2u, "W", "ms", 8, 1)),
    COLUMN_PRINTED(StepRow, twin_backward, ESTIMATE, SHOW_IN(2u, "B", "ms", 18, 1)),
    COLUMN_PRINTED(StepRow, disk_read, DOUBLE, SHOW_IN(2u, "R", "ms", 8, 1)),
    COLUMN_TIMED(StepRow, bound_seconds, "seconds", SHOW_IN(2u, "bound", "ms", 18, 1)),
    COLUMN_TIMED(StepRow, vs_bound, "ratio", SHOW_IN(2u, "step vs bound (95% interval, rounds)", "+%", 27, 1)),
    COLUMN(StepRow, prefetch_bytes, SIZE, "bytes", WHEN(StepRow, offloads)),
    COLUMN(StepRow, write_behind_bytes, SIZE, "bytes", WHEN(StepRow, offloads)),
    COLUMN(StepRow, io_threads, INT, "threads", WHEN(StepRow, offloads)),
    COLUMN_TIMED(StepRow, read_wait_seconds, "seconds per step, unpack blocked on reads ahead", WHEN(StepRow, offloads),
                 SHOW_IN(4u, "wait", "ms", 18, 1)),
    COLUMN(StepRow, reads_waited, DOUBLE, "records per step (median)", WHEN(StepRow, offloads),
           SHOW_IN(4u, "waited", "records", 7, 0)),
    COLUMN_PRINTED(StepRow, step.io.records_read, SIZE, SHOW_IN(4u, "of read", "records", 7, 0)),
    COLUMN_TIMED(StepRow, thread_read_seconds, "seconds per step, helper threads reading", WHEN(StepRow, offloads),
                 SHOW_IN(4u, "reading", "ms", 18, 1)),
    COLUMN_TIMED(StepRow, thread_read_bandwidth, "bytes per second", WHEN(StepRow, offloads),
                 SHOW_IN(4u, "at", "GB/s", 18, 2)),
    COLUMN_TIMED(StepRow, thread_write_seconds, "seconds per step, helper threads writing", WHEN(StepRow, offloads),
                 SHOW_IN(4u, "writing", "ms", 18, 1)),
    COLUMN_TIMED(StepRow, thread_write_bandwidth, "bytes per second", WHEN(StepRow, offloads),
                 SHOW_IN(4u, "at", "GB/s", 18, 2)),
    COLUMN_TIMED(StepRow, thread_cpu_seconds, "seconds per step, helper threads' CPU", WHEN(StepRow, offloads),
                 SHOW_IN(4u, "CPU", "ms", 18, 1)),
    COLUMN_SAMPLES,
};

/* Offload configuration i against its overlap bound, per round: its in-RAM twin's
 * forward F, backward B and the rest of its step (zeroing, optimizer) O of the same round,
 * and the disk's time W to write and R to read the bytes spilled per step (at the median
 * bandwidths: the records' samples are the rounds, not the disk's), give the best a step
 * that hides its I/O can do, max(F, W) + max(B, R) + O: the bound and the step over it,
 * each the median over the rounds, with its interval. */
static void bound_of(StepRow *row, const Estimate *disk, const Timing *t, int i, int twin)
{
    const int n = t->rounds;
    const double w = (double)row->disk_written_per_step / disk[DISK_WRITE].value;
    const double r = (double)row->disk_written_per_step / disk[DISK_READ].value;
    double bound[BENCH_MAX_STEPS], ratio[BENCH_MAX_STEPS];
    for (int k = 0; k < n; k++) {
        const double *in_ram = &t->values[((size_t)k * t->variants + twin) * t->quantities];
        const double f = in_ram[STEP_FORWARD_SECONDS], b = in_ram[STEP_BACKWARD_SECONDS];
        bound[k] = fmax(f, w) + fmax(b, r) + (in_ram[STEP_SECONDS] - f - b);
        ratio[k] = t->values[((size_t)k * t->variants + i) * t->quantities + STEP_SECONDS] / bound[k];
    }
    row->bound_seconds = estimate_median(bound, n);
    row->vs_bound = estimate_median(ratio, n);
    row->disk_write = w;
    row->disk_read = r;
}

/* Configuration i's row; the times come from `timing`, whose variant 0 is none, and
 * `rounds` steps ran in all (warm-up included). */
static StepRow step_row(const char *model, int layers, const Variant *v, const StepStats *s, const Setup *setup,
                        const Timing *timing, int i, int rounds)
{
    const Config *c = setup->configs[i];
    const OffloadStats o = v->offload ? offload_stats(v->offload) : (OffloadStats){0};
    StepRow row = {
        .model = model, .layers = layers, .config = c->name, .strategy = name_of(&STRATEGY_NAMES, c->strategy),
        .offloads = c->offload, .cache_dropped = c->offload && (c->drop_cache || c->io == OFFLOAD_IO_DIRECT),
        .policy = name_of(&OFFLOAD_POLICY_NAMES, c->policy), .prefetch = c->prefetch, .io = IO_NAMES[c->io],
        .page_cache = !c->offload ? "-" : c->io == OFFLOAD_IO_DIRECT ? "unused" : c->drop_cache ? "dropped" : "kept",
        .step = *s, .records_per_step = o.records_written / (size_t)rounds,
        .disk_written_per_step = o.bytes_written / (size_t)rounds, .flop_overhead = flop_overhead(s),
        .step_seconds = timing_median(timing, i, STEP_SECONDS),
        .time_overhead = timing_ratio(timing, i, 0, STEP_SECONDS),
        .write_seconds = timing_median(timing, i, STEP_WRITE_SECONDS),
        .read_seconds = timing_median(timing, i, STEP_READ_SECONDS), .cached_after_forward = o.cached_after_forward,
        .forward_seconds = timing_median(timing, i, STEP_FORWARD_SECONDS),
        .backward_seconds = timing_median(timing, i, STEP_BACKWARD_SECONDS)};
    if (!c->offload) return row;
    int twin = 0; /* the in-RAM configuration that computes what this one does: none or sqrt, which always run */
    while (setup->configs[twin]->offload || setup->configs[twin]->strategy != c->strategy) twin++;
    row.twin_forward = timing_median(timing, twin, STEP_FORWARD_SECONDS);
    row.twin_backward = timing_median(timing, twin, STEP_BACKWARD_SECONDS);
    if (setup->disk) bound_of(&row, setup->disk, timing, i, twin);
    /* Where its steps waited and what its helper threads did, per step: the medians over the rounds. */
    row.prefetch_bytes = c->windows ? WINDOW_AHEAD : 0;
    row.write_behind_bytes = c->windows ? WINDOW_BEHIND : 0;
    row.io_threads = c->io_threads ? c->io_threads : OFFLOAD_IO_THREADS;
    row.read_wait_seconds = timing_median(timing, i, STEP_READ_WAIT_SECONDS);
    row.reads_waited = timing_median(timing, i, STEP_READS_WAITED).value;
    row.thread_read_seconds = timing_median(timing, i, STEP_THREAD_READ_SECONDS);
    row.thread_write_seconds = timing_median(timing, i, STEP_THREAD_WRITE_SECONDS);
    row.thread_cpu_seconds = timing_median(timing, i, STEP_THREAD_CPU_SECONDS);
    row.thread_read_bandwidth = estimate_rate((double)s->io.thread_read_bytes, &row.thread_read_seconds);
    row.thread_write_bandwidth = estimate_rate((double)s->io.thread_write_bytes, &row.thread_write_seconds);
    return row;
}

/* The printed tables after the first, of the offload rows. */
static void print_offload_tables(const Setup *setup, const StepRow *rows, int n, ResultsTable *table)
{
    for (int panel = setup->disk ? 1 : 2; panel < 3; panel++) { /* no bound without the disk's bandwidth */
        if (panel == 1)
            printf("\n  against the overlap bound max(F, W) + max(B, R) + the rest of the in-RAM step: F and B its\n"
                   "  forward and backward, W and R the disk's time for the bytes spilled per step\n");
        else
            printf("\n  where the time went, per step (medians over the rounds): unpack blocked on reads ahead, on\n"
                   "  how many of the records read back; the helper threads' busy time and achieved bandwidth each\n"
                   "  way (summed over the threads), and their CPU time\n");
        results_print_head(table, panel);
        for (int c = 0; c < n; c++)
            if (rows[c].offloads) results_print_row(table, &rows[c], panel);
    }
}

/* Every configuration that runs on one model, alternately; prints its tables and records
 * its rows. */
static RematStatus measure_model(const char *model, const char *title, ModelBench *g, const Setup *setup,
                                 Progress *progress, ResultsTable *table)
{
    const TimingPlan *plan = strcmp(model, "gpt") ? &setup->mlp_plan : &setup->gpt_plan;
    const int n_configs = setup->n_configs;
    Variant variants[N_CONFIGS] = {{0}};
    RematStatus status = REMAT_OK;
    for (int c = 0; c < n_configs && status == REMAT_OK; c++)
        status = config_create(setup->configs[c], g->model, setup, &variants[c]);
    StepStats stats[N_CONFIGS];
    TrainCtx ctx = bench_ctx(1, 2);
    Timing timing = {0};
    if (status == REMAT_OK)
        status = steps_alternate(g, variants, n_configs, NULL, &ctx, plan, progress, model, stats, &timing);
    if (status == REMAT_OK) {
        progress_end(progress);
        printf("\n  %s\n", title);
        results_print_head(table, 0);
        StepRow rows[N_CONFIGS];
        for (int c = 0; c < n_configs; c++) {
            rows[c] = step_row(model, g->model->n_layers, &variants[c], &stats[c], setup, &timing, c,
                               plan->warmup + timing.rounds);
            results_add_row(table, &rows[c]);
        }
        print_offload_tables(setup, rows, n_configs, table);
    }
    timing_free(&timing);
    for (int c = 0; c < n_configs; c++) {
        offload_free(variants[c].offload);
        schedule_free(variants[c].schedule);
    }
    return status;
}

/* ---- the cost of one record ------------------------------------------------------------- */

/* One record of one size through both ways of moving bytes: what a timed run needs. */
typedef struct RecordRun {
    Offload *off[2]; /* [OffloadIo] */
    Var *x;          /* a leaf of the record's size that needs a gradient */
} RecordRun;

enum { RECORD_PACK, RECORD_UNPACK, RECORD_QUANTITIES };

/* Pack and unpack of one record, alone, through the way `io`: a relu on a leaf that needs
 * a gradient saves its output through the hooks, and saved_tensor reads it back. The
 * seconds each took go to values[RECORD_PACK] and values[RECORD_UNPACK]. */
static RematStatus time_record(void *ctx, int io, double *values)
{
    RecordRun *run = ctx;
    Offload *off = run->off[io];
    const OffloadStats before = offload_stats(off);
    RematStatus status = offload_push(off);
    Var *y = status == REMAT_OK ? op_relu(run->x, "record") : NULL;
    if (status == REMAT_OK) status = offload_pop(off);
    Tensor *back = y ? saved_tensor(y->creator, 0) : NULL;
    if (!back && status == REMAT_OK) status = remat_last_status();
    tensor_free(back);
    var_free(y);
    tape_reset();
    const OffloadStats after = offload_stats(off);
    values[RECORD_PACK] = after.write_seconds - before.write_seconds;
    values[RECORD_UNPACK] = after.read_seconds - before.read_seconds;
    return status;
}

/* Times one size through both ways, interleaved as `plan` says, into `timing`. */
static RematStatus time_record_size(RecordRun *run, size_t bytes, const TimingPlan *plan, Timing *timing)
{
    Tensor *value = tensor_zeros(MEM_ACT, 1, (int[]){(int)(bytes / sizeof(float))});
    run->x = value ? var_create(value, true, "x") : NULL;
    RematStatus status = run->x ? REMAT_OK : remat_last_status();
    if (status == REMAT_OK) status = timing_run(plan, 2, RECORD_QUANTITIES, time_record, run, NULL, NULL, timing);
    var_free(run->x);
    run->x = NULL;
    return status;
}

typedef struct RecordRow {
    const char *io;
    size_t bytes;
    Estimate pack_seconds, unpack_seconds;
    double both; /* printed only: pack + unpack, the medians' sum */
} RecordRow;

static const ResultsColumn RECORD_COLUMNS[] = {
    COLUMN(RecordRow, io, STR, "", SHOW("way", "", 7, 0)),
    COLUMN(RecordRow, bytes, SIZE, "bytes", SHOW("size", "KiB", 8, 0)),
    COLUMN_PRINTED(RecordRow, both, DOUBLE, SHOW("pack + unpack", "us", 13, 1)),
    COLUMN_TIMED(RecordRow, pack_seconds, "seconds per record", SHOW("pack", "us", 24, 1)),
    COLUMN_TIMED(RecordRow, unpack_seconds, "seconds per record", SHOW("unpack", "us", 24, 1)), COLUMN_SAMPLES,
};

enum { RECORD_MIN = 4096, RECORD_MAX = 4 << 20, RECORD_SIZES = 6 };

/* One record of each size from 4 KiB to 4 MiB, through both ways of moving bytes, with the
 * page cache kept and no prefetch. */
static RematStatus measure_records(const Setup *setup, Progress *progress, ResultsTable *table)
{
    RecordRun run = {0};
    RematStatus status = REMAT_OK;
    for (int io = OFFLOAD_IO_SYSCALLS; io <= OFFLOAD_IO_MMAP && status == REMAT_OK; io++) {
        OffloadOptions oo = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
        oo.dir = setup->dir;
        oo.io = (OffloadIo)io;
        oo.min_bytes = 0;
        oo.prefetch = 0;
        run.off[io] = offload_create(&oo);
        if (!run.off[io]) status = remat_last_status();
    }
    /* One record of the largest size first, unmeasured: the file grows to its size. */
    const TimingPlan grow = timing_plan_fixed(0, 1);
    Timing timing = {0};
    if (status == REMAT_OK) status = time_record_size(&run, RECORD_MAX, &grow, &timing);
    timing_free(&timing);
    RecordRow rows[RECORD_SIZES][2];
    for (int i = 0; i < RECORD_SIZES && status == REMAT_OK; i++) {
        const size_t bytes = (size_t)RECORD_MIN << (2 * i);
        status = time_record_size(&run, bytes, &setup->records, &timing);
        for (int io = OFFLOAD_IO_SYSCALLS; io <= OFFLOAD_IO_MMAP && status == REMAT_OK; io++) {
            RecordRow *r = &rows[i][io];
            *r = (RecordRow){.io = IO_NAMES[io], .bytes = bytes,
                             .pack_seconds = timing_median(&timing, io, RECORD_PACK),
                             .unpack_seconds = timing_median(&timing, io, RECORD_UNPACK)};
            r->both = r->pack_seconds.value + r->unpack_seconds.value;
        }
        timing_free(&timing);
        progress_tick(progress, "one record");
    }
    offload_free(run.off[0]);
    offload_free(run.off[1]);
    if (status != REMAT_OK) return status;
    progress_end(progress);
    printf("\n  one record alone, page cache kept, no prefetch, the two ways interleaved, medians of %d\n",
           setup->records.max_rounds);
    results_print_head(table, 0);
    for (int i = 0; i < RECORD_SIZES; i++)
        for (int io = OFFLOAD_IO_SYSCALLS; io <= OFFLOAD_IO_MMAP; io++) results_add_row(table, &rows[i][io]);
    return REMAT_OK;
}

/* ---- the disk --------------------------------------------------------------------------- */

/* The sequential write and read bandwidth of the spill directory's file system, which bounds
 * what offload can hide. A file is made there without a name (O_TMPFILE, or unlinked at
 * once) and set to O_DIRECT on the descriptor that made it, so every byte goes to the device
 * and none stays in the page cache; it is written and read whole, in blocks of DISK_BLOCK
 * from one page-aligned buffer (not zeros: a virtual disk may store zeros for free), the
 * writes and the reads interleaved as bench/timing.h interleaves any two variants, after a
 * warm-up round that writes the file once, so that the timed writes overwrite blocks the
 * file already has. The bandwidth is the file's bytes over the median run, with the interval
 * of that median. It is not a disk benchmark for other uses (one pattern, one queue depth,
 * no fsync: the bytes are on the device as far as the kernel knows, as offload's are), nor a
 * measure of the page cache: a file system that refuses O_DIRECT is an error, not a figure. */

enum { DISK_ALIGN = 4096, DISK_BLOCK = 4 << 20 }; /* a page: at least the devices' logical block */

/* What one timed run of the disk needs: the file, its size, the buffer. */
typedef struct DiskRun {
    int fd;
    size_t file_bytes;
    unsigned char *block; /* page-aligned, DISK_BLOCK bytes */
    const char *dir;
} DiskRun;

/* Writes (variant DISK_WRITE) or reads the whole file, block by block; values[0] gets the
 * seconds it took. */
static RematStatus disk_run(void *ctx, int variant, double *values)
{
    DiskRun *d = ctx;
    const double t0 = platform_seconds();
    for (size_t at = 0; at < d->file_bytes; at += DISK_BLOCK) {
        const ssize_t n = variant == DISK_WRITE ? pwrite(d->fd, d->block, DISK_BLOCK, (off_t)at)
                                                : pread(d->fd, d->block, DISK_BLOCK, (off_t)at);
        if (n != DISK_BLOCK)
            return remat_fail(REMAT_EIO, "disk: cannot %s %d bytes at byte %zu of a file in %s: %s",
                              variant == DISK_WRITE ? "write" : "read", DISK_BLOCK, at, d->dir,
                              n < 0 ? strerror(errno) : "short transfer");
    }
    values[0] = platform_seconds() - t0;
    return REMAT_OK;
}

/* Opens a new, nameless file in `dir` for O_DIRECT into *fd: base/file.h's new file (O_TMPFILE
 * where the file system has it, else mkstemp's, unlinked at once), then O_DIRECT set on that
 * same descriptor, so that no name is ever opened again (something else could be there by
 * then). On error returns the status; *fd is then -1, or the descriptor for the caller to close. */
static RematStatus open_direct(const char *dir, int *fd)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/remat-disk-XXXXXX", dir);
    bool named;
    *fd = file_create_new(dir, path, true, &named);
    if (named) unlink(path);
    if (*fd < 0) return remat_fail(REMAT_EIO, "disk: cannot create a file in %s: %s", dir, strerror(errno));
    const int flags = fcntl(*fd, F_GETFL);
    if (flags == -1 || fcntl(*fd, F_SETFL, flags | O_DIRECT) != 0)
        return remat_fail(REMAT_EIO, "disk: the file system of %s refuses O_DIRECT (%s): its bandwidth cannot be "
                          "measured past the page cache", dir, strerror(errno));
    return REMAT_OK;
}

/* The disk's bandwidth in bytes per second, bw[DISK_WRITE] and bw[DISK_READ], from runs of
 * a file of `file_bytes` in `dir` as `plan` says. On error returns the status naming the
 * cause, with nothing left behind. */
static RematStatus disk_measure(const char *dir, size_t file_bytes, const TimingPlan *plan, Estimate bw[2])
{
    DiskRun d = {.fd = -1, .file_bytes = file_bytes, .dir = dir};
    if (posix_memalign((void **)&d.block, DISK_ALIGN, DISK_BLOCK) != 0)
        return remat_fail(REMAT_ENOMEM, "disk: no memory for a %d-byte block", DISK_BLOCK);
    Pcg32 rng; /* random bytes: a disk cannot store them for free */
    pcg32_seed(&rng, 1, 1);
    for (size_t i = 0; i < DISK_BLOCK; i++) d.block[i] = (unsigned char)pcg32_next(&rng);
    RematStatus status = open_direct(dir, &d.fd);
    const int err = status == REMAT_OK ? posix_fallocate(d.fd, 0, (off_t)file_bytes) : 0;
    if (err)
        status = remat_fail(REMAT_EIO, "disk: cannot make a %zu-byte file in %s: %s", file_bytes, dir, strerror(err));
    Timing timing = {0};
    if (status == REMAT_OK) status = timing_run(plan, 2, 1, disk_run, &d, NULL, NULL, &timing);
    for (int way = DISK_WRITE; way <= DISK_READ && status == REMAT_OK; way++) {
        const Estimate seconds = timing_median(&timing, way, 0);
        bw[way] = estimate_rate((double)file_bytes, &seconds);
    }
    timing_free(&timing);
    if (d.fd >= 0) close(d.fd);
    free(d.block);
    return status;
}

typedef struct DiskRow {
    const char *direction;
    size_t file_bytes, block_bytes;
    Estimate bandwidth;
} DiskRow;

static const ResultsColumn DISK_COLUMNS[] = {
    COLUMN(DiskRow, direction, STR, "", SHOW("", "", 5, 0)), COLUMN(DiskRow, file_bytes, SIZE, "bytes"),
    COLUMN(DiskRow, block_bytes, SIZE, "bytes"),
    COLUMN_TIMED(DiskRow, bandwidth, "bytes per second", SHOW("bandwidth (95% interval)", "GB/s", 0, 2)),
    COLUMN_SAMPLES,
};

/* The spill directory's disk into disk[] and the `disk` table. false, saying why, if it
 * cannot be measured: the bench goes on without the bound. */
static bool measure_disk(const Setup *setup, bool quick, ResultsTable *table, Estimate disk[2])
{
    const size_t file_bytes = quick ? (size_t)32 << 20 : (size_t)256 << 20;
    const TimingPlan plan = timing_plan_fixed(1, quick ? 6 : 9);
    if (disk_measure(setup->dir, file_bytes, &plan, disk) != REMAT_OK) {
        printf("  %s\n  (no overlap bound without the disk's bandwidth)\n", remat_last_error());
        return false;
    }
    char file[32], block[32];
    printf("  the disk under the spill directory, O_DIRECT, %s in blocks of %s, medians of %d:\n",
           mem_format_bytes(file, sizeof file, file_bytes), mem_format_bytes(block, sizeof block, DISK_BLOCK),
           disk[DISK_WRITE].samples);
    results_print_head(table, 0);
    results_add_row(table, &(DiskRow){"write", file_bytes, DISK_BLOCK, disk[DISK_WRITE]});
    results_add_row(table, &(DiskRow){"read", file_bytes, DISK_BLOCK, disk[DISK_READ]});
    printf("\n");
    return true;
}

/* ---- the run ---------------------------------------------------------------------------- */

/* The run's config: the models, the spill directory and the plans. */
static void record_config(Results *results, const Setup *setup, const MlpShape *mlp, const GptShape *gpt)
{
    static const char *const KEYS[] = {"window_ahead", "window_behind", "mlp_layers", "mlp_width", "mlp_batch",
                                       "gpt_layers", "gpt_d_model", "gpt_heads", "gpt_seq", "gpt_batch", "gpt_dropout"};
    const double values[] = {WINDOW_AHEAD, WINDOW_BEHIND, mlp->N, mlp->W, mlp->B,
                             gpt->L, gpt->C, gpt->H, gpt->T, gpt->B, round((double)gpt->dropout * 1e6) / 1e6};
    for (int i = 0; i < RESULTS_COUNT(KEYS); i++) results_config_num(results, KEYS[i], values[i]);
    results_config_str(results, "optimizer", "adamw");
    results_config_str(results, "offload_dir", setup->dir);
    results_config_num(results, "min_bytes", (double)OFFLOAD_MIN_BYTES);
    results_config_plan(results, &setup->mlp_plan); /* the MLP chain's; the GPT's differs in its cap */
    results_config_num(results, "gpt_cap_seconds", setup->gpt_plan.cap_seconds);
    results_config_num(results, "record_rounds", setup->records.max_rounds);
}

/* The steps of the MLP chain, then of the GPT, under every configuration. */
static RematStatus measure_models(const Setup *setup, const MlpShape *mlp, const GptShape *gpt, Progress *progress,
                                  ResultsTable *steps)
{
    const OptimConfig adamw = optim_adamw_defaults(1e-4f);
    char title[128], shape[64];
    ModelBench g;
    RematStatus status = mlp_bench_create(&g, mlp, NULL, &adamw);
    snprintf(title, sizeof title, "MLP chain N=%d W=%d B=%d, AdamW", mlp->N, mlp->W, mlp->B);
    if (status == REMAT_OK) status = measure_model("mlp", title, &g, setup, progress, steps);
    model_bench_free(&g);
    if (status == REMAT_OK) status = gpt_bench_create(&g, gpt, &adamw);
    snprintf(title, sizeof title, "GPT %s, AdamW", gpt_shape_str(shape, sizeof shape, gpt));
    if (status == REMAT_OK) status = measure_model("gpt", title, &g, setup, progress, steps);
    model_bench_free(&g);
    return status;
}

static RematStatus run_bench(const BenchOptions *o, Results *results)
{
    const char *dir = o->step.offload_opts.dir, *tmpdir = getenv("TMPDIR");
    Setup setup = {.dir = dir ? dir : tmpdir && tmpdir[0] ? tmpdir : "/tmp"}; /* as offload_create chooses */

    const MlpShape mlp = o->quick ? (MlpShape){.N = 16, .W = 256, .B = 64} : (MlpShape){.N = 32, .W = 2048, .B = 256};
    const GptShape gpt = o->quick ? (GptShape){.L = 4, .C = 128, .H = 4, .T = 64, .B = 4, .dropout = 0.1f}
                                  : (GptShape){.L = 4, .C = 256, .H = 4, .T = 128, .B = 8, .dropout = 0.1f};
    /* Quick mode spends most of its time cap on the MLP chain, whose times the quiz quotes,
     * and times only the configurations the quiz quotes: an interval narrows as one over the
     * square root of the rounds, and with all eleven configurations 24 to 26 rounds fitted
     * in 3.5 s, leaving the disk-reading figure's interval about 12% of its value on a quiet
     * machine, wider than the quiz quotes (quiz/README.md). The GPT's are not quoted in
     * quick mode: it runs the fewest rounds that give an interval. */
    setup.mlp_plan = bench_timing_plan(o, NULL, WARMUP_ROUNDS, 7, 3.5);
    setup.gpt_plan = bench_timing_plan(o, NULL, WARMUP_ROUNDS, 7, 0.5);
    setup.records = timing_plan_fixed(1, o->quick ? 8 : 64);
    for (int c = 0; c < N_CONFIGS; c++)
        if (!o->quick || CONFIGS[c].quick) setup.configs[setup.n_configs++] = &CONFIGS[c];
    record_config(results, &setup, &mlp, &gpt);
    ResultsTable *steps = RESULTS_TABLE(results, "steps", "one AdamW training step per model and configuration",
                                        STEP_COLUMNS);
    ResultsTable *records = RESULTS_TABLE(results, "records", "pack and unpack of one record alone", RECORD_COLUMNS);
    ResultsTable *disk_table = RESULTS_TABLE(results, "disk", "the spill directory's disk, sequential, O_DIRECT",
                                             DISK_COLUMNS);
    Estimate disk[2];
    if (measure_disk(&setup, o->quick, disk_table, disk)) setup.disk = disk;

    Progress progress;
    progress_begin(&progress, stdout, timing_max_runs(&setup.mlp_plan, setup.n_configs) +
                                          timing_max_runs(&setup.gpt_plan, setup.n_configs) + RECORD_SIZES);
    RematStatus status = measure_models(&setup, &mlp, &gpt, &progress, steps);
    if (status == REMAT_OK) status = measure_records(&setup, &progress, records);
    progress_end(&progress);
    if (status == REMAT_OK)
        printf("\n  (cache: the page cache kept, or each record dropped from it once written and once read,\n"
               "  so that backward reads the disk; FLOPs+: recompute FLOP overhead; write and read: time\n"
               "  inside pack and unpack)\n");
    return status;
}

int main(int argc, char **argv) { return bench_main(&INFO, argc, argv, run_bench); }
