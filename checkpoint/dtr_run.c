/*
 * dtr_run.c — --strategy dtr: DTR's eviction policy (dtr.c) driving a real step (dtr.h).
 *
 * The runtime plugs in three places, all installed by dtr_forward and by nothing else:
 *
 *   saved-tensor hooks  pack: the tensor's entry, one per tensor however many slots hold it
 *                       (the runtime holds one reference); unpack: the entry's tensor,
 *                       rematerialised first if it was evicted
 *   op hooks            count a layer's ops (`recorded`), in its forward and in a replay, so
 *                       that the tensor a replay saves as op k's slot i is found to be entry's
 *   the ledger          its pressure hook evicts (tensor/memory.h)
 *
 * The unit of recomputation is the layer, not the op: an op has no forward remat could call
 * again by itself (OpInfo holds none), while a layer's forward, replayed from its input with
 * the generator it started with, makes every one of its tensors again bit for bit. A
 * tensor is in use, and not evicted, while anything but the runtime holds a reference to it
 * (an op's Var, a backward reading it) or while it is the one being rematerialised.
 *
 * The stream generator: each layer's record keeps the PCG32 state at its entry (16 bytes),
 * and a replay runs from it and puts the generator back afterwards (replay.h), so a replayed
 * dropout draws its first mask; the counter generator needs nothing, its key is the step's.
 */
#include "checkpoint/dtr.h"

#include <stdlib.h>

#include "base/platform.h"
#include "checkpoint/replay.h"

/* One saved tensor: the pool's entry of the same id. */
typedef struct DtrTensor {
    Tensor *t;     /* the runtime's reference; NULL when evicted or released */
    int holders;   /* saved slots holding it (and a layer, its input); released at 0 */
    int layer;     /* the layer whose forward makes it; -1: held, never evicted */
    int op, slot;  /* made by that layer's op number `op` as its saved tensor `slot`; op -1: its output */
    int remats;    /* times taken back this step */
    uint64_t hash; /* determinism check: replay_hash when first made */
} DtrTensor;

/* One layer's forward, as a replay runs it again. */
typedef struct DtrLayer {
    Layer *layer;
    int input;    /* the entry of its input */
    int first;    /* its first entry */
    int live;     /* entries it made that a slot still holds; at 0 it lets its input go */
    Pcg32 rng;    /* the generator at its entry */
    double flops; /* its forward's: the cost of each entry it makes */
} DtrLayer;

typedef struct DtrRun {
    DtrPool *pool;
    DtrTensor *tensors; /* by entry id */
    DtrLayer *layers;
    TrainCtx *ctx;
    DtrOptions opts;
    int layer, op;      /* the layer whose forward or replay runs, and its ops recorded so far */
    double start;       /* the FLOP count when that layer's forward began */
    bool replay, all;   /* a replay runs, and takes back every evicted entry of its layer */
    int target;         /* the entry being rematerialised: not evicted meanwhile */
    RematStatus failed; /* what a replay found: the thrash bound, the determinism check */
    SavedHooks saved;
    OpHooks ops;
} DtrRun;

static DtrStats stats;

DtrStats dtr_stats(void) { return stats; }

/* ---- entries -------------------------------------------------------------------------------- */

/* The entry holding `t` now, or -1. */
static int find(const DtrRun *r, const Tensor *t)
{
    int id = r->pool->n_entries - 1;
    while (id >= 0 && r->tensors[id].t != t) id--;
    return id;
}

