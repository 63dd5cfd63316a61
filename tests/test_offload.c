/*
 * test_offload.c — activation offload to disk, shown by the ledgers and by the kernel.
 *
 * With offload (alone, or under any checkpoint strategy) losses and gradients are those of
 * none, to the bit; on the MLP chain the peak of resident activations no longer grows
 * with depth, while DISK holds exactly what none kept in RAM; the process's resident size
 * really drops; every fault — a missing or unwritable directory, a full disk, a corrupted
 * or truncated record — is a clear error that leaves the training state as it was, and the
 * training loop then carries on without offload. CRC-32C is checked against its published
 * values.
 */
#define _GNU_SOURCE /* mincore, O_TMPFILE */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <unistd.h>

#include "offload/crc32c.h"
#include "tests/fixture_train.h"
#include "models/gpt.h"
#include "models/mlp.h"
#include "offload/offload.h"
#include "autograd/optim.h"
#include "checkpoint/schedule.h"
#include "app/train.h"

static char spill_dir[] = "/tmp/remat_offload_XXXXXX";

static int group_setup(void **state)
{
    (void)state;
    return mkdtemp(spill_dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    /* The spill files were unlinked as soon as they were made: the directory is empty. */
    if (rmdir(spill_dir) != 0) return -1;
    return mem_live_blocks() == 0 ? 0 : -1;
}

/* Offload everything saved, to the test's directory: min_bytes 0, so that even the tiny
 * models below send every activation (a LayerNorm's mean and rstd included) to disk. */
static OffloadOptions everything(OffloadPolicy policy)
{
    OffloadOptions o = OFFLOAD_DEFAULTS(policy);
    o.min_bytes = 0;
    o.dir = spill_dir;
    return o;
}

/* ---- CRC-32C --------------------------------------------------------------------------- */

static void test_crc32c_matches_published_check_values(void **state)
{
    (void)state;
    /* The CRC catalogue's check value, and RFC 3720 (iSCSI), appendix B.4. */
    unsigned char zeros[32] = {0}, ones[32], up[32], down[32];
    for (int i = 0; i < 32; i++) ones[i] = 0xFF, up[i] = (unsigned char)i, down[i] = (unsigned char)(31 - i);
    const struct { const void *data; size_t n; uint32_t crc; } vectors[] = {
        {"123456789", 9, 0xE3069283u}, {zeros, 32, 0x8A9136AAu}, {ones, 32, 0x62A8AB43u},
        {up, 32, 0x46DD794Eu}, {down, 32, 0x113FDB5Cu}, {"", 0, 0u},
    };
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        assert_int_equal(crc32c(vectors[i].data, vectors[i].n), vectors[i].crc);
        assert_int_equal(crc32c_ref(vectors[i].data, vectors[i].n), vectors[i].crc);
    }
}

static void test_crc32c_fast_path_matches_the_reference(void **state)
{
    (void)state;
    enum { N = (1 << 17) + 13 };
    unsigned char *buf = malloc(N + 8);
    assert_non_null(buf);
    Pcg32 rng;
    pcg32_seed(&rng, 5, 5);
    for (size_t i = 0; i < N + 8; i++) buf[i] = (unsigned char)pcg32_next(&rng);
    /* Every length up to 40 at every alignment (the 8-byte loop's head and tail); lengths
     * around the fast path's rounds of three 8 KiB streams, and across several of them
     * (rounds joined, then the 8-byte loop, then single bytes); a long buffer. */
    for (int offset = 0; offset < 8; offset++)
        for (size_t n = 0; n <= 40; n++) assert_int_equal(crc32c(buf + offset, n), crc32c_ref(buf + offset, n));
    const size_t round = 3 * 8192;
    const size_t around[] = {round - 1, round, round + 1, round + 9, 2 * round, 2 * round + 7, 5 * round + 4099};
    for (size_t i = 0; i < sizeof around / sizeof around[0]; i++)
        assert_int_equal(crc32c(buf + 5, around[i]), crc32c_ref(buf + 5, around[i]));
    assert_int_equal(crc32c(buf + 3, N), crc32c_ref(buf + 3, N));
    free(buf);
}

/* ---- policies --------------------------------------------------------------------------- */

static void test_policy_names_parse_and_print(void **state)
{
    (void)state;
    for (int p = OFFLOAD_ALL; p <= OFFLOAD_BOUNDARY; p++) {
        int parsed;
        assert_int_equal(name_parse(&OFFLOAD_POLICY_NAMES, name_of(&OFFLOAD_POLICY_NAMES, p), &parsed), REMAT_OK);
        assert_int_equal(parsed, p);
    }
    int parsed;
    assert_int_equal(name_parse(&OFFLOAD_POLICY_NAMES, "some", &parsed), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "'some' is not one of all, large, boundary"));
}

/* ---- a few training steps, with and without offload (fixture_train.h) ------------------ */

/* The models: an 8-block MLP chain, and a 3-block GPT with dropout 0.1 everywhere. */
static const Trainee MLP8 = {.kind = "mlp", .layers = 8, .width = 16}, GPT3 = {.kind = "gpt", .layers = 3, .width = 0},
                     GPT3_COUNTER = {.kind = "gpt", .layers = 3, .width = 0, .dropout_rng = DROPOUT_RNG_COUNTER},
                     GPT3_FUSED = {.kind = "gpt", .layers = 3, .dropout_rng = DROPOUT_RNG_COUNTER,
                                   .attention = ATTENTION_FUSED};

/* Trains under strategy `s`, offloading as `oo` says (NULL: in RAM); *stats gets what the
 * offloader did. */
static RematStatus train(const Trainee *t, const Strategy *s, const OffloadOptions *oo, Outcome *out,
                         OffloadStats *stats)
{
    Offload *off = oo ? offload_create(oo) : NULL;
    assert_true(!oo || off);
    const RematStatus status = fixture_train(t, &(Way){.strategy = s, .offload = off}, out);
    if (off && stats) *stats = offload_stats(off);
    offload_free(off);
    return status;
}

/* Every strategy, each with offload all and boundary, through both ways of moving bytes,
 * with and without the page cache, written behind the forward (the default) or in it,
 * against none without offload. */
static const char *io_name(OffloadIo io)
{
    return io == OFFLOAD_IO_MMAP ? "mmap" : io == OFFLOAD_IO_DIRECT ? "direct" : "syscalls";
}

static void check_offload_with_every_strategy(const Trainee *t)
{
    Outcome reference = {0};
    Strategy none = strategy_defaults(STRATEGY_NONE);
    assert_int_equal(train(t, &none, NULL, &reference, NULL), REMAT_OK);
    const Strategy strategies[] = {
        none,
        strategy_defaults(STRATEGY_FULL),
        strategy_defaults(STRATEGY_SQRT),
        {.kind = STRATEGY_SELECTIVE, .policy = &POLICY_ATTENTION_CORE, .replay.preserve_rng = true},
        {.kind = STRATEGY_SELECTIVE, .policy = &POLICY_DOTS_SAVEABLE, .replay.preserve_rng = true},
        {.kind = STRATEGY_SELECTIVE, .policy = &POLICY_NOTHING_SAVEABLE, .replay.preserve_rng = true},
    };
    enum { BEHIND = OFFLOAD_WRITE_BEHIND, WINDOW = 16 << 10 };
    /* window: read ahead and write behind as many records as 16 KiB of data holds (at
     * least one);
     * threads: helper threads moving the records (0: the default, one) */
    const struct {
        OffloadPolicy policy;
        OffloadIo io;
        bool drop_cache;
        int write_behind;
        size_t window;
        int threads;
    } variants[] = {
        {OFFLOAD_ALL, OFFLOAD_IO_SYSCALLS, false, BEHIND, 0, 0}, {OFFLOAD_BOUNDARY, OFFLOAD_IO_SYSCALLS, false, BEHIND, 0, 0},
        {OFFLOAD_ALL, OFFLOAD_IO_SYSCALLS, false, 0, 0, 0},      {OFFLOAD_ALL, OFFLOAD_IO_MMAP, false, BEHIND, 0, 0},
        {OFFLOAD_ALL, OFFLOAD_IO_SYSCALLS, true, BEHIND, 0, 0},  {OFFLOAD_ALL, OFFLOAD_IO_MMAP, true, BEHIND, 0, 0},
        {OFFLOAD_ALL, OFFLOAD_IO_DIRECT, false, BEHIND, 0, 0},   {OFFLOAD_ALL, OFFLOAD_IO_DIRECT, false, 0, 0, 0},
        {OFFLOAD_ALL, OFFLOAD_IO_DIRECT, false, BEHIND, WINDOW, 2}, {OFFLOAD_ALL, OFFLOAD_IO_SYSCALLS, true, BEHIND, WINDOW, 0},
        {OFFLOAD_ALL, OFFLOAD_IO_SYSCALLS, false, 4, 0, 3},
    };
    for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++) {
        for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
            const Strategy *s = &strategies[i];
            if (variants[v].policy == OFFLOAD_BOUNDARY && s->kind == STRATEGY_NONE) continue; /* nothing to take */
            OffloadOptions oo = everything(variants[v].policy);
            oo.io = variants[v].io;
            oo.drop_cache = variants[v].drop_cache;
            oo.write_behind = variants[v].write_behind;
            if (variants[v].window) { /* both ways by bytes, the counts left high */
                oo.prefetch = oo.write_behind = 1 << 20;
                oo.prefetch_bytes = oo.write_behind_bytes = variants[v].window;
            }
            oo.io_threads = variants[v].threads;
            Outcome o = {0};
            OffloadStats stats;
            char what[128];
            char threads[16] = "";
            if (oo.io_threads) snprintf(threads, sizeof threads, ", %d threads", oo.io_threads);
            snprintf(what, sizeof what, "%s, %s%s%s, offload %s by %s%s%s%s%s", t->kind,
                     name_of(&STRATEGY_NAMES, s->kind), s->policy ? " " : "", s->policy ? s->policy->name : "",
                     name_of(&OFFLOAD_POLICY_NAMES, oo.policy), io_name(oo.io),
                     oo.write_behind ? "" : ", in the forward", oo.drop_cache ? ", no page cache" : "",
                     oo.prefetch_bytes ? ", 16 KiB windows" : "", threads);
            assert_int_equal(train(t, s, &oo, &o, &stats), REMAT_OK);
            assert_same_outcome(&reference, &o, what);
            assert_true(stats.records_written > 0);
            assert_int_equal(stats.records_read, stats.records_written);
            printf("  %-72s %3zu records, identical to none\n", what, stats.records_written / FIXTURE_STEPS);
            outcome_free(&o);
        }
    }
    outcome_free(&reference);
}

