/*
 * offload_bench.c — bench_offload_probe: what offload costs and saves, measured.
 *
 * For the MLP chain (N=32, W=2048, B=256) and the GPT (L=4, D=256, H=4, T=128, B=8,
 * dropout 0.1), both with AdamW, it times whole training steps (forward, backward,
 * optimizer) under each configuration and prints the median step time, the peak of
 * resident activations (ACT) and the peak of DISK:
 *
 *   none              everything in RAM
 *   offload           offload all, no prefetch
 *   offload+prefetch  offload all, two records read ahead by the helper thread
 *   offload+sqrt      sqrt checkpointing with its segment inputs offloaded (boundary),
 *                     prefetch on
 *   ... (mmap)        offload+prefetch moving the bytes through a mapping instead of
 *                     pwritev/preadv
 *
 * each offload configuration once with the page cache kept and once with it dropped at
 * the end of every forward (backward then reads the disk), and says which ran. Besides
 * the median step time and the peaks, it prints the time spent inside pack (write) and
 * unpack (read, which includes waiting for a prefetch) per step. The configurations take
 * turns, one step each, round after round, so that a slow moment of the machine falls on
 * all of them alike; each figure is the median over the rounds. It also times pack and
 * unpack of one record alone, for sizes from 4 KiB to 4 MiB: the fixed cost per record
 * that the min_bytes threshold is about.
 *
 * It is a probe for offload/README.md, not a test: it asserts nothing about time. It will
 * move to bench/ and write the results schema there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flops.h"
#include "gpt.h"
#include "mlp.h"
#include "offload.h"
#include "ops.h"
#include "optim.h"
#include "platform.h"

typedef struct Options {
    int rounds; /* timed steps per configuration */
    const char *dir;
    bool quick;
} Options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: bench_offload_probe [--quick] [--rounds N] [--dir DIR]\n"
            "  Times training steps of the MLP chain (N=32, W=2048, B=256) and the GPT (L=4, D=256,\n"
            "  H=4, T=128, B=8) without offload, with offload, with offload and prefetch, and with\n"
            "  offload under sqrt checkpointing, with the page cache kept and dropped; prints the\n"
            "  median step time and the peaks of ACT and DISK, then the cost of one record.\n"
            "  --quick    3 rounds, and the small models of the tests (a few seconds)\n"
            "  --rounds N timed rounds, 1..1000 (default 7)\n"
            "  --dir DIR  where the spill file goes (default $TMPDIR, else /tmp)\n"
            "  --help     this text\n");
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- training steps under each configuration ------------------------------------------ */

typedef struct Config {
    const char *name;
    StrategyKind strategy;
    bool offload;
    OffloadPolicy policy;
    int prefetch;
    bool drop_cache;
    OffloadIo io;
} Config;

static const Config CONFIGS[] = {
    {"none", STRATEGY_NONE, false, OFFLOAD_ALL, 0, false, OFFLOAD_IO_SYSCALLS},
    {"offload", STRATEGY_NONE, true, OFFLOAD_ALL, 0, false, OFFLOAD_IO_SYSCALLS},
    {"offload+prefetch", STRATEGY_NONE, true, OFFLOAD_ALL, OFFLOAD_PREFETCH, false, OFFLOAD_IO_SYSCALLS},
    {"offload+sqrt", STRATEGY_SQRT, true, OFFLOAD_BOUNDARY, OFFLOAD_PREFETCH, false, OFFLOAD_IO_SYSCALLS},
    {"... (mmap)", STRATEGY_NONE, true, OFFLOAD_ALL, OFFLOAD_PREFETCH, false, OFFLOAD_IO_MMAP},
    {"offload", STRATEGY_NONE, true, OFFLOAD_ALL, 0, true, OFFLOAD_IO_SYSCALLS},
    {"offload+prefetch", STRATEGY_NONE, true, OFFLOAD_ALL, OFFLOAD_PREFETCH, true, OFFLOAD_IO_SYSCALLS},
    {"offload+sqrt", STRATEGY_SQRT, true, OFFLOAD_BOUNDARY, OFFLOAD_PREFETCH, true, OFFLOAD_IO_SYSCALLS},
    {"... (mmap)", STRATEGY_NONE, true, OFFLOAD_ALL, OFFLOAD_PREFETCH, true, OFFLOAD_IO_MMAP},
};
enum { N_CONFIGS = sizeof CONFIGS / sizeof CONFIGS[0] };

