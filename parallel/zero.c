/*
 * zero.c — the reduce stage and the sharded optimizer step of data-parallel training
 * (see zero.h).
 */
#include "parallel/zero.h"

#include <inttypes.h>
#include <string.h>

struct Zero {
    DistGroup group;
    int stage;
    int n;
    Param *params;
    FlatPiece *pieces;  /* scratch for building views: 2n entries, room for two views */
    size_t *offset;     /* parameter i's first element in the flat array */
    size_t *bounds;     /* scratch: size + 1 region bounds */
    size_t total;       /* Ψ */
    size_t begin, end;  /* this rank's shard */
    float *grad_shard;  /* the reduced gradient of the shard: MEM_GRAD from stage 2 (kept),
                           MEM_WORK at stage 1 (from zero_reduce to the optimizer step) */
    float *param_shard; /* stage 3: this rank's shard of the parameters (MEM_PARAM) */
    const void **owner_of; /* stage 3: who uses parameter i with the others of its group, which
                              are gathered together (a layer; the model, for its embedding and
                              head); NULL for a parameter in no group */
    const void *held;   /* stage 3: the owner whose group is gathered now, or NULL */
    ParamUseHooks hooks;
    const ParamUseHooks *outer_hooks; /* while a step runs: the hooks it replaced */
};

ZeroBytes zero_resident_bytes(int stage, uint64_t total, uint64_t shard, int states)
{
    return (ZeroBytes){.params = 4 * (stage >= 3 ? shard : total), .grads = 4 * (stage >= 2 ? shard : total),
                       .optimizer = 4 * (uint64_t)states * (stage >= 1 ? shard : total)};
}

Zero *zero_create(const DistGroup *g, int stage, const Param *params, int n)
{
    if (stage < 0 || stage > ZERO_MAX_STAGE || n <= 0 || !g || g->size < 1)
        return remat_fail_null(REMAT_EINVAL, "zero_create: stage %d (0 to %d are built), %d parameters", stage,
                               ZERO_MAX_STAGE, n);
    Zero *z = calloc(1, sizeof *z);
    if (!z || !(z->params = malloc((size_t)n * sizeof *params)) ||
        !(z->pieces = malloc(2 * (size_t)n * sizeof *z->pieces)) ||
        !(z->offset = malloc((size_t)n * sizeof *z->offset)) ||
        !(z->owner_of = calloc((size_t)n, sizeof *z->owner_of)) ||
        !(z->bounds = malloc((size_t)(g->size + 1) * sizeof *z->bounds))) {
        zero_free(z);
        return remat_fail_null(REMAT_ENOMEM, "zero_create: no memory");
    }
    memcpy(z->params, params, (size_t)n * sizeof *params);
    z->total = param_offsets(params, n, z->offset);
    z->group = *g;
    z->stage = stage;
    z->n = n;
    z->begin = shard_begin(z->total, g->rank, g->size);
    z->end = shard_begin(z->total, g->rank + 1, g->size);
    const size_t bytes = (z->end - z->begin) * sizeof(float);
    if ((stage >= 2 && bytes && !(z->grad_shard = mem_calloc(MEM_GRAD, bytes))) ||
        (stage == 3 && bytes && !(z->param_shard = mem_alloc(MEM_PARAM, bytes)))) {
        zero_free(z); /* the budget's message says what did not fit */
        return NULL;
    }
    if (stage == 3) zero_params_scatter(z); /* from here on, parameters exist in full only while used */
    return z;
}

void zero_free(Zero *z)
{
    if (!z) return;
    mem_free(z->grad_shard);
    mem_free(z->param_shard);
    free(z->params);
    free(z->pieces);
    free(z->offset);
    free(z->bounds);
    free(z->owner_of);
    free(z);
}

int zero_rank(const Zero *z) { return z->group.rank; }
int zero_size(const Zero *z) { return z->group.size; }
int zero_stage(const Zero *z) { return z->stage; }
size_t zero_total(const Zero *z) { return z->total; }

