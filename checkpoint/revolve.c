/*
 * revolve.c — binomial checkpointing: the count, the schedule, the executor and the
 * predictor (see revolve.h for the convention and how it maps to the FLOP ledger).
 *
 * Notation: the chain is x_0 → x_1 → … → x_l; step i (1 ≤ i ≤ l) is layer i − 1 and maps
 * x_{i−1} to x_i. β(s, r) = C(s + r, s) is the most steps s slots can reverse when no step
 * is advanced over more than r times.
 */
#include "revolve.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flops.h"
#include "memory.h"

/* ---- binomials ------------------------------------------------------------------------ */

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* β(s, j + 1) from beta = β(s, j): C(s+j+1, s) = C(s+j, s)·(s+j+1)/(j+1). The division is
 * exact; it is done before the multiplication (through their gcd) so that only a result
 * above 2^64 overflows, and then UINT64_MAX is returned (bigger than any chain). */
static uint64_t beta_next(uint64_t beta, uint64_t s, uint64_t j)
{
    const uint64_t g = gcd_u64(beta, j + 1);
    const uint64_t left = beta / g, right = (s + j + 1) / ((j + 1) / g);
    if (right != 0 && left > UINT64_MAX / right) return UINT64_MAX;
    return left * right;
}

/* ---- the count ------------------------------------------------------------------------ */

/* t(l, s) = r·l − C(s + r, s + 1), and C(s + r, s + 1) = Σ_{j<r} C(s + j, s) (the
 * hockey-stick identity), so t = Σ_{j<r} (l − β(s, j)): one term per repetition, each
 * positive. Summing those terms needs no product that could overflow, and the sum can be
 * checked against INT64_MAX term by term. The loop runs r times. */
RematStatus revolve_forward_count(int64_t l, int64_t s, int64_t *t, int64_t *r)
{
    if (l < 1 || s < 1 || !t)
        return remat_fail(REMAT_EINVAL, "revolve: the count needs l ≥ 1 steps and s ≥ 1 slots "
                          "(got l = %" PRId64 ", s = %" PRId64 ")%s", l, s, t ? "" : ", and somewhere to put it");
    uint64_t beta = 1, sum = 0, reps = 0;
    while (beta < (uint64_t)l) {
        sum += (uint64_t)l - beta;
        if (sum > INT64_MAX)
            return remat_fail(REMAT_EINVAL, "revolve: t(l, s) for l = %" PRId64 ", s = %" PRId64
                              " does not fit in 64 bits", l, s);
        beta = beta_next(beta, (uint64_t)s, reps);
        reps++;
    }
    *t = (int64_t)sum;
    if (r) *r = (int64_t)reps;
    return REMAT_OK;
}

/* ---- the schedule --------------------------------------------------------------------- */

/* The optimal split of n ≥ 2 steps with s ≥ 1 slots (one of them holding the first state):
 * how many steps m to advance before storing the next checkpoint. With r the repetition
 * number of (n, s), the binomial recursion β(s, r) = β(s, r−1) + β(s−1, r) says what an
 * optimal split looks like: the left part (m steps, reversed later with all s slots, its
 * steps already advanced over once) needs at most r − 1 repetitions, and the right part
 * (n − m steps, with s − 1 slots) at most r. Because t(·, s) is convex and piecewise linear
 * with slope r between β(s, r−1) and β(s, r), the split costs exactly t(n, s) when
 *
 *     β(s, r−2) ≤ m ≤ β(s, r−1)   and   β(s−1, r−1) ≤ n − m ≤ β(s−1, r):
 *
 * then m + t(n−m, s−1) + t(m, s) = m + r(n−m) − β(s, r−1) + (r−1)m − β(s+1, r−2) =
 * r·n − β(s+1, r−1) by Pascal's rule. We take the largest such m (the first sweep jumps as
 * far as it can): m = min(β(s, r−1), n − β(s−1, r−1)). Sizes are ints, so every binomial
 * here is below n < 2^31 and no product overflows. */
