/*
 * test_q6_offload_frees_resident_memory.c — Quiz question 6: which complementary technique
 * is often combined with recomputation to save more memory? Offloading activations to CPU
 * memory or NVMe.
 *
 * On a CPU the analogue of "device memory" is the process's RAM, and of NVMe the disk: the
 * offload hooks copy each saved activation into an mmap'd spill file and free the RAM
 * copy, then bring it back when backward needs it. It proves, on a GPT with dropout, that
 * offloading moves the activations from ACT to DISK in the ledger — the resident peak
 * falls — while the gradients stay bit-identical; and that it combines with sqrt
 * checkpointing, whose kept segment inputs are what gets offloaded. (A larger batch would
 * need more memory, not less; removing normalization changes the model; inference mode
 * cannot train.)
 *
 * Watch it happen: break on the offload hooks' pack and unpack (offload/offload.c) and
 * print mem_current(MEM_ACT) and mem_current(MEM_DISK) on each call.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>

#include "fixtures.h"
#include "offload.h"

typedef struct Offloaded {
    QuizStep step;
    size_t peak_disk;
} Offloaded;

static Offloaded step_with_offload(Model *m, const Strategy *s, OffloadPolicy policy, Var *x, Var *t)
{
    OffloadOptions o = offload_defaults(policy);
    o.min_bytes = 1024; /* this model is small: spill everything of 1 KiB and more */
    Offload *off = offload_create(&o);
    assert_non_null(off);
    assert_int_equal(offload_push(off), REMAT_OK);
    Offloaded r = {.step = quiz_step(m, s, x, t), .peak_disk = mem_peak(MEM_DISK)};
    offload_pop(off);
    offload_free(off);
    return r;
}

static void test_q6_offload_moves_activations_to_disk_with_identical_gradients(void **state)
{
    (void)state;
    Model *gpt = quiz_gpt(0.1f);
    Var *t, *x = quiz_tokens(6, &t);
    Strategy none = strategy_defaults(STRATEGY_NONE), sqrt_ = strategy_defaults(STRATEGY_SQRT);
    QuizStep in_ram = quiz_step(gpt, &none, x, t), sqrt_in_ram = quiz_step(gpt, &sqrt_, x, t);
    Offloaded spilled = step_with_offload(gpt, &none, OFFLOAD_ALL, x, t);
    Offloaded combined = step_with_offload(gpt, &sqrt_, OFFLOAD_BOUNDARY, x, t);
    printf("  peak activations in RAM: none %zu B, offloaded %zu B (disk peak %zu B); "
           "sqrt %zu B, sqrt with its kept inputs offloaded %zu B\n", in_ram.peak_act, spilled.step.peak_act,
           spilled.peak_disk, sqrt_in_ram.peak_act, combined.step.peak_act);
    assert_int_equal(spilled.step.status, REMAT_OK);
    assert_int_equal(combined.step.status, REMAT_OK);
    /* Offload moves the activations out of RAM ... */
    assert_true(spilled.peak_disk > 0);
    assert_true(spilled.step.peak_act < in_ram.peak_act / 2);
    /* ... and combines with recomputation: what sqrt keeps (its segment inputs) goes to
     * disk too, and what stays resident is the segment being replayed. */
    assert_true(combined.peak_disk > 0);
    assert_true(combined.step.peak_act <= sqrt_in_ram.peak_act);
    assert_true(combined.step.peak_act < in_ram.peak_act);
    assert_true(quiz_same_grads(&in_ram, &spilled.step));
    assert_true(quiz_same_grads(&in_ram, &combined.step));
    assert_int_equal(mem_current(MEM_DISK), 0);

    quiz_step_free(&in_ram);
    quiz_step_free(&sqrt_in_ram);
    quiz_step_free(&spilled.step);
    quiz_step_free(&combined.step);
    var_free(x);
    var_free(t);
    model_free(gpt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q6_offload_moves_activations_to_disk_with_identical_gradients),
    };
    return cmocka_run_group_tests_name("quiz q6", tests, NULL, NULL);
}
