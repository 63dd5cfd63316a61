/*
 * test_dtr.c — DTR's eviction policy (checkpoint/dtr.h) and its unit-cost chain.
 *
 * The score on hand-made graphs (the evicted neighbourhood up and down, each entry once,
 * a resident entry ending the walk), the choice among equal scores, the order of a
 * recursive rematerialization, and DTR's every step on a chain small enough to trace by
 * hand. The chain's optimum (Revolve's count) equals an exact dynamic program over
 * checkpoints, which equals a search of every schedule the memory model allows (any
 * eviction, any recompute of any tensor, gradients too) for n ≤ 8; DTR is never below it,
 * and equals, on bench_dtr's grid, what DTR's own simulator (simrd) gives. Bad input, a
 * budget too small and a failing op are clear errors that lose nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/dtr.h"

/* ---- hooks that record what the pool did ------------------------------------------------ */

typedef struct Log {
    char text[512]; /* "+a" ran, "*a" recomputed, "-a" dropped, entries named 'a' + id */
    int fail_at;    /* run of this entry fails (recomputes only), -1 never */
} Log;

static RematStatus log_run(void *ctx, int id, bool recompute)
{
    Log *log = ctx;
    if (recompute && id == log->fail_at) return remat_fail(REMAT_EIO, "the op of %c failed", 'a' + id);
    snprintf(log->text + strlen(log->text), sizeof log->text - strlen(log->text), " %c%c", recompute ? '*' : '+',
             'a' + id);
    return REMAT_OK;
}

static void log_drop(void *ctx, int id)
{
    Log *log = ctx;
    snprintf(log->text + strlen(log->text), sizeof log->text - strlen(log->text), " -%c", 'a' + id);
}

static DtrPool *logged_pool(size_t budget, Log *log)
{
    *log = (Log){.fail_at = -1};
    DtrPool *pool = dtr_pool_create(budget, 64, (DtrHooks){log_run, log_drop, log});
    assert_non_null(pool);
    return pool;
}

/* Adds and computes an entry of `bytes` and `cost` with up to two inputs (-1: none). */
static int op(DtrPool *pool, size_t bytes, double cost, int in0, int in1)
{
    int in[2], n = 0;
    if (in0 >= 0) in[n++] = in0;
    if (in1 >= 0) in[n++] = in1;
    const int id = dtr_add(pool, bytes, cost, in, n);
    assert_true(id >= 0);
    assert_int_equal(dtr_compute(pool, id), REMAT_OK);
    return id;
}

/* How many entries are resident and unlocked. */
static int evictable(const DtrPool *pool)
{
    int count = 0;
    for (int i = 0; i < pool->n_entries; i++)
        count += pool->entries[i].state == DTR_RESIDENT && pool->entries[i].locks == 0;
    return count;
}

/* ---- the score -------------------------------------------------------------------------- */

/* a → b → c → d → e, costs 1, 2, 4, 8, 16; b and d evicted (released). c's neighbourhood
 * is b above (a is resident and ends the walk) and d below (e ends it): c = 4 + 2 + 8.
 * c was last used when d was computed, at clock 1 + 2 + 4 = 7; the clock is now 31. */
static void test_score_counts_the_evicted_neighbourhood(void **state)
{
    (void)state;
    DtrPool *pool = dtr_pool_create(1000, 64, (DtrHooks){0});
    const int a = op(pool, 10, 1, -1, -1), b = op(pool, 10, 2, a, -1), c = op(pool, 3, 4, b, -1);
    const int d = op(pool, 10, 8, c, -1), e = op(pool, 10, 16, d, -1);
    dtr_release(pool, b);
    dtr_release(pool, d);
    assert_int_equal(pool->used, 10 + 3 + 10);
    assert_true(pool->clock == 31);
    assert_true(dtr_score(pool, c) == 14.0 / (3.0 * 24.0));
    assert_true(dtr_score(pool, a) == (1.0 + 2.0) / (10.0 * 30.0)); /* b below, then c ends it */
    assert_true(isinf(dtr_score(pool, e))); /* just computed: staleness 0 */
    dtr_pool_free(pool);
}

