/*
 * test_counter_rng.c — tests for the counter-based generator (tensor/counter_rng.h).
 *
 * The anchor is Random123's own known-answer file, kat_vectors (Debian's
 * librandom123-doc installs it gzipped; REMAT_KAT_VECTORS is its path): every
 * "philox4x32 10" line gives a counter, a key and the four words Philox4x32-10 must
 * return, which no line of this repository produced. The test reads the file at run time
 * and fails when it finds no such line. Around it: that a draw is exactly the word the
 * key and counter layout of counter_rng.h names, that keep decisions made from any
 * starting element agree with element-by-element draws, that every part of the key
 * changes the draws, and a loose check of the kept fraction.
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
#include <zlib.h>

#include "tensor/counter_rng.h"
#include "tests/kernels_ref.h"

/* ---- the published known answers ------------------------------------------------------ */

/* One "philox4x32 10 c0 c1 c2 c3 k0 k1 r0 r1 r2 r3" line (hex words), mapped onto
 * counter_rng's layout: block = c0, op = c1, micro-batch = c2, step = c3, seed = k0 + 2^32·k1.
 * Returns 1 and checks the words when the line is one; 0 when it is another generator's. */
static int check_kat_line(const char *line)
{
    unsigned rounds;
    int used;
    if (sscanf(line, "philox4x32 %u%n", &rounds, &used) != 1 || rounds != 10) return 0;
    const char *p = line + used;
    unsigned long w[10];
    for (int i = 0; i < 10; i++) {
        char *end;
        w[i] = strtoul(p, &end, 16);
        assert_true(end != p); /* a line of this generator has all ten words */
        p = end;
    }
    const CounterKey key = {.seed = (uint64_t)w[4] | (uint64_t)w[5] << 32, .op = (uint32_t)w[1],
                            .micro_batch = (uint32_t)w[2], .step = (uint32_t)w[3]};
    uint32_t got[4];
    ref_counter_block(&key, (uint32_t)w[0], got);
    for (int i = 0; i < 4; i++)
        if (got[i] != (uint32_t)w[6 + i]) fail_msg("philox4x32-10 word %d: got %08x, want %08lx\n  %s", i, got[i], w[6 + i], line);
    return 1;
}

static void test_philox_matches_the_published_known_answers(void **state)
{
    (void)state;
    gzFile f = gzopen(REMAT_KAT_VECTORS, "rb");
    if (!f) fail_msg("cannot open %s (Debian: librandom123-doc)", REMAT_KAT_VECTORS);
    char line[512];
    int checked = 0;
    while (gzgets(f, line, sizeof line)) checked += check_kat_line(line);
    gzclose(f);
    printf("  %d philox4x32-10 vectors of %s matched\n", checked, REMAT_KAT_VECTORS);
    assert_true(checked >= 3);
}

/* ---- the layout ---------------------------------------------------------------------- */

static const CounterKey KEY = {.seed = 0x123456789abcdef0ull, .step = 41, .micro_batch = 0, .op = 7};

/* Draw i is word i mod 4 of block i div 4, its top 24 bits scaled by 2^-24. */
static void test_draw_is_the_named_word_of_its_block(void **state)
{
    (void)state;
    for (uint64_t i = 0; i < 64; i++) {
        uint32_t words[4];
        ref_counter_block(&KEY, (uint32_t)(i / 4), words);
        const float want = (float)(words[i % 4] >> 8) / 16777216.0f;
        assert_true(ref_counter_draw(&KEY, i) == want);
        assert_true(want >= 0.0f && want < 1.0f);
    }
}

/* Keep decisions from any first element, over any length, equal one draw at a time
 * compared as a float: for drop probabilities on the 2^-24 grid and off it, at the ends
 * of [0, 1], and NaN (which keeps nothing, as the float compare does). */
static void test_keep_from_any_start_matches_single_draws(void **state)
{
    (void)state;
    enum { N = 37 };
    const float ps[] = {0.3f, 0.25f, 0.1f, 0.0f, 0x1.0p-24f, 0x1.8p-25f, 0.5f + 0x1.0p-25f, 1.0f - 0x1.0p-24f, 1.0f, NAN};
    uint8_t keep[N];
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
        for (uint64_t first = 0; first < 9; first++) {
            for (size_t n = 0; n <= N; n += 3) {
                memset(keep, 0xcc, sizeof keep);
                counter_rng_keep(keep, &KEY, first, n, ps[k]);
                for (size_t i = 0; i < n; i++)
                    assert_int_equal(keep[i], ref_counter_draw(&KEY, first + i) >= ps[k]);
                for (size_t i = n; i < N; i++) assert_int_equal(keep[i], 0xcc); /* nothing past n */
            }
        }
    }
}

/* Seed, step, micro-batch and op instance each change the draws; the same key gives the
 * same draws again. */
static void test_every_part_of_the_key_changes_the_draws(void **state)
{
    (void)state;
    CounterKey keys[5] = {KEY, KEY, KEY, KEY, KEY};
    keys[1].seed ^= 1;
    keys[2].step += 1;
    keys[3].micro_batch += 1;
    keys[4].op += 1;
    uint32_t base[4], again[4], other[4];
    ref_counter_block(&keys[0], 5, base);
    ref_counter_block(&keys[0], 5, again);
    assert_memory_equal(base, again, sizeof base);
    for (int k = 1; k < 5; k++) {
        ref_counter_block(&keys[k], 5, other);
        assert_memory_not_equal(base, other, sizeof base);
    }
}

/* With p = 0.25 over 10^5 elements the kept fraction is 0.75 within 0.01: about 7 standard
 * deviations (sqrt(p(1−p)/n) = 0.0014), so a correct generator never fails it. */
static void test_kept_fraction_is_one_minus_p(void **state)
{
    (void)state;
    enum { N = 100000 };
    uint8_t *keep = malloc(N);
    assert_non_null(keep);
    counter_rng_keep(keep, &KEY, 0, N, 0.25f);
    size_t kept = 0;
    for (size_t i = 0; i < N; i++) kept += keep[i];
    free(keep);
    printf("  kept %.4f of %d (expected 0.75 ± 0.01)\n", (double)kept / N, N);
    assert_true(fabs((double)kept / N - 0.75) < 0.01);
}

static void test_too_many_elements_for_one_key_is_an_error(void **state)
{
    (void)state;
    assert_int_equal(counter_rng_check(COUNTER_RNG_MAX_ELEMENTS, "dropout"), REMAT_OK);
    assert_int_equal(counter_rng_check(COUNTER_RNG_MAX_ELEMENTS + 1, "dropout d"), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "dropout d: 17179869185 elements are more than"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_matches_the_published_known_answers),
        cmocka_unit_test(test_draw_is_the_named_word_of_its_block),
        cmocka_unit_test(test_keep_from_any_start_matches_single_draws),
        cmocka_unit_test(test_every_part_of_the_key_changes_the_draws),
        cmocka_unit_test(test_kept_fraction_is_one_minus_p),
        cmocka_unit_test(test_too_many_elements_for_one_key_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