static int optimal_split(int n, int s)
{
    uint64_t beta = 1, reps = 0; /* β(s, reps) */
    uint64_t below = 0;          /* β(s, reps − 1) */
    while (beta < (uint64_t)n) {
        below = beta;
        beta = beta_next(beta, (uint64_t)s, reps);
        reps++;
    }
    /* reps ≥ 1 since n ≥ 2. β(s−1, r−1) = β(s, r−1)·s/(s + r − 1). */
    const uint64_t left_most = below;
    const uint64_t right_least = below * (uint64_t)s / ((uint64_t)s + reps - 1);
    const uint64_t m = (uint64_t)n - right_least;
    return (int)(m < left_most ? m : left_most);
}

/* A part of the chain being reversed: steps first+1 … last, from x_first, which is the
 * current state and, if the part has more than one step, kept in slot `slot`. */
typedef struct Part {
    int first, last, slot;
} Part;

static void emit(RevolveSchedule *sch, RevolveAction a)
{
    if (a.kind == REVOLVE_ADVANCE) sch->forward_count += a.steps;
    if (a.kind == REVOLVE_STORE && a.slot + 1 > sch->slots_used) sch->slots_used = a.slot + 1;
    if (a.kind == REVOLVE_REVERSE && sch->first_reverse < 0) sch->first_reverse = sch->n_actions;
    sch->actions[sch->n_actions++] = a;
}

/* The binomial recursion, with the recursion on the right part kept on an explicit stack
 * (its depth is at most s + 1, which may be large) and the left part done in a loop:
 *
 *   reverse(part from x_f to x_e, slots from k on):
 *       while the part has more than one step:
 *           m = optimal_split(e − f, s − k)
 *           advance m from x_f; if e − (f + m) > 1: store x_{f+m} in slot k + 1
 *           reverse(x_{f+m} … x_e, slots from k + 1 on)
 *           restore x_f from slot k (releasing it when one step is left); e = f + m
 *       reverse step f + 1
 *
 * Each split adds one part, so there are l − 1 advances, at most l − 1 stores and
 * restores, and l reversals: at most 4l actions. */
static void generate(RevolveSchedule *sch, Part *stack)
{
    const int l = sch->steps, s = sch->slots;
    int depth = 0;
    stack[depth++] = (Part){0, l, 0};
    if (l > 1) emit(sch, (RevolveAction){.kind = REVOLVE_STORE, .position = 0, .slot = 0});
    while (depth > 0) {
        Part *p = &stack[depth - 1];
        const int n = p->last - p->first;
        if (n > 1) {
            const int m = optimal_split(n, s - p->slot);
            emit(sch, (RevolveAction){.kind = REVOLVE_ADVANCE, .position = p->first, .steps = m});
            Part right = {p->first + m, p->last, p->slot + 1};
            if (right.last - right.first > 1)
                emit(sch, (RevolveAction){.kind = REVOLVE_STORE, .position = right.first, .slot = right.slot});
            stack[depth++] = right;
            continue;
        }
        emit(sch, (RevolveAction){.kind = REVOLVE_REVERSE, .position = p->first});
        const int done = p->first;
        depth--;
        if (depth == 0) break;
        Part *parent = &stack[depth - 1]; /* its right part is reversed: now its left part */
        parent->last = done;
        emit(sch, (RevolveAction){.kind = REVOLVE_RESTORE, .position = parent->first, .slot = parent->slot,
                                  .release = parent->last - parent->first == 1});
    }
}

/* Layer j's recomputations: the advances over it after the first sweep, and its reversal. */
static void count_recomputations(RevolveSchedule *sch)
{
    for (int i = sch->first_reverse; i < sch->n_actions; i++) {
        const RevolveAction *a = &sch->actions[i];
        if (a->kind == REVOLVE_ADVANCE)
            for (int j = a->position; j < a->position + a->steps; j++) sch->recomputed[j]++;
        if (a->kind == REVOLVE_REVERSE) sch->recomputed[a->position]++;
    }
}