Optimizer *zero_optimizer_create(const Zero *z, const OptimConfig *config)
{
    if (z->stage == 0) return optim_create(config, z->params, z->n);
    if (z->end == z->begin) /* more ranks than elements: nothing to update here */
        return remat_fail_null(REMAT_EINVAL, "zero: rank %d's shard is empty (%zu parameters over %d ranks)",
                               z->group.rank, z->total, z->group.size);
    OptimConfig shard = *config; /* this rank's elements only */
    shard.begin = z->begin;
    shard.end = z->end;
    return optim_create(&shard, z->params, z->n);
}

/* ---- views ---------------------------------------------------------------------------------- */

typedef enum Of { OF_VALUES, OF_GRADS } Of;

/* The parameters' values or gradients as one flat view (in z->pieces). */
static FlatView params_view(Zero *z, Of of)
{
    for (int i = 0; i < z->n; i++) {
        const Var *p = z->params[i].var;
        const Tensor *t = of == OF_VALUES ? p->value : p->grad;
        z->pieces[i] = (FlatPiece){t->f32, t->numel};
    }
    return (FlatView){z->pieces, z->n, z->total};
}

/* An optimizer's state tensors number `which` (0: AdamW m, 1: v) as a flat view over the
 * elements it updates, in `pieces` (n entries). */
static FlatView state_view(const Optimizer *opt, int n, int which, FlatPiece *pieces)
{
    FlatView v = {pieces, 0, 0};
    for (int i = 0; i < n; i++) {
        Tensor *s[2];
        optim_state(opt, i, &s[0], &s[1]);
        if (!s[which]) continue;
        pieces[v.n++] = (FlatPiece){s[which]->f32, s[which]->numel};
        v.total += s[which]->numel;
    }
    return v;
}

/* ---- the step ---------------------------------------------------------------------------- */

RematStatus zero_reduce(Zero *z, float loss, float *mean_loss)
{
    for (int i = 0; i < z->n; i++)
        if (!z->params[i].var->grad)
            return remat_fail(REMAT_ESTATE, "zero: parameter %s has no gradient on rank %d: every parameter must "
                              "take part in the loss", z->params[i].var->name, z->group.rank);
    const int K = z->group.size;
    const size_t n = z->end - z->begin;
    float *shard = z->grad_shard;
    float *scratch = n ? mem_alloc(MEM_WORK, dist_scratch_floats(n) * sizeof *scratch) : NULL;
    if (!shard && n) shard = mem_alloc(MEM_WORK, n * sizeof *shard);
    if (n && (!shard || !scratch)) {
        if (shard != z->grad_shard) mem_free(shard);
        mem_free(scratch);
        return remat_last_status();
    }
    const FlatView grads = params_view(z, OF_GRADS);
    RematStatus status = dist_reduce_scatter(&z->group, &grads, 1.0f / (float)K, shard, scratch, COMM_GRAD_REDUCE);
    mem_free(scratch);
    if (z->stage == 0) { /* every rank gets the whole reduced gradient */
        if (status == REMAT_OK) flat_write(&grads, z->begin, z->end, shard);
        mem_free(shard);
        if (status == REMAT_OK) status = dist_all_gather(&z->group, &grads, NULL, COMM_GRAD_REDUCE);
    } else if (z->stage == 1) {
        z->grad_shard = shard; /* until the optimizer step */
    } else {
        for (int i = 0; i < z->n; i++) { /* only the shard stays */
            tensor_free(z->params[i].var->grad);
            z->params[i].var->grad = NULL;
        }
    }
    if (status != REMAT_OK) return status;

    float *losses = malloc((size_t)K * sizeof *losses); /* rank r's at r: an even shard of K floats */
    if (!losses) return remat_fail(REMAT_ENOMEM, "zero: no memory for %d losses", K);
    losses[z->group.rank] = loss;
    const FlatPiece piece = {losses, (size_t)K};
    status = dist_all_gather(&z->group, &(FlatView){&piece, 1, (size_t)K}, NULL, COMM_CONTROL);
    float sum = losses[0];
    for (int r = 1; r < K; r++) sum += losses[r]; /* in rank order, as step.h sums micro-batches */
    *mean_loss = sum / (float)K;
    free(losses);
    return status;
}

