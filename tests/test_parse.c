/*
 * test_parse.c — the command-line number parsers: the whole text is the number and
 * nothing else (no white space, no stray sign, no empty list element), every overflow is
 * caught, and a refused text changes nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>

#include "base/parse.h"

/* Asserts parse_int refuses `text` for [lo, hi] and leaves its output alone. */
static void assert_int_refused(const char *text, long lo, long hi)
{
    int out = 12345;
    if (parse_int(text, lo, hi, &out))
        fail_msg("parse_int accepted \"%s\" as %d in [%ld, %ld]", text ? text : "(null)", out, lo, hi);
    assert_int_equal(out, 12345);
}

static void test_parse_int_accepts_plain_numbers_in_range(void **state)
{
    (void)state;
    int v = 0;
    assert_true(parse_int("2", 1, 4096, &v));
    assert_int_equal(v, 2);
    assert_true(parse_int("4096", 1, 4096, &v));
    assert_int_equal(v, 4096);
    assert_true(parse_int("007", 0, 10, &v)); /* leading zeros are still digits */
    assert_int_equal(v, 7);
    assert_true(parse_int("-5", -10, 10, &v));
    assert_int_equal(v, -5);
    assert_true(parse_int("-2147483648", INT_MIN, INT_MAX, &v));
    assert_int_equal(v, INT_MIN);
    assert_true(parse_int("2147483647", INT_MIN, INT_MAX, &v));
    assert_int_equal(v, INT_MAX);
}

static void test_parse_int_rejects_white_space_and_stray_signs(void **state)
{
    (void)state;
    /* Issue 16: --layers " 2" was accepted, because strtol skips leading white space. */
    const char *bad[] = {" 2", "2 ", "\t2", "2\n", " ", "", "+2", "-2", "- 2", "--2", "2-", "0x10", "1e3",
                         "2.0", "1,2", "２"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_int_refused(bad[i], 0, 4096);
    assert_int_refused(NULL, 0, 4096);
    assert_int_refused("-", -10, 10);
    assert_int_refused(" -1", -10, 10);
}

static void test_parse_int_rejects_overflow_and_out_of_range(void **state)
{
    (void)state;
    assert_int_refused("4097", 1, 4096);
    assert_int_refused("0", 1, 4096);
    assert_int_refused("-11", -10, 10);
    assert_int_refused("2147483648", INT_MIN, LONG_MAX); /* fits a long, not the int it goes to */
    assert_int_refused("-2147483649", LONG_MIN, INT_MAX);
    assert_int_refused("9223372036854775808", 0, LONG_MAX);
    assert_int_refused("99999999999999999999999", 0, LONG_MAX);
    assert_int_refused("-99999999999999999999999", LONG_MIN, 0);
}

static void test_parse_u64_takes_the_whole_range_and_no_sign(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_true(parse_u64("18446744073709551615", 0, UINT64_MAX, &v));
    assert_true(v == UINT64_MAX);
    assert_true(parse_u64("0", 0, UINT64_MAX, &v));
    assert_true(v == 0);
    /* Issue 16: --seed " -1" became 18446744073709551615 through strtoull. */
    const char *bad[] = {" -1", "-1", "-0", "+1", " 1", "1 ", "", "18446744073709551616",
                         "99999999999999999999999", "1x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t out = 77;
        if (parse_u64(bad[i], 0, UINT64_MAX, &out)) fail_msg("parse_u64 accepted \"%s\"", bad[i]);
        assert_true(out == 77);
    }
    uint64_t out = 77;
    assert_false(parse_u64("11", 1, 10, &out));
    assert_false(parse_u64(NULL, 0, 10, &out));
    assert_true(out == 77);
}

static void test_parse_int_list_reads_every_element(void **state)
{
    (void)state;
    int out[4] = {0};
    size_t n = 0;
    assert_true(parse_int_list("1,2,16", 1, 1024, out, 4, &n));
    assert_int_equal(n, 3);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 2);
    assert_int_equal(out[2], 16);
    assert_true(parse_int_list("8", 1, 1024, out, 1, &n));
    assert_int_equal(n, 1);
    assert_int_equal(out[0], 8);
}