/* A diamond x → y, x → z, (y, z) → w with y, z and w evicted: w is reached twice from x
 * and counted once; an entry just computed (staleness 0) scores +inf. */
static void test_score_counts_each_neighbour_once(void **state)
{
    (void)state;
    DtrPool *pool = dtr_pool_create(100, 64, (DtrHooks){0});
    const int x = op(pool, 1, 1, -1, -1), y = op(pool, 1, 2, x, -1), z = op(pool, 1, 4, x, -1);
    const int w = op(pool, 1, 8, y, z), v = op(pool, 1, 16, x, -1);
    dtr_release(pool, y);
    dtr_release(pool, z);
    dtr_release(pool, w);
    /* x was last read by v's op, at clock 15; now 31. */
    assert_true(dtr_score(pool, x) == (1.0 + 2.0 + 4.0 + 8.0) / 16.0);
    assert_true(isinf(dtr_score(pool, v)));
    dtr_pool_free(pool);
}

/* The smallest score is chosen; of equal scores, the entry that became evictable last, as
 * DTR's simulator does. */
static void test_choose_takes_the_smallest_score_and_the_last_of_equals(void **state)
{
    (void)state;
    DtrPool *pool = dtr_pool_create(100, 64, (DtrHooks){0});
    const int p = op(pool, 1, 1, -1, -1), q = op(pool, 1, 1, -1, -1);
    op(pool, 1, 2, -1, -1);
    /* Clock 4: p scores 1/(1·3), q 1/(1·2), the last +inf. */
    assert_int_equal(dtr_choose(pool), p);
    dtr_release(pool, p);
    assert_int_equal(dtr_choose(pool), q);
    dtr_pool_free(pool);

    /* u and t are read by w's op at clock 2; at clock 4 both score 1/(1·2), w 1/(1·1). The
     * evictable order is then w, u, t (an op's inputs come back after it, in order), x. */
    pool = dtr_pool_create(100, 64, (DtrHooks){0});
    const int u = op(pool, 1, 1, -1, -1), t = op(pool, 1, 1, -1, -1);
    op(pool, 1, 1, u, t);
    op(pool, 1, 1, -1, -1);
    assert_true(dtr_score(pool, u) == 0.5 && dtr_score(pool, t) == 0.5);
    assert_int_equal(dtr_choose(pool), t);
    dtr_pool_free(pool);
}

/* ---- computing -------------------------------------------------------------------------- */

/* A chain a → b → c with a and b evicted: d, reading c and a, recomputes a first (its
 * inputs in order: c is resident, a is not), then nothing else; e, reading b, recomputes b
 * from a, which is resident again. */
static void test_rematerialization_runs_evicted_inputs_first_in_order(void **state)
{
    (void)state;
    Log log;
    DtrPool *pool = logged_pool(100, &log);
    const int a = op(pool, 1, 1, -1, -1), b = op(pool, 1, 1, a, -1), c = op(pool, 1, 1, b, -1);
    dtr_release(pool, a);
    dtr_release(pool, b);
    op(pool, 1, 1, c, a);
    op(pool, 1, 1, b, -1);
    assert_string_equal(log.text, " +a +b +c -a -b *a +d *b +e");
    assert_int_equal(pool->recomputes, 2);
    dtr_pool_free(pool);

    /* A deeper one: every input evicted, recomputed from the bottom up. */
    pool = logged_pool(100, &log);
    const int p = op(pool, 1, 1, -1, -1), q = op(pool, 1, 1, p, -1), r = op(pool, 1, 1, q, -1);
    dtr_release(pool, p);
    dtr_release(pool, q);
    dtr_release(pool, r);
    op(pool, 1, 1, r, -1);
    assert_string_equal(log.text, " +a +b +c -a -b -c *a *b *c +d");
    dtr_pool_free(pool);
}

