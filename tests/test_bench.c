/*
 * test_bench.c — the bench binaries, run for real: bench_all --quick writes every bench's
 * results into a temporary directory, and the tests read them back with cJSON.
 *
 * They check the schema (every key docs/RESULTS.md promises is there, every time with its
 * interval and sample count, the machine's state around each bench), that each bench
 * measured what its question needs with sane values — the sqrt slope near 0.5 and none's
 * near 1, the selective bytes equal to the formula, replayed dropout gradients exactly
 * those of none, sqrt's smallest budget below none's, offload's resident peak below
 * none's by the bytes it put on disk — and that every binary answers
 * --help with 0 and a bad flag with 2; and the writer itself (CSV quoting, exact whole
 * numbers, a misspelt field refused). Nothing here depends on time: step times are
 * measured by the benches but never compared.
 *
 * What it is not: a test of the strategies themselves (test_checkpoint.c is).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/results.h"
#include "bench/results_read.h"
#include "base/platform.h"

#ifndef REMAT_BENCH_DIR
#error "REMAT_BENCH_DIR must name the directory of the bench binaries"
#endif

static const char *const BENCHES[] = {
    "bench_scaling",       "bench_selective", "bench_placement", "bench_dropout",
    "bench_memory_budget", "bench_offload",   "bench_timeline",  "bench_planner",
    "bench_attention",
};
enum { N_BENCHES = sizeof BENCHES / sizeof BENCHES[0] };

static char dir[] = "/tmp/remat_bench_XXXXXX";
static rlim_t file_size_limit; /* when not 0, the soft file-size limit run_bench's child gets */
static cJSON *summary; /* results/summary.json of the quick run */

/* Runs REMAT_BENCH_DIR/<bench> with its arguments (up to 12, then NULL), its output going
 * to <dir>/<bench>.log; returns its exit status, or -1 if it did not exit. The compiler
 * checks that every call ends with NULL. */
static int run_bench(const char *bench, ...) __attribute__((sentinel));

static int run_bench(const char *bench, ...)
{
    enum { MAX_ARGS = 12 };
    char path[512], log[512];
    snprintf(path, sizeof path, "%s/%s", REMAT_BENCH_DIR, bench);
    snprintf(log, sizeof log, "%s/%s.log", dir, bench);
    char *argv[MAX_ARGS + 2] = {path};
    va_list ap;
    va_start(ap, bench);
    for (int i = 1; i <= MAX_ARGS && (argv[i] = va_arg(ap, char *)) != NULL; i++) continue;
    va_end(ap);
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        const int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        signal(SIGXFSZ, SIG_DFL); /* as a shell starts it: the signal kills unless the bench says */
        struct rlimit limit;
        if (file_size_limit && getrlimit(RLIMIT_FSIZE, &limit) == 0) {
            limit.rlim_cur = file_size_limit;
            if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(126);
        }
        execv(path, argv);
        _exit(127);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

/* A results file parsed by the schema's one reader; NULL if missing or broken. */
static cJSON *read_json(const char *path)
{
    bool missing;
    return results_read_file(path, &missing);
}

static int group_setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir)) return -1;
    const int status = run_bench("bench_all", "--quick", "--results", dir, NULL);
    if (status != 0) {
        fprintf(stderr, "bench_all --quick exited with %d; its output is in %s/bench_all.log\n", status, dir);
        return -1;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    summary = read_json(path);
    /* The results as bench_all wrote them, for plots.sh: the tests below write narrowed
     * runs over some of them. */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "mkdir %s/quick && cp %s/*.csv %s/*.json %s/quick/", dir, dir, dir, dir);
    return summary && system(cmd) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    cJSON_Delete(summary);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

/* ---- reading results ------------------------------------------------------------------ */

static const cJSON *get(const cJSON *obj, const char *key)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!item) fail_msg("missing key '%s'", key);
    return item;
}

static const cJSON *bench(const char *name)
{
    return get(get(summary, "benches"), name);
}

/* The records of a table of a results document (summary itself, or bench(name)). */
static const cJSON *records(const cJSON *doc, const char *table)
{
    const cJSON *r = results_records(doc, table);
    if (!r) fail_msg("no records of table '%s'", table);
    assert_true(cJSON_GetArraySize(r) > 0);
    return r;
}

static double num(const cJSON *record, const char *field)
{
    const cJSON *v = get(record, field);
    if (!cJSON_IsNumber(v)) fail_msg("field '%s' is not a number", field);
    return v->valuedouble;
}

static const char *str(const cJSON *record, const char *field)
{
    const cJSON *v = get(record, field);
    if (!cJSON_IsString(v)) fail_msg("field '%s' is not a string", field);
    return v->valuestring;
}

/* The first record of a table whose string fields match (up to two; NULL field: unused). */
static const cJSON *find(const cJSON *list, const char *f1, const char *v1, const char *f2, const char *v2)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, list)
        if (!strcmp(str(r, f1), v1) && (!f2 || !strcmp(str(r, f2), v2))) return r;
    fail_msg("no record with %s = %s", f1, v1);
    return NULL;
}

/* ---- the schema ----------------------------------------------------------------------- */

/* The machine's state around the bench: load averages, steal, and what the process used. */
static void check_machine_state(const cJSON *machine)
{
    assert_true(num(machine, "loadavg_before") >= 0);
    assert_true(num(machine, "loadavg_after") >= 0);
    const double steal = num(machine, "cpu_steal"), others = num(machine, "others_cpu");
    assert_true(steal >= 0 && steal <= 1);
    assert_true(others >= 0 && others <= 1);
    assert_true(num(machine, "involuntary_switches") >= 0);
    assert_true(num(machine, "cpu_seconds") >= 0);
    assert_true(num(machine, "wall_seconds") > 0);
}

/* Whether a field is a time or a ratio of times: its unit counts seconds or a rate, or its
 * name says time. Its own _lo and _hi are not fields of their own here. */
static bool time_derived(const cJSON *field)
{
    const char *name = str(field, "name"), *unit = str(field, "unit");
    const size_t n = strlen(name);
    if (n > 3 && (!strcmp(name + n - 3, "_lo") || !strcmp(name + n - 3, "_hi"))) return false;
    return strstr(unit, "seconds") || strstr(unit, "GFLOP/s") || strstr(unit, "GB/s") || strstr(name, "time") ||
           strstr(name, "seconds");
}

static bool declares(const cJSON *table, const char *name)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, get(table, "fields")) if (!strcmp(str(f, "name"), name)) return true;
    return false;
}

/* Every time-derived field is declared with <field>_lo, <field>_hi and samples, and every
 * record that has it has them too, the median inside its interval; a comparison of
 * interleaved steps has at least the 6 rounds a 95% interval needs. Returns how many
 * timed values it checked. */
static int check_timed_fields(const cJSON *doc)
{
    int checked = 0;
    const cJSON *table;
    cJSON_ArrayForEach(table, get(doc, "tables")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(table, "records");
        const cJSON *field;
        cJSON_ArrayForEach(field, get(table, "fields")) {
            if (!time_derived(field) || !list) continue; /* a CSV-only event log has timestamps, not estimates */
            const char *name = str(field, "name");
            char lo[64], hi[64];
            snprintf(lo, sizeof lo, "%s_lo", name);
            snprintf(hi, sizeof hi, "%s_hi", name);
            if (!declares(table, lo) || !declares(table, hi) || !declares(table, "samples"))
                fail_msg("%s: %s has no %s, %s and samples", str(doc, "bench"), name, lo, hi);
            const cJSON *r;
            cJSON_ArrayForEach(r, list) {
                if (!cJSON_GetObjectItemCaseSensitive(r, name)) continue;
                const double samples = num(r, "samples"), v = num(r, name);
                assert_true(samples >= 1 && samples == (double)(int)samples);
                if (!(num(r, lo) <= v && v <= num(r, hi)))
                    fail_msg("%s: %s = %g outside [%g, %g]", str(doc, "bench"), name, v, num(r, lo), num(r, hi));
                if (!strcmp(name, "time_overhead")) assert_true(samples >= 6);
                checked++;
            }
        }
    }
    return checked;
}

static void check_header(const cJSON *doc, const char *name)
{
    assert_string_equal(str(doc, "schema"), "remat-bench/2");
    assert_string_equal(str(doc, "bench"), name);
    assert_string_equal(str(doc, "mode"), "quick");
    assert_int_equal(strlen(str(doc, "date")), strlen("2025-01-01T00:00:00Z"));
    assert_true(strlen(str(doc, "git_commit")) > 0); /* a sha, or "unknown" */
    const cJSON *machine = get(doc, "machine");
    assert_true(num(machine, "cores") >= 1);
    check_machine_state(machine);
    assert_true(strlen(str(machine, "blas_core")) > 0);
    assert_true(strlen(str(machine, "blas_threading")) > 0);
    assert_string_equal(str(machine, "omp_wait"), platform_info().omp_wait); /* the bench ran in our environment */
    assert_true(num(doc, "threads") >= 1);
    assert_true(cJSON_IsObject(get(doc, "config")));
    const cJSON *table;
    cJSON_ArrayForEach(table, get(doc, "tables")) {
        assert_true(cJSON_GetArraySize(get(table, "fields")) > 0);
        assert_true(num(table, "count") > 0);
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, str(table, "csv"));
        assert_int_equal(access(path, R_OK), 0);
    }
}