RevolveSchedule *revolve_schedule_create(int l, int s)
{
    if (l < 1 || s < 1) {
        remat_fail(REMAT_EINVAL, "revolve: a schedule needs l ≥ 1 steps and s ≥ 1 slots (got l = %d, s = %d)", l, s);
        return NULL;
    }
    int64_t t, r;
    if (revolve_forward_count(l, s, &t, &r) != REMAT_OK) return NULL;
    const int depth = (s < l ? s : l) + 1;
    RevolveSchedule *sch = calloc(1, sizeof *sch);
    RevolveAction *actions = calloc(4 * (size_t)l, sizeof *actions);
    int *recomputed = calloc((size_t)l, sizeof *recomputed);
    Part *stack = calloc((size_t)depth, sizeof *stack);
    if (!sch || !actions || !recomputed || !stack) {
        free(sch), free(actions), free(recomputed), free(stack);
        remat_fail(REMAT_ENOMEM, "revolve: no memory for the schedule of %d steps", l);
        return NULL;
    }
    *sch = (RevolveSchedule){.steps = l, .slots = s, .repetitions = (int)r, .actions = actions,
                             .first_reverse = -1, .recomputed = recomputed};
    generate(sch, stack);
    free(stack);
    count_recomputations(sch);
    return sch;
}

void revolve_schedule_free(RevolveSchedule *schedule)
{
    if (!schedule) return;
    free(schedule->actions);
    free(schedule->recomputed);
    free(schedule);
}

void revolve_schedule_print(const RevolveSchedule *sch, FILE *out)
{
    if (!sch || !out) return;
    fprintf(out, "revolve: %d steps, %d slots (%d used), r = %d, t = %" PRId64 " forward steps "
            "(Griewank's count); %" PRId64 " layer forwards recomputed\n", sch->steps, sch->slots,
            sch->slots_used, sch->repetitions, sch->forward_count, sch->forward_count + 1);
    for (int i = 0; i < sch->n_actions; i++) {
        const RevolveAction *a = &sch->actions[i];
        if (i == sch->first_reverse) fprintf(out, "  -- backward --\n");
        switch (a->kind) {
        case REVOLVE_ADVANCE:
            fprintf(out, "  advance %d from x_%d to x_%d\n", a->steps, a->position, a->position + a->steps);
            break;
        case REVOLVE_STORE: fprintf(out, "  store x_%d in slot %d\n", a->position, a->slot); break;
        case REVOLVE_RESTORE:
            fprintf(out, "  restore x_%d from slot %d%s\n", a->position, a->slot, a->release ? " (its last use)" : "");
            break;
        case REVOLVE_REVERSE: fprintf(out, "  reverse step %d (layer %d)\n", a->position + 1, a->position); break;
        }
    }
    fprintf(out, "  recomputed per layer:");
    for (int j = 0; j < sch->steps; j++) fprintf(out, " %d", sch->recomputed[j]);
    fprintf(out, "\n");
}

/* ---- the executor: one layer, either way ------------------------------------------------ */

/* Advances the current state through layers[from … from+steps−1] with grad off: each
 * state is dropped as soon as the next exists (a state kept in a slot stays alive there). */
static RematStatus advance(Layer **layers, int from, int steps, Var **cur, TrainCtx *ctx)
{
    const bool was = grad_set_enabled(false);
    RematStatus status = REMAT_OK;
    for (int j = from; j < from + steps && status == REMAT_OK; j++) {
        Var *next = layer_forward(layers[j], *cur, ctx);
        if (!next) {
            status = remat_last_status();
            break;
        }
        var_free(*cur);
        *cur = next;
    }
    grad_set_enabled(was);
    return status;
}

