/*
 * test_out_of_memory.c — training runs and predictions whose host allocations fail, each
 * in turn.
 *
 * malloc, calloc, realloc and aligned_alloc are wrapped at link time (tests/CMakeLists.txt)
 * for the project's own code: the wrapper counts the calls and fails the one it is told to.
 * A run is first counted whole (on its second run: the first may grow what the process
 * keeps, the tape); then, for every one of its allocations, run again with that one
 * failing. Each run either fails with a message, having written no file half, or absorbs
 * the failure and trains the same losses; either way nothing stays allocated.
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

#include "app/train.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__real_aligned_alloc(size_t alignment, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__wrap_aligned_alloc(size_t alignment, size_t size);

static long made, fail_at = -1; /* the calls so far; the one that fails (-1: none) */
static bool failed_one;        /* whether fail_at's call came */

static bool fails(void)
{
    const bool now = made++ == fail_at;
    failed_one |= now;
    return now;
}

void *__wrap_malloc(size_t size) { return fails() ? NULL : __real_malloc(size); }
void *__wrap_calloc(size_t n, size_t size) { return fails() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t size) { return fails() ? NULL : __real_realloc(p, size); }
void *__wrap_aligned_alloc(size_t alignment, size_t size)
{
    return fails() ? NULL : __real_aligned_alloc(alignment, size);
}

static FILE *sink;
static char dir[] = "/tmp/remat_oom_XXXXXX";

/* The bytes of `path` into buf; 0 if it cannot be read. */
static size_t file_bytes(const char *path, unsigned char *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    const size_t n = fread(buf, 1, size, f);
    fclose(f);
    return n;
}

/* Runs `o` once whole, then once per allocation with that one failing; saves to a fresh
 * file each time. Returns how many of the runs failed. */
static int fail_each_allocation(TrainOptions o, const char *what)
{
    static unsigned char reference[1 << 22], saved[1 << 22];
    char path[256];
    snprintf(path, sizeof path, "%s/run.safetensors", dir);
    o.save = path;
    TrainReport good, r;
    assert_int_equal(train_run(&o, &good, sink), REMAT_OK);
    made = 0; /* counted on a second run: the first may grow what the process keeps (the tape) */
    assert_int_equal(train_run(&o, &r, sink), REMAT_OK);
    train_report_free(&r);
    const long count = made;
    const size_t n = file_bytes(path, reference, sizeof reference);
    assert_true(n > 0 && n < sizeof reference);
    int failed = 0;
    for (long i = 0; i < count; i++) {
        unlink(path);
        made = 0;
        fail_at = i;
        failed_one = false;
        const RematStatus status = train_run(&o, &r, sink);
        fail_at = -1;
        assert_true(failed_one);
        if (status != REMAT_OK) {
            failed++;
            assert_true(remat_last_error()[0] != '\0');
            remat_clear_error();
        } else {
            assert_int_equal(r.steps_run, good.steps_run);
            assert_memory_equal(r.losses, good.losses, (size_t)good.steps_run * sizeof(float));
        }
        const size_t m = file_bytes(path, saved, sizeof saved); /* none, or all of it */
        assert_true(m == 0 || (m == n && memcmp(saved, reference, n) == 0));
        train_report_free(&r);
        assert_int_equal(mem_live_blocks(), 0);
    }
    printf("  %s: %ld allocations, each failing in turn: %d failed the run with a message, %ld trained the "
           "same losses\n", what, count, failed, count - failed);
    train_report_free(&good);
    return failed;
}

/* Small runs, two steps each, through each way of keeping activations; the GPT's with
 * dropout, its masks kept or made again. */
static const char *const RUNS[][20] = {
    {"--model", "mlp", "--layers", "4", "--d-model", "8", "--batch", "4", "--strategy", "sqrt"},
    {"--model", "mlp", "--layers", "4", "--d-model", "8", "--batch", "4", "--strategy", "budget", "--memory-budget",
     "1GiB", "--planner", "revolve", "--optimizer", "sgd"},
    {"--model", "mlp", "--layers", "4", "--d-model", "8", "--batch", "4", "--strategy", "dtr", "--memory-budget",
     "1GiB", "--accumulate", "2"},
    {"--layers", "2", "--d-model", "8", "--heads", "2", "--seq", "4", "--batch", "2", "--sample", "0", "--dropout",
     "0.1"},
    {"--layers", "2", "--d-model", "8", "--heads", "2", "--seq", "4", "--batch", "2", "--sample", "0", "--dropout",
     "0.1", "--strategy", "selective", "--explain-memory"},
    {"--layers", "2", "--d-model", "64", "--heads", "2", "--seq", "32", "--batch", "8", "--sample", "0", "--dropout",
     "0.1", "--strategy", "full", "--offload", "boundary"}, /* block inputs of 64 KiB: spilled */
    {"--layers", "2", "--d-model", "8", "--heads", "2", "--seq", "4", "--batch", "2", "--sample", "0", "--dropout",
     "0.1", "--attention", "fused", "--dropout-rng", "counter"},
};