RematStatus zero_optimizer_step(Zero *z, Optimizer *opt)
{
    if (z->stage == 0) return optim_step(opt, NULL, NULL);
    if (z->stage == 3) return optim_step(opt, z->grad_shard, z->param_shard); /* gathered when used */
    RematStatus status = optim_step(opt, z->grad_shard, NULL);
    if (z->stage == 1) { /* the shard was workspace */
        mem_free(z->grad_shard);
        z->grad_shard = NULL;
    }
    if (status != REMAT_OK) return status;
    const FlatView values = params_view(z, OF_VALUES);
    return dist_all_gather(&z->group, &values, NULL, COMM_PARAM_GATHER);
}

/* ---- stage 3: parameters gathered while used ------------------------------------------ */

/* Gathers parameter i in full from every rank's shard: storage restored, this rank's part
 * copied in from its shard, the others' received. */
static RematStatus gather_param(Zero *z, int i)
{
    Tensor *t = z->params[i].var->value;
    if (tensor_restore_storage(t) != REMAT_OK) return remat_last_status();
    const size_t first = z->offset[i], last = first + t->numel;
    for (int r = 0; r <= z->group.size; r++) {
        const size_t s = shard_begin(z->total, r, z->group.size);
        z->bounds[r] = s < first ? 0 : s > last ? t->numel : s - first;
    }
    const size_t a = z->bounds[z->group.rank], n = z->bounds[z->group.rank + 1] - a; /* this rank's part */
    if (n) memcpy(t->f32 + a, z->param_shard + (first + a - z->begin), n * sizeof(float));
    const FlatPiece piece = {t->f32, t->numel};
    return dist_all_gather(&z->group, &(FlatView){&piece, 1, t->numel}, z->bounds, COMM_PARAM_GATHER);
}

static void release_held(Zero *z)
{
    for (int i = 0; z->held && i < z->n; i++)
        if (z->owner_of[i] == z->held) tensor_release_storage(z->params[i].var->value);
    z->held = NULL;
}

/* The group of `owner` gathered and the one before released, so one group is whole at a
 * time; the hook of a stage's forward at stage 3, `owner` the stage (one that owns no
 * parameter leaves nothing whole). A checkpoint region's replay and its backward use the
 * same layer one after the other, so they share one gather. */
static RematStatus hold_group(void *ctx, const void *owner)
{
    Zero *z = ctx;
    if (!owner || owner == z->held) return REMAT_OK; /* not sharded here, or already whole */
    release_held(z);
    z->held = owner;
    RematStatus status = REMAT_OK;
    for (int i = 0; i < z->n && status == REMAT_OK; i++)
        if (z->owner_of[i] == owner) status = gather_param(z, i);
    if (status != REMAT_OK) release_held(z); /* what of it was gathered */
    return status;
}

/* The hook of a node's backward at stage 3: the group of the first parameter among its
 * inputs; a node that reads no parameter needs none. */
static RematStatus before_backward(void *ctx, const Node *node)
{
    Zero *z = ctx;
    for (int k = 0; k < node->n_inputs; k++)
        for (int i = 0; node->inputs[k].leaf && i < z->n; i++)
            if (z->params[i].var == node->inputs[k].leaf) return hold_group(z, z->owner_of[i]);
    return REMAT_OK;
}

RematStatus zero_add_group(Zero *z, const void *owner, const Param *params, int n)
{
    for (int i = 0; !params && i < z->n; i++) /* the rest: every parameter in no group yet */
        if (!z->owner_of[i]) z->owner_of[i] = owner;
    for (int k = 0; k < n; k++) {
        int i = 0;
        while (i < z->n && z->params[i].var != params[k].var) i++;
        if (i == z->n) return remat_fail(REMAT_EINVAL, "zero: parameter %s of a group is not one of the model's",
                                         params[k].var->name);
        z->owner_of[i] = owner;
    }
    return REMAT_OK;
}

