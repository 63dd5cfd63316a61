/*
 * test_rng.c — tests for PCG32 (tensor/rng.h).
 *
 * The anchor is the published output of pcg-c-basic's pcg32-demo (seed 42, stream 54),
 * which no line of this repository produced. Around it: advance against repeated draws,
 * save/restore by struct copy, the exact draw count of every function, and loose
 * statistical sanity checks on bounded, float and normal draws. Every generator here is
 * seeded with a fixed seed, so every test is deterministic: a statistical check either
 * always passes or always fails, and its tolerance says how unlikely a failure would be
 * for a correct generator.
 *
 * This file does not compare against the PCG library at run time; that is
 * test_rng_pcgcpp.cpp, which needs a C++ compiler and libpcg-cpp-dev.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "tensor/rng.h"

/* ---------------------------------------------------------------------------------- */
/* The published reference: pcg32-demo, round 1                                        */
/* ---------------------------------------------------------------------------------- */

/* pcg-c-basic's pcg32-demo.c (github.com/imneme/pcg-c-basic), run without -r, seeds
 * with pcg32_srandom_r(&rng, 42u, 54u) and prints, in this order: six 32-bit outputs,
 * 65 coin flips (pcg32_boundedrand_r(&rng, 2), 1 printed as H, 0 as T) and 33 dice
 * rolls (pcg32_boundedrand_r(&rng, 6) + 1). Its round 1 reads (the 32bit line is the
 * check vector quoted on www.pcg-random.org/using-pcg-c-basic.html):
 *   32bit: 0xa15c02b7 0x7b47f409 0xba1d3330 0x83d2f293 0xbfa4784b 0xcbed606e
 *   Coins: HHTTTHTHHHTHTTTHHHHHTTTHHHTHTHTHTTHTTTHHHHHHTTTTHHTTTTTHTTTTTTTHT
 *   Rolls: 3 4 1 1 2 2 3 2 4 3 2 4 3 3 5 2 3 1 3 1 5 1 4 1 5 6 4 6 6 2 6 3 3
 * All three lines were reproduced with Debian's libpcg-cpp-dev 0.98.1 (pcg32 rng(42, 54);
 * rng() for 32bit, rng(2) and rng(6) + 1 for coins and rolls). */
static const uint32_t demo_first_six[6] = {
    0xa15c02b7u, 0x7b47f409u, 0xba1d3330u, 0x83d2f293u, 0xbfa4784bu, 0xcbed606eu,
};
static const char demo_coins[] =
    "HHTTTHTHHHTHTTTHHHHHTTTHHHTHTHTHTTHTTTHHHHHHTTTTHHTTTTTHTTTTTTTHT";
static const uint32_t demo_rolls[33] = {
    3, 4, 1, 1, 2, 2, 3, 2, 4, 3, 2, 4, 3, 3, 5, 2, 3,
    1, 3, 1, 5, 1, 4, 1, 5, 6, 4, 6, 6, 2, 6, 3, 3,
};

static void test_pcg32_next_matches_published_demo(void **state)
{
    (void)state;
    Pcg32 rng;
    pcg32_seed(&rng, 42, 54);
    for (int i = 0; i < 6; i++) assert_int_equal(pcg32_next(&rng), demo_first_six[i]);
}

static void test_pcg32_bounded_matches_published_demo_coins_and_rolls(void **state)
{
    (void)state;
    Pcg32 rng;
    pcg32_seed(&rng, 42, 54);
    for (int i = 0; i < 6; i++) pcg32_next(&rng);

    char coins[sizeof demo_coins];
    for (size_t i = 0; i + 1 < sizeof demo_coins; i++) coins[i] = pcg32_bounded(&rng, 2) ? 'H' : 'T';
    coins[sizeof demo_coins - 1] = '\0';
    assert_string_equal(coins, demo_coins);

    for (int i = 0; i < 33; i++) assert_int_equal(pcg32_bounded(&rng, 6) + 1, demo_rolls[i]);
}

/* ---------------------------------------------------------------------------------- */
/* Seeding and streams                                                                 */
/* ---------------------------------------------------------------------------------- */

/* Hand-checkable: inc = (54 << 1) | 1 = 109, state = (42 + 109) * MULT + 109 with the
 * paper's multiplier MULT = 6364136223846793005, all mod 2^64. */
static void test_pcg32_seed_sets_state_and_increment(void **state)
{
    (void)state;
    Pcg32 rng;
    pcg32_seed(&rng, 42, 54);
    assert_int_equal(rng.inc, 109);
    assert_int_equal(rng.state, (uint64_t)(42 + 109) * 6364136223846793005ULL + 109);
}

/* The stream is shifted left by one to make the odd increment, so its top bit is lost:
 * streams s and s + 2^63 are the same stream (hence "2^63 distinct streams"). */