/* train's options for two steps of `flags` (NULL-terminated); `what` gets the flags. */
static TrainOptions parse_run(const char *const *flags, char *what, size_t size)
{
    char *argv[32] = {"train", "--steps", "2", "--eval-every", "0", "--eval-batches", "1", "--quiet"};
    int argc = 8;
    what[0] = '\0';
    for (int i = 0; flags[i]; i++) {
        argv[argc++] = (char *)flags[i];
        snprintf(what + strlen(what), size - strlen(what), "%s%s", i ? " " : "", flags[i]);
    }
    TrainOptions o;
    assert_int_equal(train_parse_args(argc, argv, &o, sink, stderr), 0);
    return o;
}

static void test_each_failed_allocation_fails_the_run_cleanly(void **state)
{
    (void)state;
    char what[256];
    for (size_t k = 0; k < sizeof RUNS / sizeof RUNS[0]; k++)
        assert_true(fail_each_allocation(parse_run(RUNS[k], what, sizeof what), what) > 0);
}

/* A GPT run resumed from its saved file, two steps on: the file it resumes from stays as
 * it was, whichever allocation fails. */
static void test_a_resumed_run_keeps_its_file(void **state)
{
    (void)state;
    static unsigned char before[1 << 20], after[1 << 20];
    char what[256], first[256];
    TrainOptions o = parse_run(RUNS[3], what, sizeof what); /* the GPT with dropout, plainly */
    snprintf(first, sizeof first, "%s/first.safetensors", dir);
    o.save = first;
    TrainReport r;
    assert_int_equal(train_run(&o, &r, sink), REMAT_OK);
    train_report_free(&r);
    const size_t n = file_bytes(first, before, sizeof before);
    assert_true(n > 0 && n < sizeof before);
    o.steps = 4;
    o.resume = first;
    assert_true(fail_each_allocation(o, "the same, resumed for two more steps") > 0);
    assert_int_equal(file_bytes(first, after, sizeof after), n);
    assert_memory_equal(before, after, n);
}

/* --predict-only builds no model, but plans and walks one: with each of its allocations
 * failing in turn it fails with a message or prints the same prediction. */
static void test_each_failed_allocation_of_a_prediction(void **state)
{
    (void)state;
    static const char *const PREDICTIONS[][20] = {
        {"--layers", "2", "--d-model", "64", "--heads", "2", "--seq", "32", "--batch", "8", "--predict-only",
         "--strategy", "budget", "--memory-budget", "1GiB", "--planner", "ops"},
        {"--layers", "2", "--d-model", "64", "--heads", "2", "--seq", "32", "--batch", "8", "--dropout", "0.1",
         "--predict-only", "--strategy", "full", "--offload", "all"},
    };
    static char reference[1 << 14], printed[1 << 14];
    char what[256];
    for (size_t k = 0; k < sizeof PREDICTIONS / sizeof PREDICTIONS[0]; k++) {
        const TrainOptions o = parse_run(PREDICTIONS[k], what, sizeof what);
        FILE *out = fmemopen(reference, sizeof reference, "w");
        assert_int_equal(train_predict(&o, out), REMAT_OK);
        fclose(out);
        made = 0;
        out = fopen("/dev/null", "w");
        assert_int_equal(train_predict(&o, out), REMAT_OK);
        fclose(out);
        const long count = made;
        int failed = 0;
        for (long i = 0; i < count; i++) {
            memset(printed, 0, sizeof printed);
            out = fmemopen(printed, sizeof printed, "w");
            made = 0;
            fail_at = i;
            failed_one = false;
            const RematStatus status = train_predict(&o, out);
            fail_at = -1;
            assert_true(failed_one);
            fclose(out);
            failed += status != REMAT_OK;
            assert_true(status != REMAT_OK ? remat_last_error()[0] != '\0' : strcmp(printed, reference) == 0);
            remat_clear_error();
            assert_int_equal(mem_live_blocks(), 0);
        }
        printf("  %s: %ld allocations, each failing in turn: %d failed with a message, %ld printed the same\n", what,
               count, failed, count - failed);
        assert_true(failed > 0);
    }
}

int main(void)
{
    sink = fopen("/dev/null", "w");
    if (!sink || !mkdtemp(dir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_failed_allocation_fails_the_run_cleanly),
        cmocka_unit_test(test_a_resumed_run_keeps_its_file),
        cmocka_unit_test(test_each_failed_allocation_of_a_prediction),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    fclose(sink);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return failed || system(cmd) != 0;
}
