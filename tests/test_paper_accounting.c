/*
 * test_paper_accounting.c — app/paper_accounting.c against what it reproduces:
 * the per-layer formulas of Korthikanti et al.'s Table 2 (none, selective and full, with
 * and without a tensor-parallel degree t), and the activation figures the Hugging Face
 * Ultra-Scale Playbook publishes for its Llama presets; and the shapes it refuses.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "app/paper_accounting.h"

/* Table 2's rows, written as the paper writes them, in integers: every division is exact
 * because t divides a and a divides h. */
static void test_table_sums_equal_table_2(void **state)
{
    (void)state;
    const PaperShape shapes[] = {
        {.s = 2048, .b = 1, .h = 12288, .a = 96, .layers = 96, .t = 1}, /* GPT-3 175B, the paper's example */
        {.s = 2048, .b = 1, .h = 12288, .a = 96, .layers = 96, .t = 8},
        {.s = 4096, .b = 4, .h = 8192, .a = 64, .layers = 80, .t = 4},
        {.s = 1024, .b = 2, .h = 768, .a = 12, .layers = 12, .t = 3},
        {.s = 128, .b = 8, .h = 256, .a = 4, .layers = 4, .t = 1},
        {.s = 7, .b = 3, .h = 64, .a = 16, .layers = 1, .t = 16},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const PaperShape *p = &shapes[i];
        const uint64_t sbh = p->s * p->b * p->h, t = (uint64_t)p->t, scores = 5 * p->a * p->s * p->s * p->b;
        const uint64_t none = 10 * sbh + (24 * sbh + scores) / t; /* sbh(10 + 24/t + 5as/(ht)) */
        const uint64_t selective = 10 * sbh + 24 * sbh / t;       /* sbh(10 + 24/t) */
        const uint64_t full = 2 * sbh;                            /* sbh(2) */
        if (t == 1) assert_int_equal(none, 34 * sbh + scores);    /* sbh(34 + 5as/h) */
        const struct { StrategyKind kind; uint64_t want; } rows[] = {
            {STRATEGY_NONE, none}, {STRATEGY_SELECTIVE, selective}, {STRATEGY_FULL, full}};
        for (int k = 0; k < 3; k++) {
            uint64_t per_layer, total;
            assert_int_equal(paper_activations(p, rows[k].kind, &per_layer, &total), REMAT_OK);
            assert_int_equal(per_layer, rows[k].want);
            assert_int_equal(total, (uint64_t)p->layers * rows[k].want + sbh); /* and the embedding's mask */
        }
    }
    /* The paper's headline for GPT-3 175B, which the Playbook quotes: selective keeps 70%
     * fewer activation bytes (5as/h = 80 of 34 + 80). */
    uint64_t none, selective, total;
    paper_activations(&shapes[0], STRATEGY_NONE, &none, &total);
    paper_activations(&shapes[0], STRATEGY_SELECTIVE, &selective, &total);
    assert_int_equal((100 * (none - selective) + none / 2) / none, 70);
}

/* The Playbook's figure "Memory Usage with Recomputation" (its memory-recomputation
 * fragment, the same figures as its memusage_activations fragment for none): activations
 * in its GB (2^30 bytes) at batch 1, for its five Llama presets at sequence lengths 1024,
 * 2048, 4096 and 8192, copied from the figure's data. Its figures are L layers by Table 2
 * plus the embedding's dropout mask, sbh bytes, with the paper's 4h GeLU MLP (the
 * formula's 34) rather than Llama's SwiGLU. */