/* Reverses one layer from its input x: y = layer(x) again with grad on into a sub-tape
 * (RECOMPUTE), then dy through it: dx = J_layer(x)^T·dy, and the layer's parameters get
 * their gradients on the way. The sub-tape is freed before returning. With want_dx, *dx
 * is the input's gradient (a new reference); it accumulates into `dx_into` when one is
 * given (the engine's buffer for the chain's input), else into a fresh buffer. */
static RematStatus reverse_layer(Layer *layer, Tensor *x, const Tensor *dy, Tensor *dx_into, bool want_dx,
                                 TrainCtx *ctx, Tensor **dx)
{
    *dx = NULL;
    Tape *sub = tape_create();
    if (!sub) return remat_last_status();
    Var *leaf = var_create(tensor_retain(x), want_dx, "revolve.input");
    if (!leaf) {
        tape_free(sub);
        return remat_last_status();
    }
    if (dx_into) leaf->grad = tensor_retain(dx_into);

    Tape *outer = tape_set_current(sub);
    const bool was = grad_set_enabled(true);
    const Phase phase = flops_set_phase(PHASE_RECOMPUTE);
    Var *y = layer_forward(layer, leaf, ctx);
    RematStatus status = y ? REMAT_OK : remat_last_status();
    /* Backward needs the node that made y, not y's value: let the value go first. */
    Node *root = y ? y->creator : NULL;
    var_free(y);
    flops_set_phase(PHASE_BACKWARD);
    /* dy is only read: backward_node takes a reference for the root's gradient. */
    if (status == REMAT_OK && root) status = backward_node(root, (Tensor *)dy);
    flops_set_phase(phase);
    grad_set_enabled(was);
    tape_set_current(outer);
    tape_free(sub);
    if (status == REMAT_OK && want_dx) {
        /* No gradient reached x (a layer that ignores its input): it is zero. */
        *dx = leaf->grad ? tensor_retain(leaf->grad) : tensor_zeros(MEM_ACT, x->ndim, x->shape);
        if (!*dx) status = remat_last_status();
    }
    var_free(leaf);
    return status;
}

/* ---- the executor: the run's record --------------------------------------------------- */

/* Everything the chain's backward needs; owned by the "revolve" node. Each stored state is
 * saved by a node of its own ("revolve.slot", op "checkpoint", so offload's boundary
 * policy takes Revolve's checkpoints as it takes regions' inputs) on a tape private to the
 * run: the saved-tensor path, with its hooks and the ACT ledger, holds every checkpoint. */
typedef struct Run {
    Layer **layers;
    TrainCtx *ctx;
    RevolveSchedule *schedule;
    Tape *slot_tape;
    Node **slot_node; /* slots_used entries: the node holding each slot's state, or NULL */
    Pcg32 *slot_rng;  /* the generator's state at each slot's position */
    Pcg32 rng_last;   /* at x_{l−1}, where the reversal starts */
    char name[NODE_NAME_LEN];
} Run;

static void run_free(void *state)
{
    Run *run = state;
    if (!run) return;
    tape_free(run->slot_tape); /* releases every stored state still held */
    revolve_schedule_free(run->schedule);
    free(run->slot_node);
    free(run->slot_rng);
    free(run);
}

static Run *run_create(Layer **layers, int l, int slots, TrainCtx *ctx)
{
    Run *run = calloc(1, sizeof *run);
    if (!run) {
        remat_fail(REMAT_ENOMEM, "revolve: no memory for a run");
        return NULL;
    }
    *run = (Run){.layers = layers, .ctx = ctx, .schedule = revolve_schedule_create(l, slots)};
    const size_t n = run->schedule && run->schedule->slots_used > 0 ? (size_t)run->schedule->slots_used : 1;
    run->slot_tape = run->schedule ? tape_create() : NULL;
    run->slot_node = calloc(n, sizeof *run->slot_node);
    run->slot_rng = calloc(n, sizeof *run->slot_rng);
    if (!run->schedule || !run->slot_tape || !run->slot_node || !run->slot_rng) {
        if (run->schedule && run->slot_tape) remat_fail(REMAT_ENOMEM, "revolve: no memory for %zu slots", n);
        run_free(run);
        return NULL;
    }
    if (l == 1) snprintf(run->name, sizeof run->name, "revolve %.24s, s=%d", layers[0]->name, slots);
    else snprintf(run->name, sizeof run->name, "revolve %.20s-%.20s, s=%d", layers[0]->name, layers[l - 1]->name, slots);
    return run;
}