void zero_step_begin(Zero *z)
{
    if (z->stage < 3) return;
    z->hooks = (ParamUseHooks){.enter = hold_group, .before_backward = before_backward, .ctx = z};
    z->outer_hooks = param_use_hooks_set(&z->hooks);
}

void zero_step_end(Zero *z)
{
    if (z->stage < 3) return;
    release_held(z);
    param_use_hooks_set(z->outer_hooks);
}

RematStatus zero_params_gather(Zero *z)
{
    RematStatus status = REMAT_OK;
    for (int i = 0; z->stage == 3 && i < z->n && status == REMAT_OK; i++) status = gather_param(z, i);
    return status;
}

void zero_params_scatter(Zero *z)
{
    if (z->stage < 3) return;
    bool whole = true; /* after a gather that failed half way, the shard keeps what it had */
    for (int i = 0; i < z->n; i++) whole &= z->params[i].var->value->data != NULL;
    if (whole && z->end > z->begin) {
        const FlatView values = params_view(z, OF_VALUES);
        flat_read(&values, z->begin, z->end, z->param_shard);
    }
    for (int i = 0; i < z->n; i++) tensor_release_storage(z->params[i].var->value);
    z->held = NULL;
}

/* ---- saving and resuming --------------------------------------------------------------- */

RematStatus zero_gather_optimizer(Zero *z, const Optimizer *shard, Optimizer *full, int root)
{
    if (z->stage == 0) return REMAT_OK; /* every rank holds all of it */
    RematStatus status = REMAT_OK;
    for (int which = 0; which < 2 && status == REMAT_OK; which++) {
        const FlatView v = state_view(shard, z->n, which, z->pieces);
        if (v.n == 0) break; /* no such state (SGD) */
        const FlatView f = full ? state_view(full, z->n, which, z->pieces + z->n) : (FlatView){0};
        status = dist_gather(&z->group, &v, full ? &f : NULL, root, COMM_OPTIMIZER);
    }
    if (status == REMAT_OK && full) status = optim_set_steps(full, optim_steps(shard));
    return status;
}

RematStatus zero_scatter_optimizer(const Zero *z, Optimizer *shard, const Optimizer *full)
{
    if (z->stage == 0) return REMAT_OK;
    for (int which = 0; which < 2; which++) {
        const FlatView v = state_view(shard, z->n, which, z->pieces);
        const FlatView f = state_view(full, z->n, which, z->pieces + z->n);
        if (v.n == 0) break; /* no such state (SGD) */
        flat_copy(&v, 0, &f, z->begin, v.total);
    }
    return optim_set_steps(shard, optim_steps(full));
}

/* FNV-1a over `bytes`, continuing from `h`: a digest for ranks to compare, not a guard
 * against anyone who means harm. */
static uint64_t digest(uint64_t h, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

RematStatus zero_agree_state(const DistGroup *g, int step, const Param *params, int n, const Optimizer *opt,
                             const char *hint)
{
    uint64_t values = 0xcbf29ce484222325u, state = values;
    size_t count = 0;
    for (int i = 0; i < n; i++) {
        const Tensor *t = params[i].var->value;
        Tensor *s[2];
        optim_state(opt, i, &s[0], &s[1]);
        values = digest(values, t->data, t->bytes);
        count += t->numel;
        for (int k = 0; k < 2; k++) state = s[k] ? digest(state, s[k]->data, s[k]->bytes) : state;
    }
    const int steps = optim_steps(opt);
    state = digest(state, &steps, sizeof steps);
    const DistFact facts[] = {dist_fact("the resumed step", "%d", step), dist_fact("the parameter count", "%zu", count),
                              dist_fact("the parameters' digest", "%016" PRIx64, values),
                              dist_fact("the optimizer state's digest", "%016" PRIx64, state)};
    return dist_agree(g, facts, 4, hint);
}
