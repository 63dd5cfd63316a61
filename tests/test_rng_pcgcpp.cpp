/*
 * test_rng_pcgcpp.cpp — remat's C PCG32 (tensor/rng.h) against the PCG library's own
 * C++ pcg32 (pcg_random.hpp, Debian package libpcg-cpp-dev).
 *
 * rng.h promises sequences that match the reference pcg32 bit for bit; this file is that
 * promise's proof. Both generators are seeded alike and driven alike, and every output is
 * compared: raw draws for many seeds and streams, bounded draws (whose rejection loops
 * must consume the same draws), and draws after jumping ahead.
 *
 * It is C++ only because the reference is a C++ header; it tests nothing of C++. Floats
 * and normals are not compared: pcg-cpp has no equivalent of pcg32_float or pcg32_normal,
 * and test_rng.c covers them.
 */
/* pcg_random.hpp comes first: cmocka.h defines a fail() macro that would otherwise
 * rewrite std::basic_ios::fail() inside the standard headers pcg-cpp includes. */
#include <pcg_random.hpp>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <csetjmp>

/* Both are C headers without C++ linkage guards (cmocka 1.1.5 has none), so the C++ side
 * must be told that their functions have C names. */
extern "C" {
#include <cmocka.h>
#include "tensor/rng.h"
}

/* The (seed, stream) pairs every test runs on: the demo's 42/54, all zeros, all ones,
 * pcg-c's own default initializer, stream numbers that use the top bit (which both
 * implementations drop) and assorted large 64-bit values. */
struct SeedStream {
    uint64_t seed;
    uint64_t stream;
};

static const SeedStream seeds[] = {
    {42, 54},
    {0, 0},
    {1, 1},
    {UINT64_MAX, UINT64_MAX},
    {0x853c49e6748fea9bULL, 0xda3e39cb94b95bdbULL},
    {0xcafef00dd15ea5e5ULL, 0x0123456789abcdefULL},
    {1ULL << 63, (1ULL << 63) - 1},
    {0x9e3779b97f4a7c15ULL, 1ULL << 63},
};
static const size_t seed_count = sizeof seeds / sizeof seeds[0];

/* Fails the test with the context of the first mismatch (which seed, which draw), so a
 * student sees where the two generators part ways, not only that they do. */
static void expect_same_draw(const char *what, const SeedStream &s, long draw, uint32_t ours,
                             uint32_t reference)
{
    if (ours == reference) return;
    print_error("%s, seed 0x%016llx stream 0x%016llx, draw %ld: remat 0x%08x, pcg-cpp 0x%08x\n",
                what, (unsigned long long)s.seed, (unsigned long long)s.stream, draw,
                (unsigned)ours, (unsigned)reference);
    fail();
}

/* ---------------------------------------------------------------------------------- */
/* Raw draws                                                                           */
/* ---------------------------------------------------------------------------------- */

static void test_pcg32_next_matches_pcgcpp(void **state)
{
    (void)state;
    for (size_t k = 0; k < seed_count; k++) {
        Pcg32 ours;
        pcg32_seed(&ours, seeds[k].seed, seeds[k].stream);
        pcg32 reference(seeds[k].seed, seeds[k].stream);
        for (long i = 0; i < 10000; i++)
            expect_same_draw("next", seeds[k], i, pcg32_next(&ours), reference());
    }
}

/* pcg-cpp stores the increment and reports stream() = inc >> 1; ours must agree. */
static void test_pcg32_seed_stream_matches_pcgcpp(void **state)
{
    (void)state;
    for (size_t k = 0; k < seed_count; k++) {
        Pcg32 ours;
        pcg32_seed(&ours, seeds[k].seed, seeds[k].stream);
        pcg32 reference(seeds[k].seed, seeds[k].stream);
        assert_int_equal(ours.inc >> 1, reference.stream());
    }
}