static const struct {
    const char *name;
    PaperShape shape; /* s set per column */
    double none[4], selective[4], full[4];
} PLAYBOOK[] = {
    {"Llama 3.2 1B", {.b = 1, .h = 2048, .a = 32, .layers = 16, .t = 1},
     {3.564453125, 12.12890625, 44.2578125, 168.515625}, {1.064453125, 2.12890625, 4.2578125, 8.515625},
     {0.064453125, 0.12890625, 0.2578125, 0.515625}},
    {"Llama 3.2 3B", {.b = 1, .h = 3072, .a = 24, .layers = 28, .t = 1},
     {6.0732421875, 18.708984375, 63.66796875, 232.3359375}, {2.7919921875, 5.583984375, 11.16796875, 22.3359375},
     {0.1669921875, 0.333984375, 0.66796875, 1.3359375}},
    {"Llama 3.1 8B", {.b = 1, .h = 4096, .a = 32, .layers = 32, .t = 1},
     {9.25390625, 28.5078125, 97.015625, 354.03125}, {4.25390625, 8.5078125, 17.015625, 34.03125},
     {0.25390625, 0.5078125, 1.015625, 2.03125}},
    {"Llama 3.1 70B", {.b = 1, .h = 8192, .a = 64, .layers = 80, .t = 1},
     {46.2578125, 142.515625, 485.03125, 1770.0625}, {21.2578125, 42.515625, 85.03125, 170.0625},
     {1.2578125, 2.515625, 5.03125, 10.0625}},
    {"Llama 3.1 405B", {.b = 1, .h = 16384, .a = 128, .layers = 126, .t = 1},
     {145.703125, 448.90625, 1527.8125, 5575.625}, {66.953125, 133.90625, 267.8125, 535.625},
     {3.953125, 7.90625, 15.8125, 31.625}},
};

/* Every published figure, to three decimals; the figures are exact binary fractions of
 * 2^30, so the bytes are equal too. */
static void test_playbook_presets_to_three_decimals(void **state)
{
    (void)state;
    for (size_t m = 0; m < sizeof PLAYBOOK / sizeof PLAYBOOK[0]; m++)
        for (int c = 0; c < 4; c++) {
            PaperShape p = PLAYBOOK[m].shape;
            p.s = 1024u << c;
            const struct { StrategyKind kind; double published; } rows[] = {
                {STRATEGY_NONE, PLAYBOOK[m].none[c]}, {STRATEGY_SELECTIVE, PLAYBOOK[m].selective[c]},
                {STRATEGY_FULL, PLAYBOOK[m].full[c]}};
            for (int k = 0; k < 3; k++) {
                uint64_t per_layer, total;
                assert_int_equal(paper_activations(&p, rows[k].kind, &per_layer, &total), REMAT_OK);
                const double gb = (double)total / (1024.0 * 1024.0 * 1024.0);
                if (fabs(gb - rows[k].published) >= 0.0005)
                    printf("  %s, s %d, %s: %.4f GB, published %.4f\n", PLAYBOOK[m].name, 1024 << c,
                           name_of(&STRATEGY_NAMES, rows[k].kind), gb, rows[k].published);
                assert_true(fabs(gb - rows[k].published) < 0.0005);
                assert_int_equal(total, (uint64_t)ldexp(rows[k].published, 30)); /* and in fact to the byte */
            }
        }
}

/* The strategies outside the paper, an empty shape and a t that does not divide the heads
 * are refused, naming why, and change nothing. */
static void test_refuses_what_the_paper_does_not_count(void **state)
{
    (void)state;
    const PaperShape good = {.s = 8, .b = 1, .h = 16, .a = 4, .layers = 2, .t = 2};
    uint64_t per_layer = 7, total = 7;
    assert_int_equal(paper_activations(&good, STRATEGY_SQRT, &per_layer, &total), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "sqrt"));
    const PaperShape bad[] = {
        {.s = 8, .b = 1, .h = 16, .a = 4, .layers = 2, .t = 3},
        {.s = 8, .b = 1, .h = 18, .a = 4, .layers = 2, .t = 1},
        {.s = 0, .b = 1, .h = 16, .a = 4, .layers = 2, .t = 1},
        {.s = 8, .b = 1, .h = 16, .a = 4, .layers = 0, .t = 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(paper_activations(&bad[i], STRATEGY_NONE, &per_layer, &total), REMAT_EINVAL);
        assert_non_null(strstr(remat_last_error(), "to divide the heads"));
    }
    assert_int_equal(per_layer, 7);
    assert_int_equal(total, 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_sums_equal_table_2),
        cmocka_unit_test(test_playbook_presets_to_three_decimals),
        cmocka_unit_test(test_refuses_what_the_paper_does_not_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