static void test_every_bench_writes_the_schema(void **state)
{
    (void)state;
    check_header(summary, "bench_all");
    const cJSON *run;
    cJSON_ArrayForEach(run, records(summary, "runs")) assert_int_equal(num(run, "exit_status"), 0);
    for (int i = 0; i < N_BENCHES; i++) {
        check_header(bench(BENCHES[i]), BENCHES[i]);
        char path[512];
        snprintf(path, sizeof path, "%s/%s.json", dir, BENCHES[i]);
        cJSON *own = read_json(path); /* the bench's own file parses too */
        assert_non_null(own);
        cJSON_Delete(own);
    }
}

/* The benches that time something carry every time with its interval and samples. */
static void test_every_time_comes_with_its_interval(void **state)
{
    (void)state;
    static const char *const TIMED[] = {"bench_scaling", "bench_selective", "bench_placement", "bench_offload",
                                        "bench_timeline"};
    for (size_t i = 0; i < sizeof TIMED / sizeof TIMED[0]; i++) {
        const int checked = check_timed_fields(bench(TIMED[i]));
        printf("  %s: %d timed values, each with its interval and samples\n", TIMED[i], checked);
        assert_true(checked > 0);
    }
    for (int i = 0; i < N_BENCHES; i++) check_timed_fields(bench(BENCHES[i])); /* and no other goes without */
    assert_true(check_timed_fields(summary) == N_BENCHES); /* bench_all's own run times */
}

static void test_every_bench_answers_help_and_rejects_bad_flags(void **state)
{
    (void)state;
    for (int i = 0; i < N_BENCHES; i++) {
        assert_int_equal(run_bench(BENCHES[i], "--help", NULL, NULL), 0);
        assert_int_equal(run_bench(BENCHES[i], "--no-such-flag", NULL, NULL), 2);
        assert_int_equal(run_bench(BENCHES[i], "--results", NULL, NULL), 2);
    }
    assert_int_equal(run_bench("bench_scaling", "--steps", "0", NULL), 2);
    assert_int_equal(run_bench("bench_dropout", "--steps", "3", NULL), 2); /* it times nothing */
    assert_int_equal(run_bench("bench_offload", "--quick", "--offload-dir", NULL), 2);
    /* A spill directory that does not exist is an error that names it. */
    assert_int_equal(run_bench("bench_offload", "--quick", "--offload-dir", "/nonexistent/remat", NULL), 1);
    char path[512], log[1 << 14] = "";
    snprintf(path, sizeof path, "%s/bench_offload.log", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    log[fread(log, 1, sizeof log - 1, f)] = '\0';
    fclose(f);
    assert_non_null(strstr(log, "cannot create a spill file in /nonexistent/remat"));
}

/* Issue 16: under `ulimit -f` SIGXFSZ killed bench_offload, losing its output; now the
 * limit is the error the offload README promises, and the bench exits 1 saying so. */
static void test_offload_under_a_file_size_limit_says_file_too_large(void **state)
{
    (void)state;
    char out[600], path[700], log[1 << 14] = "";
    snprintf(out, sizeof out, "%s/limited", dir);
    snprintf(path, sizeof path, "%s/bench_offload.log", dir);
    unlink(path);
    file_size_limit = 64 * 1024;
    const int status = run_bench("bench_offload", "--quick", "--steps", "1", "--results", out, NULL);
    file_size_limit = 0;
    assert_int_equal(status, 1); /* -1 if a signal ended it */
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    log[fread(log, 1, sizeof log - 1, f)] = '\0';
    fclose(f);
    assert_non_null(strstr(log, "File too large (the file-size limit, ulimit -f, was reached)"));
}

/* Issue 16: a program whose standard output cannot be written (a full disk) exits 1, not
 * 0: its --help, bench_sgemm's figures, and a bench's whole run alike. */
static void test_output_that_cannot_be_written_fails(void **state)
{
    (void)state;
    const char *runs[] = {"bench_scaling --help", "bench_sgemm --size 64 --reps 1 --threads 1 --stream-mib 8 --results",
                          "bench_selective --quick --steps 1 --strategy none --results"};
    for (int i = 0; i < 3; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s/%s%s%s > /dev/full 2>/dev/null", REMAT_BENCH_DIR, runs[i], i ? " " : "",
                 i ? dir : "");
        const int status = system(cmd);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 1) fail_msg("%s > /dev/full did not exit 1", runs[i]);
    }
}