/* DTR on the unit chain of 4 ops at B = 3, traced by hand (clock in brackets). Forward:
 * f0 [1], f1 [2], f2 [3]; f3 needs room: f0 scores 1/(1·2) (last read at 1), f1 1/(1·1)
 * (read at 2): f0 goes. f3 [4] is released; b3 from f2, f2 released; b2 from f1 and b3;
 * b3 and f1 released; b1 needs f0: recomputed from nothing, the one extra compute; then
 * b0. The optimum is 1 too (n = 4 at B = 3: (n − 3)(n − 2)/2). */
static void test_the_unit_chain_of_four_by_hand(void **state)
{
    (void)state;
    Log log;
    DtrPool *pool = logged_pool(3, &log);
    const int n = 4;
    for (int i = 0; i < n; i++) op(pool, 1, 1, i - 1, -1);
    for (int i = n - 1; i >= 0; i--) {
        dtr_release(pool, i);
        op(pool, 1, 1, i > 0 ? i - 1 : -1, i < n - 1 ? 2 * n - 2 - i : -1);
        if (i < n - 1) dtr_release(pool, 2 * n - 2 - i);
    }
    /* entries: f0..f3 = a..d, b3 = e, b2 = f, b1 = g, b0 = h */
    assert_string_equal(log.text, " +a +b +c -a +d -d +e -c +f -e -b *a +g -f -a +h -g");
    int64_t extra = -1;
    assert_int_equal(dtr_chain_extra(n, 3, &extra), REMAT_OK);
    assert_int_equal(extra, 1);
    assert_int_equal(dtr_chain_optimum(n, 3, &extra), REMAT_OK);
    assert_int_equal(extra, 1);
    dtr_pool_free(pool);
}

/* ---- errors ------------------------------------------------------------------------------ */

static void test_bad_entries_are_refused_and_change_nothing(void **state)
{
    (void)state;
    assert_null(dtr_pool_create(0, 10, (DtrHooks){0}));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_null(dtr_pool_create(10, 0, (DtrHooks){0}));
    DtrPool *pool = dtr_pool_create(10, 2, (DtrHooks){0});
    const int a = op(pool, 1, 1, -1, -1);
    const int unknown = 5, many[DTR_MAX_INPUTS + 1] = {0};
    assert_int_equal(dtr_add(pool, 0, 1, NULL, 0), -1);
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_int_equal(dtr_add(pool, 11, 1, NULL, 0), -1);
    assert_non_null(strstr(remat_last_error(), "1 to 10 bytes"));
    assert_int_equal(dtr_add(pool, 1, -1, NULL, 0), -1);
    assert_int_equal(dtr_add(pool, 1, 1, &unknown, 1), -1);
    assert_int_equal(dtr_add(pool, 1, 1, many, DTR_MAX_INPUTS + 1), -1);
    assert_int_equal(pool->n_entries, 1);
    assert_int_equal(pool->entries[a].first_reader, -1);
    assert_int_equal(dtr_compute(pool, a), REMAT_ESTATE); /* computed already */
    assert_int_equal(dtr_compute(pool, 7), REMAT_ESTATE);
    assert_non_null(strstr(remat_last_error(), "entry 7"));
    op(pool, 1, 1, a, -1); /* the pool is full now */
    assert_int_equal(dtr_add(pool, 1, 1, NULL, 0), -1);
    assert_non_null(strstr(remat_last_error(), "entry 2 of a pool of 2"));
    assert_int_equal(pool->used, 2);
    assert_true(pool->clock == 2);
    dtr_pool_free(pool);
    dtr_pool_free(NULL);
}

/* Two units, both inputs of the op that needs a third: nothing evictable. The op stays
 * pending, its inputs resident and evictable again, the pool's counts as they were. */
