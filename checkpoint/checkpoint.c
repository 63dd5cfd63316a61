/*
 * checkpoint.c — checkpoint regions: the first forward, the replay in backward, RNG
 * replay, the determinism check, and the selective policies' output cache
 * (see checkpoint.h and policy.h).
 */
#include "checkpoint/checkpoint.h"

#include <stdlib.h>
#include <string.h>

#include "checkpoint/explain.h"
#include "checkpoint/replay.h"

/* ---- the policy's cache -------------------------------------------------------------- */

/* The outputs a policy saved in a region's first forward, in the order the ops made them.
 * The replay runs the same ops in the same order, so it takes them back from the front.
 *
 * Not every output a policy saves is worth keeping. Kept are those the replay will read:
 * what some op's backward keeps (a linear's input), and what an op the policy recomputes
 * takes as input (the scores that attention_core's softmax recomputes from). An output
 * that only feeds ops which are themselves served from the cache — attn.qkv's output,
 * read by nobody once q, k and v come from the cache — is released after the first
 * forward, and the replay gets a placeholder of its shape whose contents are never read.
 * This is what makes attention_core keep exactly what the region would keep without
 * checkpointing, minus the attention core (Korthikanti et al. 2022). */
typedef struct CacheEntry {
    const OpInfo *op;
    const char *tag;
    int index;
    Tensor *tensor; /* one reference; NULL once released or handed to the replay */
    bool needed;    /* the replay reads it */
    DType dtype;    /* the shape, for a placeholder */
    int ndim;
    int shape[TENSOR_MAX_DIMS];
} CacheEntry;

typedef struct Cache {
    const Policy *policy; /* NULL: nothing is kept (full recomputation) */
    CacheEntry *entries;
    int count, capacity;
    int next;   /* the replay's position */
    bool error; /* the replay asked for something the first forward did not keep */
    /* The determinism check: a hash of every recomputed op's output in the first forward,
     * compared op by op in the replay, so a divergence is caught where it happens — even
     * when the region's own output comes from the cache. */
    bool check;
    uint64_t *hashes;
    int n_hashes, hash_capacity, next_hash;
    const OpInfo *diverged_op; /* the first recomputed op whose output differed */
    const char *diverged_tag;
} Cache;

static bool cache_decides_save(const Cache *c, const OpInfo *op, const char *tag)
{
    return c->policy && c->policy->decide(op->name, tag, c->policy->user) == POLICY_SAVE;
}

/* First forward: keep the outputs of the ops the policy saves. */
static RematStatus cache_observe(void *ctx, const OpInfo *op, const char *tag, int index, Tensor *out)
{
    Cache *c = ctx;
    if (!cache_decides_save(c, op, tag)) return REMAT_OK;
    if (c->count == c->capacity) {
        int capacity = c->capacity ? 2 * c->capacity : 32;
        CacheEntry *entries = realloc(c->entries, (size_t)capacity * sizeof *entries);
        if (!entries) return remat_fail(REMAT_ENOMEM, "checkpoint: no memory for the policy's cache");
        c->entries = entries;
        c->capacity = capacity;
    }
    CacheEntry *e = &c->entries[c->count++];
    *e = (CacheEntry){.op = op, .tag = tag, .index = index, .tensor = tensor_retain(out),
                      .dtype = out->dtype, .ndim = out->ndim};
    memcpy(e->shape, out->shape, sizeof e->shape);
    return REMAT_OK;
}

/* Marks the kept output `t` (if it is one) as read by the replay. */
static void cache_mark_needed(Cache *c, const Tensor *t)
{
    for (int i = 0; t && i < c->count; i++)
        if (c->entries[i].tensor == t) c->entries[i].needed = true;
}

/* First forward: what each op's backward keeps is needed; so are the inputs of the ops the
 * replay will recompute. */
static void cache_recorded(void *ctx, const OpInfo *op, const char *tag, Var *const *inputs, int n_inputs,
                           Tensor *const *saved, int n_saved, const Tensor *out)
{
    Cache *c = ctx;
    for (int i = 0; i < n_saved; i++) cache_mark_needed(c, saved[i]);
    if (cache_decides_save(c, op, tag)) return;
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i]) cache_mark_needed(c, inputs[i]->value);
    if (!c->check) return;
    if (c->n_hashes == c->hash_capacity) {
        int capacity = c->hash_capacity ? 2 * c->hash_capacity : 64;
        uint64_t *hashes = realloc(c->hashes, (size_t)capacity * sizeof *hashes);
        if (!hashes) {
            c->check = false; /* no room to check: the replay is simply not checked */
            return;
        }
        c->hashes = hashes;
        c->hash_capacity = capacity;
    }
    c->hashes[c->n_hashes++] = replay_hash(out);
}