/* A new entry holding `t`, made by `layer`'s op `op` as `slot` (resident), or held (layer -1). Its id, or -1. */
static int entry_add(DtrRun *r, Tensor *t, int layer, int op, int slot)
{
    const int input = layer >= 0 ? r->layers[layer].input : -1;
    const double cost = layer < 0 ? 0 : op < 0 ? r->layers[layer].flops : (double)flops_total() - r->start;
    const int id = dtr_add(r->pool, t->bytes, cost, &input, input >= 0);
    if (id < 0) return -1;
    r->tensors[id] = (DtrTensor){.t = tensor_retain(t), .layer = layer, .op = op, .slot = slot,
                                 .hash = r->opts.replay.determinism_check ? replay_hash(t) : 0};
    r->pool->clock = (double)flops_total();
    if (layer >= 0) dtr_resident(r->pool, id, false);
    if (layer >= 0 && op >= 0) r->layers[layer].live++;
    return id;
}

/* The pool's drop: an eviction or a release frees the runtime's reference. */
static void drop(void *ctx, int id)
{
    DtrRun *r = ctx;
    tensor_free(r->tensors[id].t);
    r->tensors[id].t = NULL;
}

/* One holder of entry `id` lets it go; the last releases it (and maybe its layer's input). */
static void let_go(DtrRun *r, int id)
{
    DtrTensor *d = &r->tensors[id];
    if (--d->holders > 0) return;
    dtr_release(r->pool, id); /* resident: dropped, and evicted for the pool's graph */
    drop(r, id);              /* held */
    if (d->layer >= 0 && d->op >= 0 && --r->layers[d->layer].live == 0) let_go(r, r->layers[d->layer].input);
}

/* The pressure hook: evict the evictable entry of least h_DTR, if there is one. */
static bool evict(void *ctx, size_t bytes)
{
    (void)bytes;
    DtrRun *r = ctx;
    const double start = platform_seconds();
    for (int id = 0; id < r->pool->n_entries; id++) /* in use: held by more than the runtime */
        r->pool->entries[id].locks = r->tensors[id].t && (r->tensors[id].t->refcount > 1 || id == r->target);
    r->pool->clock = (double)flops_total();
    const int victim = dtr_choose(r->pool);
    stats.choose_seconds += platform_seconds() - start;
    if (victim < 0) return false;
    mem_timeline_mark(MEM_ACT, "dtr.evict"); /* its free follows */
    dtr_release(r->pool, victim);
    stats.evictions++;
    return true;
}

/* A replay made entry `id`'s tensor `t` again: taken back if evicted and still held. */
static void take(DtrRun *r, int id, Tensor *t)
{
    DtrTensor *d = &r->tensors[id];
    if (d->t || d->holders == 0) return;
    const char *name = r->layers[d->layer].layer->name;
    const int most = r->opts.max_remats > 0 ? r->opts.max_remats : DTR_MAX_REMATS;
    if (++d->remats > most && r->failed == REMAT_OK)
        r->failed = remat_fail(REMAT_ESTATE, "dtr: a tensor of %s was rematerialised %d times in one step, more than "
                               "%d: the budget thrashes; give a larger --memory-budget", name, d->remats, most);
    if (r->opts.replay.determinism_check && replay_hash(t) != d->hash && r->failed == REMAT_OK)
        r->failed = remat_fail(REMAT_ESTATE, "dtr: replaying %s made saved tensor %d of its op %d again with other "
                               "bytes than its first forward; its gradients would be wrong (%s)", name, d->slot, d->op,
                               r->opts.replay.preserve_rng ? "with the generator replayed"
                                                           : "--no-rng-replay: the generator was not replayed");
    d->t = tensor_retain(t);
    r->pool->clock = (double)flops_total();
    dtr_resident(r->pool, id, true);
    mem_timeline_mark(MEM_ACT, "dtr.remat"); /* after the replay's allocations that made it */
    stats.remats++;
}

/* ---- the hooks ------------------------------------------------------------------------------ */

/* Op hooks, in a layer's forward and in its replay: op k of the layer has run; a replay takes
 * back what it saved. */
