/*
 * test_timing.c — the benches' one way of timing (bench/timing.h), on values made up here
 * rather than measured: the median and its order-statistics interval against the binomial
 * tables, the interleaving of variants round by round, the pairing of ratios by round, the
 * quick plan's stopping rule, the machine's state, and how the results writer records an
 * estimate.
 *
 * What it is not: a test of any time. No value here comes from a clock, but for the
 * machine's state, of which only the ranges are checked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/results.h"
#include "bench/timing.h"

/* ---- the median and its interval ------------------------------------------------------- */

static void test_median_interval_follows_the_binomial_tables(void **state)
{
    (void)state;
    /* n = 20 in reverse order: the interval is [x(6), x(15)] (P(Bin(20, ½) ≤ 5) = 0.0207). */
    double v[20];
    for (int i = 0; i < 20; i++) v[i] = 20 - i;
    Estimate e = estimate_median(v, 20);
    assert_true(e.value == 11 && e.lo == 6 && e.hi == 15 && e.samples == 20);
    assert_true(v[0] == 20); /* the values are left as they were */
    /* n = 9: [x(2), x(8)] (coverage 96.1%; [x(3), x(7)] would be 82%). */
    e = estimate_median(v + 11, 9); /* 9, 8, ..., 1 */
    assert_true(e.value == 5 && e.lo == 2 && e.hi == 8);
    /* n = 6: the fewest with a 95% interval, [x(1), x(6)] (96.9%). */
    e = estimate_median((double[]){3, 1, 4, 1.5, 5, 9}, 6);
    assert_true(e.lo == 1 && e.hi == 9 && e.value == 4);
    /* n = 3: no 95% interval exists; the range is given. */
    e = estimate_median((double[]){2, 7, 5}, 3);
    assert_true(e.value == 5 && e.lo == 2 && e.hi == 7 && e.samples == 3);
    e = estimate_single(0.25);
    assert_true(e.value == 0.25 && e.lo == 0.25 && e.hi == 0.25 && e.samples == 1);
}

static void test_within_measures_both_sides(void **state)
{
    (void)state;
    const Estimate narrow = {1.20, 1.16, 1.24, 9}, lopsided = {1.20, 1.19, 1.27, 9};
    assert_true(estimate_within(&narrow, 0.05));
    assert_false(estimate_within(&lopsided, 0.05));
    char buf[64];
    assert_string_equal(estimate_ratio_str(buf, sizeof buf, &narrow), "+20.0% (+16.0..+24.0, 9)");
}

/* ---- interleaved rounds ------------------------------------------------------------------ */

/* A made-up run: variant i takes base[i] seconds, times a factor per round that the same
 * round gives every variant (a slow moment of the machine falls on all alike), times
 * 1 ± up to `noise`, drawn per call from a fixed linear congruential sequence. It logs the
 * order of calls. */
typedef struct Fake {
    double base[3];
    double noise;
    uint64_t lcg;
    int calls, order[512];
} Fake;

/* Uniform in [-1, 1), from Knuth's MMIX LCG. */
static double fake_uniform(Fake *f)
{
    f->lcg = f->lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(f->lcg >> 11) / 4503599627370496.0 - 1.0;
}

static RematStatus fake_run(void *ctx, int variant, double *values)
{
    Fake *f = ctx;
    const int round = f->calls / 3;
    const double slow = 1.0 + (round % 4); /* rounds 1×, 2×, 3×, 4×, 1×, ... as slow */
    values[0] = f->base[variant] * slow * (1.0 + f->noise * fake_uniform(f));
    values[1] = 7.0;
    if (f->calls < 512) f->order[f->calls] = variant;
    f->calls++;
    return REMAT_OK;
}

static void test_rounds_interleave_and_pair_by_round(void **state)
{
    (void)state;
    Fake f = {.base = {1.0, 1.5, 2.0}};
    const TimingPlan plan = timing_plan_fixed(1, 8);
    Timing t;
    assert_int_equal(timing_run(&plan, 3, 2, fake_run, &f, NULL, NULL, &t), REMAT_OK);
    assert_int_equal(t.rounds, 8);
    assert_int_equal(f.calls, 27); /* a warm-up round and 8 timed ones */
    /* Every round runs each variant once, each round starting one variant later. */
    for (int round = 0; round < 9; round++)
        for (int j = 0; j < 3; j++) assert_int_equal(f.order[round * 3 + j], (round + j) % 3);
    /* The slow rounds cancel in the paired ratios, not in the medians of the times. */
    const Estimate ratio = timing_ratio(&t, 2, 0, 0), time = timing_median(&t, 2, 0);
    assert_true(ratio.value == 2.0 && ratio.lo == 2.0 && ratio.hi == 2.0 && ratio.samples == 8);
    assert_true(time.hi >= 2.0 * time.lo); /* the times themselves spread over 1× to 4× */
    assert_true(timing_median(&t, 1, 1).value == 7.0);
    timing_free(&t);
}