/* A configuration made ready to step: its plan and offloader, and what it measured. */
typedef struct Runner {
    const Config *config;
    Plan *plan;
    Offload *offload;
    double *seconds;   /* one per round */
    size_t peak_act, peak_disk;
} Runner;

/* One training step of `m` on (x, y) as the runner says; its time goes to seconds[round]. */
static RematStatus run_step(Runner *r, Model *m, Optimizer *opt, Var *x, Var *y, TrainCtx *ctx, int round)
{
    mem_reset_peaks();
    const double start = platform_seconds();
    optim_zero_grad(opt);
    flops_set_phase(PHASE_FORWARD);
    RematStatus status = r->offload ? offload_push(r->offload) : REMAT_OK;
    Var *loss = status == REMAT_OK ? model_loss_planned(m, r->plan, x, y, ctx) : NULL;
    if (r->offload && status == REMAT_OK) status = offload_pop(r->offload);
    if (status == REMAT_OK) status = loss ? backward(loss) : remat_last_status();
    if (status == REMAT_OK) status = optim_step(opt);
    var_free(loss);
    tape_reset(tape_current());
    if (round >= 0) r->seconds[round] = platform_seconds() - start;
    if (mem_peak(MEM_ACT) > r->peak_act) r->peak_act = mem_peak(MEM_ACT);
    if (mem_peak(MEM_DISK) > r->peak_disk) r->peak_disk = mem_peak(MEM_DISK);
    return status;
}

/* Every configuration on one model: a warm-up step each, then `rounds` rounds of one
 * step each, taking turns; prints one line per configuration. */
static RematStatus bench_model(const char *title, Model *m, Var *x, Var *y, const Options *o)
{
    OptimConfig adamw = optim_adamw_defaults(1e-4f);
    Optimizer *opt = optim_create(&adamw, m->params, m->n_params);
    Runner runners[N_CONFIGS] = {{0}};
    RematStatus status = opt ? REMAT_OK : remat_last_status();
    for (int c = 0; c < N_CONFIGS && status == REMAT_OK; c++) {
        Runner *r = &runners[c];
        r->config = &CONFIGS[c];
        Strategy s = strategy_defaults(r->config->strategy);
        r->plan = plan_create(&s, m->layers, m->n_layers);
        r->seconds = calloc((size_t)o->rounds, sizeof *r->seconds);
        if (r->config->offload) {
            OffloadOptions oo = offload_defaults(r->config->policy);
            oo.dir = o->dir;
            oo.prefetch = r->config->prefetch;
            oo.drop_cache = r->config->drop_cache;
            oo.io = r->config->io;
            r->offload = offload_create(&oo);
        }
        if (!r->plan || !r->seconds || (r->config->offload && !r->offload))
            status = r->seconds ? remat_last_status() : remat_fail(REMAT_ENOMEM, "bench_offload_probe: no memory");
    }
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 1, 2);
    for (int round = -1; round < o->rounds && status == REMAT_OK; round++)
        for (int c = 0; c < N_CONFIGS && status == REMAT_OK; c++)
            status = run_step(&runners[c], m, opt, x, y, &ctx, round);

    if (status == REMAT_OK) {
        printf("\n  %s\n  %-18s %-10s %12s %8s %10s %10s %12s %12s\n", title, "configuration", "page cache",
               "median step", "vs none", "peak ACT", "peak DISK", "write/step", "read/step");
        double none_s = 0.0;
        for (int c = 0; c < N_CONFIGS; c++) {
            Runner *r = &runners[c];
            qsort(r->seconds, (size_t)o->rounds, sizeof *r->seconds, compare_doubles);
            const double median = r->seconds[o->rounds / 2];
            if (c == 0) none_s = median;
            char act[32], disk[32];
            /* Time inside pack and unpack, per step (warm-up included). */
            const OffloadStats st = r->offload ? offload_stats(r->offload) : (OffloadStats){0};
            printf("  %-18s %-10s %9.1f ms %7.2fx %10s %10s %9.1f ms %9.1f ms\n", r->config->name,
                   !r->config->offload ? "-" : r->config->drop_cache ? "dropped" : "kept", 1e3 * median,
                   median / none_s, mem_format_bytes(act, sizeof act, r->peak_act),
                   mem_format_bytes(disk, sizeof disk, r->peak_disk), 1e3 * st.write_seconds / (o->rounds + 1),
                   1e3 * st.read_seconds / (o->rounds + 1));
        }
    }
    for (int c = 0; c < N_CONFIGS; c++) {
        offload_free(runners[c].offload);
        plan_free(runners[c].plan);
        free(runners[c].seconds);
    }
    optim_free(opt);
    return status;
}

