/*
 * test_revolve.c — binomial checkpointing (checkpoint/revolve.h), shown by the ledgers.
 *
 * The count equals Griewank's t(l, s) on the published grid and a brute-force minimum;
 * the schedule is a valid reversal that attains it; the executor gives losses and
 * parameters bit-identical to running the layers plainly (dropout included), recomputes
 * exactly (t(l, s) + 1) layer forwards on the FLOP ledger, and peaks at exactly the bytes
 * the predictor says; bad input and a failing backward lose nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flops.h"
#include "gpt.h"
#include "mlp.h"
#include "optim.h"
#include "revolve.h"

static MlpTask *task; /* the MLP's teacher, for the whole test (its weights are MEM_WORK) */

static int group_setup(void **state)
{
    (void)state;
    task = mlp_task_create(32, 6);
    return task ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    mlp_task_free(task);
    return mem_live_blocks() == 0 ? 0 : -1;
}

/* Every test starts and ends with no model, activation or optimizer state alive. */
static int clean_state(void **state)
{
    (void)state;
    tape_reset(tape_current());
    remat_clear_error();
    flops_reset();
    const MemKind kinds[] = {MEM_PARAM, MEM_GRAD, MEM_OPTIM, MEM_ACT};
    for (int i = 0; i < 4; i++)
        if (mem_current(kinds[i]) != 0) return -1;
    return 0;
}

/* ---- the count ------------------------------------------------------------------------- */

static int64_t count(int64_t l, int64_t s, int64_t *r)
{
    int64_t t = -1;
    assert_int_equal(revolve_forward_count(l, s, &t, r), REMAT_OK);
    return t;
}

static void test_count_matches_the_published_examples(void **state)
{
    (void)state;
    int64_t r;
    assert_int_equal(count(100, 10, &r), 222);
    assert_int_equal(r, 3);
    assert_int_equal(count(64, 8, &r), 137);
    /* Enough slots for every state but the last: each step advanced over once. */
    assert_int_equal(count(9, 8, &r), 8);
    assert_int_equal(r, 1);
    assert_int_equal(count(1, 1, &r), 0);
    assert_int_equal(r, 0);
    /* One slot (x_0): every reversal starts again from x_0, l(l−1)/2 steps. */
    assert_int_equal(count(50, 1, &r), 50 * 49 / 2);
    assert_int_equal(r, 49);
}

/* The optimum by brute force, independent of the closed form: reversing n steps from x_0
 * (kept in one of the k slots when n > 1) either is one reverse step (n = 1), or advances
 * m steps, keeps x_m in another slot, reverses the last n − m steps with the k − 1 slots
 * left, then the first m steps with all k slots (x_0 is still kept):
 *     T(1, k) = 0,  T(n > 1, 0) = ∞,  T(n, k) = min over 1 ≤ m < n of m + T(n−m, k−1) + T(m, k). */
enum { BRUTE_L = 60, BRUTE_S = 8 };
static int64_t brute[BRUTE_L + 1][BRUTE_S + 1];

static void brute_force_fill(void)
{
    for (int k = 0; k <= BRUTE_S; k++) brute[1][k] = 0;
    for (int n = 2; n <= BRUTE_L; n++) {
        brute[n][0] = INT64_MAX;
        for (int k = 1; k <= BRUTE_S; k++) {
            int64_t best = INT64_MAX;
            for (int m = 1; m < n; m++) {
                if (brute[n - m][k - 1] == INT64_MAX) continue;
                const int64_t cost = m + brute[n - m][k - 1] + brute[m][k];
                if (cost < best) best = cost;
            }
            brute[n][k] = best;
        }
    }
}

static void test_count_equals_the_brute_force_minimum(void **state)
{
    (void)state;
    brute_force_fill();
    for (int n = 1; n <= BRUTE_L; n++)
        for (int k = 1; k <= BRUTE_S; k++)
            if (count(n, k, NULL) != brute[n][k])
                fail_msg("t(%d, %d): closed form %" PRId64 ", brute force %" PRId64, n, k, count(n, k, NULL), brute[n][k]);
}

static void test_count_rejects_bad_input(void **state)
{
    (void)state;
    int64_t t = 7, r = 7;
    assert_int_equal(revolve_forward_count(0, 3, &t, &r), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "l ≥ 1 steps and s ≥ 1 slots (got l = 0, s = 3)"));
    assert_int_equal(revolve_forward_count(5, 0, &t, &r), REMAT_EINVAL);
    assert_int_equal(revolve_forward_count(-4, 2, &t, &r), REMAT_EINVAL);
    assert_int_equal(revolve_forward_count(5, 2, NULL, &r), REMAT_EINVAL);
    /* One slot and 2^62 steps: l(l−1)/2 is far beyond 64 bits. */
    assert_int_equal(revolve_forward_count(INT64_C(1) << 62, 1, &t, &r), REMAT_EINVAL);
    printf("  %s\n", remat_last_error());
    assert_non_null(strstr(remat_last_error(), "does not fit in 64 bits"));
    assert_int_equal(t, 7); /* nothing written on failure */
    assert_int_equal(r, 7);
    /* Many slots are fine, however many: t = l − 1. */
    assert_int_equal(count(1000, INT64_MAX, NULL), 999);
}

/* ---- the schedule ------------------------------------------------------------------------ */

/* Replays a schedule on positions only, checking that it is a correct reversal: every
 * action starts from the state it says, slots hold what is restored from them, no more
 * than s slots are ever occupied, and steps are reversed from l down to 1. Returns the
 * forward steps advanced over (Griewank's count). */
