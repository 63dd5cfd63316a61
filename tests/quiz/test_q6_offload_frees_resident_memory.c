/*
 * test_q6_offload_frees_resident_memory.c — Quiz question 6: which complementary technique
 * is often combined with recomputation to save more memory? Offloading activations to CPU
 * memory or NVMe.
 *
 * On a CPU the analogue of "device memory" is the process's RAM, and of NVMe the disk: the
 * offload hooks copy each saved activation into a spill file and free the RAM copy, then
 * bring it back when backward needs it. It proves, on a GPT with dropout, that offloading
 * moves the activations from ACT to DISK in the ledger — the resident peak falls — for no
 * extra FLOPs, while the gradients stay bit-identical; and that it combines with sqrt
 * checkpointing, whose kept segment inputs are what gets offloaded: less is held between
 * the forward and the backward, and on a chain deep enough for several segments the peak
 * falls too, by exact byte counts. The hooks are pushed for the forward only, as train
 * does. (A larger batch would need more memory, not less; removing normalization changes
 * the model; inference mode cannot train.)
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

#include "tests/quiz/fixtures.h"
#include "offload/offload.h"

/* One step of `m` with an offloader of `policy` and `prefetch` records read ahead, its
 * hooks pushed for the forward only. */
static QuizStep step_with_offload(Model *m, const Strategy *s, OffloadPolicy policy, int prefetch, Var *x, Var *t)
{
    OffloadOptions o = OFFLOAD_DEFAULTS(policy);
    o.min_bytes = 1024; /* this model is small: spill everything of 1 KiB and more */
    o.prefetch = prefetch;
    Offload *off = offload_create(&o);
    assert_non_null(off);
    QuizStep r = quiz_step_offloaded(m, s, off, x, t);
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
    QuizStep spilled = step_with_offload(gpt, &none, OFFLOAD_ALL, OFFLOAD_PREFETCH, x, t);
    /* With sqrt, only the kept segment inputs are spilled, and nothing is read ahead: each
     * is read back when backward starts replaying its segment. */
    QuizStep combined = step_with_offload(gpt, &sqrt_, OFFLOAD_BOUNDARY, 0, x, t);
    printf("  peak activations in RAM: none %zu B, offloaded %zu B (disk peak %zu B)\n"
           "  sqrt: %zu B kept between forward and backward, peak %zu B; with its kept inputs offloaded:"
           " %zu B kept, peak %zu B (disk peak %zu B)\n",
           in_ram.peak_act, spilled.peak_act, spilled.peak_disk, sqrt_in_ram.stored_act, sqrt_in_ram.peak_act,
           combined.stored_act, combined.peak_act, combined.peak_disk);
    assert_int_equal(spilled.status, REMAT_OK);
    assert_int_equal(combined.status, REMAT_OK);
    /* Offload moves the activations out of RAM ... */
    assert_true(spilled.peak_disk > 0);
    assert_true(spilled.peak_act < in_ram.peak_act / 2);
    /* ... for no extra FLOPs: what it trades is disk traffic. */
    assert_true(spilled.flops[PHASE_RECOMPUTE] == 0);
    assert_true(combined.flops[PHASE_RECOMPUTE] == sqrt_in_ram.flops[PHASE_RECOMPUTE]);
    /* ... and combines with recomputation. sqrt keeps the inputs of its 2 segments (3
     * blocks: segments of 2 and 1), each a (B,T,C) activation of 2·16·32 floats = 4 KiB;
     * offloaded, both wait on disk between the forward and the backward instead of in
     * RAM. The step's peak comes while the first segment, the larger, is replayed: by
     * then no kept input is left on disk, so on 3 blocks the peak stays that of sqrt (the
     * next test lowers it on a deeper chain). */
    const size_t input = 2 * 16 * 32 * sizeof(float);
    assert_int_equal(combined.peak_disk, 2 * input);
    assert_int_equal(combined.stored_act, sqrt_in_ram.stored_act - 2 * input);
    assert_int_equal(combined.peak_act, sqrt_in_ram.peak_act);
    assert_true(quiz_same_grads(&in_ram, &spilled));
    assert_true(quiz_same_grads(&in_ram, &combined));
    assert_true(quiz_same_grads(&in_ram, &sqrt_in_ram));
    assert_int_equal(mem_current(MEM_DISK), 0);

    quiz_step_free(&in_ram);
    quiz_step_free(&sqrt_in_ram);
    quiz_step_free(&spilled);
    quiz_step_free(&combined);
    var_free(x);
    var_free(t);
    model_free(gpt);
}

/* On a chain of 16 blocks, sqrt keeps the inputs of 4 segments of 4 blocks, and its peak
 * comes while the last segment is replayed, with every kept input in RAM. Offloaded, only
 * the segment being replayed has its input back in RAM. */
static void test_q6_offload_lowers_the_peak_of_sqrt_on_a_deeper_chain(void **state)
{
    (void)state;
    enum { N = 16, W = 64, B = 16 };
    const size_t a = (size_t)B * W * sizeof(float); /* one activation: 4 KiB */
    Model *mlp = mlp_create(&(MlpConfig){.n_layers = N, .width = W, .seed = 3});
    MlpTask *task = mlp_task_create(W, 4);
    Pcg32 rows;
    pcg32_seed(&rows, 5, 6);
    Var *x = NULL, *y = NULL;
    assert_int_equal(mlp_task_batch(task, &rows, B, &x, &y), REMAT_OK);
    Strategy sqrt_ = strategy_defaults(STRATEGY_SQRT);
    QuizStep sqrt_in_ram = quiz_step(mlp, &sqrt_, x, y);
    QuizStep combined = step_with_offload(mlp, &sqrt_, OFFLOAD_BOUNDARY, 0, x, y);
    printf("  MLP chain N=%d, sqrt: peak %zu B; with its kept inputs offloaded: peak %zu B (disk peak %zu B)\n", N,
           sqrt_in_ram.peak_act, combined.peak_act, combined.peak_disk);
    assert_int_equal(combined.status, REMAT_OK);
    assert_true(quiz_same_grads(&sqrt_in_ram, &combined));
    /* The 4 segment inputs go to disk: the batch x (which the caller also keeps) and the
     * outputs of blocks 4, 8 and 12. */
    assert_int_equal(combined.peak_disk, 4 * a);
    assert_int_equal(combined.stored_act, sqrt_in_ram.stored_act - 3 * a);
    assert_int_equal(combined.peak_act, sqrt_in_ram.peak_act - 2 * a);
    quiz_step_free(&sqrt_in_ram);
    quiz_step_free(&combined);
    var_free(x);
    var_free(y);
    mlp_task_free(task);
    model_free(mlp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q6_offload_moves_activations_to_disk_with_identical_gradients),
        cmocka_unit_test(test_q6_offload_lowers_the_peak_of_sqrt_on_a_deeper_chain),
    };
    return cmocka_run_group_tests_name("quiz q6", tests, NULL, NULL);
}
