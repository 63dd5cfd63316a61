/*
 * test_flops.c — the FLOP ledger's phases, and its time bookkeeping: the matmuls' FLOPs
 * and seconds, and the seconds each phase was current. Times are checked only for where
 * they go, never for how long they are. (Each kernel's own count is checked in
 * test_kernels.c, next to its numerical check.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tensor/flops.h"
#include "tensor/kernels.h"

static void test_flops_go_to_the_current_phase(void **state)
{
    (void)state;
    flops_reset();
    assert_int_equal(flops_phase(), PHASE_FORWARD);
    flops_add(100);
    assert_int_equal(flops_set_phase(PHASE_BACKWARD), PHASE_FORWARD);
    flops_add(200);
    flops_set_phase(PHASE_RECOMPUTE);
    flops_add(100);
    flops_set_phase(PHASE_OPTIMIZER);
    flops_add(7);
    assert_int_equal(flops_get(PHASE_FORWARD), 100);
    assert_int_equal(flops_get(PHASE_BACKWARD), 200);
    assert_int_equal(flops_get(PHASE_RECOMPUTE), 100);
    assert_int_equal(flops_get(PHASE_OPTIMIZER), 7);
    assert_int_equal(flops_total(), 407);
    assert_int_equal(flops_get((Phase)17), 0);
}

static void test_reset_zeroes_and_returns_to_forward(void **state)
{
    (void)state;
    flops_set_phase(PHASE_BACKWARD);
    flops_add(5);
    flops_reset();
    assert_int_equal(flops_total(), 0);
    assert_int_equal(flops_phase(), PHASE_FORWARD);
}

static void test_snapshot_and_restore_undo_uncounted_work(void **state)
{
    (void)state;
    flops_reset();
    flops_add(10);
    FlopCounts before = flops_snapshot();
    flops_set_phase(PHASE_BACKWARD);
    flops_add(99);
    flops_restore(&before);
    assert_int_equal(flops_get(PHASE_FORWARD), 10);
    assert_int_equal(flops_get(PHASE_BACKWARD), 0);
    /* The phase is not part of the counts: it stays where it was set. */
    assert_int_equal(flops_phase(), PHASE_BACKWARD);
    flops_reset();
}

static void test_matmuls_count_their_flops_and_seconds_per_phase(void **state)
{
    (void)state;
    float A[3 * 4 * 5] = {0}, B[3 * 4 * 5] = {0}, C[3 * 4 * 5] = {0};
    flops_reset();
    k_matmul(C, A, B, 1, 3, 5, 4, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f); /* 2·3·5·4 */
    flops_set_phase(PHASE_BACKWARD);
    k_matmul(C, A, B, 3, 2, 2, 2, CblasNoTrans, CblasTrans, 1.0f, 0.0f); /* 3 · 2·2·2·2 */
    flops_add(7); /* an elementwise kernel's: FLOPs, not matmul FLOPs */
    FlopCounts counts = flops_snapshot();
    assert_int_equal(counts.matmul[PHASE_FORWARD], 120);
    assert_int_equal(counts.phase[PHASE_FORWARD], 120);
    assert_int_equal(counts.matmul[PHASE_BACKWARD], 48);
    assert_int_equal(counts.phase[PHASE_BACKWARD], 55);
    assert_true(counts.matmul_seconds[PHASE_FORWARD] >= 0.0);
    assert_true(counts.matmul_seconds[PHASE_BACKWARD] >= 0.0);
    /* Nothing ran under recompute or optimizer: exactly nothing is there. */
    assert_true(counts.matmul_seconds[PHASE_RECOMPUTE] == 0.0 && counts.matmul[PHASE_RECOMPUTE] == 0);
    assert_true(counts.matmul_seconds[PHASE_OPTIMIZER] == 0.0);
    flops_reset();
    counts = flops_snapshot();
    assert_int_equal(counts.matmul[PHASE_BACKWARD], 0);
    assert_true(counts.matmul_seconds[PHASE_BACKWARD] == 0.0);
}