static void test_quick_plan_stops_when_narrow_and_goes_on_when_wide(void **state)
{
    (void)state;
    /* Ratios that never vary: the fewest rounds with a 95% interval are enough. */
    Fake quiet = {.base = {1.0, 1.2, 1.3}};
    TimingPlan plan = timing_plan_quick(0, 0);
    Timing t;
    assert_int_equal(timing_run(&plan, 3, 2, fake_run, &quiet, NULL, NULL, &t), REMAT_OK);
    assert_int_equal(t.rounds, 6);
    timing_free(&t);
    /* Up to ±50% noise per run: the interval stays wider than ±5 points, and the rounds go
     * on to the plan's limit. */
    Fake noisy = {.base = {1.0, 1.2, 1.3}, .noise = 0.5};
    assert_int_equal(timing_run(&plan, 3, 2, fake_run, &noisy, NULL, NULL, &t), REMAT_OK);
    assert_int_equal(t.rounds, plan.max_rounds);
    const Estimate e = timing_ratio(&t, 1, 0, 0);
    assert_false(estimate_within(&e, 0.05));
    assert_true(e.lo < 1.2 && e.hi > 1.2);
    timing_free(&t);
}

static RematStatus failing_run(void *ctx, int variant, double *values)
{
    int *calls = ctx;
    values[0] = 1.0;
    if (++*calls == 5) return remat_fail(REMAT_EIO, "the fifth run failed (variant %d)", variant);
    return REMAT_OK;
}

static void test_a_failing_run_stops_the_rounds(void **state)
{
    (void)state;
    int calls = 0;
    const TimingPlan plan = timing_plan_fixed(0, 10);
    Timing t;
    assert_int_equal(timing_run(&plan, 2, 1, failing_run, &calls, NULL, NULL, &t), REMAT_EIO);
    assert_int_equal(calls, 5);
    assert_int_equal(t.rounds, 2); /* the rounds completed before it */
    timing_free(&t);
}

/* ---- the machine ------------------------------------------------------------------------- */

static void test_machine_state_is_read_from_linux(void **state)
{
    (void)state;
    const MachineState a = machine_now();
    volatile double x = 0;
    for (int i = 0; i < 20000000; i++) x += 1e-9 * i; /* some CPU time */
    const MachineState b = machine_now();
    assert_true(a.loadavg >= 0); /* /proc/loadavg */
    assert_true(b.total_ticks >= a.total_ticks && a.total_ticks > 0); /* /proc/stat */
    const double steal = machine_steal(&a, &b);
    assert_true(steal >= 0 && steal <= 1);
    assert_true(b.cpu_seconds > a.cpu_seconds);
    assert_true(b.wall_seconds > a.wall_seconds);
    assert_true(b.involuntary_switches >= a.involuntary_switches);
}

/* ---- the writer ----------------------------------------------------------------------------- */

typedef struct TimedRow {
    const char *name;
    Estimate step_seconds, time_overhead;
} TimedRow;

static const ResultsColumn COLUMNS[] = {
    COLUMN(TimedRow, name, STR, ""), COLUMN_TIMED(TimedRow, step_seconds, "seconds"),
    COLUMN_TIMED(TimedRow, time_overhead, "ratio"), COLUMN_SAMPLES,
};

static void test_an_estimate_is_recorded_with_its_interval(void **state)
{
    (void)state;
    Results *r = results_create("timing_check", "none", true);
    ResultsTable *t = results_row_table(r, "rows", "one row", COLUMNS, RESULTS_COUNT(COLUMNS), true);
    results_add_row(t, &(TimedRow){NULL, {0.5, 0.4, 0.7, 9}, {1.2, 1.1, 1.3, 9}});
    char dir[] = "/tmp/remat_timing_XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(results_write(r, dir), REMAT_OK);
    results_free(r);
    char path[128], text[512] = "";
    snprintf(path, sizeof path, "%s/timing_check.csv", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    assert_string_equal(text, "name,step_seconds,step_seconds_lo,step_seconds_hi,time_overhead,time_overhead_lo,"
                              "time_overhead_hi,samples\n,0.5,0.4,0.7,1.2,1.1,1.3,9\n");
    remove(path);
    snprintf(path, sizeof path, "%s/timing_check.json", dir);
    remove(path);
    /* Estimates of different sample counts in one record are refused. */
    r = results_create("timing_bad", "none", true);
    t = results_row_table(r, "rows", "one row", COLUMNS, RESULTS_COUNT(COLUMNS), true);
    results_add_row(t, &(TimedRow){"a", {0.5, 0.4, 0.7, 9}, {1.2, 1.1, 1.3, 6}});
    assert_int_equal(results_write(r, dir), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "time_overhead comes from 6 samples"));
    results_free(r);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median_interval_follows_the_binomial_tables),
        cmocka_unit_test(test_within_measures_both_sides),
        cmocka_unit_test(test_rounds_interleave_and_pair_by_round),
        cmocka_unit_test(test_quick_plan_stops_when_narrow_and_goes_on_when_wide),
        cmocka_unit_test(test_a_failing_run_stops_the_rounds),
        cmocka_unit_test(test_machine_state_is_read_from_linux),
        cmocka_unit_test(test_an_estimate_is_recorded_with_its_interval),
    };
    return cmocka_run_group_tests_name("timing", tests, NULL, NULL);
}