static void test_sgemm_refuses_a_thread_list_with_an_empty_element(void **state)
{
    (void)state;
    /* Issue 16: "1,,2" was taken as 1,2; the parser split it with strtok, which skips
     * empty fields. */
    const char *bad[] = {"1,,2", ",1", "1,", " 1", "1,2,3,4,5,6,7,8,9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(run_bench("bench_sgemm", "--threads", bad[i], NULL), 2);
}

/* bench_sgemm --results writes the sgemm peak and the bandwidth per thread count, every
 * rate with its interval; a bad array size is refused with exit 2. */
static void test_sgemm_writes_its_peak_and_bandwidth(void **state)
{
    (void)state;
    char out[600], path[700];
    snprintf(out, sizeof out, "%s/sgemm", dir);
    assert_int_equal(run_bench("bench_sgemm", "--size", "64", "--reps", "6", "--threads", "1", "--stream-mib", "4",
                               "--results", out, NULL),
                     0);
    snprintf(path, sizeof path, "%s/bench_sgemm.json", out);
    cJSON *doc = read_json(path);
    assert_non_null(doc);
    assert_string_equal(str(doc, "bench"), "bench_sgemm");
    const cJSON *sgemm = records(doc, "sgemm"), *stream = records(doc, "bandwidth");
    assert_int_equal(cJSON_GetArraySize(sgemm), 1);
    assert_true(num(cJSON_GetArrayItem(sgemm, 0), "gflops_per_second") > 0);
    assert_int_equal(cJSON_GetArraySize(stream), 2); /* copy and triad on 1 thread */
    const cJSON *triad = find(stream, "kernel", "triad", NULL, NULL);
    assert_non_null(triad);
    assert_true(num(triad, "array_bytes") == 4.0 * (1 << 20));
    assert_true(num(triad, "bytes_per_pass") == 3 * 4.0 * (1 << 20)); /* b and c read, a written */
    assert_true(num(triad, "gb_per_second") > 0 && num(triad, "samples") == 6);
    assert_int_equal(check_timed_fields(doc), 3);
    cJSON_Delete(doc);
    const char *bad[] = {"0", "4097", "x", "-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(run_bench("bench_sgemm", "--stream-mib", bad[i], NULL), 2);
}

/* bench_step says where a step's time goes: the matmuls' FLOPs are part of the step's,
 * their seconds part of its seconds, the 2-thread rows carry a speed-up, and the
 * optimizer's two ways are timed on each model (the figures' sizes are not checked: they
 * are times). */
static void test_step_reports_where_the_time_goes(void **state)
{
    (void)state;
    char out[600], path[700];
    snprintf(out, sizeof out, "%s/step", dir);
    assert_int_equal(run_bench("bench_step", "--strategy", "none", "--steps", "1", "--results", out, NULL), 0);
    snprintf(path, sizeof path, "%s/bench_step.json", out);
    cJSON *doc = read_json(path);
    assert_non_null(doc);
    const cJSON *steps = records(doc, "steps"), *r;
    const int threads = (int)num(cJSON_GetArrayItem(steps, cJSON_GetArraySize(steps) - 1), "threads");
    assert_int_equal(cJSON_GetArraySize(steps), 2 * threads); /* two models, none on each thread count */
    cJSON_ArrayForEach(r, steps) {
        assert_true(num(r, "matmul_flops") > 0 && num(r, "matmul_flops") < num(r, "flops"));
        assert_true(num(r, "matmul_seconds") > 0 && num(r, "matmul_seconds") < num(r, "step_seconds"));
        assert_true(num(r, "outside_matmul_share") > 0 && num(r, "outside_matmul_share") < 1);
        assert_true(num(r, "optimizer_share") > 0 && num(r, "optimizer_share") < 1);
        assert_true(num(r, "forward_share") > 0 && num(r, "backward_share") > 0);
        assert_true(num(r, "recompute_share") == 0); /* none replays nothing: its clock never ran */
        assert_true(num(r, "minor_faults") >= 0);
        static const char *const timed[] = {"matmul_seconds", "matmul_gflops_per_second", "outside_matmul_share",
                                            "optimizer_share"};
        for (int i = 0; i < 4; i++) {
            char lo[64], hi[64];
            snprintf(lo, sizeof lo, "%s_lo", timed[i]);
            snprintf(hi, sizeof hi, "%s_hi", timed[i]);
            assert_true(num(r, lo) <= num(r, timed[i]) && num(r, timed[i]) <= num(r, hi));
        }
        assert_true((cJSON_GetObjectItemCaseSensitive(r, "speedup_vs_1_thread") != NULL) == (num(r, "threads") > 1));
        assert_true((cJSON_GetObjectItemCaseSensitive(r, "sgemm_speedup_vs_1_thread") != NULL) ==
                    (num(r, "threads") > 1));
        /* The share of the peak is a paired ratio: its interval holds its median, and its
         * value is the step's FLOPs over the sgemm's (2·2048³) times the sgemm's time over
         * the step's, so it is positive and finite. */
        assert_true(num(r, "fraction_of_peak_lo") <= num(r, "fraction_of_peak") &&
                    num(r, "fraction_of_peak") <= num(r, "fraction_of_peak_hi"));
        assert_true(num(r, "fraction_of_peak") > 0 && num(r, "sgemm_gflops_per_second") > 0);
    }
    /* The MLP chain's matmuls (W = 1024, B = 256): one (B,W)·(W,W) product per block
     * forward, two backward (dW and dx) but no dx for the first block, whose input is
     * data: 16 + 16 + 15 products of 2·B·W·W FLOPs each. */
    const cJSON *mlp = find(steps, "model", "mlp N=16 W=1024 B=256", NULL, NULL);
    assert_true(num(mlp, "matmul_flops") == 47 * 2 * 256.0 * 1024 * 1024);
    const cJSON *optim = records(doc, "optimizer");
    assert_int_equal(cJSON_GetArraySize(optim), 2 * 2 * threads); /* two models, two ways */
    cJSON_ArrayForEach(r, optim) assert_true(num(r, "optimizer_seconds_lo") <= num(r, "optimizer_seconds"));
    cJSON_Delete(doc);
}

static void test_strategy_flags_narrow_the_run_or_are_refused(void **state)
{
    (void)state;
    char out[600], path[700];
    snprintf(out, sizeof out, "%s/flags", dir);
    /* --strategy and --policy: only that strategy with that policy is measured, and the
     * results say so. */
    assert_int_equal(run_bench("bench_dropout", "--quick", "--strategy", "selective", "--policy", "dots", "--results",
                               out, NULL),
                     0);
    snprintf(path, sizeof path, "%s/bench_dropout.json", out);
    cJSON *doc = read_json(path);
    assert_non_null(doc);
    assert_string_equal(str(get(doc, "config"), "only_strategy"), "selective");
    assert_string_equal(str(get(doc, "config"), "policy"), "dots_saveable");
    const cJSON *r;
    int rows = 0;
    cJSON_ArrayForEach(r, records(doc, "gradients")) {
        assert_string_equal(str(r, "strategy"), "selective (dots_saveable)");
        rows++;
    }
    assert_int_equal(rows, 2); /* with and without replay */
    cJSON_Delete(doc);
    /* --no-rng-replay reaches the regions: bench_placement's replays draw new masks, and the
     * results say replay was off. */
    assert_int_equal(run_bench("bench_placement", "--quick", "--steps", "1", "--no-rng-replay", "--results", out, NULL),
                     0);
    snprintf(path, sizeof path, "%s/bench_placement.json", out);
    doc = read_json(path);
    assert_non_null(doc);
    assert_string_equal(str(get(doc, "config"), "rng_replay"), "off");
    cJSON_Delete(doc);
    /* --dropout-rng counter reaches bench_dropout's steps: without replay too, every
     * strategy's gradients are none's to the bit, and the check passes. */
    assert_int_equal(run_bench("bench_dropout", "--quick", "--dropout-rng", "counter", "--results", out, NULL), 0);
    snprintf(path, sizeof path, "%s/bench_dropout.json", out);
    doc = read_json(path);
    assert_non_null(doc);
    assert_string_equal(str(get(doc, "config"), "dropout_rng"), "counter");
    cJSON_ArrayForEach(r, records(doc, "gradients")) {
        assert_true(cJSON_IsTrue(get(r, "bit_identical")));
        assert_string_equal(str(r, "determinism_check"), "passed");
    }
    cJSON_Delete(doc);
    assert_int_equal(run_bench("bench_dropout", "--dropout-rng", "philox", NULL), 2);
    assert_int_equal(run_bench("bench_dropout", "--attention", "fused", NULL), 2); /* with the stream */
    /* Fused attention reaches bench_dropout's GPT: still none's gradients to the bit. */
    assert_int_equal(run_bench("bench_dropout", "--quick", "--strategy", "full", "--attention", "fused", "--dropout-rng",
                               "counter", "--results", out, NULL),
                     0);
    doc = read_json(path);
    assert_non_null(doc);
    assert_string_equal(str(get(doc, "config"), "attention"), "fused");
    cJSON_ArrayForEach(r, records(doc, "gradients")) assert_true(cJSON_IsTrue(get(r, "bit_identical")));
    cJSON_Delete(doc);
    assert_int_equal(run_bench("bench_scaling", "--dropout-rng", "counter", NULL), 2); /* the MLP has no dropout */
    /* The model flags reach bench_timeline's GPT (and bench_placement's and
     * bench_memory_budget's, the same bench_variant): what fused attention keeps less than
     * naive attention, stream masks, over the quick shape's 4 layers (B = 4, T = 64,
     * C = 128, H = 4), by the formulas 66 BTC + 9 BHT^2 + 16 BT and 68 BTC + 4 BHT + 16 BT,
     * and the embedding dropout's stream mask outside the blocks (BTC): 4 · (9 BHT^2 −
     * 2 BTC − 4 BHT) + BTC bytes. */
    double stored[2];
    for (int fused = 0; fused < 2; fused++) {
        assert_int_equal(run_bench("bench_timeline", "--quick", "--strategy", "none", "--results", out, "--attention",
                                   fused ? "fused" : "naive", "--dropout-rng", fused ? "counter" : "stream", NULL),
                         0);
        snprintf(path, sizeof path, "%s/bench_timeline.json", out);
        doc = read_json(path);
        assert_non_null(doc);
        assert_string_equal(str(get(doc, "config"), "attention"), fused ? "fused" : "naive");
        stored[fused] = num(find(records(doc, "steps"), "strategy", "none", NULL, NULL), "act_stored");
        cJSON_Delete(doc);
    }
    const double B = 4, T = 64, C = 128, H = 4;
    assert_true(stored[0] - stored[1] == 4 * (9 * B * H * T * T - 2 * B * T * C - 4 * B * H * T) + B * T * C);
    /* A flag that does not fit what a bench measures is refused, not ignored. */
    assert_int_equal(run_bench("bench_placement", "--strategy", "full", NULL), 2);
    assert_int_equal(run_bench("bench_scaling", "--strategy", "selective", NULL), 2); /* not in its sweep */
    assert_int_equal(run_bench("bench_scaling", "--policy", "dots", NULL), 2);
    assert_int_equal(run_bench("bench_dropout", "--no-rng-replay", NULL), 2); /* it measures both */
    assert_int_equal(run_bench("bench_selective", "--policy", "no_such_policy", NULL), 2);
    /* Issue 16: a flag the bench takes is refused too when the strategy chosen makes it
     * change nothing (--policy belongs to selective), and --results that cannot be a
     * directory is refused before anything is measured. */
    assert_int_equal(run_bench("bench_selective", "--strategy", "full", "--policy", "dots", NULL), 2);
    assert_int_equal(run_bench("bench_timeline", "--strategy", "none", "--no-rng-replay", NULL), 2);
    /* Counter-based masks are made again from their counters, so there is no generator to
     * replay: --no-rng-replay changes nothing, and is refused as train refuses it. */
    assert_int_equal(run_bench("bench_placement", "--dropout-rng", "counter", "--no-rng-replay", NULL), 2);
    assert_int_equal(run_bench("bench_scaling", "--results", "a", "--results", "b", NULL), 2); /* given twice */
    assert_int_equal(run_bench("bench_selective", "--policy", "dots", "--policy", "dots", NULL), 2);
}

/* ---- what each bench measured ----------------------------------------------------------- */

static void test_scaling_slopes_are_those_of_the_theory(void **state)
{
    (void)state;
    const cJSON *slopes = records(bench("bench_scaling"), "slopes");
    const double none = num(find(slopes, "strategy", "none", NULL, NULL), "slope");
    const double full = num(find(slopes, "strategy", "full", NULL, NULL), "slope");
    const double sqrt_ = num(find(slopes, "strategy", "sqrt", NULL, NULL), "slope");
    printf("  slopes of peak ACT vs N: none %.3f, full %.3f, sqrt %.3f\n", none, full, sqrt_);
    /* Theory: 1, 1 and 0.5 as N grows; the constant terms of the derived counts pull a fit
     * over N = 8..256 a little below (none 0.94, sqrt 0.40 here). */
    assert_true(none > 0.85 && none < 1.15);
    assert_true(full > 0.75 && full < 1.15);
    assert_true(sqrt_ > 0.35 && sqrt_ < 0.65);
    const cJSON *r;
    cJSON_ArrayForEach(r, records(bench("bench_scaling"), "steps")) {
        assert_true(num(r, "peak_act_units") == num(r, "derived_units")); /* exact, by hand */
        if (!strcmp(str(r, "strategy"), "none")) assert_true(num(r, "recompute_flops") == 0);
        else assert_true(num(r, "flop_overhead") > 0.3 && num(r, "flop_overhead") < 0.4);
    }
}

static void test_selective_bytes_match_the_formula(void **state)
{
    (void)state;
    const cJSON *r;
    int rows = 0;
    cJSON_ArrayForEach(r, records(bench("bench_selective"), "policies")) {
        assert_true(num(r, "act_per_layer") == num(r, "formula_per_layer"));
        assert_true(cJSON_IsTrue(get(r, "census_complete")));
        const bool baseline = !strcmp(str(r, "attention"), "naive") && !strcmp(str(r, "dropout_rng"), "stream");
        if (!strcmp(str(r, "policy"), "none") && baseline) /* the paper's count, without the LayerNorm statistics */
            assert_true(num(r, "korthikanti_fp32_per_layer") < num(r, "act_per_layer"));
        assert_true(num(r, "step_seconds_lo") <= num(r, "step_seconds"));
        assert_true(num(r, "step_seconds") <= num(r, "step_seconds_hi"));
        rows++;
    }
    assert_int_equal(rows, 2 * 4 * 3); /* two lengths, four policies, three attention/dropout pairs */
    cJSON_ArrayForEach(r, records(bench("bench_selective"), "tags"))
        assert_true(num(r, "bytes_per_layer") == num(r, "formula_none"));
    /* The budget fused attention fits and naive attention, either generator, does not. */
    cJSON_ArrayForEach(r, records(bench("bench_selective"), "budget"))
        assert_true(cJSON_IsTrue(get(r, "fits")) == !strcmp(str(r, "attention"), "fused"));
}

static void test_placements_save_memory(void **state)
{
    (void)state;
    const cJSON *r;
    int placements = 0;
    cJSON_ArrayForEach(r, records(bench("bench_placement"), "placements")) {
        if (!strcmp(str(r, "placement"), "none")) continue;
        placements++;
        assert_true(num(r, "act_saved") > 0);
        assert_true(num(r, "recompute_flops") > 0);
    }
    assert_true(placements >= 4);
}

static void test_dropout_replay_is_exact_and_its_absence_is_caught(void **state)
{
    (void)state;
    const cJSON *r;
    cJSON_ArrayForEach(r, records(bench("bench_dropout"), "gradients")) {
        const bool replay = cJSON_IsTrue(get(r, "rng_replay"));
        if (replay) {
            assert_true(num(r, "max_abs_grad_diff") == 0.0);
            assert_string_equal(str(r, "determinism_check"), "passed");
        } else {
            /* Every strategy's divergence is caught, selective included: the check compares
             * each recomputed op, not only the region's (possibly cached) output. */
            assert_true(num(r, "max_abs_grad_diff") > 0.0);
            assert_string_equal(str(r, "determinism_check"), "caught");
        }
    }
    const cJSON *list = records(bench("bench_dropout"), "gradients");
    const cJSON *full = NULL;
    cJSON_ArrayForEach(r, list)
        if (!strcmp(str(r, "strategy"), "full") && !cJSON_IsTrue(get(r, "rng_replay"))) full = r;
    assert_non_null(full);
    assert_string_equal(str(full, "determinism_check"), "caught");
    assert_non_null(strstr(str(full, "check_message"), "checkpoint region h."));
}

static void test_memory_budget_findings(void **state)
{
    (void)state;
    const cJSON *jobs = records(bench("bench_memory_budget"), "jobs");
    const cJSON *floor = cJSON_GetArrayItem(records(bench("bench_memory_budget"), "floor"), 0);
    const double pgo = num(floor, "params_grads_optimizer");
    const double none = num(find(jobs, "optimizer", "adamw", "strategy", "none"), "smallest_budget");
    const double sqrt_ = num(find(jobs, "optimizer", "adamw", "strategy", "sqrt"), "smallest_budget");
    printf("  smallest budgets with AdamW: none %.0f, sqrt %.0f bytes; params+grads+optimizer %.0f\n", none, sqrt_,
           pgo);
    assert_true(sqrt_ < none);
    assert_false(cJSON_IsTrue(get(floor, "any_strategy_fits")));
    assert_true(num(floor, "sgd_smallest_budget") < pgo);
    const cJSON *r;
    cJSON_ArrayForEach(r, jobs) {
        /* The search finds each job's peak to the byte, and AdamW's floor holds. */
        assert_true(num(r, "smallest_budget") == num(r, "peak_resident"));
        if (!strcmp(str(r, "optimizer"), "adamw")) {
            assert_true(num(r, "smallest_budget") > pgo);
            assert_non_null(strstr(str(r, "floor_message"), "optimizer"));
        }
    }
}

static void test_timeline_records_every_strategy(void **state)
{
    (void)state;
    const cJSON *steps = records(bench("bench_timeline"), "steps");
    assert_int_equal(cJSON_GetArraySize(steps), 6);
    const cJSON *r;
    cJSON_ArrayForEach(r, steps) assert_true(num(r, "events") > 0);
    const double none = num(find(steps, "strategy", "none", NULL, NULL), "peak_act");
    assert_true(num(find(steps, "strategy", "full", NULL, NULL), "peak_act") < none);
    /* The offload series move activations to disk; the strategies in RAM never touch it. */
    const cJSON *offload = find(steps, "strategy", "offload", NULL, NULL);
    const cJSON *combined = find(steps, "strategy", "offload+sqrt", NULL, NULL);
    assert_true(num(offload, "peak_act") < none);
    assert_true(num(offload, "peak_disk") > num(combined, "peak_disk"));
    assert_true(num(combined, "peak_disk") > 0);
    assert_true(num(combined, "act_stored") < num(find(steps, "strategy", "sqrt", NULL, NULL), "act_stored"));
    assert_true(num(find(steps, "strategy", "selective", NULL, NULL), "peak_disk") == 0);
    /* The events are in the CSV only: one header line and one line per event. */
    char path[512], line[512];
    snprintf(path, sizeof path, "%s/bench_timeline.events.csv", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int lines = 0;
    while (fgets(line, sizeof line, f)) lines++;
    fclose(f);
    double events = 0;
    cJSON_ArrayForEach(r, steps) events += num(r, "events");
    assert_int_equal(lines, (int)events + 1);
}

/* Every planned schedule fits its budget as the ledger measured it; the MLP's prediction
 * is exact, the GPTs' an upper bound; the single-level optimum is never beaten by a
 * single-level heuristic; Revolve reaches below it on the uniform chains; the summary has
 * all three chains. */
static void test_planner_schedules_fit_and_the_optimum_wins(void **state)
{
    (void)state;
    const cJSON *points = records(bench("bench_planner"), "points");
    const cJSON *r;
    int found = 0;
    cJSON_ArrayForEach(r, points) {
        if (!cJSON_IsTrue(get(r, "found"))) continue;
        found++;
        assert_true(num(r, "measured_peak_resident") <= num(r, "budget"));
        assert_true(num(r, "measured_recompute_flops") == num(r, "recompute_flops"));
        const bool mlp = !strcmp(str(r, "model"), "mlp");
        if (mlp) assert_true(num(r, "measured_peak_act") == num(r, "predicted_peak_act"));
        else assert_true(num(r, "measured_peak_act") <= num(r, "predicted_peak_act"));
        /* Only Revolve, not single-level, may recompute less than the single-level optimum. */
        const bool revolve = !strcmp(str(r, "planner"), "revolve");
        const cJSON *ratio = cJSON_GetObjectItemCaseSensitive(r, "ratio_to_dp");
        if (ratio && !revolve) assert_true(ratio->valuedouble >= 1.0);
        /* Below the DP's smallest budget only Revolve finds a schedule. */
        if (cJSON_IsTrue(get(r, "below_dp_minimum"))) assert_true(revolve);
    }
    assert_true(found > 20);
    const cJSON *summary_records = records(bench("bench_planner"), "summary");
    const char *const models[] = {"mlp", "gpt", "gpt_heads"};
    for (int m = 0; m < 3; m++) {
        const char *model = models[m];
        const cJSON *dp = find(summary_records, "model", model, "planner", "dp");
        const cJSON *chen = find(summary_records, "model", model, "planner", "chen");
        printf("  %s: chen's recompute FLOPs / the optimum's, geometric mean %.3f over %.0f budgets\n", model,
               num(chen, "geomean_ratio_to_dp"), num(chen, "compared"));
        assert_true(num(dp, "geomean_ratio_to_dp") == 1.0);
        assert_true(num(dp, "found") == num(dp, "budgets"));
        assert_true(num(chen, "geomean_ratio_to_dp") >= 1.0);
        assert_true(num(dp, "min_budget") < num(dp, "none_budget"));
        /* Revolve plans the uniform chains, from a smaller budget than the DP, and finds a
         * schedule at every budget it tries there; the GPT of varying heads it refuses. */
        const cJSON *revolve = find(summary_records, "model", model, "planner", "revolve");
        const bool uniform = m < 2;
        assert_true(cJSON_IsTrue(get(revolve, "uniform")) == uniform);
        if (!uniform) {
            assert_true(num(revolve, "found") == 0);
            continue;
        }
        printf("  %s: revolve's smallest budget %.0f bytes against dp's %.0f; found at %.0f of %.0f budgets below "
               "dp's; recompute FLOPs / dp's where both fit: geometric mean %.3f, best %.3f\n", model,
               num(revolve, "min_budget"), num(dp, "min_budget"), num(revolve, "below_dp_found"),
               num(revolve, "below_dp_budgets"), num(revolve, "geomean_ratio_to_dp"), num(revolve, "best_ratio_to_dp"));
        assert_true(num(revolve, "min_budget") < num(dp, "min_budget"));
        assert_true(num(revolve, "below_dp_budgets") > 0);
        assert_true(num(revolve, "below_dp_found") == num(revolve, "below_dp_budgets"));
        assert_true(num(revolve, "found") == num(revolve, "budgets"));
    }
}

/* bench_all runs bench_planner --pareto: the frontier of both models, every planned step within
 * its budget by the ledger's peak, each preset once at its own peak, every record timed against
 * none; ops recomputes no more than dp at every budget where both fit (the bench exits 1
 * otherwise) and less at some, on the GPT; the budget where ops is furthest below dp is marked
 * once per model, with what ops keeps there. */
static void test_planner_frontier_ops_never_above_dp_and_below_it_somewhere(void **state)
{
    (void)state;
    const cJSON *rows = records(bench("bench_planner"), "pareto"), *r, *o;
    const char *const models[] = {"mlp", "gpt"};
    for (int m = 0; m < 2; m++) {
        int ops = 0, dp = 0, below = 0, marked = 0, presets = 0, seen = 0;
        cJSON_ArrayForEach(r, rows) {
            if (strcmp(str(r, "model"), models[m])) continue;
            const char *planner = str(r, "planner");
            const bool preset = strcmp(planner, "ops") && strcmp(planner, "dp") && strcmp(planner, "chen") &&
                                strcmp(planner, "revolve") && strcmp(planner, "dtr");
            assert_true(num(r, "peak") <= num(r, "budget"));
            if (preset) assert_true(num(r, "peak") == num(r, "budget")); /* a preset at its own peak */
            assert_true(num(r, "samples") >= 6 && num(r, "time_overhead_lo") <= num(r, "time_overhead_hi"));
            presets += preset;
            seen |= !strcmp(planner, "chen") << 0 | !strcmp(planner, "revolve") << 1 | !strcmp(planner, "dtr") << 2;
            marked += cJSON_IsTrue(get(r, "most_below_dp"));
            if (strcmp(planner, "ops")) continue;
            ops++;
            cJSON_ArrayForEach(o, rows) /* dp at the same budget */
                if (!strcmp(str(o, "model"), models[m]) && !strcmp(str(o, "planner"), "dp") &&
                    num(o, "budget") == num(r, "budget")) {
                    dp++;
                    assert_true(num(r, "recompute_flops") <= num(o, "recompute_flops"));
                    below += num(r, "recompute_flops") < num(o, "recompute_flops");
                }
        }
        printf("  %s frontier: ops at %d budgets, dp too at %d, ops below dp at %d; %d presets\n", models[m], ops, dp,
               below, presets);
        assert_true(ops >= 5 && dp >= 4);
        assert_int_equal(seen, 7); /* chen, revolve and dtr (its peak within its budget, the ledger's) */
        assert_int_equal(presets, m ? 5 : 3); /* none, full, sqrt; on the GPT attention_core and dots_saveable */
        assert_int_equal(marked, below > 0);
        if (m == 1) assert_true(below > 0);
    }
    const cJSON *widest = NULL;
    cJSON_ArrayForEach(r, rows)
        if (!strcmp(str(r, "model"), "gpt") && cJSON_IsTrue(get(r, "most_below_dp"))) widest = r;
    assert_non_null(widest);
    printf("  gpt, at %.0f bytes: ops runs %.0f layers keeping %s\n", num(widest, "budget"),
           num(widest, "kept_layers"), str(widest, "kept"));
    assert_true(num(widest, "kept_layers") >= 1 && strlen(str(widest, "kept")) > 0);
}

static const cJSON *offload_row(const cJSON *steps, const char *model, const char *config, const char *cache)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, steps) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(r, "page_cache");
        if (!strcmp(str(r, "model"), model) && !strcmp(str(r, "config"), config) &&
            (!cache || (cJSON_IsString(c) && !strcmp(c->valuestring, cache))))
            return r;
    }
    fail_msg("no %s row %s (page cache %s)", model, config, cache ? cache : "-");
    return NULL;
}