static void recorded(void *ctx, const OpInfo *op, const char *tag, Var *const *inputs, int n_inputs,
                     Tensor *const *saved, int n_saved, const Tensor *out)
{
    (void)op, (void)tag, (void)inputs, (void)n_inputs, (void)out;
    DtrRun *r = ctx;
    const int k = r->op++;
    for (int i = 0; r->replay && r->all && i < n_saved; i++)
        for (int id = r->layers[r->layer].first; id < r->pool->n_entries; id++)
            if (r->tensors[id].layer == r->layer && r->tensors[id].op == k && r->tensors[id].slot == i)
                take(r, id, saved[i]);
}

static void *pack(void *ctx, Tensor *t, const Node *node, int slot)
{
    (void)node;
    DtrRun *r = ctx;
    int id = find(r, t);
    if (id < 0) id = entry_add(r, t, t->kind == MEM_ACT ? r->layer : -1, r->op - 1, slot);
    if (id < 0) return NULL;
    r->tensors[id].holders++;
    r->pool->entries[id].last_use = (double)flops_total();
    return &r->tensors[id];
}

static RematStatus replay_layer(DtrRun *r, int u, bool all);

static Tensor *unpack(void *ctx, void *packed, const Node *node, int slot)
{
    DtrRun *r = ctx;
    DtrTensor *d = packed;
    const int id = (int)(d - r->tensors);
    if (!d->t) {
        r->target = id;
        const RematStatus status = replay_layer(r, d->layer, true);
        r->target = -1;
        if (status != REMAT_OK) return NULL;
        if (!d->t)
            return remat_fail_null(REMAT_ESTATE, "dtr: replaying %s did not make saved tensor %d of %s again",
                                   r->layers[d->layer].layer->name, slot, node->name);
    }
    r->pool->entries[id].last_use = (double)flops_total();
    return tensor_retain(d->t);
}

static void release(void *ctx, void *packed)
{
    DtrRun *r = ctx;
    let_go(r, (int)((DtrTensor *)packed - r->tensors));
}

/* ---- layers: their forward, and a replay of it ---------------------------------------------- */

/* Layer u's forward again (replay.h) from its input, rematerialised first if it was evicted,
 * taking back what it makes: every evicted entry of the layer still held (`all`: its backward
 * is about to read them all), or only its output, the input of the layer that needs it. */
static RematStatus replay_layer(DtrRun *r, int u, bool all)
{
    const DtrLayer *l = &r->layers[u];
    const DtrTensor *in = &r->tensors[l->input];
    RematStatus status = in->t || in->layer < 0 ? REMAT_OK : replay_layer(r, in->layer, false);
    Tensor *x = in->t ? tensor_retain(in->t) : NULL; /* in use: not evicted while the layer runs */
    if (status == REMAT_OK && !x) status = remat_fail(REMAT_ESTATE, "dtr: the input of %s is gone", l->layer->name);
    ReplayScope scope = {0};
    if (status == REMAT_OK)
        status = replay_enter(&scope, &(ReplayOptions){.ctx = r->ctx, .hooks = &r->ops,
                                                       .rng = r->opts.replay.preserve_rng ? &l->rng : NULL});
    r->layer = u, r->op = 0, r->replay = true, r->all = all;
    Var *input = status == REMAT_OK ? replay_input(x, NULL, false, "dtr.input") : NULL;
    Var *y = input ? layers_forward(&l->layer, 1, input, r->ctx) : NULL;
    if (status == REMAT_OK && !y) status = remat_last_status();
    for (int id = l->first; y && id < r->pool->n_entries; id++) /* its output: the next layer's input */
        if (r->tensors[id].layer == u && r->tensors[id].op < 0) take(r, id, y->value);
    var_free(y);
    var_free(input);
    tensor_free(x);
    replay_leave(&scope);
    r->layer = -1, r->replay = false;
    stats.replays++;
    return status == REMAT_OK ? r->failed : status;
}