static const OpInfo SLOT_OP = {"checkpoint", NULL}; /* never backpropagated: it only holds a state */

/* STORE: keeps the current state in `slot` through the saved-tensor path, with the
 * generator's state at its position. */
static RematStatus store(Run *run, int slot, int position, Var *cur)
{
    if (run->slot_node[slot]) node_release_saved(run->slot_node[slot]);
    run->slot_node[slot] = NULL;
    Tape *outer = tape_set_current(run->slot_tape);
    const bool was = grad_set_enabled(true); /* nodes are recorded with grad mode on only */
    RematStatus status;
    Node *node = node_create_always(&SLOT_OP, "revolve.slot", NULL, 0, cur->value, &status);
    if (node) {
        snprintf(node->name, sizeof node->name, "revolve.slot%d.x_%d", slot, position);
        status = save_for_backward(node, cur->value);
    }
    grad_set_enabled(was);
    tape_set_current(outer);
    if (status != REMAT_OK) return status;
    run->slot_node[slot] = node;
    if (run->ctx) run->slot_rng[slot] = run->ctx->rng;
    return REMAT_OK;
}

/* RESTORE: the state in `slot` becomes the current one, and the generator goes back to
 * where it was at that position, so dropout draws the first forward's masks again. */
static RematStatus restore(Run *run, int slot, bool release, Var **cur)
{
    Node *node = run->slot_node[slot];
    if (!node) return remat_fail(REMAT_ESTATE, "%s: slot %d is empty", run->name, slot);
    Tensor *t = saved_tensor(node, 0);
    Var *v = t ? var_create(t, false, "revolve.state") : NULL;
    if (!v) return remat_last_status();
    var_free(*cur);
    *cur = v;
    if (run->ctx) run->ctx->rng = run->slot_rng[slot];
    if (release) {
        node_release_saved(node);
        run->slot_node[slot] = NULL;
    }
    return REMAT_OK;
}

/* ---- the executor: backward ------------------------------------------------------------ */

/* Backward of the chain: the schedule's actions from the first reversal on. dy starts as
 * the chain output's gradient (the engine's) and becomes each reversed layer's input
 * gradient; the first layer's accumulates into dinputs[0] when the chain's input needs it. */
static RematStatus revolve_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    Run *run = node->state;
    const RevolveSchedule *sch = run->schedule;
    TrainCtx *ctx = run->ctx;
    const Pcg32 rng_now = ctx ? ctx->rng : (Pcg32){0};
    if (ctx) ctx->rng = run->rng_last;

    Tensor *last = saved_tensor(node, 0); /* x_{l−1}, the current state */
    Var *cur = last ? var_create(last, false, "revolve.state") : NULL;
    RematStatus status = cur ? REMAT_OK : remat_last_status();
    node_release_saved(node); /* cur holds x_{l−1} now */
    Tensor *dy = NULL;        /* NULL: dout */
    for (int i = sch->first_reverse; i < sch->n_actions && status == REMAT_OK; i++) {
        const RevolveAction *a = &sch->actions[i];
        switch (a->kind) {
        case REVOLVE_ADVANCE: {
            const Phase phase = flops_set_phase(PHASE_RECOMPUTE);
            status = advance(run->layers, a->position, a->steps, &cur, ctx);
            flops_set_phase(phase);
            break;
        }
        case REVOLVE_STORE: status = store(run, a->slot, a->position, cur); break;
        case REVOLVE_RESTORE: status = restore(run, a->slot, a->release, &cur); break;
        case REVOLVE_REVERSE: {
            const bool first_layer = a->position == 0;
            Tensor *dx;
            status = reverse_layer(run->layers[a->position], cur->value, dy ? dy : dout,
                                   first_layer ? dinputs[0] : NULL, !first_layer || dinputs[0], ctx, &dx);
            var_free(cur); /* the state is used up */
            cur = NULL;
            tensor_free(dy);
            dy = dx;
            break;
        }
        }
    }
    tensor_free(dy);
    var_free(cur);
    tape_reset(run->slot_tape); /* nothing stays stored once the chain is reversed (or failed) */
    memset(run->slot_node, 0, (size_t)(sch->slots_used > 0 ? sch->slots_used : 1) * sizeof *run->slot_node);
    if (ctx) ctx->rng = rng_now;
    return status;
}