/* Replay: compare each recomputed op's output with the first forward's. */
static void cache_replay_recorded(void *ctx, const OpInfo *op, const char *tag, Var *const *inputs, int n_inputs,
                                  Tensor *const *saved, int n_saved, const Tensor *out)
{
    (void)inputs, (void)n_inputs, (void)saved, (void)n_saved;
    Cache *c = ctx;
    if (!c->check || cache_decides_save(c, op, tag) || c->diverged_op) return;
    if (c->next_hash == c->n_hashes || c->hashes[c->next_hash++] != replay_hash(out)) {
        c->diverged_op = op;
        c->diverged_tag = tag;
    }
}

/* After the first forward of `region`, whose result `out` is read: release what the replay will not read. */
static void cache_release_unneeded(Cache *c, const char *region, const Tensor *out)
{
    cache_mark_needed(c, out);
    for (int i = 0; i < c->count; i++) {
        if (c->entries[i].needed) {
            explain_note_cached(region, c->entries[i].op->name, c->entries[i].tag, c->entries[i].tensor);
            continue;
        }
        tensor_free(c->entries[i].tensor);
        c->entries[i].tensor = NULL;
    }
}

/* Replay: offer the kept output of an op the policy saves, in first-forward order. */
static Tensor *cache_lookup(void *ctx, const OpInfo *op, const char *tag, int index)
{
    Cache *c = ctx;
    if (!cache_decides_save(c, op, tag)) return NULL;
    CacheEntry *e = c->next < c->count ? &c->entries[c->next] : NULL; /* NULL: the first forward kept no more */
    if (!e || e->op != op || e->index != index || (e->tag != tag && (!e->tag || !tag || strcmp(e->tag, tag)))) {
        c->error = true;
        return NULL;
    }
    c->next++;
    if (!e->needed) /* nobody reads it: a placeholder of its shape */
        return tensor_create(MEM_ACT, e->dtype, e->ndim, e->shape);
    Tensor *t = e->tensor; /* hand over the cache's reference: it is not needed again */
    e->tensor = NULL;
    return t;
}

static void cache_clear(Cache *c)
{
    for (int i = 0; i < c->count; i++) tensor_free(c->entries[i].tensor);
    free(c->entries);
    free(c->hashes);
    *c = (Cache){0}; /* a region's replay runs once: its cache is done */
}

/* ---- a region's record --------------------------------------------------------------- */

/* Everything a region's backward needs to replay its forward; owned by its node. */
typedef struct Region {
    RegionFn fn;
    void *fn_ctx;
    Layer **layers; /* checkpoint_layers: the run of layers fn runs (fn_ctx is the region) */
    int n_layers;
    TrainCtx *ctx;
    bool preserve_rng; /* the options' policy and determinism check are the cache's */
    char name[NODE_NAME_LEN];
    Pcg32 rng_at_entry;
    Cache cache;
} Region;

static void region_free(void *state)
{
    Region *r = state;
    cache_clear(&r->cache);
    free(r);
}

CheckpointOptions checkpoint_defaults(void) { return (CheckpointOptions){.replay.preserve_rng = true}; }

/* ---- backward: the replay ------------------------------------------------------------ */

/* The errors a replay can find before its backward: the policy's cache did not match, or
 * the determinism check saw a recomputed output differ from the first forward's. */
static RematStatus replay_check(const Region *r)
{
    if (r->cache.error)
        return remat_fail(REMAT_ESTATE, "checkpoint region %s: the replay ran different ops than "
                          "the first forward, so the policy's cache does not match", r->name);
    if (r->cache.diverged_op)
        return remat_fail(REMAT_ESTATE,
                          "checkpoint region %s: the replay computed a different output than the "
                          "first forward, first at %s (%s) (%s); its gradients would be wrong. Random "
                          "ops in it need the generator replayed (preserve_rng, the default; "
                          "--no-rng-replay turns it off)", r->name, r->cache.diverged_op->name,
                          r->cache.diverged_tag ? r->cache.diverged_tag : "untagged",
                          r->preserve_rng ? "with the generator replayed" : "without replaying the generator");
    return REMAT_OK;
}

/* Backward of a region. Forward was y = fn(x) with nothing saved inside; so recompute
 * y = fn(x) with grad on into a private tape (RECOMPUTE FLOPs), then backpropagate dy
 * through it: dx += J_fn(x)^T·dy, and every parameter inside gets its gradient on the way.
 * The replay (replay.h) puts the generator back to its state at the region's entry, so
 * dropout draws the first forward's masks, and the policy's cache serves what it kept. */