static void test_parse_int_list_rejects_empty_elements_and_changes_nothing(void **state)
{
    (void)state;
    /* Issue 16: bench_sgemm --threads 1,,2 was accepted, because strtok skips empty fields. */
    const char *bad[] = {"1,,2", ",1", "1,", ",", "", "1, 2", "1 ,2", "1;2", "1,0", "1,1025", "1,2,3,4,5",
                         "1,99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int out[4] = {9, 9, 9, 9};
        size_t n = 42;
        if (parse_int_list(bad[i], 1, 1024, out, 4, &n)) fail_msg("parse_int_list accepted \"%s\"", bad[i]);
        assert_int_equal(n, 42);
        for (int k = 0; k < 4; k++) assert_int_equal(out[k], 9);
    }
    size_t n = 42;
    assert_false(parse_int_list(NULL, 1, 1024, NULL, 0, &n));
    assert_int_equal(n, 42);
}

static void test_parse_double_takes_decimal_text_only(void **state)
{
    (void)state;
    double v = 0;
    assert_true(parse_double("0.25", 0, 1, false, &v));
    assert_true(v == 0.25);
    assert_true(parse_double("1e-3", 0, 1, false, &v));
    assert_true(v == 1e-3);
    assert_true(parse_double("-2.5E1", -100, 100, true, &v));
    assert_true(v == -25.0);
    assert_true(parse_double("3.", 0, 10, true, &v));
    assert_true(v == 3.0);
    assert_true(parse_double("1", 0, 1, true, &v));
    const char *bad[] = {"", " 0.5", "0.5 ", "+0.5", "0x1p-3", "inf", "nan", "1e", "1e+", ".", "-", "1..2",
                         "1e400", "0.5junk", "1,5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 7;
        assert_false(parse_double(bad[i], -1e300, 1e300, true, &v));
        assert_true(v == 7); /* nothing written */
    }
    assert_false(parse_double("1", 0, 1, false, &v)); /* hi excluded */
    assert_false(parse_double("-0.1", 0, 1, false, &v));
    float f = 0;
    assert_true(parse_float("0.1", 0, 1, false, &f));
    assert_true(f == 0.1f);
}

static void test_memory_sizes_parse_with_units(void **state)
{
    (void)state;
    size_t b = 0;
    assert_int_equal(parse_memory_size("300MiB", &b), REMAT_OK);
    assert_int_equal(b, 300u << 20);
    assert_int_equal(parse_memory_size("1.5GiB", &b), REMAT_OK);
    assert_int_equal(b, 3u << 29);
    assert_int_equal(parse_memory_size("64 KiB", &b), REMAT_OK);
    assert_int_equal(b, 64u << 10);
    assert_int_equal(parse_memory_size("4096", &b), REMAT_OK);
    assert_int_equal(b, 4096);
    assert_int_equal(parse_memory_size("512B", &b), REMAT_OK);
    assert_int_equal(b, 512);
    const char *bad[] = {"", "MiB", "-3MiB", "0", "12 parsecs", "3MiBx", "nan", "inf", "1e30GiB", " 5",
                         "5  MiB", "0x10MiB", "+5MiB", "0.5B"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = 7;
        assert_int_equal(parse_memory_size(bad[i], &b), REMAT_EINVAL);
        assert_int_equal(b, 7); /* nothing written */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_int_accepts_plain_numbers_in_range),
        cmocka_unit_test(test_parse_int_rejects_white_space_and_stray_signs),
        cmocka_unit_test(test_parse_int_rejects_overflow_and_out_of_range),
        cmocka_unit_test(test_parse_u64_takes_the_whole_range_and_no_sign),
        cmocka_unit_test(test_parse_int_list_reads_every_element),
        cmocka_unit_test(test_parse_int_list_rejects_empty_elements_and_changes_nothing),
        cmocka_unit_test(test_parse_double_takes_decimal_text_only),
        cmocka_unit_test(test_memory_sizes_parse_with_units),
    };
    return cmocka_run_group_tests_name("parse", tests, NULL, NULL);
}