static void test_offload_is_bit_identical_with_every_strategy_on_the_mlp(void **state)
{
    (void)state;
    check_offload_with_every_strategy(&MLP8);
}

static void test_offload_is_bit_identical_with_every_strategy_on_the_gpt_with_dropout(void **state)
{
    (void)state;
    check_offload_with_every_strategy(&GPT3);
}

/* Counter-based dropout keeps no mask, fused attention no (T,T) tensor: offload moves
 * the rest, and nothing changes. */
static void test_offload_is_bit_identical_with_every_strategy_with_counter_dropout(void **state)
{
    (void)state;
    check_offload_with_every_strategy(&GPT3_COUNTER);
    check_offload_with_every_strategy(&GPT3_FUSED);
}

/* ---- a chain in training ---------------------------------------------------------------- */

/* W = 256, B = 64: one activation is a = B·W·4 = 64 KiB, exactly the default min_bytes, so
 * the default options send every activation to disk and the threshold keeps nothing. */
enum { CHAIN_W = 256, CHAIN_B = 64 };
static const size_t CHAIN_A = (size_t)CHAIN_B * CHAIN_W * sizeof(float);

/* A small chain with AdamW that has taken one step (so its optimizer state is not zero),
 * and a snapshot of what a failed step must not touch. */
typedef struct Learner {
    Model *model;
    Optimizer *opt;
    MlpTask *teacher;
    Pcg32 data;
    TrainCtx ctx;
    Tensor *snapshot[3 * FIXTURE_MAX_PARAMS]; /* parameters, AdamW's m and v (MEM_WORK copies) */
} Learner;

enum { LEARNER_N = 4 };

static void learner_step(Learner *t, Offload *off, RematStatus expected)
{
    Var *x, *y;
    assert_int_equal(mlp_task_batch(t->teacher, &t->data, CHAIN_B, &x, &y), REMAT_OK);
    /* The one training step (models/step.h): its optimizer never runs after a failure. */
    const Step step = {.model = t->model, .optim = t->opt, .plugs = {step_offload_plug(off)}};
    StepResult result;
    assert_int_equal(step_run(&step, &(MicroBatch){x, y}, 1, &t->ctx, NULL, &result), expected);
    var_free(x);
    var_free(y);
}

static void learner_create(Learner *t)
{
    *t = (Learner){.model = mlp_create(&(MlpConfig){.n_layers = LEARNER_N, .width = CHAIN_W, .seed = 4}),
                   .teacher = mlp_task_create(CHAIN_W, 5), .ctx = {.training = true}};
    OptimConfig c = optim_adamw_defaults(1e-3f);
    t->opt = optim_create(&c, t->model->params, t->model->n_params);
    pcg32_seed(&t->data, 6, 0);
    learner_step(t, NULL, REMAT_OK);
}

static void learner_snapshot(Learner *t)
{
    for (int i = 0; i < t->model->n_params; i++) {
        Tensor *m, *v;
        optim_state(t->opt, i, &m, &v);
        t->snapshot[3 * i] = tensor_clone(t->model->params[i].var->value, MEM_WORK);
        t->snapshot[3 * i + 1] = tensor_clone(m, MEM_WORK);
        t->snapshot[3 * i + 2] = tensor_clone(v, MEM_WORK);
    }
}

/* Parameters and optimizer state are byte-identical to the snapshot, which is dropped. */
static void learner_assert_untouched(Learner *t)
{
    for (int i = 0; i < t->model->n_params; i++) {
        Tensor *now[3] = {t->model->params[i].var->value};
        optim_state(t->opt, i, &now[1], &now[2]);
        for (int j = 0; j < 3; j++) {
            Tensor *before = t->snapshot[3 * i + j];
            assert_memory_equal(before->data, now[j]->data, before->bytes);
            tensor_free(before);
        }
    }
    assert_int_equal(optim_steps(t->opt), 1);
}

static void learner_free(Learner *t)
{
    optim_free(t->opt);
    model_free(t->model);
    mlp_task_free(t->teacher);
}

/* The second step of a fresh trainee, without offload, as the parameters it leaves. */
static void assert_same_parameters(const Learner *a, const Learner *b)
{
    for (int i = 0; i < a->model->n_params; i++) {
        const Tensor *pa = a->model->params[i].var->value, *pb = b->model->params[i].var->value;
        assert_memory_equal(pa->data, pb->data, pa->bytes);
    }
}

/* ---- what each policy sends to disk ------------------------------------------------------ */

/* The contract of offload.h, restated: whether `o` spills tensor `t` saved by `node`. */
static bool contract_spills(const OffloadOptions *o, const Node *node, const Tensor *t)
{
    if (t->kind != MEM_ACT || t->bytes < o->min_bytes) return false;
    if (o->policy == OFFLOAD_BOUNDARY) return node->tag && !strcmp(node->tag, TAG_CHECKPOINT_INPUT);
    if (o->policy == OFFLOAD_LARGE)
        return t->bytes >= o->large_bytes ||
               (o->tag_prefix && node->tag && !strncmp(node->tag, o->tag_prefix, strlen(o->tag_prefix)));
    return true;
}

static void test_each_policy_spills_what_it_promises(void **state)
{
    (void)state;
    /* L = 4, T = 64, C = 64, H = 2, B = 2: activations of 32 KiB (B,T,C), 128 KiB (B,T,4C) and
     * 64 KiB (B,H,T,T), dropout masks of 16 KiB, LayerNorm statistics of 512 B. */
    Model *m = gpt_create(&(GptConfig){.n_layers = 4, .d_model = 64, .n_heads = 2, .seq_len = 64,
                                       .vocab = 256, .dropout = 0.1f, .seed = 3});
    Tensor *tokens = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){2, 64});
    Tensor *targets = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){2, 64});
    for (int i = 0; i < 128; i++) tokens->i32[i] = i * 7 % 256, targets->i32[i] = i * 11 % 256;
    Var *x = var_create(tokens, false, "tokens"), *y = var_create(targets, false, "targets");
    OffloadOptions defaults = OFFLOAD_DEFAULTS(OFFLOAD_ALL), tiny = everything(OFFLOAD_ALL);
    OffloadOptions large = OFFLOAD_DEFAULTS(OFFLOAD_LARGE), attn = OFFLOAD_DEFAULTS(OFFLOAD_LARGE);
    OffloadOptions boundary = everything(OFFLOAD_BOUNDARY);
    large.large_bytes = 128 << 10;
    attn.large_bytes = SIZE_MAX;
    attn.tag_prefix = "attn.";
    const struct { const char *what; OffloadOptions o; StrategyKind strategy; } cases[] = {
        {"all, default threshold", defaults, STRATEGY_NONE},
        {"all, no threshold", tiny, STRATEGY_NONE},
        {"large, >= 128 KiB", large, STRATEGY_NONE},
        {"large, tagged attn.*", attn, STRATEGY_NONE},
        {"boundary, sqrt, no thr.", boundary, STRATEGY_SQRT},
    };
    printf("  %-24s %8s %12s %6s\n", "policy", "records", "on disk", "kept");
    for (int c = 0; c < 5; c++) {
        OffloadOptions o = cases[c].o;
        o.dir = spill_dir;
        Strategy strategy = strategy_defaults(cases[c].strategy);
        Schedule *schedule = schedule_for_strategy(&strategy, m->n_layers);
        /* What the contract says, from the tape of a forward without offload. */
        TrainCtx ctx = {.training = true};
        Var *loss = model_loss_planned(m, schedule, x, y, &ctx);
        size_t want_records = 0, want_bytes = 0, saves = 0, params_saved = 0;
        const Tape *tape = tape_current();
        for (int k = 0; k < tape->count; k++) {
            const Node *node = tape->nodes[k];
            for (int i = 0; i < node->n_saved; i++) {
                const Tensor *t = node->saved[i].packed;
                saves++;
                params_saved += t->kind == MEM_PARAM;
                if (!contract_spills(&o, node, t)) continue;
                want_records++;
                want_bytes += t->bytes;
            }
        }
        var_free(loss);
        tape_reset();
        /* What the offloader did. */
        Offload *off = offload_create(&o);
        assert_non_null(off);
        assert_int_equal(offload_push(off), REMAT_OK);
        loss = model_loss_planned(m, schedule, x, y, &ctx);
        assert_int_equal(offload_pop(off), REMAT_OK);
        OffloadStats st = offload_stats(off);
        printf("  %-24s %8zu %12zu %6zu\n", cases[c].what, st.records_written, mem_current(MEM_DISK), st.kept);
        assert_int_equal(st.records_written, want_records);
        assert_int_equal(mem_current(MEM_DISK), want_bytes);
        assert_int_equal(st.kept + st.records_written, saves);
        assert_true(st.kept >= params_saved); /* a parameter is never spilled */
        var_free(loss);
        tape_reset();
        offload_free(off);
        schedule_free(schedule);
    }
    var_free(x);
    var_free(y);
    model_free(m);
}