static RematStatus region_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    Region *r = node->state;
    Tensor *x = saved_tensor(node, 0);
    if (!x) return remat_last_status();

    const OpHooks cache_hooks = {.name = "checkpoint replay", .lookup = cache_lookup,
                                 .recorded = cache_replay_recorded, .ctx = &r->cache};
    const bool hooked = r->cache.count > 0 || r->cache.check;
    ReplayScope scope;
    RematStatus status = replay_enter(&scope, &(ReplayOptions){
        .record = true, .ctx = r->ctx, .rng = r->preserve_rng ? &r->rng_at_entry : NULL,
        .hooks = hooked ? &cache_hooks : NULL});
    /* The region's input gradient accumulates straight into the buffer backward gave us. */
    Var *x_leaf = status == REMAT_OK ? replay_input(x, dinputs[0], dinputs[0] != NULL, "checkpoint.input") : NULL;
    if (status == REMAT_OK && !x_leaf) status = remat_last_status();
    Var *y = NULL;
    if (status == REMAT_OK && !(y = r->fn(r->fn_ctx, x_leaf, r->ctx))) status = remat_last_status();
    if (status == REMAT_OK) status = replay_check(r);
    /* dout is the engine's buffer for this node; the replay only reads it. */
    if (status == REMAT_OK) status = replay_backward(&scope, y, dout);
    else var_free(y);
    var_free(x_leaf);
    replay_leave(&scope);
    cache_clear(&r->cache); /* "caches are freed when the region's backward ends" */
    tensor_free(x);
    return status;
}

static const OpInfo CHECKPOINT_OP = {.name = "checkpoint", .backward = region_backward};

/* ---- forward ------------------------------------------------------------------------- */

/* The RegionFn of checkpoint_layers: fn_ctx is the region, which holds its layers. */
static Var *run_layers(void *fn_ctx, Var *x, TrainCtx *ctx)
{
    const Region *r = fn_ctx;
    return layers_forward(r->layers, r->n_layers, x, ctx);
}

/* A region of fn(fn_ctx, x), or of layers[0 .. n) when `layers` are given: its record,
 * its first forward, and its one node on the tape. With grad mode off (inference, or inside
 * another region's first forward) they simply run. NULL on error, with nothing kept. */
static Var *region_forward(RegionFn fn, void *fn_ctx, Layer **layers, int n, Var *x, TrainCtx *ctx,
                           const CheckpointOptions *opts)
{
    if (!x || (layers ? n < 1 : !fn))
        return remat_fail_null(REMAT_EINVAL, "checkpoint: need a function or at least one layer, and an input");
    if (!grad_enabled()) return layers ? layers_forward(layers, n, x, ctx) : fn(fn_ctx, x, ctx);
    Region *r = calloc(1, sizeof *r);
    if (!r) return remat_fail_null(REMAT_ENOMEM, "checkpoint: no memory for a region");
    const CheckpointOptions o = opts ? *opts : checkpoint_defaults();
    *r = (Region){.fn = layers ? run_layers : fn, .fn_ctx = layers ? r : fn_ctx, .layers = layers, .n_layers = n,
                  .ctx = ctx, .preserve_rng = o.replay.preserve_rng, .rng_at_entry = ctx ? ctx->rng : (Pcg32){0},
                  .cache = {.policy = o.policy, .check = o.replay.determinism_check}};
    snprintf(r->name, sizeof r->name, "%s", o.name ? o.name : "region");

    /* The first forward: no graph; with a policy, its chosen outputs kept; with the
     * determinism check, every recomputed output's hash noted. */
    OpHooks keep = {.name = "checkpoint cache", .observe = cache_observe, .recorded = cache_recorded,
                    .ctx = &r->cache};
    const bool hooked = r->cache.policy || r->cache.check;
    RematStatus status = hooked ? op_hooks_push(&keep) : REMAT_OK;
    Var *y = NULL;
    if (status == REMAT_OK) {
        grad_set_enabled(false);
        y = r->fn(r->fn_ctx, x, r->ctx);
        grad_set_enabled(true);
        if (hooked) op_hooks_pop();
    }
    if (!y) {
        region_free(r);
        return NULL;
    }
    if (r->cache.policy) cache_release_unneeded(&r->cache, r->name, y->value);

    return replay_record(&CHECKPOINT_OP, x, y, r->name, r, region_free, x->value);
}

Var *checkpoint(RegionFn fn, void *fn_ctx, Var *x, TrainCtx *ctx, const CheckpointOptions *opts)
{
    return region_forward(fn, fn_ctx, NULL, 0, x, ctx, opts);
}

Var *checkpoint_layers(Layer **layers, int n, Var *x, TrainCtx *ctx, const CheckpointOptions *opts)
{
    return region_forward(NULL, NULL, layers, n, x, ctx, opts);
}