static void test_a_budget_too_small_is_out_of_memory_and_loses_nothing(void **state)
{
    (void)state;
    Log log;
    DtrPool *pool = logged_pool(2, &log);
    const int a = op(pool, 1, 1, -1, -1), b = op(pool, 1, 1, a, -1);
    const int c = dtr_add(pool, 1, 1, (int[]){a, b}, 2);
    assert_int_equal(dtr_compute(pool, c), REMAT_EOOM);
    assert_non_null(strstr(remat_last_error(), "out of memory: 1 bytes to compute, 2 of the budget's 2 resident"));
    assert_int_equal(pool->entries[c].state, DTR_PENDING);
    assert_int_equal(pool->entries[a].locks + pool->entries[b].locks, 0);
    assert_int_equal(evictable(pool), 2);
    assert_int_equal(pool->used, 2);
    assert_int_equal(pool->evictions, 0);
    assert_string_equal(log.text, " +a +b");
    /* The pool goes on: an op that fits evicts b, which scores lower than a. */
    op(pool, 1, 1, a, -1);
    assert_string_equal(log.text, " +a +b -b +d");
    dtr_pool_free(pool);
}

/* A failing op's error comes back from the recursion, leaving nothing locked; the op can
 * be asked again. */
static void test_a_failing_op_is_an_error_that_loses_nothing(void **state)
{
    (void)state;
    Log log;
    DtrPool *pool = logged_pool(100, &log);
    const int p = op(pool, 1, 1, -1, -1), q = op(pool, 1, 1, p, -1);
    dtr_release(pool, p);
    log.fail_at = p;
    const int r = dtr_add(pool, 1, 1, (int[]){q, p}, 2);
    assert_int_equal(dtr_compute(pool, r), REMAT_EIO);
    assert_string_equal(remat_last_error(), "the op of a failed");
    assert_int_equal(pool->entries[r].state, DTR_PENDING);
    assert_int_equal(pool->entries[q].locks, 0);
    assert_int_equal(evictable(pool), 1);
    log.fail_at = -1;
    assert_int_equal(dtr_compute(pool, r), REMAT_OK);
    assert_string_equal(log.text, " +a +b -a *a +c");
    dtr_pool_free(pool);
}

static void test_the_chain_refuses_what_it_cannot_model(void **state)
{
    (void)state;
    int64_t extra = 42;
    assert_int_equal(dtr_chain_extra(2, 10, &extra), REMAT_EINVAL);
    assert_int_equal(dtr_chain_optimum(10, 2, &extra), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "B >= 3"));
    assert_int_equal(dtr_chain_optimum(DTR_CHAIN_MAX + 1, 10, &extra), REMAT_EINVAL);
    assert_int_equal(dtr_chain_extra(10, 4, NULL), REMAT_EINVAL);
    assert_int_equal(extra, 42);
}

/* ---- the unit chain against every schedule ------------------------------------------------ */

/* Every schedule of the chain's memory model, searched: a state is (the program's next
 * action, the set of resident tensors); moves are the program's action (release, or
 * compute its new tensor if its inputs are resident and it fits), evicting any resident
 * tensor (free), and recomputing any tensor made before whose inputs are resident, within
 * B (one compute). A 0-1 breadth-first search gives the fewest recomputes. Tensors: f_i
 * is i, b_i is n + i. */
enum { BRUTE_N = 8, MAX_ACTIONS = 4 * BRUTE_N };

typedef struct Chain {
    int n, actions;
    int tensor[MAX_ACTIONS];  /* each action's tensor */
    bool computes[MAX_ACTIONS]; /* compute it (else release it) */
    unsigned inputs[2 * BRUTE_N];
    unsigned made[MAX_ACTIONS + 1]; /* the tensors the actions before have made */
} Chain;

static void chain_program(Chain *ch, int n)
{
    *ch = (Chain){.n = n};
    for (int i = 0; i < n; i++) {
        ch->inputs[i] = i ? 1u << (i - 1) : 0;
        ch->inputs[n + i] = (i > 0 ? 1u << (i - 1) : 0) | (i < n - 1 ? 1u << (n + i + 1) : 0);
        ch->tensor[ch->actions] = i;
        ch->computes[ch->actions++] = true;
    }
    for (int i = n - 1; i >= 0; i--) {
        ch->tensor[ch->actions++] = i; /* release f_i */
        ch->tensor[ch->actions] = n + i;
        ch->computes[ch->actions++] = true;
        if (i < n - 1) ch->tensor[ch->actions++] = n + i + 1;
    }
    for (int a = 0; a < ch->actions; a++) ch->made[a + 1] = ch->made[a] | (ch->computes[a] ? 1u << ch->tensor[a] : 0);
}