/* The file's space is reused step after step, and prefetch reads every record ahead. */
static void test_the_spill_file_is_reused_and_every_record_is_prefetched(void **state)
{
    (void)state;
    for (int prefetch = 0; prefetch <= OFFLOAD_PREFETCH; prefetch += OFFLOAD_PREFETCH) {
        Learner t;
        learner_create(&t);
        OffloadOptions o = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
        o.dir = spill_dir;
        o.prefetch = prefetch;
        Offload *off = offload_create(&o);
        assert_non_null(off);
        size_t file_bytes = 0;
        for (int step = 0; step < 3; step++) {
            learner_step(&t, off, REMAT_OK);
            OffloadStats st = offload_stats(off);
            if (step == 0) file_bytes = st.file_bytes;
            assert_int_equal(st.file_bytes, file_bytes); /* it grew once, in the first step */
            assert_int_equal(st.live_records, 0);
            assert_int_equal(st.records_written, (size_t)(step + 1) * (2 * LEARNER_N + 2));
            assert_int_equal(st.records_read, st.records_written);
            assert_int_equal(st.prefetched, prefetch ? st.records_written : 0);
        }
        assert_int_equal(file_bytes, OFFLOAD_GROW_BYTES);
        offload_free(off);
        learner_free(&t);
    }
}

/* ---- memory on the MLP chain ------------------------------------------------------------- */

typedef struct ChainMeasure {
    size_t peak_act;   /* peak ACT of the step */
    size_t peak_disk;  /* peak DISK of the step */
    size_t saved_act;  /* bytes of activations the tape kept in RAM for backward, after the forward */
    OffloadStats io;   /* what the offloader did (zeros without offload) */
} ChainMeasure;

/* Bytes of MEM_ACT tensors the tape's nodes hold as plain references (not through hooks). */
static size_t saved_in_ram(const Tape *tape)
{
    size_t bytes = 0;
    for (int k = 0; k < tape->count; k++) {
        const Node *node = tape->nodes[k];
        for (int i = 0; i < node->n_saved; i++) {
            const SavedSlot *slot = &node->saved[i];
            const Tensor *t = slot->packed;
            if (slot->packed && !slot->hooks && t->kind == MEM_ACT) bytes += t->bytes;
        }
    }
    return bytes;
}

/* An N-block chain of width W with its teacher and one batch of B examples. */
typedef struct Chain {
    Model *model;
    MlpTask *teacher;
    Var *x, *y;
} Chain;

static Chain chain_create(int N, int W, int B)
{
    Chain c = {.model = mlp_create(&(MlpConfig){.n_layers = N, .width = W, .seed = 1}),
               .teacher = mlp_task_create(W, 2)};
    assert_true(c.model && c.teacher);
    Pcg32 data;
    pcg32_seed(&data, 3, 0);
    assert_int_equal(mlp_task_batch(c.teacher, &data, B, &c.x, &c.y), REMAT_OK);
    return c;
}

static void chain_free(Chain *c)
{
    var_free(c->x);
    var_free(c->y);
    mlp_task_free(c->teacher);
    model_free(c->model);
}

/* One forward and backward of an N-block chain under `kind`, offloading as `oo` says (NULL:
 * no offload). */
static ChainMeasure measure_chain(int N, StrategyKind kind, const OffloadOptions *oo)
{
    Chain c = chain_create(N, CHAIN_W, CHAIN_B);
    Model *m = c.model;
    Strategy s = strategy_defaults(kind);
    Schedule *schedule = schedule_for_strategy(&s, m->n_layers);
    Offload *off = oo ? offload_create(oo) : NULL;
    assert_true(!oo || off);
    TrainCtx ctx = {.training = true};
    mem_reset_peaks();
    assert_int_equal(!off || offload_push(off) == REMAT_OK, 1);
    Var *loss = model_loss_planned(m, schedule, c.x, c.y, &ctx);
    if (off) assert_int_equal(offload_pop(off), REMAT_OK);
    assert_non_null(loss);
    ChainMeasure r = {.saved_act = saved_in_ram(tape_current())};
    assert_int_equal(backward(loss), REMAT_OK);
    r.peak_act = mem_peak(MEM_ACT);
    r.peak_disk = mem_peak(MEM_DISK);
    var_free(loss);
    tape_reset();
    if (off) r.io = offload_stats(off);
    offload_free(off);
    schedule_free(schedule);
    chain_free(&c);
    return r;
}

/* Peak ACT of one step of the N-block chain, in units of one activation a (+ 8 bytes: the
 * loss and its seed gradient), with the default options (every activation is a ≥ min_bytes,
 * so the threshold keeps nothing in RAM). test_checkpoint.c derives the figures without
 * offload: none 2N + 4, full N + 6, sqrt s + 2k + 5 (k = ceil(sqrt N) blocks per segment,
 * s = ceil(N/k) segments).
 *
 *   offload all     6     2 (the batch x_0 and the targets: the caller holds them, so
 *                         spilling them frees nothing) + 4, one block's backward at its
 *                         relu: the gradient flowing into the block's input, the relu's
 *                         output gradient, the relu's output read back from disk, and the
 *                         gradient of the relu's input. Everything else is on disk.
 *   full, boundary  8     2 (the batch) + 1 (the current region's input, read back for its
 *                         replay) + 5, full's region at work (its output and input
 *                         gradients, the replayed relu output, and two gradients).
 *   sqrt, boundary  2k+7  2 (the batch) + 1 (the segment's input, read back) + 2 (its output
 *                         and input gradients) + 2k − 1 (its replayed blocks) + 3 gradients:
 *                         sqrt's s + 2k + 5 with the s − 1 stored boundaries gone but the
 *                         one being replayed — one segment's working set.
 *
 * None of these grows with N but sqrt's, as sqrt(N). Prefetching p records adds p: the
 * records read ahead get their tensors when their reads are queued, before backward asks
 * for them. DISK peaks at exactly the bytes of the activations none keeps in RAM: 2N + 2
 * (every block's input and relu output, and the loss's prediction and targets) for
 * offload all; the N region inputs for full, the s segment inputs for sqrt. */
static void test_offload_all_keeps_one_block_of_the_chain_whatever_its_depth(void **state)
{
    (void)state;
    enum { P = OFFLOAD_PREFETCH };
    const struct { const char *name; StrategyKind strategy; OffloadPolicy policy; int prefetch; } runs[] = {
        {"offload all", STRATEGY_NONE, OFFLOAD_ALL, 0},
        {"+ prefetch", STRATEGY_NONE, OFFLOAD_ALL, P},
        {"full+bound.", STRATEGY_FULL, OFFLOAD_BOUNDARY, 0},
        {"+ prefetch", STRATEGY_FULL, OFFLOAD_BOUNDARY, P},
        {"sqrt+bound.", STRATEGY_SQRT, OFFLOAD_BOUNDARY, 0},
        {"+ prefetch", STRATEGY_SQRT, OFFLOAD_BOUNDARY, P},
    };
    const size_t a = CHAIN_A;
    printf("  peak ACT (and DISK) of one step, in units of a = B·W·4 = %zu bytes (+8 B ACT)\n  %4s %10s", a, "N", "none");
    for (int i = 0; i < 6; i++) printf(" %14s", runs[i].name);
    printf("\n");
    const int depths[] = {16, 64};
    for (int d = 0; d < 2; d++) {
        const int N = depths[d], k = (int)ceil(sqrt((double)N)), s = (N + k - 1) / k;
        const ChainMeasure none = measure_chain(N, STRATEGY_NONE, NULL);
        assert_int_equal(none.peak_act, (size_t)(2 * N + 4) * a + 8);
        assert_int_equal(none.saved_act, (size_t)(2 * N + 2) * a);
        /* What each run's ACT and DISK peaks must be, in units of a. */
        const size_t want_act[6] = {6, 6 + P, 8, 8 + P, (size_t)(2 * k + 7), (size_t)(2 * k + 7 + P)};
        const size_t want_disk[6] = {(size_t)(2 * N + 2), (size_t)(2 * N + 2), (size_t)N, (size_t)N, (size_t)s, (size_t)s};
        printf("  %4d %4zu (%3zu)", N, (none.peak_act - 8) / a, none.peak_disk / a);
        for (int i = 0; i < 6; i++) {
            OffloadOptions o = OFFLOAD_DEFAULTS(runs[i].policy);
            o.dir = spill_dir;
            o.prefetch = runs[i].prefetch;
            const ChainMeasure m = measure_chain(N, runs[i].strategy, &o);
            printf(" %8zu (%3zu)", (m.peak_act - 8) / a, m.peak_disk / a);
            assert_int_equal(m.peak_act, want_act[i] * a + 8);
            assert_int_equal(m.peak_disk, want_disk[i] * a);
        }
        printf("\n");
        /* offload all's DISK is exactly what none kept in RAM for backward. */
        assert_int_equal(want_disk[0] * a, none.saved_act);
    }
}

