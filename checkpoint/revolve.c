/*
 * revolve.c — binomial checkpointing: the count, the schedule (see revolve.h for the
 * convention and how it maps to the FLOP ledger), and the executor that runs a schedule
 * inside autograd as one tape node, whose backward restores, advances and reverses one layer
 * at a time (autograd's tapes, grad mode, the saved-tensor path; the replay of replay.h).
 *
 * Notation: the chain is x_0 → x_1 → … → x_l; step i (1 ≤ i ≤ l) is layer i − 1 and maps
 * x_{i−1} to x_i. β(s, r) = C(s + r, s) is the most steps s slots can reverse when no step
 * is advanced over more than r times.
 */
#include "checkpoint/revolve.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/replay.h"

/* ---- binomials ------------------------------------------------------------------------ */

/* β(s, j + 1) from beta = β(s, j): C(s+j+1, s) = C(s+j, s)·(s+j+1)/(j+1). The division is
 * exact; it is done before the multiplication (through their gcd) so that only a result
 * above 2^64 overflows, and then UINT64_MAX is returned (bigger than any chain). */
static uint64_t beta_next(uint64_t beta, uint64_t s, uint64_t j)
{
    uint64_t g = beta, rest = j + 1; /* g = gcd(beta, j + 1), by Euclid */
    while (rest) {
        const uint64_t t = g % rest;
        g = rest;
        rest = t;
    }
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
        return remat_fail(REMAT_EINVAL, "revolve: a chain needs l ≥ 1 steps and s ≥ 1 slots "
                          "(got l = %" PRId64 ", s = %" PRId64 ")%s", l, s, t ? "" : ", and somewhere to put it");
    uint64_t beta = 1, sum = 0, reps = 0;
    for (; beta < (uint64_t)l; reps++) {
        sum += (uint64_t)l - beta;
        if (sum > INT64_MAX)
            return remat_fail(REMAT_EINVAL, "revolve: t(l, s) for l = %" PRId64 ", s = %" PRId64
                              " does not fit in 64 bits", l, s);
        beta = beta_next(beta, (uint64_t)s, reps);
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
    for (; beta < (uint64_t)n; reps++) {
        below = beta;
        beta = beta_next(beta, (uint64_t)s, reps);
    }
    /* reps ≥ 1 since n ≥ 2. β(s−1, r−1) = β(s, r−1)·s/(s + r − 1). */
    const uint64_t right_least = below * (uint64_t)s / ((uint64_t)s + reps - 1);
    const uint64_t m = (uint64_t)n - right_least;
    return (int)(m < below ? m : below); /* below = β(s, r−1), the most the left part takes */
}

/* A part of the chain being reversed: steps first+1 … last, from x_first, which is the
 * current state and, if the part has more than one step, kept in slot `slot`. */
typedef struct Part {
    int first, last, slot;
} Part;

/* Appends action a, and counts it: Griewank's t, the slots used, where the backward starts,
 * and layer j's recomputations (the advances over it after the first sweep, and its
 * reversal). */
static void emit(RevolveSchedule *sch, RevolveAction a)
{
    if (a.kind == REVOLVE_ADVANCE) sch->forward_count += a.steps;
    if (a.kind == REVOLVE_STORE && a.slot + 1 > sch->slots_used) sch->slots_used = a.slot + 1;
    if (a.kind == REVOLVE_REVERSE && sch->first_reverse < 0) sch->first_reverse = sch->n_actions;
    if (a.kind == REVOLVE_ADVANCE && sch->first_reverse >= 0)
        for (int j = a.position; j < a.position + a.steps; j++) sch->recomputed[j]++;
    if (a.kind == REVOLVE_REVERSE) sch->recomputed[a.position]++;
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

RevolveSchedule *revolve_schedule_create(int l, int s)
{
    int64_t t, r;
    if (revolve_forward_count(l, s, &t, &r) != REMAT_OK) return NULL; /* l < 1 or s < 1 */
    const int depth = (s < l ? s : l) + 1;
    /* The actions (at most 4l) and the recomputation counts follow the schedule in its block. */
    RevolveSchedule *sch = calloc(1, sizeof *sch + 4 * (size_t)l * sizeof(RevolveAction) + (size_t)l * sizeof(int));
    Part *stack = calloc((size_t)depth, sizeof *stack);
    if (!sch || !stack) {
        free(sch), free(stack);
        return remat_fail_null(REMAT_ENOMEM, "revolve: no memory for the schedule of %d steps", l);
    }
    RevolveAction *actions = (RevolveAction *)(sch + 1);
    *sch = (RevolveSchedule){.steps = l, .slots = s, .repetitions = (int)r, .actions = actions,
                             .first_reverse = -1, .recomputed = (int *)(actions + 4 * (size_t)l)};
    generate(sch, stack);
    free(stack);
    return sch;
}

void revolve_schedule_free(RevolveSchedule *schedule)
{
    free(schedule); /* its actions and counts with it */
}

/* ---- the executor: one layer reversed ------------------------------------------------- */

/* Reverses one layer from its input x: y = layer(x) again, taped, in a replay (replay.h:
 * RECOMPUTE, the generator running on from where the schedule put it), then dy through
 * it: dx = J_layer(x)^T·dy, and the layer's parameters get their gradients on the way.
 * With want_dx, *dx is the input's gradient (a new reference); it accumulates into
 * `dx_into` when one is given (the engine's buffer for the chain's input), else into a
 * fresh buffer. */
static RematStatus reverse_layer(Layer *layer, Tensor *x, const Tensor *dy, Tensor *dx_into, bool want_dx,
                                 TrainCtx *ctx, Tensor **dx)
{
    *dx = NULL;
    ReplayScope scope;
    RematStatus status = replay_enter(&scope, &(ReplayOptions){.record = true, .ctx = ctx});
    if (status != REMAT_OK) return status;
    Var *leaf = replay_input(x, dx_into, want_dx, "revolve.input");
    Var *y = leaf ? layers_forward(&layer, 1, leaf, ctx) : NULL;
    status = y ? replay_backward(&scope, y, dy) : remat_last_status();
    replay_leave(&scope);
    if (status == REMAT_OK && want_dx) {
        /* No gradient reached x (a layer that ignores its input): it is zero. */
        *dx = leaf->grad ? tensor_retain(leaf->grad) : tensor_zeros(MEM_ACT, x->ndim, x->shape);
        if (!*dx) status = remat_last_status();
    }
    var_free(leaf);
    return status;
}

/* ---- the executor: the run's record --------------------------------------------------- */

/* Everything the chain's backward needs; owned by the chain's node. Each stored state is
 * saved by a node of its own (op "revolve.slot", tagged TAG_CHECKPOINT_INPUT, so offload's
 * boundary policy takes Revolve's checkpoints as it takes regions' inputs) on a tape
 * private to the run: the saved-tensor path, with its hooks and the ACT ledger, holds
 * every checkpoint. */
typedef struct Run {
    Layer **layers;
    TrainCtx *ctx;
    RevolveSchedule *schedule;
    Tape *slot_tape;
    struct Slot {
        Node *node;   /* the node holding the slot's state, or NULL */
        Pcg32 rng;    /* the generator's state at the state's position */
    } *slots;         /* slots_used + 1 entries */
    Pcg32 rng_last;   /* at x_{l−1}, where the reversal starts */
    char name[NODE_NAME_LEN];
} Run;

static void run_free(void *state)
{
    Run *run = state;
    if (!run) return;
    tape_free(run->slot_tape); /* releases every stored state still held */
    revolve_schedule_free(run->schedule);
    free(run->slots);
    free(run);
}

static Run *run_create(Layer **layers, int l, int slots, TrainCtx *ctx)
{
    Run *run = calloc(1, sizeof *run);
    if (!run) return remat_fail_null(REMAT_ENOMEM, "revolve: no memory for a run");
    *run = (Run){.layers = layers, .ctx = ctx, .schedule = revolve_schedule_create(l, slots)};
    run->slot_tape = run->schedule ? tape_create() : NULL;
    run->slots = run->slot_tape ? calloc((size_t)run->schedule->slots_used + 1, sizeof *run->slots) : NULL;
    if (!run->slots) {
        if (run->slot_tape) remat_fail(REMAT_ENOMEM, "revolve: no memory for %d slots", run->schedule->slots_used);
        run_free(run);
        return NULL;
    }
    if (l == 1) snprintf(run->name, sizeof run->name, "revolve %.24s, s=%d", layers[0]->name, slots);
    else snprintf(run->name, sizeof run->name, "revolve %.20s-%.20s, s=%d", layers[0]->name,
                  layers[l - 1]->name, slots);
    return run;
}

/* Never backpropagated: it only holds a state. */
static const OpInfo SLOT_OP = {.name = "revolve.slot", .backward = NULL};

/* STORE: keeps the current state in `slot` through the saved-tensor path, with the
 * generator's state at its position. */
static RematStatus store(Run *run, int slot, int position, Var *cur)
{
    if (run->slots[slot].node) node_release_saved(run->slots[slot].node);
    run->slots[slot].node = NULL;
    Tape *outer = tape_set_current(run->slot_tape);
    const bool was = grad_set_enabled(true); /* nodes are recorded with grad mode on only */
    char name[NODE_NAME_LEN];
    snprintf(name, sizeof name, "revolve.slot%d.x_%d", slot, position);
    Var *held = node_record(&SLOT_OP, TAG_CHECKPOINT_INPUT, name, NULL, 0, tensor_retain(cur->value), &cur->value, 1);
    Node *node = held ? held->creator : NULL;
    var_free(held); /* the node's saved tensor holds the state */
    grad_set_enabled(was);
    tape_set_current(outer);
    if (!node) return remat_last_status();
    run->slots[slot] = (struct Slot){node, run->ctx ? run->ctx->rng : (Pcg32){0}};
    return REMAT_OK;
}

/* RESTORE: the state in `slot` becomes the current one, and the generator goes back to
 * where it was at that position, so dropout draws the first forward's masks again. */
static RematStatus restore(Run *run, int slot, bool release, Var **cur)
{
    Node *node = run->slots[slot].node;
    if (!node) return remat_fail(REMAT_ESTATE, "%s: slot %d is empty", run->name, slot);
    Tensor *t = saved_tensor(node, 0);
    Var *v = t ? var_create(t, false, "revolve.state") : NULL;
    if (!v) return remat_last_status();
    var_free(*cur);
    *cur = v;
    if (run->ctx) run->ctx->rng = run->slots[slot].rng;
    if (release) {
        node_release_saved(node);
        run->slots[slot].node = NULL;
    }
    return REMAT_OK;
}

/* ADVANCE, STORE or RESTORE: the actions that move the current state, in both passes. An
 * advance runs its layers in the grad mode the caller set (off: the first forward, or a
 * replay scope that records nothing), dropping each state as soon as the next exists (a
 * state kept in a slot stays alive there). */
static RematStatus move_state(Run *run, const RevolveAction *a, Var **cur)
{
    if (a->kind == REVOLVE_STORE) return store(run, a->slot, a->position, *cur);
    if (a->kind == REVOLVE_RESTORE) return restore(run, a->slot, a->release, cur);
    for (int j = a->position; j < a->position + a->steps; j++) {
        Var *next = layers_forward(&run->layers[j], 1, *cur, run->ctx);
        if (!next) return remat_last_status();
        var_free(*cur);
        *cur = next;
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
    /* The whole reversal is one replay that records nothing itself: advances run in it
     * with grad off, each reversal opens a recording replay of its own, and the generator
     * starts where the first forward reached x_{l−1} and is put back at the end. */
    ReplayScope scope;
    RematStatus status = replay_enter(&scope, &(ReplayOptions){.ctx = run->ctx, .rng = &run->rng_last});
    if (status != REMAT_OK) return status;
    Tensor *last = saved_tensor(node, 0); /* x_{l−1}, the current state */
    Var *cur = last ? var_create(last, false, "revolve.state") : NULL;
    if (!cur) status = remat_last_status();
    node_release_saved(node); /* cur holds x_{l−1} now */
    Tensor *dy = NULL;        /* NULL: dout */
    for (int i = sch->first_reverse; i < sch->n_actions && status == REMAT_OK; i++) {
        const RevolveAction *a = &sch->actions[i];
        if (a->kind != REVOLVE_REVERSE) {
            status = move_state(run, a, &cur);
            continue;
        }
        const bool first_layer = a->position == 0;
        Tensor *dx;
        status = reverse_layer(run->layers[a->position], cur->value, dy ? dy : dout, first_layer ? dinputs[0] : NULL,
                               !first_layer || dinputs[0], run->ctx, &dx);
        var_free(cur); /* the state is used up */
        cur = NULL;
        tensor_free(dy);
        dy = dx;
    }
    tensor_free(dy);
    var_free(cur);
    Tape *outer = tape_set_current(run->slot_tape);
    tape_reset(); /* nothing stays stored once the chain is reversed (or failed) */
    tape_set_current(outer);
    memset(run->slots, 0, ((size_t)sch->slots_used + 1) * sizeof *run->slots);
    replay_leave(&scope);
    return status;
}

static const OpInfo REVOLVE_OP = {.name = "revolve", .backward = revolve_backward};

/* ---- the executor: forward -------------------------------------------------------------- */

Var *revolve_forward(Layer **layers, int l, int slots, Var *x, TrainCtx *ctx)
{
    int j = 0; /* the first NULL layer, if any */
    while (layers && j < l && layers[j]) j++;
    if (!layers || !x || l < 1 || slots < 1 || j < l) {
        char hole[48] = "";
        if (layers && j < l) snprintf(hole, sizeof hole, "; layer %d of %d is NULL", j, l);
        return remat_fail_null(REMAT_EINVAL, "revolve_forward: need layers, an input, l ≥ 1 and slots ≥ 1 (got "
                               "%s, %s, l = %d, slots = %d)%s", layers ? "layers" : "no layers",
                               x ? "an input" : "no input", l, slots, hole);
    }
    if (!grad_enabled()) return layers_forward(layers, l, x, ctx); /* inference, or a region's first forward */

    Run *run = run_create(layers, l, slots, ctx);
    if (!run) return NULL;
    const Pcg32 rng_at_entry = ctx ? ctx->rng : (Pcg32){0};
    /* The first forward, grad off: the actions up to the first reversal (advances to
     * x_{l−1}, storing checkpoints on the way), then the last layer, for the output. */
    const RevolveSchedule *sch = run->schedule;
    Var *last = var_retain(x), *y = NULL;
    grad_set_enabled(false);
    RematStatus status = REMAT_OK;
    for (int i = 0; i < sch->first_reverse && status == REMAT_OK; i++)
        status = move_state(run, &sch->actions[i], &last);
    if (status == REMAT_OK) {
        if (ctx) run->rng_last = ctx->rng;
        y = layers_forward(&layers[l - 1], 1, last, ctx);
    }
    grad_set_enabled(true);
    /* The chain's one node saves x_{l−1}, where the reversal starts. */
    Var *out = y ? replay_record(&REVOLVE_OP, x, y, run->name, run, run_free, last->value) : NULL;
    if (!y) run_free(run);
    var_free(last);
    if (!out && ctx) ctx->rng = rng_at_entry; /* as if the chain had not run */
    return out;
}