/* The moves from state (at, mask): into next[] with their costs; returns how many. */
static int moves_from(const Chain *ch, int budget, int at, unsigned mask, size_t masks, size_t *next, int *cost)
{
    const bool room = __builtin_popcount(mask) + 1 <= budget;
    const int t = ch->tensor[at];
    int moves = 0;
    if (!ch->computes[at]) next[moves] = (size_t)(at + 1) * masks + (mask & ~(1u << t)), cost[moves++] = 0;
    else if (room && (ch->inputs[t] & ~mask) == 0)
        next[moves] = (size_t)(at + 1) * masks + (mask | 1u << t), cost[moves++] = 0;
    for (int u = 0; u < 2 * ch->n; u++) {
        if (mask & 1u << u) next[moves] = (size_t)at * masks + (mask & ~(1u << u)), cost[moves++] = 0;
        else if ((ch->made[at] & 1u << u) && room && (ch->inputs[u] & ~mask) == 0)
            next[moves] = (size_t)at * masks + (mask | 1u << u), cost[moves++] = 1;
    }
    return moves;
}

/* Layer by layer: every state d recomputes away (a stack, closed under free moves), then
 * the states one recompute further (the next stack). INT64_MAX when no schedule fits. */
static int64_t brute_force(int n, int budget)
{
    Chain ch;
    chain_program(&ch, n);
    const size_t masks = (size_t)1 << (2 * n), states = (size_t)(ch.actions + 1) * masks;
    int *dist = malloc(states * sizeof *dist);
    size_t *now = malloc(states * sizeof *now), *later = malloc(states * sizeof *later);
    assert_true(dist && now && later);
    for (size_t s = 0; s < states; s++) dist[s] = INT32_MAX;
    size_t n_now = 0, n_later = 0;
    dist[0] = 0;
    now[n_now++] = 0;
    int64_t best = INT64_MAX;
    for (int d = 0; n_now > 0 && best == INT64_MAX; d++) {
        while (n_now > 0) {
            const size_t s = now[--n_now];
            if (dist[s] != d) continue;
            if (s / masks == (size_t)ch.actions) best = d;
            size_t next[4 * BRUTE_N + 1];
            int cost[4 * BRUTE_N + 1];
            const int moves = moves_from(&ch, budget, (int)(s / masks), (unsigned)(s % masks), masks, next, cost);
            for (int k = 0; k < moves && s / masks < (size_t)ch.actions; k++) {
                if (d + cost[k] >= dist[next[k]]) continue;
                dist[next[k]] = d + cost[k];
                if (cost[k] == 0) now[n_now++] = next[k];
                else later[n_later++] = next[k];
            }
        }
        size_t *swap = now;
        now = later, later = swap;
        n_now = n_later, n_later = 0;
    }
    free(dist);
    free(now);
    free(later);
    return best;
}

/* ---- an exact dynamic program over checkpoints, independent of Revolve ---------------------
 *
 * Name x_k = f_{k−1} (x_0 the input, holding no memory); backward needs x_{n−1} … x_1.
 * After forward a gradient is always resident, leaving C = B − 1 units in which an op holds
 * its input and output. T(l, c): the fewest advances to serve a segment of l tensors whose
 * first, x_p, is held, in c units: advance j, hold x_{p+j} as well, serve the l − j above
 * in c − 1, then the j below in c. Z(l): the same from x_0, which holds nothing. E(i, p):
 * x_1 … x_{p−1} served with i checkpoints kept by the forward, the highest at x_k, the
 * segment above it in the C − (i − 1) units the others leave. The forward keeps at most
 * B − 2 (it holds x_{n−1} and x_n besides) and serves x_{n−1} itself. */