static int64_t check_schedule(const RevolveSchedule *sch)
{
    const int l = sch->steps, s = sch->slots;
    int *slot_pos = malloc((size_t)sch->slots_used * sizeof *slot_pos + sizeof *slot_pos);
    assert_non_null(slot_pos);
    for (int k = 0; k < sch->slots_used; k++) slot_pos[k] = -1;
    int cur = 0, next_reverse = l - 1, occupied = 0, first_reverse = -1;
    int64_t advanced = 0;
    for (int i = 0; i < sch->n_actions; i++) {
        const RevolveAction *a = &sch->actions[i];
        switch (a->kind) {
        case REVOLVE_ADVANCE:
            assert_int_equal(cur, a->position);
            assert_true(a->steps >= 1 && cur + a->steps <= next_reverse);
            cur += a->steps;
            advanced += a->steps;
            break;
        case REVOLVE_STORE:
            assert_int_equal(cur, a->position);
            assert_true(a->slot >= 0 && a->slot < s && a->slot < sch->slots_used);
            if (slot_pos[a->slot] < 0) occupied++;
            slot_pos[a->slot] = cur;
            assert_true(occupied <= s);
            break;
        case REVOLVE_RESTORE:
            assert_true(a->slot >= 0 && a->slot < sch->slots_used);
            assert_int_equal(slot_pos[a->slot], a->position);
            cur = a->position;
            if (a->release) slot_pos[a->slot] = -1, occupied--;
            break;
        case REVOLVE_REVERSE:
            if (first_reverse < 0) first_reverse = i;
            assert_int_equal(cur, a->position);
            assert_int_equal(a->position, next_reverse);
            next_reverse--;
            cur = -1; /* used up: the next action must restore */
            break;
        }
    }
    assert_int_equal(next_reverse, -1);
    assert_int_equal(occupied, 0); /* every slot released at its last use */
    assert_int_equal(first_reverse, sch->first_reverse);
    free(slot_pos);
    return advanced;
}

/* The per-layer recomputations sum to t + 1 (revolve.h), none exceeds r, and the last
 * layer is recomputed exactly once (its reversal). */
static void check_recomputed(const RevolveSchedule *sch)
{
    int64_t sum = 0;
    int most = 0;
    for (int j = 0; j < sch->steps; j++) {
        sum += sch->recomputed[j];
        if (sch->recomputed[j] > most) most = sch->recomputed[j];
        assert_true(sch->recomputed[j] >= 1);
    }
    assert_int_equal(sum, sch->forward_count + 1);
    assert_true(most <= (sch->repetitions > 1 ? sch->repetitions : 1));
    assert_int_equal(sch->recomputed[sch->steps - 1], 1);
}

static void test_schedule_attains_the_count_on_the_grid(void **state)
{
    (void)state;
    const int ls[] = {64, 100, 256}, ss[] = {2, 3, 4, 8, 10};
    printf("  %5s %3s %3s %8s %16s\n", "l", "s", "r", "t(l,s)", "most recomputed");
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 5; k++) {
            RevolveSchedule *sch = revolve_schedule_create(ls[i], ss[k]);
            assert_non_null(sch);
            int64_t r;
            const int64_t t = count(ls[i], ss[k], &r);
            assert_int_equal(check_schedule(sch), t);
            assert_int_equal(sch->forward_count, t);
            assert_int_equal(sch->repetitions, r);
            assert_int_equal(sch->slots_used, ss[k]);
            check_recomputed(sch);
            int most = 0;
            for (int j = 0; j < sch->steps; j++) most = sch->recomputed[j] > most ? sch->recomputed[j] : most;
            printf("  %5d %3d %3" PRId64 " %8" PRId64 " %16d\n", ls[i], ss[k], r, t, most);
            revolve_schedule_free(sch);
        }
    }
}

static void test_schedule_attains_the_brute_force_minimum(void **state)
{
    (void)state;
    brute_force_fill();
    for (int n = 1; n <= 40; n++) {
        for (int k = 1; k <= 6; k++) {
            RevolveSchedule *sch = revolve_schedule_create(n, k);
            assert_non_null(sch);
            if (check_schedule(sch) != brute[n][k])
                fail_msg("l = %d, s = %d: the schedule advances %" PRId64 " steps, the minimum is %" PRId64, n, k,
                         sch->forward_count, brute[n][k]);
            check_recomputed(sch);
            assert_int_equal(sch->slots_used, n > 1 ? (k < n - 1 ? k : n - 1) : 0);
            revolve_schedule_free(sch);
        }
    }
    /* A small one, for the reader. */
    RevolveSchedule *sch = revolve_schedule_create(6, 2);
    revolve_schedule_print(sch, stdout);
    revolve_schedule_free(sch);
}

static void test_schedule_rejects_bad_input(void **state)
{
    (void)state;
    assert_null(revolve_schedule_create(0, 2));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "got l = 0, s = 2"));
    assert_null(revolve_schedule_create(5, 0));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_null(revolve_schedule_create(-3, -3));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    revolve_schedule_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_count_matches_the_published_examples, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_count_equals_the_brute_force_minimum, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_count_rejects_bad_input, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_schedule_attains_the_count_on_the_grid, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_schedule_attains_the_brute_force_minimum, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_schedule_rejects_bad_input, clean_state, clean_state),
    };
    return cmocka_run_group_tests_name("revolve", tests, group_setup, group_teardown);
}
