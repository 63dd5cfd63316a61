/*
 * test_memory.c — the memory ledger: counts, peaks, alignment, the budget and its OOM
 * message, the timeline and its marks, and that thousands of mixed allocations leave
 * nothing behind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "tensor/flops.h"
#include "tensor/memory.h"

#define MiB ((size_t)1 << 20)

/* Every test starts and must end with an empty ledger. */
static int ledger_empty(void **state)
{
    (void)state;
    mem_set_budget(0);
    mem_reset_peaks();
    remat_clear_error();
    for (int k = 0; k < MEM_KIND_COUNT; k++)
        if (mem_current((MemKind)k) != 0) return -1;
    return mem_live_blocks() == 0 ? 0 : -1;
}

static void test_alloc_counts_bytes_by_kind(void **state)
{
    (void)state;
    void *p = mem_alloc(MEM_PARAM, 1000);
    void *g = mem_alloc(MEM_GRAD, 1000);
    void *a = mem_alloc(MEM_ACT, 4096);
    assert_non_null(p);
    assert_non_null(g);
    assert_non_null(a);
    assert_int_equal(mem_current(MEM_PARAM), 1000);
    assert_int_equal(mem_current(MEM_GRAD), 1000);
    assert_int_equal(mem_current(MEM_ACT), 4096);
    assert_int_equal(mem_current(MEM_OPTIM), 0);
    assert_int_equal(mem_resident(), 6096);
    assert_int_equal(mem_live_blocks(), 3);
    mem_free(p);
    mem_free(g);
    mem_free(a);
    assert_int_equal(mem_resident(), 0);
    assert_int_equal(mem_live_blocks(), 0);
}

static void test_alloc_is_64_byte_aligned(void **state)
{
    (void)state;
    void *blocks[16];
    for (int i = 0; i < 16; i++) {
        blocks[i] = mem_alloc(MEM_WORK, (size_t)(1 + 13 * i));
        assert_non_null(blocks[i]);
        assert_int_equal((uintptr_t)blocks[i] % MEM_ALIGNMENT, 0);
    }
    for (int i = 0; i < 16; i++) mem_free(blocks[i]);
}

static void test_calloc_zero_fills(void **state)
{
    (void)state;
    unsigned char *z = mem_calloc(MEM_ACT, 333);
    assert_non_null(z);
    for (int i = 0; i < 333; i++) assert_int_equal(z[i], 0);
    mem_free(z);
}

static void test_peak_tracks_maximum_and_resets(void **state)
{
    (void)state;
    void *a = mem_alloc(MEM_ACT, 3 * MiB);
    void *b = mem_alloc(MEM_ACT, 5 * MiB);
    mem_free(a);
    void *c = mem_alloc(MEM_ACT, 1 * MiB);
    /* At most 3 + 5 MiB were live at once. */
    assert_int_equal(mem_peak(MEM_ACT), 8 * MiB);
    assert_int_equal(mem_peak_moment().resident, 8 * MiB);
    assert_int_equal(mem_current(MEM_ACT), 6 * MiB);

    mem_reset_peaks();
    assert_int_equal(mem_peak(MEM_ACT), 6 * MiB);
    mem_free(b);
    mem_free(c);
    assert_int_equal(mem_peak(MEM_ACT), 6 * MiB);
    assert_int_equal(mem_current(MEM_ACT), 0);
}

/* The machine's ceiling fails an allocation as a budget does, naming what is available; the
 * lower of the two holds, and a failed request changes nothing. */
/* The moment the resident peak was set: every kind's bytes then and the phase, kept when
 * bytes are freed or a lower total comes later, and moved to now by a reset. */
static void test_peak_moment_is_the_mix_when_the_peak_was_set(void **state)
{
    (void)state;
    void *act = mem_alloc(MEM_ACT, 1000);
    const Phase outer = flops_set_phase(PHASE_BACKWARD);
    void *grad = mem_alloc(MEM_GRAD, 500);
    flops_set_phase(PHASE_OPTIMIZER);
    mem_free(act);
    void *optim = mem_alloc(MEM_OPTIM, 1200); /* 1700 resident: above 1500, a new peak */
    mem_free(optim);
    void *small = mem_alloc(MEM_WORK, 100); /* 600 resident: no new peak */
    MemPeakMoment m = mem_peak_moment();
    assert_int_equal(m.current[MEM_GRAD], 500);
    assert_int_equal(m.current[MEM_OPTIM], 1200);
    assert_int_equal(m.current[MEM_ACT], 0);
    assert_int_equal(m.current[MEM_WORK], 0);
    assert_int_equal(m.phase, PHASE_OPTIMIZER);
    flops_set_phase(outer);
    mem_reset_peaks();
    m = mem_peak_moment();
    assert_int_equal(m.current[MEM_WORK], 100);
    assert_int_equal(m.current[MEM_OPTIM], 0);
    assert_int_equal(m.phase, outer);
    mem_free(small);
    mem_free(grad);
}