/* bench_offload measured the spill directory's disk (O_DIRECT), and set every offload row
 * against its overlap bound: made of the in-RAM step's forward and backward, which it
 * records, and the disk's time for the row's bytes. With the page cache dropped, nothing
 * of the forward's records was left in it when backward began (mincore), unless the
 * directory is on tmpfs, where the page cache is the file's only home. */
static void check_offload_bound(const cJSON *doc, const cJSON *steps)
{
    const cJSON *r;
    int directions = 0;
    cJSON_ArrayForEach(r, records(doc, "disk")) {
        directions++;
        assert_true(num(r, "bandwidth") > 0);
        assert_true(num(r, "bandwidth_lo") <= num(r, "bandwidth") && num(r, "bandwidth") <= num(r, "bandwidth_hi"));
        assert_true(num(r, "file_bytes") >= num(r, "block_bytes"));
    }
    assert_int_equal(directions, 2);
    struct statfs fs;
    assert_int_equal(statfs(str(get(doc, "config"), "offload_dir"), &fs), 0);
    cJSON_ArrayForEach(r, steps) {
        assert_true(num(r, "forward_seconds") > 0 && num(r, "backward_seconds") > 0);
        if (!cJSON_GetObjectItemCaseSensitive(r, "page_cache")) continue;
        assert_true(num(r, "bound_seconds") > 0 && num(r, "vs_bound") > 0);
        if (strcmp(str(r, "page_cache"), "kept") && fs.f_type != 0x01021994) /* dropped, or unused (direct) */
            assert_true(num(r, "cached_after_forward") == 0);
    }
}