/* Layer u's forward, its saves through the runtime: its record first, its input an entry. */
static Var *run_layer(DtrRun *r, int u, Layer *layer, Var *x)
{
    DtrLayer *l = &r->layers[u];
    *l = (DtrLayer){.layer = layer, .first = r->pool->n_entries, .rng = r->ctx ? r->ctx->rng : (Pcg32){.state = 0}};
    int id = find(r, x->value);
    if (id < 0 && (id = entry_add(r, x->value, u - 1, -1, -1)) < 0) return NULL; /* the previous layer's output */
    l->input = id;
    r->tensors[id].holders++;
    r->layer = u, r->op = 0, r->start = (double)flops_total();
    RematStatus status = saved_hooks_push(&r->saved);
    if (status == REMAT_OK && (status = op_hooks_push(&r->ops)) != REMAT_OK) saved_hooks_pop();
    Var *y = status == REMAT_OK ? layers_forward(&layer, 1, x, r->ctx) : NULL;
    if (status == REMAT_OK) op_hooks_pop(), saved_hooks_pop();
    l->flops = (double)flops_total() - r->start;
    for (id = l->first; id < r->pool->n_entries; id++)
        if (r->tensors[id].layer == u) r->pool->entries[id].cost = l->flops;
    r->layer = -1;
    return y;
}

/* ---- the runtime ------------------------------------------------------------------------------ */

static void run_free(void *state)
{
    DtrRun *r = state;
    if (!r) return;
    mem_set_pressure(NULL, NULL);
    for (int id = 0; r->pool && id < r->pool->n_entries; id++) tensor_free(r->tensors[id].t);
    dtr_pool_free(r->pool);
    free(r); /* its entries and layers with it */
}

static DtrRun *run_create(int n, TrainCtx *ctx, const DtrOptions *opts)
{
    const int capacity = DTR_ENTRIES_PER_LAYER * n + 8;
    DtrRun *r = calloc(1, sizeof *r + (size_t)capacity * sizeof(DtrTensor) + (size_t)n * sizeof(DtrLayer));
    DtrTensor *tensors = r ? (DtrTensor *)(r + 1) : NULL; /* then the layers, in the runtime's allocation */
    if (r)
        *r = (DtrRun){.tensors = tensors, .layers = (DtrLayer *)(tensors + capacity), .ctx = ctx, .layer = -1,
                      .target = -1, .opts = opts ? *opts : (DtrOptions){.max_remats = 0},
                      .saved = {.name = "dtr", .pack = pack, .unpack = unpack, .release = release, .ctx = r},
                      .ops = {.name = "dtr", .recorded = recorded, .ctx = r}};
    if (r && (r->pool = dtr_pool_create(SIZE_MAX, capacity, (DtrHooks){.drop = drop, .ctx = r}))) return r;
    run_free(r);
    return remat_fail_null(REMAT_ENOMEM, "dtr: no memory for a runtime of %d entries", capacity);
}

static const OpInfo DTR_OP = {.name = "dtr"};

Var *dtr_forward(Layer **layers, int n, Var *x, TrainCtx *ctx, const DtrOptions *opts)
{
    if (!layers || n < 1 || !x)
        return remat_fail_null(REMAT_EINVAL, "dtr_forward: need at least one layer and an input");
    if (!grad_enabled()) return layers_forward(layers, n, x, ctx);
    DtrRun *r = run_create(n, ctx, opts);
    Var *held = r ? node_record(&DTR_OP, "dtr", NULL, &x, 1, tensor_retain(x->value), NULL, 0) : NULL;
    Node *node = held ? held->creator : NULL;
    var_free(held); /* nothing reads the node's output */
    if (!node) { /* the node owns the runtime, freed with the tape */
        run_free(r);
        return NULL;
    }
    node->state = r;
    node->state_free = run_free;
    mem_set_pressure(evict, r);
    Var *h = var_retain(x);
    for (int u = 0; u < n && h; u++) {
        Var *next = run_layer(r, u, layers[u], h);
        var_free(h);
        h = next;
    }
    return h;
}