static void test_ceiling_is_a_budget_that_names_the_machine(void **state)
{
    (void)state;
    void *p = mem_alloc(MEM_PARAM, 8 * MiB);
    mem_set_ceiling(10 * MiB);
    assert_int_equal(mem_ceiling(), 10 * MiB);
    assert_null(mem_alloc(MEM_ACT, 4 * MiB));
    assert_int_equal(remat_last_status(), REMAT_EOOM);
    assert_non_null(strstr(remat_last_error(), "tried to allocate 4.00 MiB of activations"));
    assert_non_null(strstr(remat_last_error(), "the ceiling of this machine's memory 10.0 MiB"));
    assert_int_equal(mem_resident(), 8 * MiB);
    assert_int_equal(mem_live_blocks(), 1);

    mem_set_budget(9 * MiB); /* lower than the ceiling: the budget speaks */
    assert_null(mem_alloc(MEM_ACT, 2 * MiB));
    assert_non_null(strstr(remat_last_error(), "budget 9.00 MiB"));
    mem_set_budget(64 * MiB); /* higher: the machine does */
    assert_null(mem_alloc(MEM_ACT, 4 * MiB));
    assert_non_null(strstr(remat_last_error(), "the ceiling of this machine's memory 10.0 MiB"));
    void *a = mem_alloc(MEM_ACT, 2 * MiB); /* exactly up to the ceiling fits */
    assert_non_null(a);

    mem_set_budget(0);
    mem_set_ceiling(0);
    void *more = mem_alloc(MEM_ACT, 4 * MiB);
    assert_non_null(more);
    mem_free(more);
    mem_free(a);
    mem_free(p);
}

static void test_budget_overrun_names_request_and_residents(void **state)
{
    (void)state;
    void *p = mem_alloc(MEM_PARAM, 12 * MiB);
    void *g = mem_alloc(MEM_GRAD, 12 * MiB);
    void *o = mem_alloc(MEM_OPTIM, 24 * MiB);
    void *a = mem_alloc(MEM_ACT, 300 * MiB);
    assert_non_null(a);
    mem_set_budget(350 * MiB);
    assert_int_equal(mem_budget(), 350 * MiB);

    void *more = mem_alloc(MEM_ACT, 64 * MiB);
    assert_null(more);
    assert_int_equal(remat_last_status(), REMAT_EOOM);
    const char *msg = remat_last_error();
    assert_non_null(strstr(msg, "tried to allocate 64.0 MiB of activations"));
    assert_non_null(strstr(msg, "params 12.0 MiB"));
    assert_non_null(strstr(msg, "grads 12.0 MiB"));
    assert_non_null(strstr(msg, "optimizer 24.0 MiB"));
    assert_non_null(strstr(msg, "activations 300.0 MiB"));
    assert_non_null(strstr(msg, "budget 350.0 MiB"));
    /* The failed request changed nothing. */
    assert_int_equal(mem_resident(), 348 * MiB);
    assert_int_equal(mem_live_blocks(), 4);

    /* What still fits, fits: exactly up to the budget. */
    void *last = mem_alloc(MEM_WORK, 2 * MiB);
    assert_non_null(last);
    assert_null(mem_alloc(MEM_WORK, 1));

    mem_set_budget(0);
    mem_free(last);
    mem_free(p);
    mem_free(g);
    mem_free(o);
    mem_free(a);
}

static void test_disk_is_accounted_but_not_resident(void **state)
{
    (void)state;
    mem_set_budget(1 * MiB);
    /* Disk bytes are outside the budget: the budget models memory, not the spill file. */
    assert_int_equal(mem_account(MEM_DISK, (int64_t)(64 * MiB)), REMAT_OK);
    assert_int_equal(mem_current(MEM_DISK), 64 * MiB);
    assert_int_equal(mem_resident(), 0);
    /* A resident kind accounted by hand is checked against the budget. */
    assert_int_equal(mem_account(MEM_ACT, (int64_t)(2 * MiB)), REMAT_EOOM);
    assert_int_equal(mem_current(MEM_ACT), 0);
    /* Removing more than is there is refused and changes nothing. */
    assert_int_equal(mem_account(MEM_DISK, -(int64_t)(65 * MiB)), REMAT_EINVAL);
    assert_int_equal(mem_current(MEM_DISK), 64 * MiB);
    assert_int_equal(mem_account(MEM_DISK, -(int64_t)(64 * MiB)), REMAT_OK);
    assert_int_equal(mem_peak(MEM_DISK), 64 * MiB);
    mem_set_budget(0);
}