/* ---------------------------------------------------------------------------------- */
/* Bounded draws                                                                       */
/* ---------------------------------------------------------------------------------- */

/* Bounds with no rejection (1, 2, 2^31), small ones (6, 7, 1000), the worst case for
 * rejection (2^31 + 1, where almost half of all draws are rejected) and bounds near 2^32.
 * After each run of bounded draws one raw draw is compared too: it only matches if both
 * rejection loops consumed the same number of draws. */
static void test_pcg32_bounded_matches_pcgcpp(void **state)
{
    (void)state;
    static const uint32_t bounds[] = {
        1, 2, 3, 6, 7, 1000, 0x7fffffffu, 0x80000000u, 0x80000001u,
        0xc0000001u, 0xfffffffeu, 0xffffffffu,
    };
    for (size_t k = 0; k < seed_count; k++) {
        Pcg32 ours;
        pcg32_seed(&ours, seeds[k].seed, seeds[k].stream);
        pcg32 reference(seeds[k].seed, seeds[k].stream);
        for (uint32_t bound : bounds) {
            for (long i = 0; i < 2000; i++)
                expect_same_draw("bounded", seeds[k], i, pcg32_bounded(&ours, bound),
                                 reference(bound));
            expect_same_draw("next after bounded", seeds[k], 0, pcg32_next(&ours), reference());
        }
    }
}

/* ---------------------------------------------------------------------------------- */
/* Advance                                                                             */
/* ---------------------------------------------------------------------------------- */

/* Deltas from 0 and 1 through 2^32 + 7 and 2^40 to 2^63 and 2^64 - 1 (one short of a
 * full lap), each applied on top of the previous ones, with draws in between. */
static void test_pcg32_advance_matches_pcgcpp(void **state)
{
    (void)state;
    static const uint64_t deltas[] = {
        0, 1, 2, 1000, (1ULL << 32) + 7, 1ULL << 40, 0x9e3779b97f4a7c15ULL, 1ULL << 63, UINT64_MAX,
    };
    for (size_t k = 0; k < seed_count; k++) {
        Pcg32 ours;
        pcg32_seed(&ours, seeds[k].seed, seeds[k].stream);
        pcg32 reference(seeds[k].seed, seeds[k].stream);
        for (uint64_t delta : deltas) {
            pcg32_advance(&ours, delta);
            reference.advance(delta);
            for (long i = 0; i < 16; i++)
                expect_same_draw("after advance", seeds[k], i, pcg32_next(&ours), reference());
        }
    }
}

/* The way remat uses the generator: draws of every kind interleaved with jumps. pcg-cpp's
 * discard(n) is its name for advance(n). */
static void test_pcg32_mixed_calls_match_pcgcpp(void **state)
{
    (void)state;
    for (size_t k = 0; k < seed_count; k++) {
        Pcg32 ours;
        pcg32_seed(&ours, seeds[k].seed, seeds[k].stream);
        pcg32 reference(seeds[k].seed, seeds[k].stream);
        for (long i = 0; i < 1000; i++) {
            /* Bounds spread over 32 bits; never 0 here (the first i giving 0 is 4050964655). */
            uint32_t bound = (uint32_t)i * 2654435761u + 1u;
            expect_same_draw("mixed bounded", seeds[k], i, pcg32_bounded(&ours, bound),
                             reference(bound));
            pcg32_advance(&ours, (uint64_t)i * i);
            reference.discard((uint64_t)i * i);
            expect_same_draw("mixed next", seeds[k], i, pcg32_next(&ours), reference());
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pcg32_next_matches_pcgcpp),
        cmocka_unit_test(test_pcg32_seed_stream_matches_pcgcpp),
        cmocka_unit_test(test_pcg32_bounded_matches_pcgcpp),
        cmocka_unit_test(test_pcg32_advance_matches_pcgcpp),
        cmocka_unit_test(test_pcg32_mixed_calls_match_pcgcpp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