static const OpInfo REVOLVE_OP = {"revolve", revolve_backward};

/* ---- the executor: forward -------------------------------------------------------------- */

static Var *run_plainly(Layer **layers, int l, Var *x, TrainCtx *ctx)
{
    Var *cur = var_retain(x);
    if (advance(layers, 0, l, &cur, ctx) == REMAT_OK) return cur;
    var_free(cur);
    return NULL;
}

/* The first forward: the actions up to the first reversal (advances to x_{l−1}, storing
 * checkpoints on the way), then the last layer, for the output. Grad mode is off: nothing
 * but the checkpoints is kept. */
static Var *first_forward(Run *run, Var *x, Var **last)
{
    const RevolveSchedule *sch = run->schedule;
    Var *cur = var_retain(x);
    RematStatus status = REMAT_OK;
    for (int i = 0; i < sch->first_reverse && status == REMAT_OK; i++) {
        const RevolveAction *a = &sch->actions[i];
        if (a->kind == REVOLVE_STORE) status = store(run, a->slot, a->position, cur);
        else status = advance(run->layers, a->position, a->steps, &cur, run->ctx);
    }
    Var *y = NULL;
    if (status == REMAT_OK) {
        if (run->ctx) run->rng_last = run->ctx->rng;
        const bool was = grad_set_enabled(false);
        y = layer_forward(run->layers[sch->steps - 1], cur, run->ctx);
        grad_set_enabled(was);
    }
    if (!y) {
        var_free(cur);
        return NULL;
    }
    *last = cur;
    return y;
}

Var *revolve_forward(Layer **layers, int l, int slots, Var *x, TrainCtx *ctx)
{
    if (!layers || !x || l < 1 || slots < 1) {
        remat_fail(REMAT_EINVAL, "revolve_forward: need layers, an input, l ≥ 1 and slots ≥ 1 (got %s, %s, "
                   "l = %d, slots = %d)", layers ? "layers" : "no layers", x ? "an input" : "no input", l, slots);
        return NULL;
    }
    for (int j = 0; j < l; j++) {
        if (!layers[j]) {
            remat_fail(REMAT_EINVAL, "revolve_forward: layer %d of %d is NULL", j, l);
            return NULL;
        }
    }
    if (!grad_enabled()) return run_plainly(layers, l, x, ctx);

    Run *run = run_create(layers, l, slots, ctx);
    if (!run) return NULL;
    Var *last = NULL;
    Var *y = first_forward(run, x, &last);
    RematStatus status = y ? REMAT_OK : remat_last_status();
    /* One node for the whole chain, recorded even when x needs no gradient: the layers'
     * parameters do. It saves x_{l−1}, where the reversal starts. */
    Node *node = NULL;
    if (status == REMAT_OK) node = node_create_always(&REVOLVE_OP, "revolve", &x, 1, y->value, &status);
    if (node) {
        node->state = run;
        node->state_free = run_free;
        run = NULL;
        snprintf(node->name, sizeof node->name, "%s", ((Run *)node->state)->name);
        status = save_for_backward(node, last->value);
        if (status != REMAT_OK) node_discard(node);
    }
    var_free(last);
    run_free(run);
    if (status != REMAT_OK) {
        var_free(y);
        return NULL;
    }
    Var *out = var_from_op(tensor_retain(y->value), node);
    var_free(y);
    return out;
}