static void test_bad_requests_fail_cleanly(void **state)
{
    (void)state;
    assert_null(mem_alloc(MEM_ACT, 0));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "zero-byte"));
    assert_null(mem_alloc(MEM_DISK, 16));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_null(mem_alloc((MemKind)42, 16));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_null(mem_alloc(MEM_ACT, SIZE_MAX));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_int_equal(mem_account((MemKind)-1, 5), REMAT_EINVAL);
    mem_free(NULL);
    assert_int_equal(mem_live_blocks(), 0);
}

/* Host memory exhaustion is a different failure from the budget: REMAT_ENOMEM. */
static void test_host_allocation_failure_is_enomem(void **state)
{
    (void)state;
    /* 2^50 bytes passes the sanity check but no host can provide it. */
    assert_null(mem_alloc(MEM_ACT, (size_t)1 << 50));
    assert_int_equal(remat_last_status(), REMAT_ENOMEM);
    assert_int_equal(mem_current(MEM_ACT), 0);
}

static void test_many_mixed_allocations_leave_nothing(void **state)
{
    (void)state;
    enum { COUNT = 5000 };
    static void *blocks[COUNT];
    uint32_t x = 12345;
    for (int i = 0; i < COUNT; i++) {
        x = x * 1664525u + 1013904223u;
        MemKind kind = (MemKind)(x % MEM_DISK);
        blocks[i] = mem_alloc(kind, 1 + (x >> 20));
        assert_non_null(blocks[i]);
        /* Free about a third as we go, out of allocation order. */
        if (i > 10 && x % 3 == 0) {
            int j = (int)(x % (unsigned)i);
            mem_free(blocks[j]);
            blocks[j] = NULL;
        }
    }
    for (int i = COUNT - 1; i >= 0; i--) mem_free(blocks[i]);
    for (int k = 0; k < MEM_KIND_COUNT; k++) assert_int_equal(mem_current((MemKind)k), 0);
    assert_int_equal(mem_resident(), 0);
    assert_int_equal(mem_live_blocks(), 0);
}

static void test_timeline_records_every_change(void **state)
{
    (void)state;
    assert_int_equal(mem_timeline_start(3), REMAT_OK);
    const FlopCounts counted = flops_snapshot();
    flops_reset();
    Phase before = flops_set_phase(PHASE_BACKWARD);
    void *a = mem_alloc(MEM_ACT, 100);
    flops_add(1000); /* work between two changes moves the FLOP clock, not the bytes */
    void *g = mem_alloc(MEM_GRAD, 40);
    mem_free(a);
    mem_free(g); /* the fourth event does not fit */
    flops_set_phase(before);
    flops_restore(&counted);
    mem_timeline_stop();

    size_t n = 0;
    const MemEvent *ev = mem_timeline_events(&n);
    assert_int_equal(n, 3);
    assert_int_equal(mem_timeline_dropped(), 1);
    assert_int_equal(ev[0].kind, MEM_ACT);
    assert_int_equal(ev[0].delta, 100);
    assert_int_equal(ev[0].phase, PHASE_BACKWARD);
    assert_int_equal(ev[1].current[MEM_ACT], 100);
    assert_int_equal(ev[1].current[MEM_GRAD], 40);
    assert_int_equal(ev[2].delta, -100);
    assert_int_equal(ev[2].current[MEM_ACT], 0);
    assert_true(ev[0].seconds <= ev[2].seconds);
    assert_int_equal(ev[0].flops, 0);
    assert_int_equal(ev[1].flops, 1000);
    assert_int_equal(ev[2].flops, 1000);

    /* Stopped: nothing more is recorded. */
    void *b = mem_alloc(MEM_ACT, 8);
    mem_free(b);
    mem_timeline_events(&n);
    assert_int_equal(n, 3);
    mem_timeline_free();
    assert_null(mem_timeline_events(&n));
    assert_int_equal(n, 0);
    assert_int_equal(mem_timeline_start(0), REMAT_EINVAL);
}