static int64_t dp_optimum(int n, int budget)
{
    const int64_t never = INT64_MAX / 4;
    const int top = budget - 1, stride = n + 1;
    int64_t *t = malloc((size_t)(top + 1) * stride * sizeof *t), *z = malloc(stride * sizeof *z);
    int64_t *prev = calloc(stride, sizeof *prev), *cur = calloc(stride, sizeof *cur);
    assert_true(t && z && prev && cur);
    for (int c = 2; c <= top; c++)
        for (int l = 1; l <= n; l++) {
            int64_t best = l == 1 ? 0 : never;
            for (int j = 1; j < l && c > 2; j++) {
                const int64_t v = j + t[(c - 1) * stride + l - j] + t[c * stride + j];
                if (v < best) best = v;
            }
            t[c * stride + l] = best;
        }
    z[0] = 0;
    for (int l = 1; l < n; l++) {
        z[l] = never;
        for (int j = 1; j <= l; j++)
            if (j + t[top * stride + l - j + 1] + z[j - 1] < z[l]) z[l] = j + t[top * stride + l - j + 1] + z[j - 1];
    }
    for (int p = 1; p < n; p++) cur[p] = z[p - 1];
    int64_t best = cur[n - 1];
    for (int i = 1; i <= budget - 2 && i < n; i++) {
        int64_t *swap = prev;
        prev = cur;
        cur = swap;
        const int64_t *segment = &t[(top - i + 1) * stride];
        for (int p = 1; p < n; p++) {
            cur[p] = never;
            for (int k = i; k < p; k++)
                if (segment[p - k] + prev[k] < cur[p]) cur[p] = segment[p - k] + prev[k];
        }
        if (cur[n - 1] < best) best = cur[n - 1];
    }
    free(t);
    free(z);
    free(prev);
    free(cur);
    return best;
}

static void test_the_dynamic_program_is_the_fewest_of_every_schedule(void **state)
{
    (void)state;
    for (int n = 3; n <= BRUTE_N; n++)
        for (int budget = 3; budget <= n + 1; budget++) {
            const int64_t dp = dp_optimum(n, budget), brute = brute_force(n, budget);
            if (dp != brute) fail_msg("n = %d, B = %d: the DP gives %lld, the search %lld", n, budget, (long long)dp,
                                      (long long)brute);
        }
}

/* dtr_chain_optimum is Revolve's count, t(n − 1, B − 2) − (n − 2): the DP's, everywhere. */
static void test_the_optimum_is_revolves_count(void **state)
{
    (void)state;
    for (int n = 3; n <= 90; n++)
        for (int budget = 3; budget <= n + 1; budget++) {
            int64_t optimum = -1;
            assert_int_equal(dtr_chain_optimum(n, budget, &optimum), REMAT_OK);
            if (optimum != dp_optimum(n, budget))
                fail_msg("n = %d, B = %d: %lld, the DP %lld", n, budget, (long long)optimum,
                         (long long)dp_optimum(n, budget));
        }
}

/* At B = 3 backward holds a gradient, one forward tensor and an op's output: every x_k is
 * recomputed from the input, 1 + 2 + … + (n − 3) computes. With B ≥ n, none. */
static void test_the_optimum_in_closed_form_at_the_extremes(void **state)
{
    (void)state;
    for (int n = 3; n <= 300; n += 7) {
        int64_t extra = -1;
        assert_int_equal(dtr_chain_optimum(n, 3, &extra), REMAT_OK);
        assert_int_equal(extra, (int64_t)(n - 3) * (n - 2) / 2);
        assert_int_equal(dtr_chain_optimum(n, n, &extra), REMAT_OK);
        assert_int_equal(extra, 0);
        assert_int_equal(dtr_chain_optimum(n, 1 << 30, &extra), REMAT_OK);
        assert_int_equal(extra, 0);
    }
}

/* DTR is a schedule of the same model, so never below the optimum; more budget never
 * makes the optimum worse. */