static void test_pcg32_seed_ignores_top_bit_of_stream(void **state)
{
    (void)state;
    Pcg32 a, b;
    pcg32_seed(&a, 42, 54);
    pcg32_seed(&b, 42, 54 | (1ULL << 63));
    assert_int_equal(a.state, b.state);
    assert_int_equal(a.inc, b.inc);
}

/* Same seed, neighbouring streams: two unrelated-looking sequences. For independent
 * uniform 32-bit draws, the chance that any of 1000 positions agree is 1000 / 2^32,
 * about 2e-7, so we ask that none agree. */
static void test_pcg32_seed_different_streams_give_different_sequences(void **state)
{
    (void)state;
    Pcg32 a, b;
    pcg32_seed(&a, 42, 54);
    pcg32_seed(&b, 42, 55);
    int equal_positions = 0;
    for (int i = 0; i < 1000; i++) equal_positions += pcg32_next(&a) == pcg32_next(&b);
    assert_int_equal(equal_positions, 0);
}

/* ---------------------------------------------------------------------------------- */
/* Save/restore and advance                                                            */
/* ---------------------------------------------------------------------------------- */

/* What a checkpoint region does to replay a dropout mask: copy, draw, restore, redraw. */
static void test_pcg32_state_copy_replays_sequence(void **state)
{
    (void)state;
    Pcg32 rng;
    pcg32_seed(&rng, 7, 3);
    for (int i = 0; i < 10; i++) pcg32_next(&rng);

    Pcg32 saved = rng;
    uint32_t first[100];
    for (int i = 0; i < 100; i++) first[i] = pcg32_next(&rng);

    rng = saved;
    for (int i = 0; i < 100; i++) assert_int_equal(pcg32_next(&rng), first[i]);
}

static void test_pcg32_advance_equals_repeated_next(void **state)
{
    (void)state;
    static const uint64_t deltas[] = {0, 1, 2, 3, 7, 1000, 65537};
    for (size_t k = 0; k < sizeof deltas / sizeof deltas[0]; k++) {
        Pcg32 jumped, stepped;
        pcg32_seed(&jumped, 12345, 678);
        stepped = jumped;

        pcg32_advance(&jumped, deltas[k]);
        for (uint64_t i = 0; i < deltas[k]; i++) pcg32_next(&stepped);

        assert_int_equal(jumped.state, stepped.state);
        assert_int_equal(jumped.inc, stepped.inc);
        assert_int_equal(pcg32_next(&jumped), pcg32_next(&stepped));
    }
}

/* Deltas too large to step one by one: advancing by a then by b must land where
 * advancing by a + b does (mod 2^64, the generator's period). */
static void test_pcg32_advance_composes_for_large_deltas(void **state)
{
    (void)state;
    static const uint64_t pairs[][2] = {
        {1ULL << 39, 1ULL << 39},        /* 2^40 as two halves */
        {(1ULL << 40) - 1, 1},           /* 2^40 with a carry through 40 bits */
        {0x123456789ULL, 1ULL << 40},
        {0x9e3779b97f4a7c15ULL, 0xfedcba9876543210ULL}, /* the sum wraps past 2^64 */
    };
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        Pcg32 twice, once;
        pcg32_seed(&twice, 99, 5);
        once = twice;

        pcg32_advance(&twice, pairs[k][0]);
        pcg32_advance(&twice, pairs[k][1]);
        pcg32_advance(&once, pairs[k][0] + pairs[k][1]);

        assert_int_equal(twice.state, once.state);
    }
}

/* The LCG has full period 2^64: advancing by 2^64 - 1 and drawing once is a full lap. */
static void test_pcg32_advance_full_period_returns_to_start(void **state)
{
    (void)state;
    Pcg32 rng;
    pcg32_seed(&rng, 42, 54);
    Pcg32 start = rng;

    pcg32_advance(&rng, UINT64_MAX);
    pcg32_next(&rng);
    assert_int_equal(rng.state, start.state);
}

/* ---------------------------------------------------------------------------------- */
/* Bounded draws                                                                       */
/* ---------------------------------------------------------------------------------- */

static void test_pcg32_bounded_stays_in_range(void **state)
{
    (void)state;
    static const uint32_t bounds[] = {2, 3, 6, 7, 1000, 0x7fffffffu, 0x80000001u, 0xffffffffu};
    Pcg32 rng;
    pcg32_seed(&rng, 2024, 1);
    for (size_t k = 0; k < sizeof bounds / sizeof bounds[0]; k++) {
        for (int i = 0; i < 10000; i++) assert_true(pcg32_bounded(&rng, bounds[k]) < bounds[k]);
    }
}

