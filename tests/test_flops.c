/*
 * test_flops.c — the FLOP ledger's phases. (Each kernel's own count is checked in
 * test_kernels.c, next to its numerical check.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tensor/flops.h"

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

static void test_phase_names(void **state)
{
    (void)state;
    assert_string_equal(phase_name(PHASE_FORWARD), "forward");
    assert_string_equal(phase_name(PHASE_RECOMPUTE), "recompute");
    assert_string_equal(phase_name(PHASE_COUNT), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flops_go_to_the_current_phase),
        cmocka_unit_test(test_reset_zeroes_and_returns_to_forward),
        cmocka_unit_test(test_snapshot_and_restore_undo_uncounted_work),
        cmocka_unit_test(test_phase_names),
    };
    return cmocka_run_group_tests_name("flops", tests, NULL, NULL);
}