static void test_dtr_is_never_below_the_optimum(void **state)
{
    (void)state;
    for (int n = 3; n <= 80; n++) {
        int64_t previous = INT64_MAX;
        for (int budget = 3; budget <= n + 1; budget++) {
            int64_t dtr = -1, optimum = -1;
            assert_int_equal(dtr_chain_extra(n, budget, &dtr), REMAT_OK);
            assert_int_equal(dtr_chain_optimum(n, budget, &optimum), REMAT_OK);
            if (dtr < optimum) fail_msg("n = %d, B = %d: DTR %lld below the optimum %lld", n, budget,
                                        (long long)dtr, (long long)optimum);
            assert_true(optimum <= previous);
            previous = optimum;
        }
    }
}

/* What DTR's simulator (simrd, uniform_linear's run_with with RuntimeV2EagerOptimized and
 * the DTR heuristic) gives on bench_dtr's grid, B = ⌈2√n⌉, ⌈√n⌉, ⌈log₂ n⌉, beside the
 * optimum. remat's pool takes simrd's steps in simrd's order, so the counts are equal. */
static void test_dtr_equals_its_own_simulator_on_the_grid(void **state)
{
    (void)state;
    static const int64_t GRID[][7] = {
        {10, 3, 10, 10, 3, 9, 9},          {20, 11, 31, 31, 11, 24, 24},       {32, 20, 48, 83, 20, 42, 59},
        {50, 35, 66, 122, 35, 63, 92},     {64, 49, 102, 196, 48, 91, 134},    {100, 80, 159, 325, 80, 144, 214},
        {128, 105, 199, 485, 105, 177, 299}, {200, 175, 299, 737, 171, 279, 478},
        {256, 230, 400, 1107, 224, 375, 691}, {500, 475, 772, 2150, 455, 723, 1502},
        {512, 485, 787, 2255, 466, 747, 1550}, {1000, 957, 1569, 4658, 936, 1471, 3282},
    };
    for (size_t i = 0; i < sizeof GRID / sizeof GRID[0]; i++) {
        const double n = (double)GRID[i][0];
        const int budgets[3] = {(int)ceil(2 * sqrt(n)), (int)ceil(sqrt(n)), (int)ceil(log2(n))};
        for (int b = 0; b < 3; b++) {
            int64_t dtr = -1, optimum = -1;
            assert_int_equal(dtr_chain_extra((int)n, budgets[b], &dtr), REMAT_OK);
            assert_int_equal(dtr_chain_optimum((int)n, budgets[b], &optimum), REMAT_OK);
            assert_int_equal(dtr, GRID[i][1 + b]);
            assert_int_equal(optimum, GRID[i][4 + b]);
            assert_int_equal(dp_optimum((int)n, budgets[b]), GRID[i][4 + b]);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_score_counts_the_evicted_neighbourhood),
        cmocka_unit_test(test_score_counts_each_neighbour_once),
        cmocka_unit_test(test_choose_takes_the_smallest_score_and_the_last_of_equals),
        cmocka_unit_test(test_rematerialization_runs_evicted_inputs_first_in_order),
        cmocka_unit_test(test_the_unit_chain_of_four_by_hand),
        cmocka_unit_test(test_bad_entries_are_refused_and_change_nothing),
        cmocka_unit_test(test_a_budget_too_small_is_out_of_memory_and_loses_nothing),
        cmocka_unit_test(test_a_failing_op_is_an_error_that_loses_nothing),
        cmocka_unit_test(test_the_chain_refuses_what_it_cannot_model),
        cmocka_unit_test(test_the_dynamic_program_is_the_fewest_of_every_schedule),
        cmocka_unit_test(test_the_optimum_is_revolves_count),
        cmocka_unit_test(test_the_optimum_in_closed_form_at_the_extremes),
        cmocka_unit_test(test_dtr_is_never_below_the_optimum),
        cmocka_unit_test(test_dtr_equals_its_own_simulator_on_the_grid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