/* A window of bytes: backward reads ahead the next records up to prefetch_bytes of data
 * between them (always the next one), or `prefetch` records, whichever is fewer, and the
 * peak rises by exactly those records: 6 + p units on the chain, as for a window of p
 * records (the test above). The helper thread moved every record, header and padding
 * included (a + one page each), in both directions, and says so. */
static void test_a_window_of_bytes_bounds_what_is_read_ahead(void **state)
{
    (void)state;
    enum { N = 16, RECORDS = 2 * N + 2 };
    const size_t a = CHAIN_A, span = CHAIN_A + 4096;
    const struct { int prefetch; size_t bytes; size_t ahead; } windows[] = {
        {1000, 3 * a, 3},         /* three records fill it exactly */
        {1000, 3 * a + a / 2, 3}, /* a fourth would not fit */
        {1000, a / 2, 1},         /* smaller than one record: the next one all the same */
        {2, 3 * a, 2},            /* the count is the tighter limit */
        {1000, 0, 1000},          /* no limit of bytes: every record, all of them at once */
    };
    for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++) {
        OffloadOptions o = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
        o.dir = spill_dir;
        o.io = w % 2 ? OFFLOAD_IO_DIRECT : OFFLOAD_IO_SYSCALLS;
        o.prefetch = windows[w].prefetch;
        o.prefetch_bytes = windows[w].bytes;
        o.io_threads = 1 + (int)(w / 2 % 2); /* one or two helper threads: the same figures */
        const ChainMeasure m = measure_chain(N, STRATEGY_NONE, &o);
        /* All 2N + 2 records at once when nothing limits the window: the whole DISK comes
         * back into ACT before backward frees any of it, beside the batch (2) and the
         * gradient of the loss's input (1). */
        const size_t want = windows[w].ahead >= RECORDS ? 3 + RECORDS : 6 + windows[w].ahead;
        printf("  prefetch %4d, %6zu KiB ahead, %-8s, %d thread%s: peak ACT %2zu a\n", o.prefetch,
               o.prefetch_bytes >> 10, io_name(o.io), o.io_threads, o.io_threads > 1 ? "s" : " ", (m.peak_act - 8) / a);
        assert_int_equal(m.peak_act, want * a + 8);
        assert_int_equal(m.io.records_read, RECORDS);
        /* A window of one record misses one: the loss, the last node, saved two tensors,
         * and its backward unpacks the one saved first before the one the window holds;
         * unpack reads it itself, and the window never reads it again. */
        const size_t ahead = windows[w].ahead == 1 ? RECORDS - 1 : RECORDS;
        assert_int_equal(m.io.prefetched, ahead);
        assert_int_equal(m.io.thread_read_bytes, ahead * span);
        assert_int_equal(m.io.thread_write_bytes, RECORDS * span);
        assert_true(m.io.reads_waited <= m.io.prefetched);
        assert_true(m.io.read_wait_seconds <= m.io.read_seconds);
        assert_true(m.io.thread_read_seconds > 0 && m.io.thread_write_seconds > 0);
    }
    OffloadOptions o = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
    o.dir = spill_dir;
    o.prefetch = o.write_behind = 1000;
    o.prefetch_bytes = 3 * a;
    o.write_behind_bytes = 2 * a;
    o.io_threads = 2;
    Offload *off = offload_create(&o);
    assert_non_null(off);
    char said[512];
    offload_describe(off, said, sizeof said);
    printf("  %s\n", said);
    assert_non_null(strstr(said, "written up to 128.0 KiB (at most 1000 records) behind"));
    assert_non_null(strstr(said, "prefetch up to 192.0 KiB (at most 1000 records) ahead"));
    assert_non_null(strstr(said, "(2 I/O threads)"));
    offload_free(off);
    for (int threads = -1; threads <= OFFLOAD_MAX_IO_THREADS + 1; threads += OFFLOAD_MAX_IO_THREADS + 2) {
        OffloadOptions bad = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
        bad.dir = spill_dir;
        bad.io_threads = threads;
        assert_null(offload_create(&bad));
        assert_int_equal(remat_last_status(), REMAT_EINVAL);
        assert_non_null(strstr(remat_last_error(), "io_threads from 0 to 4"));
    }
}

/* What the ledger shows around the end of the forward of the N-block chain, offload all,
 * written `behind` records behind (in units of a, and bytes over them). */
typedef struct BehindMeasure {
    size_t peak_act_forward; /* peak ACT during the forward */
    size_t act_before_pop, disk_before_pop;
    size_t act_after_pop, disk_after_pop;
    size_t peak_act;         /* of the whole step */
} BehindMeasure;

static BehindMeasure measure_behind(int N, int behind, size_t behind_bytes)
{
    Chain c = chain_create(N, CHAIN_W, CHAIN_B);
    OffloadOptions o = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
    o.dir = spill_dir;
    o.prefetch = 0;
    o.write_behind = behind;
    o.write_behind_bytes = behind_bytes;
    Offload *off = offload_create(&o);
    assert_non_null(off);
    TrainCtx ctx = {.training = true};
    mem_reset_peaks();
    assert_int_equal(offload_push(off), REMAT_OK);
    Var *loss = model_loss_planned(c.model, NULL, c.x, c.y, &ctx);
    assert_non_null(loss);
    BehindMeasure m = {.peak_act_forward = mem_peak(MEM_ACT), .act_before_pop = mem_current(MEM_ACT),
                       .disk_before_pop = mem_current(MEM_DISK)};
    assert_int_equal(offload_pop(off), REMAT_OK);
    m.act_after_pop = mem_current(MEM_ACT);
    m.disk_after_pop = mem_current(MEM_DISK);
    assert_int_equal(backward(loss), REMAT_OK);
    m.peak_act = mem_peak(MEM_ACT);
    var_free(loss);
    tape_reset();
    assert_int_equal(mem_current(MEM_DISK), 0);
    offload_free(off);
    chain_free(&c);
    return m;
}

/* Writing w records behind, a record's tensor stays in RAM (ACT) until a later pack or
 * offload_pop sees its write finished, and only then is DISK charged: at most w records
 * are in flight, whatever the thread's speed, so the figures are exact. In units of a:
 *
 *   forward peak   5 + max(0, w − 1)   5 written in the forward (the batch, 2, and a block's
 *                                      linear at work: its input, its output and the relu's
 *                                      output); of the w records in flight the newest is
 *                                      one the running op still holds, the w − 1 others
 *                                      are kept only for their writes.
 *   before pop     2 + max(0, w − 1)   the batch, and the tensors of the w − 1 records in
 *                  DISK 2N + 2 − w     flight after the targets (which the caller holds).
 *   after pop      2, DISK 2N + 2      offload_pop waits for every write: as if written in
 *                                      the forward.
 *   step peak      max(6, 4 + w)       backward's 6 (+ 8 B: the test above), or the forward's.
 */
static void assert_written_behind(const BehindMeasure *m, int N, size_t w)
{
    const size_t a = CHAIN_A;
    printf("  %6zu %12zu %7zu (%3zu) %6zu (%3zu) %6zu\n", w, m->peak_act_forward / a, m->act_before_pop / a,
           m->disk_before_pop / a, m->act_after_pop / a, m->disk_after_pop / a, m->peak_act / a);
    const size_t extra = w > 0 ? w - 1 : 0;
    assert_int_equal(m->peak_act_forward, (5 + extra) * a);
    assert_int_equal(m->act_before_pop, (2 + extra) * a + 4); /* + the loss; its seed gradient comes in backward */
    assert_int_equal(m->disk_before_pop, (2 * (size_t)N + 2 - w) * a);
    assert_int_equal(m->act_after_pop, 2 * a + 4);
    assert_int_equal(m->disk_after_pop, (2 * (size_t)N + 2) * a);
    assert_int_equal(m->peak_act, 4 + w > 6 ? (4 + w) * a : 6 * a + 8); /* the forward's has no loss yet */
}

/* The same windows given in bytes (write_behind_bytes, the count left high): w·a of data
 * in flight, or a little more, holds w records, and the figures are those of w records. */
static void test_writing_behind_moves_the_ledger_at_fixed_points(void **state)
{
    (void)state;
    enum { N = 16 };
    const size_t a = CHAIN_A;
    printf("  chain N=%d, offload all: ACT (DISK) in units of a (+ 4 or 8 B ACT)\n"
           "  behind  forward peak  before pop    after pop   step peak\n", N);
    for (size_t w = 0; w <= 4; w++) {
        const BehindMeasure m = measure_behind(N, (int)w, 0);
        assert_written_behind(&m, N, w);
    }
    printf("  behind by bytes, the count left at 1000:\n");
    for (size_t w = 1; w <= 4; w++) {
        for (size_t more = 0; more <= a / 2; more += a / 2) {
            const BehindMeasure m = measure_behind(N, 1000, w * a + more);
            assert_written_behind(&m, N, w);
        }
    }
}