/* 2^32 mod 1 = 0: nothing is rejected, every draw maps to 0 and costs one draw. */
static void test_pcg32_bounded_one_is_always_zero(void **state)
{
    (void)state;
    Pcg32 rng, reference;
    pcg32_seed(&rng, 2024, 2);
    reference = rng;
    for (int i = 0; i < 1000; i++) assert_int_equal(pcg32_bounded(&rng, 1), 0);
    pcg32_advance(&reference, 1000);
    assert_int_equal(rng.state, reference.state);
}

/* The header's contract for misuse: bound 0 returns 0 and leaves the generator alone. */
static void test_pcg32_bounded_zero_returns_zero_without_drawing(void **state)
{
    (void)state;
    Pcg32 rng;
    pcg32_seed(&rng, 2024, 3);
    Pcg32 before = rng;
    assert_int_equal(pcg32_bounded(&rng, 0), 0);
    assert_int_equal(rng.state, before.state);
}

/* A generator whose first draw is 0: from state 0 every term of XSH-RR is 0. The step
 * then moves the state to inc, so the second draw is the output of inc; a small inc such
 * as 109 would output 0 again (all its bits are below bit 27), so take a large one. */
static const Pcg32 zero_first_draw = {.state = 0, .inc = 0xda3e39cb94b95bdbULL};

/* For bound 3 the threshold is 2^32 mod 3 = 1, so the first draw, 0, must be rejected and
 * the second used; for bound 2 the threshold is 0 and the 0 is kept after one draw. */
static void test_pcg32_bounded_rejects_draws_below_threshold(void **state)
{
    (void)state;
    Pcg32 raw = zero_first_draw;
    assert_int_equal(pcg32_next(&raw), 0);
    uint32_t second_draw = pcg32_next(&raw);
    assert_int_not_equal(second_draw, 0);

    Pcg32 rejecting = zero_first_draw;
    assert_int_equal(pcg32_bounded(&rejecting, 3), second_draw % 3);
    assert_int_equal(rejecting.state, raw.state);

    Pcg32 keeping = zero_first_draw, one_step = zero_first_draw;
    assert_int_equal(pcg32_bounded(&keeping, 2), 0);
    pcg32_advance(&one_step, 1);
    assert_int_equal(keeping.state, one_step.state);
}

/* Pearson's chi-square on 60000 dice rolls: 6 faces, 5 degrees of freedom, 10000
 * expected per face. A uniform source exceeds 20.52 with probability 0.001 (the 99.9th
 * percentile of chi-square with 5 degrees of freedom), so a failure here means a broken
 * generator or mapping, not bad luck. */
static void test_pcg32_bounded_six_is_uniform(void **state)
{
    (void)state;
    enum { FACES = 6, DRAWS = 60000 };
    const double chi2_999th_percentile_5_dof = 20.52;
    long counts[FACES] = {0};
    Pcg32 rng;
    pcg32_seed(&rng, 31337, 6);
    for (int i = 0; i < DRAWS; i++) counts[pcg32_bounded(&rng, FACES)]++;

    const double expected = (double)DRAWS / FACES;
    double chi2 = 0.0;
    for (int f = 0; f < FACES; f++) {
        double diff = (double)counts[f] - expected;
        chi2 += diff * diff / expected;
    }
    assert_true(chi2 < chi2_999th_percentile_5_dof);
}

/* ---------------------------------------------------------------------------------- */
/* Floats                                                                              */
/* ---------------------------------------------------------------------------------- */

/* A float is the top 24 bits of one draw scaled by 2^-24, so f * 2^24 is an integer
 * (exactly: it is a multiple of 2^-24 below 1) equal to draw >> 8. */
static void test_pcg32_float_is_top_24_bits_of_one_draw(void **state)
{
    (void)state;
    Pcg32 rng, raw;
    pcg32_seed(&rng, 5, 5);
    raw = rng;
    for (int i = 0; i < 1000; i++) {
        float f = pcg32_float(&rng);
        assert_int_equal((uint32_t)(f * 16777216.0f), pcg32_next(&raw) >> 8);
    }
    assert_int_equal(rng.state, raw.state);
}

static void test_pcg32_float_stays_in_unit_interval(void **state)
{
    (void)state;
    Pcg32 rng;
    pcg32_seed(&rng, 8, 8);
    for (int i = 0; i < 1000000; i++) {
        float f = pcg32_float(&rng);
        assert_true(f >= 0.0f);
        assert_true(f < 1.0f);
    }
}

/* A state whose next draw is 0xffffffff. XSH-RR outputs bits 27..58 of old ^ (old >> 18),
 * rotated; rotation leaves all-ones unchanged, so bit i of old must differ from bit
 * i + 18 for i = 27..58. Choose the bits from the top down, each the complement of the
 * bit 18 places above it (already chosen, or 0 above bit 58). */
