/*
 * predict_spill.c — train --predict-only --offload: a step's ACT and DISK peaks, from
 * chain_model's shape (checkpoint/cost.h) and offload's policy and windows (offload.h),
 * walked event by event as the engine and offload.c run it. Forward: an op allocates its
 * output and extras, saves them (a spilled save waits for the oldest writes until
 * write_behind − 1 are in flight and the window holds it; a write seen done charges DISK
 * and lets its tensor go), then drops its inputs; a region runs with grad off (cost.h's
 * ng), then saves its input; a segment's input goes when it ends, a later layer's input
 * with the layer, x_0 with the chain, x_L with the head. The pop sees every write done and
 * reads the last records ahead. Backward: an op makes its inputs' gradients, reads its
 * records back (each read first reads ahead the live records before it that fit the
 * window), frees them, its output's gradient and extras, and releases its saves; a region
 * does the same around its replay, whose figures are cost.c's.
 */
#include "app/train.h"

#include <stdlib.h>

#include "checkpoint/cost.h"

/* The step walked: each value (stage j's value v is at(j) + v: stage 0 the embedding, then
 * the layers, then the head; a stage's input is the one before's output), the records. */
typedef struct Sim {
    const ChainShape *shape;
    const OffloadOptions *opts;
    int behind;             /* records written behind (0: in pack, as through a mapping) */
    struct Value { int refs; bool grad; size_t bytes; } *val;
    struct Record { int value; size_t bytes; bool read, gone; } *rec; /* value: SAVED_TARGETS, SAVED_EXTRA */
    int n_rec, done, top;   /* records made, seen written, and not yet released */
    size_t writing, act, disk;
    MemoryPrediction *p;    /* its ACT and DISK peaks, and where ACT peaks */
    struct At { const char *where; int first, count; } now; /* the moment walked */
} Sim;

/* A saved tensor: a value, the loss's targets (the batch's half, which stays), or an op's
 * extra (its only holder the save: a spilled one goes when its write is seen done). */
typedef struct Saved { int value; size_t bytes; } Saved;
enum { SAVED_TARGETS = -1, SAVED_EXTRA = -2, SAVED_MOST = CHAIN_OP_INPUTS + 4 };

static int at(const Sim *s, int j) { return j ? s->shape->embed.n_ops + (j - 1) * s->shape->layer.n_ops : 0; }

static const ChainStage *stage_of(const Sim *s, int j)
{
    return j == 0 ? &s->shape->embed : j > s->shape->n_layers ? &s->shape->head : &s->shape->layer;
}

static bool spills(const Sim *s, size_t bytes, const char *tag) { return offload_spills(s->opts, bytes, tag); }

static void sim_peak(Sim *s, size_t above)
{
    MemoryPrediction *p = s->p;
    if (s->act + above > p->kinds[MEM_ACT])
        p->kinds[MEM_ACT] = s->act + above, p->moment = s->now.where, p->first = s->now.first, p->count = s->now.count;
}

static void sim_alloc(Sim *s, size_t bytes) { s->act += bytes, sim_peak(s, 0); }

static void sim_unref(Sim *s, int v) { s->act -= --s->val[v].refs == 0 ? s->val[v].bytes : 0; }

/* Writes seen done, oldest first (offload.c's finish_writes). */
static void sim_finish(Sim *s, int in_flight, size_t bytes)
{
    const size_t window = bytes ? s->opts->write_behind_bytes : 0;
    while (s->n_rec - s->done > in_flight || (window && s->n_rec > s->done && s->writing + bytes > window)) {
        const struct Record *r = &s->rec[s->done++];
        s->writing -= r->bytes;
        s->p->kinds[MEM_DISK] = max_size(s->p->kinds[MEM_DISK], s->disk += r->bytes);
        if (r->value >= 0) sim_unref(s, r->value);
        if (r->value == SAVED_EXTRA) s->act -= r->bytes;
    }
}

/* A save: a reference, or a record that holds its tensor until its write is seen done. */
static void sim_pack(Sim *s, Saved v, const char *tag)
{
    if (v.value >= 0) s->val[v.value].refs++;
    if (!spills(s, v.bytes, tag)) return;
    if (s->behind) sim_finish(s, s->behind - 1, v.bytes);
    s->rec[s->n_rec++] = (struct Record){.value = v.value, .bytes = v.bytes};
    s->top = s->n_rec, s->writing += v.bytes;
    if (!s->behind) sim_finish(s, 0, 0);
}

/* The live records before `end` read ahead (offload.c's prefetch_before). */
static void sim_prefetch(Sim *s, int end)
{
    size_t bytes = 0;
    for (int i = end, window = s->opts->prefetch; i > 0 && window > 0; i--) {
        struct Record *r = &s->rec[i - 1];
        if (r->gone) continue;
        if (s->opts->prefetch_bytes && bytes > 0 && bytes + r->bytes > s->opts->prefetch_bytes) break;
        window--, bytes += r->bytes;
        if (!r->read) r->read = true, sim_alloc(s, r->bytes);
    }
}