/* The gradients of one forward and backward of a fresh 4-block chain (MEM_WORK copies),
 * offloading as `oo` says (NULL: in RAM); with `pop_after`, the hooks stay pushed through
 * backward, so its first unpacks meet records still being written behind. */
static void chain_gradients(const OffloadOptions *oo, bool pop_after, Tensor **grads, int *n)
{
    Chain c = chain_create(4, CHAIN_W, CHAIN_B);
    Offload *off = oo ? offload_create(oo) : NULL;
    assert_true(!oo || off);
    TrainCtx ctx = {.training = true};
    assert_int_equal(!off || offload_push(off) == REMAT_OK, 1);
    Var *loss = model_loss_planned(c.model, NULL, c.x, c.y, &ctx);
    assert_non_null(loss);
    if (off && !pop_after) assert_int_equal(offload_pop(off), REMAT_OK);
    if (off && pop_after) /* the last write_behind of the 2·4 + 2 records are in flight */
        assert_int_equal(mem_current(MEM_DISK), (size_t)(10 - oo->write_behind) * CHAIN_A);
    assert_int_equal(backward(loss), REMAT_OK);
    if (off && pop_after) assert_int_equal(offload_pop(off), REMAT_OK);
    if (off) assert_int_equal(offload_stats(off).records_read, offload_stats(off).records_written);
    *n = c.model->n_params;
    for (int i = 0; i < *n; i++) grads[i] = tensor_clone(c.model->params[i].var->grad, MEM_WORK);
    var_free(loss);
    tape_reset();
    offload_free(off);
    chain_free(&c);
}

/* An unpack of a record still being written waits for its write, then reads it back: the
 * gradients are those of the run in RAM, bit for bit. */
static void test_an_unpack_waits_for_a_record_still_being_written(void **state)
{
    (void)state;
    Tensor *in_ram[FIXTURE_MAX_PARAMS], *spilled[FIXTURE_MAX_PARAMS];
    int n, m;
    chain_gradients(NULL, false, in_ram, &n);
    for (int prefetch = 0; prefetch <= OFFLOAD_PREFETCH; prefetch += OFFLOAD_PREFETCH) {
        OffloadOptions o = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
        o.dir = spill_dir;
        o.write_behind = 4; /* the last 4 records are in flight when backward starts */
        o.prefetch = prefetch;
        chain_gradients(&o, true, spilled, &m);
        assert_int_equal(m, n);
        for (int i = 0; i < n; i++) {
            assert_memory_equal(spilled[i]->data, in_ram[i]->data, in_ram[i]->bytes);
            tensor_free(spilled[i]);
        }
    }
    for (int i = 0; i < n; i++) tensor_free(in_ram[i]);
}

/* ---- the page cache --------------------------------------------------------------------- */

/* The bytes of the first `bytes` of file `fd` that sit in the page cache, by mincore on a
 * mapping made for the question: the test's own look, not the offloader's. */
static size_t file_cached_bytes(int fd, size_t bytes)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = (bytes + page - 1) / page;
    if (pages == 0) return 0;
    void *map = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
    assert_true(map != MAP_FAILED);
    unsigned char *in = malloc(pages);
    assert_non_null(in);
    assert_int_equal(mincore(map, bytes, in), 0);
    size_t cached = 0;
    for (size_t i = 0; i < pages; i++) cached += (in[i] & 1) ? page : 0;
    free(in);
    munmap(map, bytes);
    return cached;
}

/* With drop_cache every record's write-back starts as it is written, offload_pop drops
 * them all from the page cache, and each leaves it again once read back, whoever moves
 * the bytes (the helper thread writing behind and reading ahead, or the computing
 * thread): when backward starts nothing of the forward's records is in the cache, so
 * backward reads the disk, and when it ends nothing is left either. With the cache kept,
 * the records are there: the measure can see them. */
static void test_dropping_the_page_cache_leaves_no_record_in_it(void **state)
{
    (void)state;
    struct statfs fs;
    assert_int_equal(statfs(spill_dir, &fs), 0);
    if (fs.f_type == 0x01021994) skip(); /* tmpfs: the page cache is the file's only home */
    const struct { OffloadIo io; int write_behind, prefetch; } ways[] = {
        {OFFLOAD_IO_SYSCALLS, OFFLOAD_WRITE_BEHIND, OFFLOAD_PREFETCH}, {OFFLOAD_IO_SYSCALLS, 0, 0},
        {OFFLOAD_IO_MMAP, 0, OFFLOAD_PREFETCH}, {OFFLOAD_IO_MMAP, 0, 0},
        {OFFLOAD_IO_DIRECT, OFFLOAD_WRITE_BEHIND, OFFLOAD_PREFETCH}, {OFFLOAD_IO_DIRECT, 0, 0},
    };
    Chain c = chain_create(8, CHAIN_W, CHAIN_B);
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
        for (int drop = 0; drop <= 1; drop++) {
            OffloadOptions o = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
            o.dir = spill_dir;
            o.io = ways[w].io;
            o.write_behind = ways[w].write_behind;
            o.prefetch = ways[w].prefetch;
            o.drop_cache = drop;
            Offload *off = offload_create(&o);
            assert_non_null(off);
            for (int step = 0; step < 2; step++) { /* the second reuses the file */
                TrainCtx ctx = {.training = true};
                assert_int_equal(offload_push(off), REMAT_OK);
                Var *loss = model_loss_planned(c.model, NULL, c.x, c.y, &ctx);
                assert_non_null(loss);
                assert_int_equal(offload_pop(off), REMAT_OK);
                const OffloadStats s = offload_stats(off);
                const size_t seen = file_cached_bytes(offload_debug_fd(off), s.file_bytes);
                if (drop && o.io != OFFLOAD_IO_DIRECT) {
                    assert_int_equal(s.cached_after_forward, 0);
                }
                if (drop || o.io == OFFLOAD_IO_DIRECT) { /* direct: the records never entered it */
                    /* offload_pop has just queued the first reads ahead: through the page
                     * cache, a record being read is there until its read drops it again
                     * (cached_after_forward, counted before, is exact). */
                    const size_t reading = o.io == OFFLOAD_IO_DIRECT ? 0 : (size_t)o.prefetch * (CHAIN_A + 4096);
                    assert_true(s.cached_after_forward <= reading);
                    assert_true(seen <= reading);
                } else { /* all 2·8 + 2 records of 64 KiB, a page of header and padding each */
                    assert_true(seen >= 18 * CHAIN_A);
                }
                assert_int_equal(backward(loss), REMAT_OK);
                if (drop || o.io == OFFLOAD_IO_DIRECT)
                    assert_int_equal(file_cached_bytes(offload_debug_fd(off), s.file_bytes), 0);
                var_free(loss);
                tape_reset();
            }
            offload_free(off);
        }
    }
    chain_free(&c);
}

/* ---- the process's resident memory ------------------------------------------------------ */

/* The process's resident set in bytes, as the kernel counts it (/proc/self/statm). */
static size_t rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    assert_non_null(f);
    unsigned long size, resident;
    assert_int_equal(fscanf(f, "%lu %lu", &size, &resident), 2);
    fclose(f);
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

typedef struct RssMeasure {
    double ledger_mib; /* resident bytes the ledger gained over the forward */
    double rss_mib;    /* resident bytes the kernel says the process gained */
} RssMeasure;

/* The growth of the ledger's resident bytes and of the process's RSS over one forward of
 * the chain, measured once the allocator has handed its free pages back. */
static RssMeasure measure_forward_rss(Model *m, Var *x, Var *y, Offload *off)
{
    TrainCtx ctx = {.training = true};
    malloc_trim(0); /* the pages of freed blocks back to the kernel */
    const size_t rss0 = rss_bytes(), ledger0 = mem_resident();
    if (off) assert_int_equal(offload_push(off), REMAT_OK);
    Var *loss = model_loss_planned(m, NULL, x, y, &ctx);
    if (off) assert_int_equal(offload_pop(off), REMAT_OK);
    assert_non_null(loss);
    malloc_trim(0);
    RssMeasure r = {((double)mem_resident() - (double)ledger0) / 1048576.0,
                    ((double)rss_bytes() - (double)rss0) / 1048576.0};
    assert_int_equal(backward(loss), REMAT_OK);
    var_free(loss);
    tape_reset();
    return r;
}