static uint64_t state_whose_draw_is_all_ones(void)
{
    uint64_t s = 0;
    for (int i = 58; i >= 27; i--) {
        uint64_t above = i + 18 < 64 ? (s >> (i + 18)) & 1u : 0;
        s |= (above ^ 1u) << i;
    }
    return s;
}

/* The largest draw must map below 1: to 1 - 2^-24, exactly representable as a float. */
static void test_pcg32_float_of_largest_draw_is_below_one(void **state)
{
    (void)state;
    Pcg32 rng = {.state = state_whose_draw_is_all_ones(), .inc = 1};
    Pcg32 raw = rng;
    assert_int_equal(pcg32_next(&raw), 0xffffffffu);

    float f = pcg32_float(&rng);
    assert_true(f < 1.0f);
    assert_true(f == 1.0f - 0x1.0p-24f);
}

/* ---------------------------------------------------------------------------------- */
/* Normals                                                                             */
/* ---------------------------------------------------------------------------------- */

/* Sample mean and variance of 200000 normals. The mean's standard error is
 * 1/sqrt(N) ~ 0.0022 and the sample variance's is sqrt(2/N) ~ 0.0032 (for a normal,
 * Var(s^2) = 2 sigma^4 / N); we allow 5 standard errors, which a correct generator
 * exceeds with probability under 1e-6. Float rounding of each sample (relative 6e-8)
 * and the Box–Muller tail cut at 6.66 are far below these tolerances. */
static void test_pcg32_normal_has_zero_mean_unit_variance(void **state)
{
    (void)state;
    enum { N = 200000 };
    Pcg32 rng;
    pcg32_seed(&rng, 271828, 9);
    double sum = 0.0, sum_sq = 0.0;
    for (int i = 0; i < N; i++) {
        double z = pcg32_normal(&rng);
        sum += z;
        sum_sq += z * z;
    }
    double mean = sum / N;
    double variance = (sum_sq - N * mean * mean) / (N - 1);

    assert_true(fabs(mean) < 5.0 / sqrt(N));
    assert_true(fabs(variance - 1.0) < 5.0 * sqrt(2.0 / N));
}

/* Exactly two draws per call, so advance(2k) skips k normals. */
static void test_pcg32_normal_draws_exactly_two(void **state)
{
    (void)state;
    Pcg32 rng, reference;
    pcg32_seed(&rng, 4, 4);
    reference = rng;
    for (int i = 0; i < 1000; i++) {
        pcg32_normal(&rng);
        pcg32_advance(&reference, 2);
        assert_int_equal(rng.state, reference.state);
    }
}

/* Box–Muller's log(u1) must not see u1 = 0 when the first draw is 0. That draw gives the
 * smallest u1, 2^-32, hence the largest radius: the header promises |z| <= sqrt(64 ln 2)
 * = 6.66043..., and 6.6605 leaves room for the final rounding to float. */
static void test_pcg32_normal_is_finite_when_first_draw_is_zero(void **state)
{
    (void)state;
    Pcg32 rng = zero_first_draw;
    float z = pcg32_normal(&rng);
    assert_true(isfinite(z));
    assert_true(fabsf(z) <= 6.6605f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pcg32_next_matches_published_demo),
        cmocka_unit_test(test_pcg32_bounded_matches_published_demo_coins_and_rolls),
        cmocka_unit_test(test_pcg32_seed_sets_state_and_increment),
        cmocka_unit_test(test_pcg32_seed_ignores_top_bit_of_stream),
        cmocka_unit_test(test_pcg32_seed_different_streams_give_different_sequences),
        cmocka_unit_test(test_pcg32_state_copy_replays_sequence),
        cmocka_unit_test(test_pcg32_advance_equals_repeated_next),
        cmocka_unit_test(test_pcg32_advance_composes_for_large_deltas),
        cmocka_unit_test(test_pcg32_advance_full_period_returns_to_start),
        cmocka_unit_test(test_pcg32_bounded_stays_in_range),
        cmocka_unit_test(test_pcg32_bounded_one_is_always_zero),
        cmocka_unit_test(test_pcg32_bounded_zero_returns_zero_without_drawing),
        cmocka_unit_test(test_pcg32_bounded_rejects_draws_below_threshold),
        cmocka_unit_test(test_pcg32_bounded_six_is_uniform),
        cmocka_unit_test(test_pcg32_float_is_top_24_bits_of_one_draw),
        cmocka_unit_test(test_pcg32_float_stays_in_unit_interval),
        cmocka_unit_test(test_pcg32_float_of_largest_draw_is_below_one),
        cmocka_unit_test(test_pcg32_normal_has_zero_mean_unit_variance),
        cmocka_unit_test(test_pcg32_normal_draws_exactly_two),
        cmocka_unit_test(test_pcg32_normal_is_finite_when_first_draw_is_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