/* The last `k` live records unpacked in the order they were made, `above` more used
 * while they are there, then freed and released. */
static void sim_unpack(Sim *s, int k, size_t above)
{
    for (int i = s->top - k; i < s->top; i++) {
        sim_prefetch(s, i);
        if (!s->rec[i].read) s->rec[i].read = true, sim_alloc(s, s->rec[i].bytes);
    }
    sim_peak(s, above);
    for (; k > 0; k--) {
        s->rec[--s->top].gone = true;
        s->act -= s->rec[s->top].bytes, s->disk -= s->rec[s->top].bytes;
    }
}

/* Op i of stage j's saves in the order it makes them: inputs, output, extras, the loss's targets. */
static int op_saves(const Sim *s, int j, int i, Saved *out)
{
    const ChainOp *op = &stage_of(s, j)->ops[i];
    int n = 0;
    for (int k = 0; k < CHAIN_OP_INPUTS; k++)
        if (op->saves & 1u << k) out[n++] = (Saved){at(s, j) + op->in[k], s->val[at(s, j) + op->in[k]].bytes};
    if (op->saves & CHAIN_SAVES_OUT) out[n++] = (Saved){at(s, j) + i + 1, op->out};
    for (int k = 0; op->extra && k < op->extras; k++)
        out[n++] = (Saved){SAVED_EXTRA, op->extra / (size_t)op->extras};
    if (j > s->shape->n_layers && i == s->shape->head.n_ops - 1)
        out[n++] = (Saved){SAVED_TARGETS, s->shape->base / 2};
    return n;
}

/* Stage j's forward with grad on. */
static void stage_forward(Sim *s, int j)
{
    const ChainStage *g = stage_of(s, j);
    s->val[at(s, j) + g->n_ops].refs++; /* the caller's */
    for (int i = 0; i < g->n_ops; i++)
        for (int k = 0; k < CHAIN_OP_INPUTS; k++)
            if (g->ops[i].in[k] > 0) s->val[at(s, j) + g->ops[i].in[k]].refs++;
    for (int i = 0; i < g->n_ops; i++) {
        const ChainOp *op = &g->ops[i];
        Saved saved[SAVED_MOST];
        sim_alloc(s, op->out + op->extra);
        for (int n = op_saves(s, j, i, saved), k = 0; k < n; k++) sim_pack(s, saved[k], op->tag);
        for (int k = 0; k < CHAIN_OP_INPUTS; k++)
            if (op->in[k] > 0) sim_unref(s, at(s, j) + op->in[k]);
    }
}

/* Op i of stage j's backward (the loss's gradient, the seed, stays). */
static void op_backward(Sim *s, int j, int i)
{
    const ChainOp *op = &stage_of(s, j)->ops[i];
    Saved saved[SAVED_MOST];
    const int n = op_saves(s, j, i, saved);
    int spilled = 0;
    size_t kept = op->extra; /* of its extras, those not spilled: freed here */
    for (int k = 0; k < CHAIN_OP_INPUTS; k++) {
        struct Value *v = op->in[k] >= 0 ? &s->val[at(s, j) + op->in[k]] : NULL;
        if (v && !v->grad) v->grad = true, sim_alloc(s, v->bytes);
    }
    for (int k = 0; k < n; k++)
        if (spills(s, saved[k].bytes, op->tag))
            spilled++, kept -= saved[k].value == SAVED_EXTRA ? saved[k].bytes : 0;
    sim_unpack(s, spilled, 0);
    s->act -= kept + (j > s->shape->n_layers && i == s->shape->head.n_ops - 1 ? 0 : op->out);
    for (int k = 0; k < n; k++) /* a record's reference went when its write was seen done */
        if (saved[k].value >= 0 && !spills(s, saved[k].bytes, op->tag)) sim_unref(s, saved[k].value);
}

/* Region [a, b]'s first forward (layer k's ng above its input), then its save. */
static void region_forward(Sim *s, const ChainCost *c, int a, int b)
{
    for (int k = a; k <= b; k++) {
        sim_peak(s, c->layers[k].nograd_peak);
        s->act += c->layers[k].out_bytes - (k > a ? c->layers[k].in_bytes : 0);
    }
    s->val[at(s, b + 2)].refs = 1; /* the caller's x_{b+1} */
    sim_pack(s, (Saved){at(s, a + 1), c->layers[a].in_bytes}, TAG_CHECKPOINT_INPUT);
}

/* Region [a, b]'s backward: its input's gradient and record around its replay (cost.h's
 * terms above what is there: the input, the gradients in and out, the loss); then the
 * gradient in goes. */