static void test_offload_moves_activations_to_disk(void **state)
{
    (void)state;
    const cJSON *doc = bench("bench_offload"), *steps = records(doc, "steps");
    static const char *const MODELS[] = {"mlp", "gpt"};
    for (int m = 0; m < 2; m++) {
        const cJSON *none = offload_row(steps, MODELS[m], "none", NULL);
        const cJSON *sqrt_ = offload_row(steps, MODELS[m], "sqrt", NULL);
        const cJSON *all = offload_row(steps, MODELS[m], "offload+prefetch", "kept");
        const cJSON *combined = offload_row(steps, MODELS[m], "offload+sqrt", "kept");
        assert_true(num(none, "peak_disk") == 0);
        const cJSON *r;
        int rows = 0;
        cJSON_ArrayForEach(r, steps) {
            if (strcmp(str(r, "model"), MODELS[m]) || !cJSON_GetObjectItemCaseSensitive(r, "page_cache")) continue;
            rows++;
            /* Every offload row moved activations out of RAM, whichever page-cache mode ran. */
            assert_true(!strcmp(str(r, "page_cache"), "kept") || !strcmp(str(r, "page_cache"), "dropped") ||
                        (!strcmp(str(r, "page_cache"), "unused") && !strcmp(str(r, "io"), "direct")));
            assert_true(num(r, "peak_disk") > 0);
            assert_true(num(r, "peak_disk") == num(r, "disk_written_per_step"));
            assert_true(num(r, "peak_act") < num(none, "peak_act"));
            /* What is spilled depends on the policy only, not on the page cache or the way
             * the bytes move; and offload adds no FLOPs to its strategy's. */
            const cJSON *same = !strcmp(str(r, "policy"), "all") ? all : combined;
            assert_true(num(r, "peak_disk") == num(same, "peak_disk"));
            assert_true(num(r, "recompute_flops") == num(!strcmp(str(r, "strategy"), "sqrt") ? sqrt_ : none,
                                                         "recompute_flops"));
        }
        /* Quick mode times what quiz question 6 quotes: offload+prefetch with the page cache
         * kept and dropped, and offload+sqrt kept (the other rows: full mode). */
        assert_int_equal(rows, 3);
        offload_row(steps, MODELS[m], "offload+prefetch", "dropped");
        /* Both prefetch rows say where the helper thread's time went: every record written
         * and read back on it, with a window of two records (the windows of bytes: full mode). */
        for (int drop = 0; drop <= 1; drop++) {
            const cJSON *ahead = offload_row(steps, MODELS[m], "offload+prefetch", drop ? "dropped" : "kept");
            assert_true(num(ahead, "io_threads") == 1);
            assert_true(num(ahead, "prefetch_bytes") == 0 && num(ahead, "write_behind_bytes") == 0);
            assert_true(num(ahead, "thread_read_seconds") > 0 && num(ahead, "thread_write_seconds") > 0);
            assert_true(num(ahead, "thread_cpu_seconds") > 0);
            assert_true(num(ahead, "reads_waited") >= 0 && num(ahead, "read_wait_seconds") >= 0);
        }
        /* With sqrt only the kept segment inputs go to disk, and less stays resident than
         * with sqrt alone, between the forward and the backward and at the peak. */
        assert_true(num(combined, "peak_disk") < num(all, "peak_disk"));
        assert_true(num(combined, "act_stored") < num(sqrt_, "act_stored"));
        assert_true(num(combined, "peak_act") < num(sqrt_, "peak_act"));
    }
    /* The MLP chain, exact (docs/MEASUREMENTS.md, 8.1): in units of one activation a = B·W floats,
     * none peaks at 2N + 4 (+ 8 bytes: the loss and its seed), offload all at 6 and the two
     * records prefetch reads ahead, and DISK at what none kept for backward, 2N + 2. */
    const cJSON *config = get(doc, "config");
    const double N = num(config, "mlp_layers"), a = num(config, "mlp_width") * num(config, "mlp_batch") * 4;
    assert_true(num(offload_row(steps, "mlp", "none", NULL), "peak_act") == (2 * N + 4) * a + 8);
    assert_true(num(offload_row(steps, "mlp", "offload+prefetch", "dropped"), "peak_act") == (6 + 2) * a + 8);
    assert_true(num(offload_row(steps, "mlp", "offload+prefetch", "dropped"), "peak_disk") == (2 * N + 2) * a);
    /* The cost of one record, each size through both ways of moving bytes. */
    const cJSON *r;
    int sizes = 0;
    cJSON_ArrayForEach(r, records(doc, "records")) {
        sizes++;
        assert_true(num(r, "pack_seconds") > 0 && num(r, "unpack_seconds") > 0);
    }
    assert_int_equal(sizes, 12);
    check_offload_bound(doc, steps);
}

/* ---- the writer itself ------------------------------------------------------------------ */