static void test_offload_really_lowers_the_resident_set(void **state)
{
    (void)state;
#ifdef __SANITIZE_ADDRESS__
    /* AddressSanitizer's allocator holds freed memory in quarantine, so the process's RSS
     * measures the sanitizer, not the program; the Release build runs this test. */
    skip();
#endif
    /* Under valgrind's memcheck (./remat.sh valgrind sets the variable) the resident set is
     * valgrind's too: its own allocator and its shadow memory. */
    if (getenv("REMAT_UNDER_VALGRIND")) skip();
    enum { N = 16 };
    Chain c = chain_create(N, 1024, 256); /* one activation is 1 MiB; none keeps 2N of them */
    Model *m = c.model;
    Var *x = c.x, *y = c.y;
    /* A first step without offload, unmeasured: OpenBLAS and OpenMP allocate their buffers
     * and thread stacks on first use. */
    measure_forward_rss(m, x, y, NULL);
    const RssMeasure none = measure_forward_rss(m, x, y, NULL);
    printf("  over one forward (MiB): none: ledger +%.2f, RSS +%.2f\n", none.ledger_mib, none.rss_mib);
    /* The kernel agrees with the ledger to within 1 MiB (one activation): what the ledger
     * does not count is host memory that is not tensor data — the tape's nodes and the
     * offloader's records, a few dozen KiB here — and the allocator returns free memory
     * in whole pages only. Measured: within 0.02 MiB. */
    assert_true(fabs(none.rss_mib - none.ledger_mib) < 1.0);
    /* none keeps 2N activations of 1 MiB (x_0 and the targets existed before). */
    assert_true(none.ledger_mib > 2 * N - 1);
    for (int io = OFFLOAD_IO_SYSCALLS; io <= OFFLOAD_IO_MMAP; io++) {
        OffloadOptions oo = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
        oo.dir = spill_dir;
        oo.io = (OffloadIo)io;
        Offload *off = offload_create(&oo);
        assert_non_null(off);
        measure_forward_rss(m, x, y, off); /* unmeasured: the spill file grows to its size */
        const RssMeasure spilled = measure_forward_rss(m, x, y, off);
        printf("  offload all by %-8s: ledger +%.2f, RSS +%.2f\n", io == OFFLOAD_IO_MMAP ? "mmap" : "syscalls",
               spilled.ledger_mib, spilled.rss_mib);
        /* Offload keeps none of them in RAM but the two records prefetch has started to
         * read back for backward (the loss's prediction and targets, 1 MiB each), and the
         * file's pages are not in the process either: never mapped (syscalls), or handed
         * back with MADV_DONTNEED (mmap). */
        assert_true(fabs(spilled.ledger_mib - OFFLOAD_PREFETCH) < 0.01);
        assert_true(fabs(spilled.rss_mib - spilled.ledger_mib) < 1.0);
        offload_free(off);
    }
    chain_free(&c);
}

/* ---- faults ----------------------------------------------------------------------------- */

static void test_a_missing_or_unwritable_directory_is_a_clear_error(void **state)
{
    (void)state;
    char missing[64], file[64], readonly[64];
    snprintf(missing, sizeof missing, "%s/missing", spill_dir);
    snprintf(file, sizeof file, "%s/a-file", spill_dir);
    snprintf(readonly, sizeof readonly, "%s/read-only", spill_dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(mkdir(readonly, 0555), 0);
    /* Root ignores permission bits, so as root the unwritable directory is /sys, where no
     * one may create a file. */
    const char *unwritable = geteuid() == 0 ? "/sys" : readonly;
    const struct { const char *dir, *cause; } cases[] = {
        {missing, "No such file or directory (does the directory exist?)"},
        {file, "(it is not a directory)"},
        {unwritable, "(the directory is not writable)"},
    };
    for (int i = 0; i < 3; i++) {
        OffloadOptions o = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
        o.dir = cases[i].dir;
        remat_clear_error();
        assert_null(offload_create(&o));
        printf("  %s\n", remat_last_error());
        assert_int_equal(remat_last_status(), REMAT_EIO);
        assert_non_null(strstr(remat_last_error(), "cannot create a spill file in"));
        assert_non_null(strstr(remat_last_error(), cases[i].dir));
        assert_non_null(strstr(remat_last_error(), cases[i].cause));
    }
    assert_int_equal(unlink(file), 0);
    assert_int_equal(rmdir(readonly), 0);
}

/* A process killed right after the spill file is made must leave nothing behind: the file
 * is made without a name (O_TMPFILE) where the file system has it, so there is no moment
 * at which a remat-spill-XXXXXX stands in the directory. The kernel names such a file
 * "#INODE (deleted)" in /proc/self/fd; one created by name and then unlinked keeps its
 * name there. */
static void test_the_spill_file_never_has_a_name(void **state)
{
    (void)state;
    const int probe = open(spill_dir, O_TMPFILE | O_RDWR, 0600);
    if (probe < 0) {
        printf("  %s has no O_TMPFILE: the spill file is named for a moment there\n", spill_dir);
        return;
    }
    close(probe);
    for (int io = OFFLOAD_IO_SYSCALLS; io <= OFFLOAD_IO_MMAP; io++) {
        OffloadOptions o = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
        o.dir = spill_dir;
        o.io = (OffloadIo)io;
        Offload *off = offload_create(&o);
        assert_non_null(off);
        char own[64], target[512];
        snprintf(own, sizeof own, "/proc/self/fd/%d", offload_debug_fd(off));
        const ssize_t n = readlink(own, target, sizeof target - 1);
        assert_true(n > 0);
        target[n] = '\0';
        if (strstr(target, "remat-spill-")) fail_msg("the spill file was created with a name: %s", target);
        offload_free(off);
    }
}

/* A file-size limit of 1 MiB, far below the spill file's first growth (64 MiB), stands in
 * for a full disk: the growth fails with EFBIG, as it would with ENOSPC. The kernel also
 * sends SIGXFSZ, which would kill the process: it is ignored while the limit holds.
 * disk_full_end puts both back. A write that starts past the limit fails with EFBIG even
 * inside a file already grown, and one that crosses it is cut short at the limit. */
typedef struct DiskFull {
    struct rlimit before;
    void (*previous)(int);
} DiskFull;

static DiskFull disk_full_begin(size_t limit)
{
    DiskFull d;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &d.before), 0);
    struct rlimit small = d.before;
    small.rlim_cur = limit;
    d.previous = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    return d;
}

static void disk_full_end(const DiskFull *d)
{
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &d->before), 0);
    signal(SIGXFSZ, d->previous);
}

/* After a step that failed saying `who` and `says`: one failure counted, `written` records
 * written in all, nothing on disk, parameters and optimizer state as they were. Then the
 * step is redone on the same batch (from `data_before`) offloading to `redo` (NULL: in
 * RAM, as train does), and ends where `reference`, a run that never failed, does. */
static void assert_failed_and_redone(Learner *t, Learner *reference, const Offload *off, Pcg32 data_before,
                                     const char *who, const char *says, size_t written, Offload *redo)
{
    printf("  %s\n", remat_last_error());
    assert_non_null(strstr(remat_last_error(), who));
    assert_non_null(strstr(remat_last_error(), says));
    assert_int_equal(offload_stats(off).failures, 1);
    assert_int_equal(offload_stats(off).records_written, written);
    assert_int_equal(offload_stats(off).live_records, 0);
    assert_int_equal(mem_current(MEM_DISK), 0);
    learner_assert_untouched(t);
    t->data = data_before;
    learner_step(t, redo, REMAT_OK);
    learner_step(reference, NULL, REMAT_OK);
    assert_same_parameters(t, reference);
}

static void test_a_full_disk_fails_the_forward_and_leaves_the_state_intact(void **state)
{
    (void)state;
    const OffloadIo ways[] = {OFFLOAD_IO_SYSCALLS, OFFLOAD_IO_DIRECT};
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
        Learner t, reference;
        learner_create(&t);
        learner_create(&reference);
        learner_snapshot(&t);
        OffloadOptions o = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
        o.dir = spill_dir;
        o.io = ways[w];
        Offload *off = offload_create(&o);
        assert_non_null(off);

        DiskFull full = disk_full_begin(1 << 20);
        Pcg32 data_before = t.data;
        learner_step(&t, off, REMAT_EIO);
        disk_full_end(&full);

        assert_failed_and_redone(&t, &reference, off, data_before, "saved tensor 0 of linear #0 (h.0.mlp.fc)",
                                 "the file-size limit, ulimit -f, was reached", 0, NULL);
        offload_free(off);
        learner_free(&t);
        learner_free(&reference);
    }
}

typedef enum Damage { FLIP_DATA, FLIP_HEADER, TRUNCATE } Damage;

/* Where the data of the index-th record of the spill file open as `fd` starts, and its
 * bytes, found as a reader of the file would: from byte 0, each record is a 64-byte header
 * (magic, dtype, sequence, then the data's size at byte 16), the data, and padding to the
 * next page (offload.c). */
static void find_record(int fd, size_t index, size_t *data_offset, size_t *bytes)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t at = 0;
    for (size_t i = 0;; i++) {
        uint32_t magic;
        uint64_t size;
        assert_int_equal(pread(fd, &magic, sizeof magic, (off_t)at), (ssize_t)sizeof magic);
        assert_int_equal(magic, 0x464f4d52u); /* "RMOF" */
        assert_int_equal(pread(fd, &size, sizeof size, (off_t)(at + 16)), (ssize_t)sizeof size);
        if (i == index) {
            *data_offset = at + 64;
            *bytes = size;
            return;
        }
        at += (64 + size + page - 1) / page * page;
    }
}