/* ---- the predictor ---------------------------------------------------------------------- */

/* Parameter gradients as they were before a measurement: a copy of each, or NULL for
 * none yet (then the measurement's buffer is dropped afterwards). */
typedef struct GradBackup {
    Tensor *copy[LAYER_MAX_PARAMS];
    bool had[LAYER_MAX_PARAMS];
} GradBackup;

static RematStatus grads_backup(const Layer *layer, GradBackup *b)
{
    *b = (GradBackup){0};
    for (int i = 0; i < layer->n_params; i++) {
        const Tensor *g = layer->params[i].var->grad;
        b->had[i] = g != NULL;
        if (g && !(b->copy[i] = tensor_clone(g, MEM_WORK))) {
            for (int k = 0; k < i; k++) tensor_free(b->copy[k]);
            return remat_last_status();
        }
    }
    return REMAT_OK;
}

static void grads_restore(Layer *layer, GradBackup *b)
{
    for (int i = 0; i < layer->n_params; i++) {
        Var *p = layer->params[i].var;
        if (b->had[i]) {
            memcpy(p->grad->data, b->copy[i]->data, b->copy[i]->bytes);
            tensor_free(b->copy[i]);
        } else {
            tensor_free(p->grad);
            p->grad = NULL;
        }
    }
}

/* Runs the layer as an advance does, then reverses it as the backward does, and reads the
 * ledgers: the peaks above what was alive before each. */
static RematStatus measure(Layer *layer, Var *x, TrainCtx *ctx, RevolveLayerCost *cost)
{
    const uint64_t flops_before = flops_total();
    size_t base = mem_current(MEM_ACT);
    mem_reset_peaks();
    Var *y = var_retain(x);
    RematStatus status = advance(&layer, 0, 1, &y, ctx);
    if (status != REMAT_OK) {
        var_free(y);
        return status;
    }
    *cost = (RevolveLayerCost){.input_bytes = x->value->bytes, .forward_bytes = mem_peak(MEM_ACT) - base,
                               .forward_flops = flops_total() - flops_before};
    Tensor *dy = tensor_zeros(MEM_ACT, y->value->ndim, y->value->shape);
    var_free(y);
    if (!dy) return remat_last_status();
    base = mem_current(MEM_ACT);
    mem_reset_peaks();
    Tensor *dx;
    status = reverse_layer(layer, x->value, dy, NULL, true, ctx, &dx);
    cost->reverse_bytes = mem_peak(MEM_ACT) - base;
    tensor_free(dx);
    tensor_free(dy);
    return status;
}

RematStatus revolve_measure_layer(Layer *layer, Var *x, TrainCtx *ctx, RevolveLayerCost *cost)
{
    if (!layer || !x || !cost)
        return remat_fail(REMAT_EINVAL, "revolve_measure_layer: %s is NULL", !layer ? "the layer" : !x ? "the input" : "cost");
    GradBackup backup;
    RematStatus status = grads_backup(layer, &backup);
    if (status != REMAT_OK) return status;
    const FlopCounts flops = flops_snapshot();
    const Pcg32 rng = ctx ? ctx->rng : (Pcg32){0};
    RevolveLayerCost measured;
    status = measure(layer, x, ctx, &measured);
    if (ctx) ctx->rng = rng;
    flops_restore(&flops);
    grads_restore(layer, &backup);
    if (status == REMAT_OK) *cost = measured;
    return status;
}

