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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/flags.h"
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

static void test_parse_float_takes_decimal_text_only(void **state)
{
    (void)state;
    float v = 0;
    assert_true(parse_float("0.25", 0, 1, false, &v));
    assert_true(v == 0.25f);
    assert_true(parse_float("1e-3", 0, 1, false, &v));
    assert_true(v == 1e-3f);
    assert_true(parse_float("-2.5E1", -100, 100, true, &v));
    assert_true(v == -25.0f);
    assert_true(parse_float("3.", 0, 10, true, &v));
    assert_true(v == 3.0f);
    assert_true(parse_float("1", 0, 1, true, &v));
    const char *bad[] = {"", " 0.5", "0.5 ", "+0.5", "0x1p-3", "inf", "nan", "1e", "1e+", ".", "-", "1..2",
                         "1e400", "0.5junk", "1,5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 7;
        assert_false(parse_float(bad[i], -1e300, 1e300, true, &v));
        assert_true(v == 7); /* nothing written */
    }
    assert_false(parse_float("1", 0, 1, false, &v)); /* hi excluded */
    assert_false(parse_float("-0.1", 0, 1, false, &v));
    float f = 0;
    assert_true(parse_float("0.1", 0, 1, false, &f));
    assert_true(f == 0.1f);
    /* Below 1 as typed, 1.0f once rounded to a float: outside [0, 1), nothing written. */
    assert_false(parse_float("0.99999999", 0, 1, false, &f));
    assert_true(f == 0.1f);
    assert_true(parse_float("0.99999999", 0, 1, true, &f));
    assert_true(f == 1.0f);
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

/* ---- names and flags ------------------------------------------------------------------ */

static const char *const COLOURS[] = {"red", "green", "blue"};
static const NameTable COLOUR_NAMES = {COLOURS, 3};

/* One table per enum, one message for a bad value, and nothing changed by it. */
static void test_name_table_parses_names_and_refuses_others_alike(void **state)
{
    (void)state;
    int v = -1;
    assert_int_equal(name_parse(&COLOUR_NAMES, "blue", &v), REMAT_OK);
    assert_int_equal(v, 2);
    assert_string_equal(name_of(&COLOUR_NAMES, 1), "green");
    assert_string_equal(name_of(&COLOUR_NAMES, 3), "unknown");
    assert_int_equal(name_parse(&COLOUR_NAMES, "Blue", &v), REMAT_EINVAL);
    assert_string_equal(remat_last_error(), "'Blue' is not one of red, green, blue");
    assert_int_equal(name_parse(&COLOUR_NAMES, NULL, &v), REMAT_EINVAL);
    assert_int_equal(v, 2);
}

typedef struct Opts {
    int n;
    float rate;
    bool on, kept;
    int colour;
    const char *path;
} Opts;

static const char *only_when_on(const void *opts, const void *run)
{
    (void)run;
    return ((const Opts *)opts)->on ? NULL : "it needs --on";
}

static const Flag ROWS[] = {
    {.name = "--n", .type = FLAG_INT, .offset = offsetof(Opts, n), .value = "N", .lo = 1, .hi = 9, .heading = "numbers",
     .help = "a count"},
    {.name = "--rate", .type = FLAG_FLOAT, .offset = offsetof(Opts, rate), .value = "X", .lo = 0, .hi = 1,
     .hi_open = true, .applies = only_when_on, .help = "a rate"},
    {.name = "--on", .type = FLAG_SWITCH, .offset = offsetof(Opts, on), .heading = "switches", .help = "on"},
    {.name = "--drop", .type = FLAG_SWITCH_OFF, .offset = offsetof(Opts, kept), .help = "not kept"},
    {.name = "--blue", .type = FLAG_CONST, .offset = offsetof(Opts, colour), .lo = 2, .help = "blue"},
    {.name = "--colour", .type = FLAG_NAME, .offset = offsetof(Opts, colour), .names = &COLOUR_NAMES, .value = "C",
     .help = "a colour"},
    {.name = "--path", .type = FLAG_TEXT, .offset = offsetof(Opts, path), .value = "FILE", .help = "a path"},
};

/* Parses `args` (up to 10, NULL-terminated) by ROWS, rows `accepted`, into *o. */
static int parse_rows(Opts *o, unsigned accepted, unsigned *given, const char *const *args)
{
    char *argv[11] = {"prog"};
    int argc = 1;
    while (argc < 11 && args[argc - 1]) argv[argc] = (char *)args[argc - 1], argc++;
    *o = (Opts){.kept = true};
    *given = 0;
    const FlagSet set = {.flags = ROWS, .n = 7, .opts = o, .accepted = accepted, .given = given};
    return flags_parse(&set, 1, argc, argv);
}

/* Every row sets its field by its type; the given rows are recorded. */
static void test_flags_set_each_field_by_its_type(void **state)
{
    (void)state;
    Opts o;
    unsigned given;
    const char *args[] = {"--n", "3", "--on", "--rate", "0.5", "--drop", "--blue", "--path", "p", NULL};
    assert_int_equal(parse_rows(&o, ~0u, &given, args), FLAGS_RUN);
    assert_int_equal(o.n, 3);
    assert_float_equal(o.rate, 0.5f, 0.0f);
    assert_true(o.on);
    assert_false(o.kept);
    assert_int_equal(o.colour, 2);
    assert_string_equal(o.path, "p");
    assert_int_equal(given, 0x5fu);
    const FlagSet set = {.flags = ROWS, .n = 7, .opts = &o, .accepted = ~0u, .given = &given};
    assert_int_equal(flags_check(&set, NULL), REMAT_OK);
    const char *help[] = {"--n", "3", "-h", NULL};
    assert_int_equal(parse_rows(&o, ~0u, &given, help), FLAGS_HELP);
}

/* Each way a command line can be wrong is refused with the flag's name and why. */
static void test_flags_refuse_with_the_reason(void **state)
{
    (void)state;
    static const struct {
        const char *args[5]; /* NULL-terminated */
        const char *why;
    } cases[] = {
        {{"--bogus"}, "unknown flag --bogus"},
        {{"--n"}, "--n needs a value (N)"},
        {{"--path", ""}, "--path needs a value (FILE)"},
        {{"--n", "10"}, "--n: '10' is not a whole number in 1..9"},
        {{"--rate", "1"}, "--rate: '1' is not a number in [0, 1)"},
        {{"--colour", "pink"}, "--colour: 'pink' is not one of red, green, blue"},
        {{"--n", "1", "--n", "2"}, "--n is given twice"},
        {{"--on"}, "--on does not apply here (the flags that do are below)"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        Opts o;
        unsigned given;
        assert_int_equal(parse_rows(&o, ~0u & ~(1u << 2), &given, cases[c].args), FLAGS_BAD);
        assert_string_equal(remat_last_error(), cases[c].why);
    }
    Opts o;
    unsigned given;
    const char *rate[] = {"--rate", "0.5", NULL};
    assert_int_equal(parse_rows(&o, ~0u, &given, rate), FLAGS_RUN);
    const FlagSet set = {.flags = ROWS, .n = 7, .opts = &o, .accepted = ~0u, .given = &given};
    assert_int_equal(flags_check(&set, NULL), REMAT_EINVAL);
    assert_string_equal(remat_last_error(), "--rate does not apply: it needs --on");
}

/* The help: the rows a program takes, by section, in the flag column of 22. */
static void test_flags_usage_prints_sections_of_accepted_rows(void **state)
{
    (void)state;
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    const FlagSet set = {.flags = ROWS, .n = 7, .accepted = ~0u & ~(1u << 3)};
    flags_usage(&set, "switches", true, out);
    flags_synopsis(&set, out);
    fclose(out);
    assert_string_equal(text, "switches\n"
                              "  --on                on\n"
                              "  --blue              blue\n"
                              "  --colour C          a colour\n"
                              "  --path FILE         a path\n"
                              " [--n N] [--rate X] [--on] [--blue] [--colour C] [--path FILE]");
    free(text);
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
        cmocka_unit_test(test_parse_float_takes_decimal_text_only),
        cmocka_unit_test(test_memory_sizes_parse_with_units),
        cmocka_unit_test(test_name_table_parses_names_and_refuses_others_alike),
        cmocka_unit_test(test_flags_set_each_field_by_its_type),
        cmocka_unit_test(test_flags_refuse_with_the_reason),
        cmocka_unit_test(test_flags_usage_prints_sections_of_accepted_rows),
    };
    return cmocka_run_group_tests_name("parse", tests, NULL, NULL);
}