/* ---- the cost of one record ------------------------------------------------------------- */

/* Pack and unpack of one record of `bytes`, alone, `reps` times: a relu on a leaf that
 * needs a gradient saves its output through the hooks, and saved_tensor reads it back.
 * The microseconds each took on average go to *pack_us and *unpack_us. */
static RematStatus time_record(Offload *off, size_t bytes, int reps, double *pack_us, double *unpack_us)
{
    Tensor *value = tensor_zeros(MEM_ACT, 1, (int[]){(int)(bytes / sizeof(float))});
    Var *x = value ? var_create(value, true, "x") : NULL;
    RematStatus status = x ? REMAT_OK : remat_last_status();
    const OffloadStats before = offload_stats(off);
    for (int rep = 0; rep < reps && status == REMAT_OK; rep++) {
        status = offload_push(off);
        Var *y = status == REMAT_OK ? op_relu(x, "probe") : NULL;
        if (status == REMAT_OK) status = offload_pop(off);
        Tensor *back = y ? saved_tensor(y->creator, 0) : NULL;
        if (!back) status = remat_last_status();
        tensor_free(back);
        var_free(y);
        tape_reset(tape_current());
    }
    var_free(x);
    const OffloadStats after = offload_stats(off);
    *pack_us = 1e6 * (after.write_seconds - before.write_seconds) / reps;
    *unpack_us = 1e6 * (after.read_seconds - before.read_seconds) / reps;
    return status;
}

/* The cost of one record of each size from 4 KiB to 4 MiB, through both ways of moving
 * bytes, with the page cache kept and no prefetch: what the min_bytes threshold is about. */
static RematStatus bench_record_sizes(const Options *o)
{
    enum { REPS = 64 };
    Offload *off[2] = {NULL, NULL};
    RematStatus status = REMAT_OK;
    for (int io = OFFLOAD_IO_SYSCALLS; io <= OFFLOAD_IO_MMAP && status == REMAT_OK; io++) {
        OffloadOptions oo = offload_defaults(OFFLOAD_ALL);
        oo.dir = o->dir;
        oo.io = (OffloadIo)io;
        oo.min_bytes = 0;
        oo.prefetch = 0;
        off[io] = offload_create(&oo);
        double pack_us, unpack_us; /* one record first, unmeasured: the file grows to its size */
        status = off[io] ? time_record(off[io], (size_t)4 << 20, 1, &pack_us, &unpack_us) : remat_last_status();
    }
    printf("\n  one record alone, page cache kept, no prefetch: pack + unpack (pack, unpack)\n  %10s %30s %30s\n",
           "size", "pwritev/preadv", "mmap");
    for (size_t bytes = 4096; bytes <= ((size_t)4 << 20) && status == REMAT_OK; bytes *= 4) {
        char size[32];
        printf("  %10s", mem_format_bytes(size, sizeof size, bytes));
        for (int io = OFFLOAD_IO_SYSCALLS; io <= OFFLOAD_IO_MMAP && status == REMAT_OK; io++) {
            double pack_us, unpack_us;
            status = time_record(off[io], bytes, REPS, &pack_us, &unpack_us);
            printf(" %9.1f us (%6.1f, %6.1f)", pack_us + unpack_us, pack_us, unpack_us);
        }
        printf("\n");
    }
    offload_free(off[0]);
    offload_free(off[1]);
    return status;
}

