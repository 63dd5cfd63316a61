/*
 * revolve.c — binomial checkpointing: the count and the schedule (see revolve.h for the
 * convention and how it maps to the FLOP ledger). The executor that runs a schedule inside
 * autograd is in revolve_run.c; the chain cost model predicts it (cost.c).
 *
 * Notation: the chain is x_0 → x_1 → … → x_l; step i (1 ≤ i ≤ l) is layer i − 1 and maps
 * x_{i−1} to x_i. β(s, r) = C(s + r, s) is the most steps s slots can reverse when no step
 * is advanced over more than r times.
 */
#include "checkpoint/revolve.h"

#include <inttypes.h>
#include <stdlib.h>

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
    RevolveSchedule *sch = calloc(1, sizeof *sch);
    RevolveAction *actions = calloc(4 * (size_t)l, sizeof *actions);
    int *recomputed = calloc((size_t)l, sizeof *recomputed);
    Part *stack = calloc((size_t)depth, sizeof *stack);
    if (!sch || !actions || !recomputed || !stack) {
        free(sch), free(actions), free(recomputed), free(stack);
        return remat_fail_null(REMAT_ENOMEM, "revolve: no memory for the schedule of %d steps", l);
    }
    *sch = (RevolveSchedule){.steps = l, .slots = s, .repetitions = (int)r, .actions = actions,
                             .first_reverse = -1, .recomputed = recomputed};
    generate(sch, stack);
    free(stack);
    return sch;
}

void revolve_schedule_free(RevolveSchedule *schedule)
{
    if (!schedule) return;
    free(schedule->actions);
    free(schedule->recomputed);
    free(schedule);
}