static void test_a_damaged_record_is_caught_when_it_is_read_back(void **state)
{
    (void)state;
    /* Truncating the file there loses the records after it too, among them the loss's,
     * which backward reads first. */
    const struct { Damage damage; const char *who, *says; } cases[] = {
        {FLIP_DATA, "saved tensor 0 of relu #10 (h.3.mlp.relu)", "checksum"},
        {FLIP_HEADER, "saved tensor 0 of relu #10 (h.3.mlp.relu)", "is not the one written"},
        {TRUNCATE, "of mse #12 (loss)", "the file was truncated"},
    };
    for (int k = 0; k < 18; k++) {
        /* Each damage, through each way of reading back: preadv, the mapping, the
         * prefetch thread (which reads the damaged record ahead, and checksums it), O_DIRECT
         * without and with the thread, and O_DIRECT with a window of bytes on two threads. */
        const int c = k % 3, reader = k / 3;
        const bool ahead = reader == 2 || reader == 4 || reader == 5;
        Learner t;
        learner_create(&t);
        learner_snapshot(&t);
        OffloadOptions o = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
        o.dir = spill_dir;
        o.io = reader == 1 ? OFFLOAD_IO_MMAP : reader >= 3 ? OFFLOAD_IO_DIRECT : OFFLOAD_IO_SYSCALLS;
        o.prefetch = ahead ? OFFLOAD_PREFETCH : 0;
        if (reader == 5) { /* the window at the end of the forward holds the loss's two
                              records, read before the damage; the damaged one comes after */
            o.prefetch = 1000;
            o.prefetch_bytes = 2 * CHAIN_A;
            o.io_threads = 2;
        }
        Offload *off = offload_create(&o);
        assert_non_null(off);
        Var *x, *y;
        assert_int_equal(mlp_task_batch(t.teacher, &t.data, CHAIN_B, &x, &y), REMAT_OK);
        assert_int_equal(offload_push(off), REMAT_OK);
        Var *loss = model_loss_planned(t.model, NULL, x, y, &t.ctx);
        assert_int_equal(offload_pop(off), REMAT_OK);
        assert_non_null(loss);

        /* Damage the relu output of the last block, record 2N − 1 (records go x_0, r_0,
         * x_1, r_1, ..., then the loss's prediction and targets). */
        /* Through a descriptor of our own: one-byte transfers are refused under O_DIRECT. */
        char own[64];
        snprintf(own, sizeof own, "/proc/self/fd/%d", offload_debug_fd(off));
        const int fd = open(own, O_RDWR);
        assert_true(fd >= 0);
        size_t at, bytes;
        find_record(fd, 2 * LEARNER_N - 1, &at, &bytes);
        if (cases[c].damage == TRUNCATE) {
            assert_int_equal(ftruncate(fd, (off_t)at), 0);
        } else {
            const off_t where = (off_t)(cases[c].damage == FLIP_DATA ? at + bytes / 2 : at - 64 + 8);
            unsigned char byte;
            assert_int_equal(pread(fd, &byte, 1, where), 1);
            byte ^= 0x01;
            assert_int_equal(pwrite(fd, &byte, 1, where), 1);
        }
        close(fd);
        assert_int_equal(backward(loss), REMAT_ECORRUPT);
        printf("  %s\n", remat_last_error());
        assert_non_null(strstr(remat_last_error(), cases[c].who));
        assert_non_null(strstr(remat_last_error(), cases[c].says));
        assert_true(offload_stats(off).failures >= 1); /* the loss's two records, truncated */
        assert_int_equal(offload_stats(off).prefetched > 0, ahead);
        /* Backward stopped: some gradients may be partial, so no optimizer step runs, and
         * parameters and optimizer state are as they were. */
        var_free(loss);
        var_free(x);
        var_free(y);
        tape_reset();
        assert_int_equal(mem_current(MEM_DISK), 0);
        learner_assert_untouched(&t);
        offload_free(off);
        learner_free(&t);
    }
}

/* A forward and backward with offload, on a batch of its own and without an optimizer
 * step, so nothing the snapshot holds changes: they grow the spill file (and map it). */
static void learner_warm_up(Learner *t, Offload *off)
{
    Pcg32 warm_up = t->data;
    Var *x, *y;
    assert_int_equal(mlp_task_batch(t->teacher, &warm_up, CHAIN_B, &x, &y), REMAT_OK);
    const Step warm = {.model = t->model, .plugs = {step_offload_plug(off)}}; /* no optimizer: nothing is updated */
    StepResult result;
    assert_int_equal(step_run(&warm, &(MicroBatch){x, y}, 1, &t->ctx, NULL, &result), REMAT_OK);
    var_free(x);
    var_free(y);
    assert_true(offload_stats(off).file_bytes > 0);
}

/* A write behind the forward that fails — cut short, or refused by the file-size limit —
 * fails the step at the next pack or at offload_pop, with the error a write in the
 * forward would have given, leaves parameters and optimizer state as they were, and lets
 * the step be redone, offloading again. Records are 64 KiB + a 64-byte
 * header, 17 pages each; with 2 written behind, record 3's failure is seen by the pack of
 * record 5, and record 9's (the targets, the last) by offload_pop. */
static void test_a_failed_write_behind_fails_the_step_and_loses_nothing(void **state)
{
    (void)state;
    const size_t span = (CHAIN_A + 64 + 4095) / 4096 * 4096;
    /* written: records written in all (the warm-up's 10 and this step's): record 3's
     * failure stops the forward at record 5, whose pack fails before handing it over;
     * record 4, past the limit, fails too, and only the first failure is reported (one
     * failure counted). Record 9's failure leaves the 9 before it written. */
    const struct { size_t limit; const char *who, *says; size_t written; } cases[] = {
        {3 * span + 4096, "saved tensor 0 of relu #4 (h.1.mlp.relu)", "short write", 10 + 3},
        {9 * span, "saved tensor 1 of mse #12 (loss)", "File too large (the file-size limit, ulimit -f, was reached)",
         10 + 9},
    };
    for (int c = 0; c < 2; c++) {
        Learner t, reference;
        learner_create(&t);
        learner_create(&reference);
        OffloadOptions o = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
        o.dir = spill_dir;
        assert_int_equal(o.write_behind, 2);
        Offload *off = offload_create(&o);
        assert_non_null(off);
        learner_warm_up(&t, off);
        learner_snapshot(&t);

        DiskFull full = disk_full_begin(cases[c].limit);
        const Pcg32 data_before = t.data;
        learner_step(&t, off, REMAT_EIO);
        disk_full_end(&full);
        /* Redone with offload: the next step spills again. */
        assert_failed_and_redone(&t, &reference, off, data_before, cases[c].who, cases[c].says, cases[c].written,
                                 off);
        offload_free(off);
        learner_free(&t);
        learner_free(&reference);
    }
}

/* Issue 16: with io mmap, truncating the spill file under the running process killed it
 * with SIGBUS in the middle of a write; it must fail the step as cleanly as the pwritev
 * path does, leave the training state as it was, and let the next step offload again. */
static void test_a_spill_file_truncated_under_the_mapping_fails_the_step_cleanly(void **state)
{
    (void)state;
    Learner t, reference;
    learner_create(&t);
    learner_create(&reference);
    OffloadOptions o = everything(OFFLOAD_ALL);
    o.io = OFFLOAD_IO_MMAP;
    Offload *off = offload_create(&o);
    assert_non_null(off);
    learner_snapshot(&t);
    learner_warm_up(&t, off);

    assert_int_equal(ftruncate(offload_debug_fd(off), 0), 0);
    const Pcg32 data_before = t.data;
    learner_step(&t, off, REMAT_ECORRUPT);
    /* The next step grows and maps the file again, and ends where a run in RAM does. The
     * warm-up wrote 2N + 2 records, the failed step none. */
    assert_failed_and_redone(&t, &reference, off, data_before, "cannot write saved tensor 0 of linear #0 (h.0.mlp.fc)",
                             "the file was truncated", 2 * LEARNER_N + 2, off);
    offload_free(off);
    learner_free(&t);
    learner_free(&reference);
}

static void test_an_empty_directory_path_is_refused(void **state)
{
    (void)state;
    OffloadOptions o = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
    o.dir = "";
    remat_clear_error();
    assert_null(offload_create(&o));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "empty path"));
}

/* ---- the training loop ----------------------------------------------------------------- */

static int parse(TrainOptions *opt, int argc, char **argv)
{
    FILE *sink = fopen("/dev/null", "w");
    assert_non_null(sink);
    int parsed = train_parse_args(argc, argv, opt, sink, sink);
    fclose(sink);
    return parsed;
}