static RematStatus bench_mlp(const Options *o)
{
    const int N = o->quick ? 8 : 32, W = o->quick ? 256 : 2048, B = o->quick ? 64 : 256;
    Model *m = mlp_create(&(MlpConfig){.n_layers = N, .width = W, .seed = 1});
    MlpTask *task = mlp_task_create(W, 2);
    Pcg32 data;
    pcg32_seed(&data, 3, 0);
    Var *x = NULL, *y = NULL;
    RematStatus status = m && task ? mlp_task_batch(task, &data, B, &x, &y) : remat_last_status();
    char title[96];
    snprintf(title, sizeof title, "MLP chain N=%d, W=%d, B=%d, AdamW", N, W, B);
    if (status == REMAT_OK) status = bench_model(title, m, x, y, o);
    var_free(x);
    var_free(y);
    mlp_task_free(task);
    model_free(m);
    return status;
}

static Var *random_tokens(int B, int T, Pcg32 *rng)
{
    Tensor *t = tensor_create_typed(MEM_ACT, DTYPE_I32, 2, (int[]){B, T});
    if (!t) return NULL;
    for (size_t i = 0; i < t->numel; i++) t->i32[i] = (int32_t)pcg32_bounded(rng, 256);
    return var_create(t, false, "tokens");
}

static RematStatus bench_gpt(const Options *o)
{
    const int L = 4, D = o->quick ? 64 : 256, H = 4, T = o->quick ? 64 : 128, B = o->quick ? 2 : 8;
    Model *m = gpt_create(&(GptConfig){.n_layers = L, .d_model = D, .n_heads = H, .seq_len = T,
                                       .vocab = 256, .dropout = 0.1f, .seed = 1});
    Pcg32 rng;
    pcg32_seed(&rng, 3, 4);
    Var *x = random_tokens(B, T, &rng), *y = random_tokens(B, T, &rng);
    char title[96];
    snprintf(title, sizeof title, "GPT L=%d, D=%d, H=%d, T=%d, B=%d, dropout 0.1, AdamW", L, D, H, T, B);
    RematStatus status = m && x && y ? bench_model(title, m, x, y, o) : remat_last_status();
    var_free(x);
    var_free(y);
    model_free(m);
    return status;
}

int main(int argc, char **argv)
{
    Options o = {.rounds = 7};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            o.quick = true;
            o.rounds = 3;
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            o.rounds = atoi(argv[++i]);
            if (o.rounds < 1 || o.rounds > 1000) {
                fprintf(stderr, "bench_offload_probe: --rounds must be 1..1000\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
            o.dir = argv[++i];
        } else {
            usage(strcmp(argv[i], "--help") ? stderr : stdout);
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    PlatformInfo info = platform_info();
    printf("bench_offload_probe: %d threads, OpenBLAS %s (%s)\n", info.threads, info.blas_threading, info.blas_core);
    RematStatus status = bench_mlp(&o);
    if (status == REMAT_OK) status = bench_gpt(&o);
    if (status == REMAT_OK) status = bench_record_sizes(&o);
    if (status != REMAT_OK) {
        fprintf(stderr, "bench_offload_probe: %s\n", remat_last_error());
        return 1;
    }
    return 0;
}