/* A mark is an event that moves no bytes, labelled; a change has no label; a mark beyond
 * the capacity is dropped like a change, and none is recorded while stopped. */
static void test_timeline_marks_move_no_bytes(void **state)
{
    (void)state;
    void *a = mem_alloc(MEM_ACT, 64);
    mem_reset_peaks();
    assert_int_equal(mem_timeline_start(2), REMAT_OK);
    mem_timeline_mark(MEM_ACT, "dtr.evict");
    mem_free(a);
    mem_timeline_mark(MEM_ACT, "dtr.remat"); /* past the capacity */
    mem_timeline_stop();
    mem_timeline_mark(MEM_ACT, "dtr.remat");
    size_t n = 0;
    const MemEvent *ev = mem_timeline_events(&n);
    assert_int_equal(n, 2);
    assert_int_equal(mem_timeline_dropped(), 1);
    assert_string_equal(ev[0].label, "dtr.evict");
    assert_int_equal(ev[0].delta, 0);
    assert_int_equal(ev[0].current[MEM_ACT], 64);
    assert_null(ev[1].label);
    assert_int_equal(ev[1].delta, -64);
    assert_int_equal(mem_peak(MEM_ACT), 64);
    assert_int_equal(mem_current(MEM_ACT), 0);
    mem_timeline_free();
}

static void test_format_bytes_uses_binary_units(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(mem_format_bytes(buf, sizeof buf, 0), "0 B");
    assert_string_equal(mem_format_bytes(buf, sizeof buf, 1023), "1023 B");
    assert_string_equal(mem_format_bytes(buf, sizeof buf, 1536), "1.50 KiB");
    assert_string_equal(mem_format_bytes(buf, sizeof buf, 12 * MiB), "12.0 MiB");
    assert_string_equal(mem_format_bytes(buf, sizeof buf, 3 * 1024 * MiB / 2), "1.50 GiB");
    assert_string_equal(name_of(&MEM_KIND_NAMES, MEM_OPTIM), "optimizer");
    assert_string_equal(name_of(&MEM_KIND_NAMES, 99), "unknown");
}

/* The pressure hook frees blocks it was given, one a call, until the allocation fits or it
 * has none left; then the allocation fails with the budget's own message. */
typedef struct Victims {
    void *blocks[4];
    int n, calls;
} Victims;

static bool free_one(void *ctx, size_t bytes)
{
    Victims *v = ctx;
    assert_true(bytes > 0);
    v->calls++;
    if (v->n == 0) return false;
    mem_free(v->blocks[--v->n]);
    return true;
}

static void test_pressure_hook_frees_until_it_fits(void **state)
{
    (void)state;
    Victims v = {0};
    for (int i = 0; i < 3; i++) v.blocks[v.n++] = mem_alloc(MEM_ACT, 1000);
    mem_set_budget(3000);
    mem_set_pressure(free_one, &v);
    void *a = mem_alloc(MEM_ACT, 1500); /* two blocks must go */
    assert_non_null(a);
    assert_int_equal(v.calls, 2);
    assert_int_equal(mem_current(MEM_ACT), 2500);
    void *b = mem_alloc(MEM_ACT, 2000); /* one more goes, and still it does not fit */
    assert_null(b);
    assert_int_equal(remat_last_status(), REMAT_EOOM);
    assert_non_null(strstr(remat_last_error(), "out of memory: tried to allocate"));
    assert_int_equal(v.calls, 4);
    assert_int_equal(mem_current(MEM_ACT), 1500);
    mem_set_pressure(NULL, NULL);
    mem_set_budget(0);
    mem_free(a);
    remat_clear_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_alloc_counts_bytes_by_kind, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_alloc_is_64_byte_aligned, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_calloc_zero_fills, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_peak_tracks_maximum_and_resets, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_peak_moment_is_the_mix_when_the_peak_was_set, ledger_empty,
                                        ledger_empty),
        cmocka_unit_test_setup_teardown(test_budget_overrun_names_request_and_residents, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_pressure_hook_frees_until_it_fits, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_disk_is_accounted_but_not_resident, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_bad_requests_fail_cleanly, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_host_allocation_failure_is_enomem, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_many_mixed_allocations_leave_nothing, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_timeline_records_every_change, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_timeline_marks_move_no_bytes, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_format_bytes_uses_binary_units, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_ceiling_is_a_budget_that_names_the_machine, ledger_empty, ledger_empty),
    };
    return cmocka_run_group_tests_name("memory", tests, NULL, NULL);
}