static void test_train_takes_the_offload_flags(void **state)
{
    (void)state;
    TrainOptions o;
    char *good[] = {"train", "--strategy", "sqrt", "--offload", "boundary", "--offload-dir", "/somewhere",
                    "--offload-no-cache"};
    assert_int_equal(parse(&o, 8, good), 0);
    assert_true(o.step.offload);
    assert_int_equal(o.step.offload_opts.policy, OFFLOAD_BOUNDARY);
    assert_string_equal(o.step.offload_opts.dir, "/somewhere");
    assert_true(o.step.offload_opts.drop_cache);
    char *unknown[] = {"train", "--offload", "some"};
    char *alone[] = {"train", "--offload-dir", "/somewhere"};
    char *no_cache_alone[] = {"train", "--offload-no-cache"};
    char *mmap_alone[] = {"train", "--offload-mmap"};
    char *no_regions[] = {"train", "--offload", "boundary"}; /* strategy none keeps no region inputs */
    assert_int_equal(parse(&o, 3, no_regions), 2);
    assert_int_equal(parse(&o, 3, unknown), 2);
    assert_int_equal(parse(&o, 3, alone), 2);
    assert_int_equal(parse(&o, 2, no_cache_alone), 2);
    assert_int_equal(parse(&o, 2, mmap_alone), 2);
    char *mapped[] = {"train", "--offload", "all", "--offload-mmap"};
    assert_int_equal(parse(&o, 4, mapped), 0);
    assert_int_equal(o.step.offload_opts.io, OFFLOAD_IO_MMAP);
    char *direct[] = {"train", "--offload", "all", "--offload-direct"};
    assert_int_equal(parse(&o, 4, direct), 0);
    assert_int_equal(o.step.offload_opts.io, OFFLOAD_IO_DIRECT);
    char *direct_alone[] = {"train", "--offload-direct"};
    char *direct_mapped[] = {"train", "--offload", "all", "--offload-direct", "--offload-mmap"};
    char *direct_no_cache[] = {"train", "--offload", "all", "--offload-no-cache", "--offload-direct"};
    assert_int_equal(parse(&o, 2, direct_alone), 2);
    assert_int_equal(parse(&o, 5, direct_mapped), 2);
    assert_int_equal(parse(&o, 5, direct_no_cache), 2);
    /* Windows of bytes, with a unit; refused without --offload, below one byte, and writing
     * behind through a mapping (which writes in the forward). */
    char *windows[] = {"train", "--offload", "all", "--offload-direct", "--offload-read-ahead", "16MiB",
                       "--offload-write-behind", "8 MiB"};
    assert_int_equal(parse(&o, 8, windows), 0);
    assert_int_equal(o.step.offload_opts.prefetch_bytes, (size_t)16 << 20);
    assert_int_equal(o.step.offload_opts.write_behind_bytes, (size_t)8 << 20);
    assert_int_equal(o.step.offload_opts.prefetch, OFFLOAD_ANY_COUNT);
    assert_int_equal(o.step.offload_opts.write_behind, OFFLOAD_ANY_COUNT);
    char *window_alone[] = {"train", "--offload-read-ahead", "16MiB"};
    char *window_zero[] = {"train", "--offload", "all", "--offload-read-ahead", "0"};
    char *window_junk[] = {"train", "--offload", "all", "--offload-write-behind", "8 parsecs"};
    char *window_mapped[] = {"train", "--offload", "all", "--offload-mmap", "--offload-write-behind", "8MiB"};
    assert_int_equal(parse(&o, 3, window_alone), 2);
    assert_int_equal(parse(&o, 5, window_zero), 2);
    assert_int_equal(parse(&o, 5, window_junk), 2);
    assert_int_equal(parse(&o, 6, window_mapped), 2);
    char *plain[] = {"train"};
    assert_int_equal(parse(&o, 1, plain), 0);
    assert_false(o.step.offload);
}

/* A short MLP run whose activations (64 KiB) are all spilled by the default options. */
static TrainOptions offload_run_options(const OffloadPolicy *offload, const char *dir)
{
    TrainOptions o = train_defaults(MODEL_MLP);
    o.layers = 2;
    o.d_model = CHAIN_W;
    o.batch = CHAIN_B;
    o.steps = 3;
    o.eval_every = 0;
    o.eval_batches = 1;
    o.quiet = true;
    o.step.offload = offload != NULL;
    if (offload) o.step.offload_opts.policy = *offload;
    o.step.offload_opts.dir = dir;
    return o;
}

/* Offload changes where the saved bytes wait, never what training computes: the losses of
 * a run with every activation spilled, by pwritev or through a mapping, are those of the
 * run in RAM to the bit. */
/* A file system that refuses O_DIRECT (injected: tmpfs and ext4 here both accept it) is
 * a clear error from offload_create, with nothing left behind, not a silent fallback to
 * the page cache the caller asked to avoid; and train stops before it starts. */
static void test_a_file_system_refusing_direct_io_is_a_clear_error(void **state)
{
    (void)state;
    OffloadOptions o = OFFLOAD_DEFAULTS(OFFLOAD_ALL);
    o.dir = spill_dir;
    o.io = OFFLOAD_IO_DIRECT;
    offload_debug_refuse_direct(true);
    Offload *off = offload_create(&o);
    offload_debug_refuse_direct(false);
    assert_null(off);
    assert_int_equal(remat_last_status(), REMAT_EIO);
    printf("  %s\n", remat_last_error());
    assert_non_null(strstr(remat_last_error(), "refuses direct I/O (O_DIRECT: Invalid argument)"));
    assert_non_null(strstr(remat_last_error(), spill_dir));
    off = offload_create(&o); /* the same options, on a file system that takes it */
    assert_non_null(off);
    offload_free(off);
}

static void test_train_losses_are_those_of_the_run_in_ram(void **state)
{
    (void)state;
    FILE *sink = fopen("/dev/null", "w");
    assert_non_null(sink);
    TrainReport in_ram, spilled[3];
    TrainOptions plain = offload_run_options(NULL, NULL);
    assert_int_equal(train_run(&plain, &in_ram, sink), REMAT_OK);
    for (int io = OFFLOAD_IO_SYSCALLS; io <= OFFLOAD_IO_DIRECT; io++) {
        TrainOptions o = offload_run_options(&(OffloadPolicy){OFFLOAD_ALL}, spill_dir);
        o.step.offload_opts.io = (OffloadIo)io;
        assert_int_equal(train_run(&o, &spilled[io], sink), REMAT_OK);
        assert_int_equal(spilled[io].steps_run, in_ram.steps_run);
        assert_memory_equal(spilled[io].losses, in_ram.losses, (size_t)in_ram.steps_run * sizeof(float));
        train_report_free(&spilled[io]);
    }
    train_report_free(&in_ram);
    fclose(sink);
}

static void test_train_redoes_a_failed_step_without_offload(void **state)
{
    (void)state;
    FILE *sink = fopen("/dev/null", "w");
    assert_non_null(sink);
    TrainReport in_ram, fell_back;
    TrainOptions plain = offload_run_options(NULL, NULL);
    assert_int_equal(train_run(&plain, &in_ram, sink), REMAT_OK);

    /* The disk is "full" from the first write on: step 1's forward fails, the loop says so,
     * turns offload off and redoes the step on the same batch. */
    char *printed = NULL;
    size_t printed_size = 0;
    FILE *out = open_memstream(&printed, &printed_size);
    assert_non_null(out);
    TrainOptions spilled = offload_run_options(&(OffloadPolicy){OFFLOAD_ALL}, spill_dir);
    DiskFull full = disk_full_begin(1 << 20);
    RematStatus status = train_run(&spilled, &fell_back, out);
    disk_full_end(&full);
    fclose(out);
    assert_int_equal(status, REMAT_OK);
    assert_non_null(strstr(printed, "offload failed: offload: cannot write saved tensor"));
    assert_non_null(strstr(printed, "continuing without offload: step 1 is redone"));
    /* Nothing of the failed attempt was applied: the run is the one that never offloaded. */
    assert_int_equal(fell_back.steps_run, in_ram.steps_run);
    assert_memory_equal(fell_back.losses, in_ram.losses, (size_t)in_ram.steps_run * sizeof(float));
    assert_memory_equal(&fell_back.last_val_loss, &in_ram.last_val_loss, sizeof(float));
    free(printed);
    train_report_free(&in_ram);
    train_report_free(&fell_back);

    /* A directory that does not exist is a mistake on the command line: the run stops
     * before training, saying which directory. */
    char missing[64];
    snprintf(missing, sizeof missing, "%s/missing", spill_dir);
    TrainOptions nowhere = offload_run_options(&(OffloadPolicy){OFFLOAD_ALL}, missing);
    nowhere.step.offload_opts.io = OFFLOAD_IO_MMAP; /* the same check, whichever way the bytes would move */
    TrainReport none;
    assert_int_equal(train_run(&nowhere, &none, sink), REMAT_EIO);
    assert_non_null(strstr(remat_last_error(), missing));
    train_report_free(&none);
    fclose(sink);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c_matches_published_check_values),
        cmocka_unit_test(test_crc32c_fast_path_matches_the_reference),
        cmocka_unit_test_setup_teardown(test_policy_names_parse_and_print, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_offload_is_bit_identical_with_every_strategy_on_the_mlp, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_offload_is_bit_identical_with_every_strategy_on_the_gpt_with_dropout, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_offload_is_bit_identical_with_every_strategy_with_counter_dropout, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_each_policy_spills_what_it_promises, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_the_spill_file_is_reused_and_every_record_is_prefetched, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_offload_all_keeps_one_block_of_the_chain_whatever_its_depth, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_a_window_of_bytes_bounds_what_is_read_ahead, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_writing_behind_moves_the_ledger_at_fixed_points, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_an_unpack_waits_for_a_record_still_being_written, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_dropping_the_page_cache_leaves_no_record_in_it, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_offload_really_lowers_the_resident_set, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_a_missing_or_unwritable_directory_is_a_clear_error, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_the_spill_file_never_has_a_name, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_a_full_disk_fails_the_forward_and_leaves_the_state_intact, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_a_failed_write_behind_fails_the_step_and_loses_nothing, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_a_damaged_record_is_caught_when_it_is_read_back, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_a_spill_file_truncated_under_the_mapping_fails_the_step_cleanly, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_an_empty_directory_path_is_refused, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_train_takes_the_offload_flags, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_a_file_system_refusing_direct_io_is_a_clear_error, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_train_losses_are_those_of_the_run_in_ram, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_train_redoes_a_failed_step_without_offload, fixture_clean_state, fixture_clean_state),
    };
    return cmocka_run_group_tests_name("offload", tests, group_setup, group_teardown);
}