static void region_backward(Sim *s, const ChainCost *c, int a, int b)
{
    struct Value *x = &s->val[at(s, a + 1)];
    if (!x->grad) x->grad = true, sim_alloc(s, c->layers[a].grad_bytes);
    size_t need = 0, kept = 0;
    for (int k = a; k <= b; k++) {
        const ChainLayer *l = &c->layers[k];
        need = max_size(need, kept + l->fwd_peak);
        kept += l->kept;
        const size_t back = k < b ? chain_grad_bytes(c, k + 1) + l->back_plain : l->back_held;
        need = max_size(need, kept - l->out_bytes + back - (a == b ? l->grad_bytes : 0));
    }
    const bool spilled = spills(s, c->layers[a].in_bytes, TAG_CHECKPOINT_INPUT);
    sim_unpack(s, spilled, need);
    if (!spilled) sim_unref(s, at(s, a + 1));
    s->act -= c->layers[b].out_bytes;
}

/* The step: the embedding, s's segments, the head, the pop, and backward in reverse. */
static void sim_step(Sim *s, const ChainCost *c, const Schedule *sch)
{
    const int L = c->n_layers, loss = at(s, L + 1) + s->shape->head.n_ops;
    s->now.where = "in the embedding's forward";
    stage_forward(s, 0);
    for (int i = 0; i < sch->n_segments; i++) {
        const Segment *g = &sch->segments[i];
        const int a = g->first, b = a + g->count - 1;
        s->now = (struct At){"in the forward of", a, g->count};
        for (int k = a; g->kind == SEGMENT_PLAIN && k <= b; k++) {
            s->now.first = k, s->now.count = 1;
            stage_forward(s, k + 1);
            if (k > a) sim_unref(s, at(s, k + 1));
        }
        if (g->kind == SEGMENT_REGION) region_forward(s, c, a, b);
        if (a > 0) sim_unref(s, at(s, a + 1));
    }
    sim_unref(s, at(s, 1));
    s->now = (struct At){"in the head (its forward or backward)", 0, 0};
    stage_forward(s, L + 1);
    sim_unref(s, at(s, L + 1));
    sim_finish(s, 0, 0); /* offload_pop */
    sim_prefetch(s, s->n_rec);
    s->val[loss].grad = true, sim_alloc(s, s->val[loss].bytes); /* the seed */
    for (int i = s->shape->head.n_ops - 1; i >= 0; i--) op_backward(s, L + 1, i);
    for (int i = sch->n_segments - 1; i >= 0; i--) {
        const Segment *g = &sch->segments[i];
        const int a = g->first, b = a + g->count - 1;
        s->now = (struct At){"in the replay or backward of", a, g->count};
        for (int k = b; g->kind == SEGMENT_PLAIN && k >= a; k--) {
            s->now = (struct At){"in the backward of", k, 1};
            for (int op = s->shape->layer.n_ops - 1; op >= 0; op--) op_backward(s, k + 1, op);
        }
        if (g->kind == SEGMENT_REGION) region_backward(s, c, a, b);
    }
    s->now = (struct At){"in the embedding's backward", 0, 0};
    for (int i = s->shape->embed.n_ops - 1; i >= 0; i--) op_backward(s, 0, i);
}

RematStatus train_predict_spilled(const ChainCost *c, const Schedule *sch, const OffloadOptions *opts,
                                  MemoryPrediction *p)
{
    if (!c || !c->shape || !sch || sch->n_layers != c->n_layers || !opts)
        return remat_fail(REMAT_EINVAL, "train_predict_spilled: need a schedule, chain_model's cost of its chain and "
                          "offload's options");
    for (int i = 0; i < sch->n_segments; i++)
        if (sch->segments[i].kind > SEGMENT_REGION || sch->segments[i].policy)
            return remat_fail(REMAT_EINVAL, "offload with %s is not predicted (only plain layers and regions "
                              "without a policy are walked)", sch->segments[i].policy ? "a policy" : "Revolve");
    Sim s = {.shape = c->shape, .opts = opts, .behind = opts->io == OFFLOAD_IO_MMAP ? 0 : opts->write_behind,
             .p = p, .act = c->base};
    const int L = c->n_layers, values = at(&s, L + 1) + c->shape->head.n_ops + 1;
    s.val = calloc((size_t)values, sizeof *s.val);
    s.rec = calloc((size_t)values * SAVED_MOST, sizeof *s.rec);
    const bool ok = s.val && s.rec;
    for (int j = 0; ok && j <= L + 1; j++)
        for (int i = 0; i < stage_of(&s, j)->n_ops; i++) s.val[at(&s, j) + i + 1].bytes = stage_of(&s, j)->ops[i].out;
    if (ok) {
        s.val[0] = (struct Value){.refs = 1, .grad = true, .bytes = c->shape->embed.in_bytes}; /* the batch */
        p->kinds[MEM_ACT] = p->kinds[MEM_DISK] = 0;
        sim_step(&s, c, sch);
    }
    free(s.val), free(s.rec);
    return ok ? REMAT_OK : remat_fail(REMAT_ENOMEM, "train_predict_spilled: no memory for %d values", values);
}