static void test_matmul_seconds_add_up_in_their_phase(void **state)
{
    (void)state;
    flops_reset();
    flops_add_matmul(100, 0.25);
    flops_add_matmul(50, 0.5); /* quarters and halves add exactly in binary */
    flops_set_phase(PHASE_OPTIMIZER);
    flops_add_matmul(1, 1.0);
    FlopCounts counts = flops_snapshot();
    assert_true(counts.matmul_seconds[PHASE_FORWARD] == 0.75);
    assert_int_equal(counts.matmul[PHASE_FORWARD], 150);
    assert_int_equal(counts.phase[PHASE_FORWARD], 150);
    assert_true(counts.matmul_seconds[PHASE_OPTIMIZER] == 1.0);
    assert_int_equal(flops_total(), 151);
    const FlopCounts before = flops_snapshot();
    flops_add_matmul(9, 2.0);
    flops_restore(&before);
    counts = flops_snapshot();
    assert_true(counts.matmul_seconds[PHASE_OPTIMIZER] == 1.0);
    assert_int_equal(counts.matmul[PHASE_OPTIMIZER], 1);
    flops_reset();
}

static void test_phase_seconds_go_to_the_phase_that_was_current(void **state)
{
    (void)state;
    flops_reset();
    /* Only the current phase's clock runs. */
    assert_true(flops_snapshot().phase_seconds[PHASE_BACKWARD] == 0.0);
    assert_true(flops_snapshot().phase_seconds[PHASE_FORWARD] >= 0.0);
    flops_set_phase(PHASE_BACKWARD);
    const double forward = flops_snapshot().phase_seconds[PHASE_FORWARD];
    assert_true(forward >= 0.0);
    const double backward = flops_snapshot().phase_seconds[PHASE_BACKWARD];
    assert_true(flops_snapshot().phase_seconds[PHASE_BACKWARD] >= backward); /* still running */
    assert_true(flops_snapshot().phase_seconds[PHASE_FORWARD] == forward);   /* stopped */
    assert_true(flops_snapshot().phase_seconds[PHASE_OPTIMIZER] == 0.0);
    /* A restore drops the seconds since its snapshot, and keeps those before it, the
     * running phase's included. */
    const FlopCounts before = flops_snapshot();
    assert_true(before.phase_seconds[PHASE_BACKWARD] >= backward);
    flops_set_phase(PHASE_OPTIMIZER);
    flops_set_phase(PHASE_FORWARD);
    flops_restore(&before);
    const FlopCounts after = flops_snapshot();
    assert_true(after.phase_seconds[PHASE_OPTIMIZER] == 0.0);
    assert_true(after.phase_seconds[PHASE_BACKWARD] == before.phase_seconds[PHASE_BACKWARD]);
    flops_reset();
}

static void test_phase_names(void **state)
{
    (void)state;
    assert_string_equal(name_of(&FLOP_PHASE_NAMES, PHASE_FORWARD), "forward");
    assert_string_equal(name_of(&FLOP_PHASE_NAMES, PHASE_RECOMPUTE), "recompute");
    assert_string_equal(name_of(&FLOP_PHASE_NAMES, PHASE_COUNT), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flops_go_to_the_current_phase),
        cmocka_unit_test(test_reset_zeroes_and_returns_to_forward),
        cmocka_unit_test(test_snapshot_and_restore_undo_uncounted_work),
        cmocka_unit_test(test_matmuls_count_their_flops_and_seconds_per_phase),
        cmocka_unit_test(test_matmul_seconds_add_up_in_their_phase),
        cmocka_unit_test(test_phase_seconds_go_to_the_phase_that_was_current),
        cmocka_unit_test(test_phase_names),
    };
    return cmocka_run_group_tests_name("flops", tests, NULL, NULL);
}