/* bench_zero as 2 ranks through the launcher: its schema, and on every rank each kind's
 * bytes equal to the ZeRO formula of its stage, with bytes moved at every stage. */
static void test_zero_bench_bytes_are_the_formulas(void **state)
{
    (void)state;
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    char cmd[1024], path[512];
    snprintf(cmd, sizeof cmd, "ASAN_OPTIONS=detect_leaks=0 OMP_NUM_THREADS=1 timeout 120 %s --oversubscribe -np 2 "
             "%s/bench_zero --quick "
             "--project --results %s >%s/bench_zero.log 2>&1", REMAT_MPIEXEC, REMAT_BENCH_DIR, dir, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/bench_zero_np2.json", dir);
    cJSON *doc = read_json(path);
    assert_non_null(doc);
    check_header(doc, "bench_zero_np2");
    assert_int_equal(num(get(doc, "config"), "ranks"), 2);
    const cJSON *r;
    int rows = 0;
    cJSON_ArrayForEach(r, records(doc, "stages")) {
        assert_true(num(r, "params") == num(r, "params_formula"));
        assert_true(num(r, "grads") == num(r, "grads_formula"));
        assert_true(num(r, "optimizer") == num(r, "optimizer_formula"));
        assert_true(num(r, "grad_reduce_sent_per_step") > 0);
        assert_true((num(r, "param_gather_sent_per_step") > 0) == (num(r, "stage") >= 1));
        rows++;
    }
    assert_int_equal(rows, 4 * 2 * 2); /* stages 0-3, none and full, 2 ranks */
    assert_int_equal(cJSON_GetArraySize(records(doc, "reduce")), 4);
    /* The projection: GPT-2 small's 124,439,808 parameters, its ZeRO bytes per rank at their
     * peaks (train --predict-only's), the 2(K-1)/K * 4 psi bytes a rank of stages 0-2 receives. */
    const double psi = 124439808.0;
    int projected = 0;
    cJSON_ArrayForEach(r, records(doc, "projection")) {
        if (strcmp(str(r, "model"), "gpt2 (124M)") || num(r, "ranks") != 8) continue;
        assert_true(num(r, "parameters") == psi);
        const int stage = (int)num(r, "stage");
        assert_true(num(r, "optimizer") == 8.0 * (stage >= 1 ? psi / 8 : psi));
        assert_true(num(r, "grads") == 4.0 * (stage >= 2 ? psi + psi / 8 : psi)); /* backward makes them whole */
        if (stage < 3) assert_true(num(r, "moved") == 2.0 * 7.0 / 8.0 * 4.0 * psi);
        assert_true(num(r, "comm_seconds") > 0);
        projected++;
    }
    assert_int_equal(projected, 4 * 2);
    cJSON_Delete(doc);
    /* One process has no network to fit: --project needs --alpha and --beta there. */
    snprintf(cmd, sizeof cmd, "%s/bench_zero --quick --project --results %s >%s/bench_zero_one.log 2>&1",
             REMAT_BENCH_DIR, dir, dir);
    assert_int_equal(WEXITSTATUS(system(cmd)), 2);
    snprintf(cmd, sizeof cmd, "%s/bench_zero --quick --project --alpha 2e-6 --beta 1e-10 --results %s "
             ">%s/bench_zero_one.log 2>&1", REMAT_BENCH_DIR, dir, dir);
    assert_int_equal(system(cmd), 0);
    /* --check-prediction on one process: every configuration's params, grads, optimizer and
     * workspace as predicted; the activations and the peak of all kinds never above it (sqrt's
     * regions of several blocks are a bound, cost.h). */
    snprintf(cmd, sizeof cmd, "%s/bench_zero --quick --check-prediction --results %s >%s/bench_zero_one.log 2>&1",
             REMAT_BENCH_DIR, dir, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/bench_zero_np1.json", dir);
    doc = read_json(path);
    assert_non_null(doc);
    rows = 0;
    cJSON_ArrayForEach(r, records(doc, "prediction")) {
        assert_string_equal(str(r, "other_kinds"), "equal");
        assert_true(num(r, "act_predicted") >= num(r, "act_measured"));
        assert_true(num(r, "peak_predicted") >= num(r, "peak_measured"));
        if (strcmp(str(r, "config"), "sqrt")) assert_true(num(r, "act_predicted") == num(r, "act_measured"));
        rows++;
    }
    assert_int_equal(rows, 6);
    cJSON_Delete(doc);
}

typedef struct WriterRow {
    const char *name;
    double bytes, ratio;
    bool has_bytes, has_ratio;
} WriterRow;

static const ResultsColumn WRITER_COLUMNS[] = {
    COLUMN(WriterRow, name, STR, ""), COLUMN(WriterRow, bytes, DOUBLE, "bytes", WHEN(WriterRow, has_bytes)),
    COLUMN(WriterRow, ratio, DOUBLE, "ratio", WHEN(WriterRow, has_ratio)),
};

static void test_writer_writes_csv_beside_json(void **state)
{
    (void)state;
    Results *r = results_create("writer_check", "none", true);
    assert_non_null(r);
    results_config_num(r, "width", 8);
    ResultsTable *t = results_row_table(r, "rows", "two rows", WRITER_COLUMNS, 3, true);
    /* 2^53 - 1: whole numbers stay exact */
    results_add_row(t, &(WriterRow){.name = "a, \"quoted\" name", .bytes = 9007199254740991.0, .has_bytes = true});
    results_add_row(t, &(WriterRow){.name = "plain", .ratio = 0.25, .has_ratio = true});
    assert_int_equal(results_write(r, dir), REMAT_OK);
    results_free(r);

    char path[512], text[256] = "";
    snprintf(path, sizeof path, "%s/writer_check.csv", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    const size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    assert_string_equal(text, "name,bytes,ratio\n\"a, \"\"quoted\"\" name\",9007199254740991,\nplain,,0.25\n");
    snprintf(path, sizeof path, "%s/writer_check.json", dir);
    cJSON *doc = read_json(path);
    assert_non_null(doc);
    assert_true(num(get(doc, "config"), "width") == 8);
    cJSON_Delete(doc);
}

/* The text of a log file (at most size - 1 bytes; "" if it cannot be read). */
static void read_text(const char *path, char *text, size_t size)
{
    text[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    text[fread(text, 1, size - 1, f)] = '\0';
    fclose(f);
}


/* The writer never opens a fixed temporary name: a symbolic link planted at the old one,
 * <file>.tmp, was followed and its target overwritten, and a FIFO there blocked the bench
 * for ever after it had measured. Now each file is a new one (mkstemp) renamed into
 * place, and what sits at the old names is left as it was. */
static void test_writer_neither_follows_nor_waits_on_a_planted_temporary_name(void **state)
{
    (void)state;
    char victim[512], link[512], fifo[512], path[512];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(link, sizeof link, "%s/writer_plant.json.tmp", dir);
    snprintf(fifo, sizeof fifo, "%s/writer_plant.csv.tmp", dir);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("untouched\n", f);
    fclose(f);
    assert_int_equal(symlink(victim, link), 0);
    assert_int_equal(mkfifo(fifo, 0600), 0);

    fflush(stdout);
    const pid_t pid = fork(); /* a writer that blocks is killed, and the test fails */
    if (pid == 0) {
        Results *r = results_create("writer_plant", "none", true);
        results_add_row(results_row_table(r, "rows", "one row", WRITER_COLUMNS, 3, true), &(WriterRow){.name = "a"});
        _exit(results_write(r, dir) == REMAT_OK ? 0 : 1);
    }
    int status = 0;
    pid_t done = 0;
    const struct timespec tenth = {.tv_nsec = 100000000};
    for (int waited = 0; waited < 100 && (done = waitpid(pid, &status, WNOHANG)) == 0; waited++)
        nanosleep(&tenth, NULL);
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail_msg("the writer blocked on the FIFO at %s", fifo);
    }
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    char text[64];
    read_text(victim, text, sizeof text);
    assert_string_equal(text, "untouched\n");
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    snprintf(path, sizeof path, "%s/writer_plant.json", dir);
    cJSON *doc = read_json(path);
    assert_non_null(doc);
    cJSON_Delete(doc);
    snprintf(path, sizeof path, "%s/writer_plant.csv", dir);
    read_text(path, text, sizeof text);
    assert_string_equal(text, "name,bytes,ratio\na,,\n");
    unlink(link), unlink(fifo), unlink(victim);
}

/* ---- plots.sh ---------------------------------------------------------------------------- */

/* A directory <dir>/<name> holding a copy of the quick run's results (<dir>/quick) in
 * results/, where run_plots draws into out/. */
static void plots_workspace(const char *name, char *work, size_t size)
{
    snprintf(work, size, "%s/%s", dir, name);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s && cp -r %s/quick %s/results", work, work, dir, work);
    assert_int_equal(system(cmd), 0);
}

/* Runs bench/plots.sh in `work` on results/ into out/ (after `setup`, a shell command run
 * there first), its output in <work>/plots.log; returns its exit status, or -1. */
static int run_plots(const char *work, const char *setup)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && %s && %s results out >plots.log 2>&1", work, setup, REMAT_PLOTS);
    const int status = system(cmd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Sets column `column` of every row of <work>/results/<csv> to the environment's VALUE. */
static void plant(const char *work, const char *csv, const char *column, const char *value)
{
    char cmd[2048];
    setenv("VALUE", value, 1);
    snprintf(cmd, sizeof cmd, "cd %s/results && awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) "
             "if ($i == \"%s\") k = i } NR > 1 { $k = ENVIRON[\"VALUE\"] } 1' %s >planted && mv planted %s",
             work, column, csv, csv);
    assert_int_equal(system(cmd), 0);
}

/* A value read from results is data: the title plots.sh writes "N rounds" into once ran
 * what a samples field held as gnuplot script (`system "touch pwned"`) and exited 0. Now
 * a count that is not a count is refused, naming the file and the column, and nothing
 * runs. */
static void test_plots_run_nothing_the_results_hold(void **state)
{
    (void)state;
    static const char *const CSVS[] = {"bench_placement.csv", "bench_selective.csv"};
    for (int i = 0; i < 2; i++) {
        char work[600], path[700], log[1 << 14];
        plots_workspace("plots_attack", work, sizeof work);
        plant(work, CSVS[i], "samples", "6 rounds)\"; system \"touch pwned\"; set title \"x");
        assert_int_equal(run_plots(work, "true"), 1);
        snprintf(path, sizeof path, "%s/pwned", work);
        if (access(path, F_OK) == 0) fail_msg("plots.sh ran a command from %s", CSVS[i]);
        snprintf(path, sizeof path, "%s/plots.log", work);
        read_text(path, log, sizeof log);
        if (!strstr(log, CSVS[i]) || !strstr(log, "samples")) fail_msg("plots.sh said: %s", log);
    }
}

/* The size of <work>/out/<png>, or -1 if it is not there. */
static long png_size(const char *work, const char *png)
{
    char path[700];
    snprintf(path, sizeof path, "%s/out/%s", work, png);
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static const char *const PNGS[] = {"scaling.png", "timeline.png", "placement.png", "selective.png", "planner.png",
                                   "planner_pareto.png", "dropout.png", "memory_budget.png"};
enum { N_PNGS = sizeof PNGS / sizeof PNGS[0] };

/* A CSV that is empty, holds only its header, or lacks a column a plot reads is refused,
 * naming the file (and the column), and the PNGs drawn before stay as they were: each
 * plot is drawn into a temporary file and renamed over the old one only once complete.
 * Before, every PNG was cut to 0 bytes first, then gnuplot failed naming no file; and a
 * missing column drew a plot of the row's first number as "MiB", and exited 0. */
static void test_plots_refuse_an_empty_or_garbled_csv_and_keep_the_pngs(void **state)
{
    (void)state;
    static const struct { const char *csv, *setup, *said; } BAD[] = {
        {"bench_placement.csv", "head -n 1 results/bench_placement.csv >h && mv h results/bench_placement.csv",
         "has no rows"},
        {"bench_dropout.csv", ": >results/bench_dropout.csv", "is empty"},
        {"bench_scaling.csv", "cut -d, -f1,2,3 results/bench_scaling.csv >h && mv h results/bench_scaling.csv",
         "peak_act"},
    };
    char work[600], path[700], log[1 << 14];
    plots_workspace("plots_garbled", work, sizeof work);
    snprintf(path, sizeof path, "%s/plots.log", work);
    if (run_plots(work, "true") != 0) {
        read_text(path, log, sizeof log);
        fail_msg("plots.sh on the quick run's results said: %s", log);
    }
    long before[N_PNGS];
    for (int k = 0; k < N_PNGS; k++) {
        before[k] = png_size(work, PNGS[k]);
        assert_true(before[k] > 0);
    }
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        char setup[1024];
        snprintf(setup, sizeof setup, "rm -rf results && cp -r %s/quick results && %s", dir, BAD[i].setup);
        assert_int_equal(run_plots(work, setup), 1);
        read_text(path, log, sizeof log);
        if (!strstr(log, BAD[i].csv) || !strstr(log, BAD[i].said)) fail_msg("plots.sh said: %s", log);
        for (int k = 0; k < N_PNGS; k++)
            if (png_size(work, PNGS[k]) != before[k]) fail_msg("%s changed after a bad %s", PNGS[k], BAD[i].csv);
    }
}

/* A plot gnuplot did not write (a full disk, here a gnuplot that writes nothing) fails
 * naming it; it was reported as written. */
static void test_plots_fail_when_gnuplot_writes_nothing(void **state)
{
    (void)state;
    char work[600], path[700], log[1 << 14];
    plots_workspace("plots_unwritten", work, sizeof work);
    const int status = run_plots(work, "mkdir bin && printf '#!/bin/sh\\ncat >/dev/null\\n' >bin/gnuplot && "
                                       "chmod +x bin/gnuplot && PATH=$PWD/bin:$PATH && export PATH");
    assert_int_equal(status, 1);
    snprintf(path, sizeof path, "%s/plots.log", work);
    read_text(path, log, sizeof log);
    if (!strstr(log, "scaling.png") || strstr(log, "wrote")) fail_msg("plots.sh said: %s", log);
    assert_int_equal(png_size(work, "scaling.png"), -1);
}

/* The output directory's name is data too: pasted into gnuplot's script as a file name,
 * a quote in it ended the string and the rest ran (here after a plot of a file "o"). */
static void test_plots_take_the_output_directory_as_data(void **state)
{
    (void)state;
    static const char OUT[] = "o\"; system \"touch pwned\"; x=\"";
    char work[600], cmd[2048], path[700], log[1 << 14];
    plots_workspace("plots_out", work, sizeof work);
    snprintf(cmd, sizeof cmd, "cd %s && printf '1 1\\n2 2\\n' >o && %s results '%s' >plots.log 2>&1", work,
             REMAT_PLOTS, OUT);
    const int status = system(cmd);
    snprintf(path, sizeof path, "%s/pwned", work);
    if (access(path, F_OK) == 0) fail_msg("plots.sh ran a command from its output directory's name");
    snprintf(path, sizeof path, "%s/plots.log", work);
    read_text(path, log, sizeof log);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail_msg("plots.sh said: %s", log);
    snprintf(path, sizeof path, "%s/%s/scaling.png", work, OUT);
    struct stat st;
    assert_true(stat(path, &st) == 0 && st.st_size > 0);
}

/* bench_sgemm checks its results directory before it measures, as every other bench
 * does: it learnt that it could not write only after the whole run. A flag given twice
 * is refused, as base/flags.h refuses it for every program. */
static void test_sgemm_checks_its_results_directory_before_measuring(void **state)
{
    (void)state;
    char out[600], path[700], log[1 << 14];
    snprintf(out, sizeof out, "%s/bench_all.log/sgemm", dir); /* under a regular file */
    snprintf(path, sizeof path, "%s/bench_sgemm.log", dir);
    unlink(path);
    assert_int_equal(run_bench("bench_sgemm", "--size", "64", "--reps", "1", "--threads", "1", "--stream-mib", "4",
                               "--results", out, NULL),
                     1);
    read_text(path, log, sizeof log);
    if (!strstr(log, out) || strstr(log, "GFLOP/s")) fail_msg("bench_sgemm said: %s", log);
    assert_int_equal(run_bench("bench_sgemm", "--size", "64", "--size", "128", NULL), 2);
}

/* bench_pipeline as 2 ranks through the launcher: its schema, stage 0's live micro-batches M
 * under gpipe and min(M, P) under 1f1b, the bytes over the boundary 2·M·B·T·D·4, gpipe's
 * peak at least 1f1b's once M > P, and a bubble in [0, 1) (nothing about time); plots.sh
 * draws them. Its --show-schedule prints 1F1B's order with the bubble's two units on stage
 * 0, and one process is refused: a pipeline's stages are ranks. */
static void test_pipeline_bench_holds_the_schedules_theory(void **state)
{
    (void)state;
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    char cmd[1024], path[512], log[1 << 14];
    snprintf(cmd, sizeof cmd, "ASAN_OPTIONS=detect_leaks=0 OMP_NUM_THREADS=1 timeout 120 %s --oversubscribe -np 2 "
             "%s/bench_pipeline --quick --results %s >%s/bench_pipeline.log 2>&1", REMAT_MPIEXEC, REMAT_BENCH_DIR,
             dir, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/bench_pipeline.json", dir);
    cJSON *doc = read_json(path);
    assert_non_null(doc);
    check_header(doc, "bench_pipeline");
    const cJSON *config = get(doc, "config");
    const double P = num(config, "ranks"), BTD = num(config, "batch") * num(config, "seq") * num(config, "d_model");
    assert_true(P == 2);
    double gpipe_peak[9] = {0};
    int rows = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, records(doc, "pipeline")) {
        const double M = num(r, "micro_batches"), bubble = num(r, "bubble_fraction");
        const bool gpipe = strcmp(str(r, "schedule"), "gpipe") == 0; /* its rows come first */
        assert_true(num(r, "stages") == P && M >= 1 && M <= 8);
        assert_true(num(r, "live_micro_batches_stage0") == (gpipe || M < P ? M : P));
        assert_true(num(r, "boundary_bytes") == 2 * M * BTD * 4);
        assert_true(bubble >= 0 && bubble < 1);
        if (gpipe) gpipe_peak[(int)M] = num(r, "peak_act_stage0");
        else if (M > P) assert_true(gpipe_peak[(int)M] >= num(r, "peak_act_stage0"));
        rows++;
    }
    assert_int_equal(rows, 2 * 4);
    cJSON_Delete(doc);
    /* plots.sh draws pipeline.png from them, and reads the stage count as data, not script. */
    char work[600];
    plots_workspace("plots_pipeline", work, sizeof work);
    snprintf(cmd, sizeof cmd, "cp %s/bench_pipeline.* %s/results/", dir, work);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(run_plots(work, "true"), 0);
    assert_true(png_size(work, "pipeline.png") > 0);
    plant(work, "bench_pipeline.csv", "stages", "2\"; system \"touch pwned\"; set title \"x");
    assert_int_equal(run_plots(work, "true"), 1);
    char pwned[700];
    snprintf(pwned, sizeof pwned, "%s/pwned", work);
    assert_int_equal(access(pwned, F_OK), -1);
    snprintf(path, sizeof path, "%s/bench_pipeline_show.log", dir);
    snprintf(cmd, sizeof cmd, "ASAN_OPTIONS=detect_leaks=0 OMP_NUM_THREADS=1 timeout 60 %s --oversubscribe -np 2 "
             "%s/bench_pipeline --show-schedule >%s 2>&1", REMAT_MPIEXEC, REMAT_BENCH_DIR, path);
    assert_int_equal(system(cmd), 0);
    read_text(path, log, sizeof log);
    if (!strstr(log, "stage 0: F0  F1  --  B0  F2  B1  F3  B2  --  B3\n")) fail_msg("--show-schedule said: %s", log);
    snprintf(cmd, sizeof cmd, "%s/bench_pipeline --quick --results %s >%s 2>&1", REMAT_BENCH_DIR, dir, path);
    assert_int_equal(WEXITSTATUS(system(cmd)), 1);
    read_text(path, log, sizeof log);
    if (!strstr(log, "run it as 2 or more")) fail_msg("bench_pipeline in one process said: %s", log);
}

/* bench_zero's own flags are checked before it measures: --alpha or --beta without
 * --project change nothing and are refused; --project on one rank needs both, and was
 * refused only after the whole bench. Each exits 2 saying why. */
static void test_zero_project_flags_are_checked_before_measuring(void **state)
{
    (void)state;
    static const char *const BAD[][2] = {
        {"--alpha 2e-6", "--alpha does not apply"},
        {"--beta 1e-10", "--beta does not apply"},
        {"--project --alpha 0", "--project on one rank needs --alpha and --beta"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        char cmd[1024], path[512], log[1 << 14];
        snprintf(path, sizeof path, "%s/bench_zero_flags.log", dir);
        snprintf(cmd, sizeof cmd, "%s/bench_zero --quick %s --results %s >%s 2>&1", REMAT_BENCH_DIR, BAD[i][0], dir,
                 path);
        const int status = system(cmd);
        read_text(path, log, sizeof log);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 2 || !strstr(log, BAD[i][1]) || strstr(log, "sent/step"))
            fail_msg("bench_zero %s said: %s", BAD[i][0], log);
    }
}

/* bench_dtr --unit-chain --quick: the schema, and on every budget DTR's extra computes
 * never below the optimum's, at n = 64 those of DTR's own simulator; --help answers and a
 * flag it does not know is refused. */
static void test_dtr_unit_chain_is_never_below_the_optimum(void **state)
{
    (void)state;
    char path[512], log[4096];
    snprintf(path, sizeof path, "%s/bench_dtr.log", dir);
    assert_int_equal(run_bench("bench_dtr", "--help", NULL), 0);
    unlink(path);
    assert_int_equal(run_bench("bench_dtr", "--quick", "--unit-chain", "--policy", "dots", "--results", dir, NULL), 2);
    read_text(path, log, sizeof log);
    assert_non_null(strstr(log, "--policy"));
    assert_int_equal(run_bench("bench_dtr", "--quick", "--unit-chain", "--results", dir, NULL), 0);
    snprintf(path, sizeof path, "%s/bench_dtr.json", dir);
    cJSON *doc = read_json(path);
    assert_non_null(doc);
    check_header(doc, "bench_dtr");
    const cJSON *r;
    int rows = 0;
    cJSON_ArrayForEach(r, records(doc, "unit_chain")) {
        assert_true(num(r, "dtr_extra_computes") >= num(r, "optimal_extra_computes"));
        assert_true(num(r, "budget") >= 3 && strlen(str(r, "heuristic")) > 0 && strlen(str(r, "budget_rule")) > 0);
        if (num(r, "n") == 64 && !strcmp(str(r, "budget_rule"), "log2(n)")) {
            assert_true(num(r, "budget") == 6 && num(r, "dtr_extra_computes") == 196);
            assert_true(num(r, "optimal_extra_computes") == 134);
        }
        rows++;
    }
    assert_int_equal(rows, 5 * 3);
    cJSON_Delete(doc);
}

/* The field `name` of record r is there exactly when `present` says. */
static void assert_field(const cJSON *r, const char *name, bool present)
{
    assert_true((cJSON_GetObjectItemCaseSensitive(r, name) != NULL) == present);
}

/* bench_dtr --quick, its models table: a record for dp and dtr at each of the three budgets of
 * both models; a step that fits peaks within its budget (the ledger's) and is timed; dtr's
 * say what the runtime did, evicting at every budget it fits below none's peak, and in this
 * configuration recompute more FLOPs than dp's exact schedule at the same budget (dp keeps
 * and drops the saved tensors of whole layers, at least cost; DTR evicts one tensor at a time
 * by its heuristic and replays a whole layer to get it back). */
static void test_dtr_models_fit_their_budgets(void **state)
{
    (void)state;
    char path[512];
    assert_int_equal(run_bench("bench_dtr", "--quick", "--steps", "2", "--results", dir, NULL), 0);
    snprintf(path, sizeof path, "%s/bench_dtr.json", dir);
    cJSON *doc = read_json(path);
    assert_non_null(doc);
    check_header(doc, "bench_dtr");
    static const double SHARES[] = {0.2, 0.4, 0.6}; /* of none's activation peak, each model's records in turn */
    const cJSON *r;
    int rows = 0, dtr_fits = 0;
    double dp_recompute = -1;
    cJSON_ArrayForEach(r, records(doc, "models")) {
        const bool fits = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "fits"));
        const bool dtr = !strcmp(str(r, "planner"), "dtr");
        assert_true(dtr || !strcmp(str(r, "planner"), "dp"));
        assert_true(num(r, "act_share") == SHARES[rows % 6 / 2] && num(r, "budget") > 0);
        assert_field(r, "peak", fits);
        assert_field(r, "time_overhead", fits);
        assert_field(r, "evictions", fits && dtr);
        if (fits) assert_true(num(r, "peak") <= num(r, "budget"));
        if (fits && !dtr) dp_recompute = num(r, "recompute_flops");
        if (fits && dtr) {
            assert_true(num(r, "evictions") > 0 && num(r, "remats") > 0);
            assert_true(num(r, "choose_share") >= 0 && num(r, "choose_share") < 1);
            assert_true(dp_recompute < 0 || num(r, "recompute_flops") > dp_recompute);
            dtr_fits++;
        }
        if (dtr) dp_recompute = -1;
        rows++;
    }
    assert_int_equal(rows, 2 * 3 * 2);
    assert_true(dtr_fits >= 2);
    assert_non_null(records(doc, "unit_chain"));
    cJSON_Delete(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_bench_writes_the_schema),
        cmocka_unit_test(test_zero_bench_bytes_are_the_formulas),
        cmocka_unit_test(test_every_time_comes_with_its_interval),
        cmocka_unit_test(test_every_bench_answers_help_and_rejects_bad_flags),
        cmocka_unit_test(test_sgemm_refuses_a_thread_list_with_an_empty_element),
        cmocka_unit_test(test_sgemm_writes_its_peak_and_bandwidth),
        cmocka_unit_test(test_step_reports_where_the_time_goes),
        cmocka_unit_test(test_offload_under_a_file_size_limit_says_file_too_large),
        cmocka_unit_test(test_output_that_cannot_be_written_fails),
        cmocka_unit_test(test_strategy_flags_narrow_the_run_or_are_refused),
        cmocka_unit_test(test_scaling_slopes_are_those_of_the_theory),
        cmocka_unit_test(test_selective_bytes_match_the_formula),
        cmocka_unit_test(test_placements_save_memory),
        cmocka_unit_test(test_dropout_replay_is_exact_and_its_absence_is_caught),
        cmocka_unit_test(test_memory_budget_findings),
        cmocka_unit_test(test_offload_moves_activations_to_disk),
        cmocka_unit_test(test_timeline_records_every_strategy),
        cmocka_unit_test(test_planner_schedules_fit_and_the_optimum_wins),
        cmocka_unit_test(test_planner_frontier_ops_never_above_dp_and_below_it_somewhere),
        cmocka_unit_test(test_dtr_models_fit_their_budgets),
        cmocka_unit_test(test_writer_writes_csv_beside_json),
        cmocka_unit_test(test_writer_neither_follows_nor_waits_on_a_planted_temporary_name),
        cmocka_unit_test(test_plots_run_nothing_the_results_hold),
        cmocka_unit_test(test_plots_refuse_an_empty_or_garbled_csv_and_keep_the_pngs),
        cmocka_unit_test(test_plots_fail_when_gnuplot_writes_nothing),
        cmocka_unit_test(test_plots_take_the_output_directory_as_data),
        cmocka_unit_test(test_sgemm_checks_its_results_directory_before_measuring),
        cmocka_unit_test(test_zero_project_flags_are_checked_before_measuring),
        cmocka_unit_test(test_pipeline_bench_holds_the_schedules_theory),
        cmocka_unit_test(test_dtr_unit_chain_is_never_below_the_optimum),
    };
    return cmocka_run_group_tests_name("bench", tests, group_setup, group_teardown);
}