/* What is alive while the executor runs, in bytes, as the schedule is walked:
 *
 *   states     x_0 and every state kept in a slot, plus the current state when it is not
 *              also in a slot: a bytes each (the executor's input is counted: a slot keeps
 *              it alive whether or not the caller does);
 *   gradients  in the backward only: the chain output's gradient, given to the executor
 *              and alive until it returns; the chain input's gradient buffer, when the
 *              input needs one; and the gradient between two reversals (the last reversed
 *              layer's input gradient): a bytes each;
 *   the layer  forward_bytes on top while a layer runs with grad off, reverse_bytes while
 *              one is reversed.
 *
 * The peak is the most of these at any moment. The very last reversal (layer 0) is
 * counted with the full reverse_bytes though its input gradient may go to the engine's
 * buffer or not be computed at all; it never sets the peak when l ≥ 2, because the
 * reversal before it holds one more state (x_1) and no fewer gradients. */
typedef struct Walk {
    const RevolveLayerCost *layer;
    size_t live;       /* bytes of states and gradients alive */
    size_t peak;
    bool cur_in_slot;  /* the current state is also kept in a slot */
    bool dy_separate;  /* a gradient between reversals is alive (not the engine's dout) */
} Walk;

static void walk_peak(Walk *w, size_t on_top)
{
    if (w->live + on_top > w->peak) w->peak = w->live + on_top;
}

static void walk_advance(Walk *w, int steps)
{
    const size_t a = w->layer->input_bytes;
    for (int j = 0; j < steps; j++) {
        walk_peak(w, w->layer->forward_bytes);
        w->live += a; /* the next state */
        if (!w->cur_in_slot) w->live -= a;
        w->cur_in_slot = false;
    }
}

static void walk_action(Walk *w, const RevolveAction *act)
{
    const size_t a = w->layer->input_bytes;
    switch (act->kind) {
    case REVOLVE_ADVANCE: walk_advance(w, act->steps); break;
    case REVOLVE_STORE: w->cur_in_slot = true; break;
    case REVOLVE_RESTORE: /* the slot's state becomes current: no new bytes */
        w->cur_in_slot = !act->release;
        break;
    case REVOLVE_REVERSE:
        walk_peak(w, w->layer->reverse_bytes);
        if (!w->cur_in_slot) w->live -= a; /* the state is used up */
        if (w->dy_separate) w->live -= a;
        if (act->position > 0) w->live += a; /* the next gradient between reversals */
        w->dy_separate = act->position > 0;
        w->cur_in_slot = false;
        break;
    }
}

RematStatus revolve_predict(const RevolveSchedule *schedule, const RevolveLayerCost *layer, bool input_needs_grad,
                            RevolvePrediction *out)
{
    if (!schedule || !layer || !out)
        return remat_fail(REMAT_EINVAL, "revolve_predict: %s is NULL",
                          !schedule ? "the schedule" : !layer ? "the layer's cost" : "out");
    const size_t a = layer->input_bytes;
    Walk w = {.layer = layer, .live = a}; /* x_0, the current state */
    for (int i = 0; i < schedule->first_reverse; i++) walk_action(&w, &schedule->actions[i]);
    walk_peak(&w, layer->forward_bytes); /* the last layer, for the output; x_{l−1} stays */
    RevolvePrediction p = {.forward_peak = w.peak};

    /* The backward: the output x_l is gone (the loss has used it), x_{l−1} is the current
     * state, and the output's gradient (and the input's buffer) have arrived. */
    w.live += a + (input_needs_grad ? a : 0);
    w.peak = 0;
    for (int i = schedule->first_reverse; i < schedule->n_actions; i++) walk_action(&w, &schedule->actions[i]);
    p.backward_peak = w.peak;

    int64_t recomputed = 0;
    for (int j = 0; j < schedule->steps; j++) recomputed += schedule->recomputed[j];
    p.forward_flops = (uint64_t)schedule->steps * layer->forward_flops;
    p.recompute_flops = (uint64_t)recomputed * layer->forward_flops;
    *out = p;
    return REMAT_OK;
}
