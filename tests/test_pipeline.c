/*
 * test_pipeline.c — pipeline parallelism (parallel/pipeline.h, models/pipeline.h): the
 * schedules' order of forwards and backwards, then `mpirun -np P build/app/train
 * --pipeline-stages P --micro-batches M` as a user runs it, against `train --accumulate M`
 * in one process: the saved files must be the same bytes, for P = 2 and 3 (5 blocks over 3
 * stages: uneven), both schedules, strategies none and full (and sqrt, selective), dropout
 * from the stream and from counters. A pipeline's file resumes in one process and the other
 * way round. The ledgers train prints: stage 0's live micro-batches (M under GPipe, at most
 * P under 1F1B) and its peak activations, 2·M·B·T·D·4 bytes over each boundary a step; each
 * stage's peak as `train --predict-only` predicts it, without mpirun, to the byte. Bad
 * combinations are refused once, by rank 0; a stage that fails ends the job naming its rank.
 *
 * Each command runs under `timeout`, so a hang fails the test (status 124).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "parallel/pipeline.h"

#ifndef REMAT_TRAIN_BIN
#error "REMAT_TRAIN_BIN must name the train program"
#endif
#ifndef REMAT_MPIEXEC
#error "REMAT_MPIEXEC must name the MPI launcher"
#endif

/* A small GPT (dropout 0.1 by default), one thread; the blocks are given by each test. */
#define SMALL "--d-model 16 --heads 2 --seq 8 --batch 2 --eval-every 0 --eval-batches 1 --sample 0 --threads 1"
#define LAUNCH "ASAN_OPTIONS=detect_leaks=0 timeout 120 " REMAT_MPIEXEC " --oversubscribe "

static char dir[] = "/tmp/remat_pipe_XXXXXX";
static char errors[65536]; /* the last command's standard error */
static char output[65536]; /* and its standard output */

static int group_setup(void **state)
{
    (void)state;
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    return mkdtemp(dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

static void slurp_text(const char *path, char *into, size_t size)
{
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(into, 1, size - 1, f) : 0;
    into[got] = '\0';
    if (f) fclose(f);
}

/* Runs the shell command made from `fmt`, keeping its standard output in `output` and its
 * standard error in `errors`; returns its exit status (124: timed out). */
static int run(const char *fmt, ...)
{
    char cmd[2048], out[300], err[300];
    snprintf(out, sizeof out, "%s/stdout.txt", dir);
    snprintf(err, sizeof err, "%s/stderr.txt", dir);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof cmd - sizeof out - sizeof err - 16);
    snprintf(cmd + n, sizeof cmd - (size_t)n, " >%s 2>%s", out, err);
    const int status = system(cmd);
    slurp_text(out, output, sizeof output);
    slurp_text(err, errors, sizeof errors);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Fails unless dir/a and dir/b hold the same bytes. */
static void assert_same_file(const char *a, const char *b)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cmp -s %s/%s %s/%s", dir, a, dir, b);
    if (system(cmd) != 0) fail_msg("%s and %s differ", a, b);
}

/* ---- the schedules ------------------------------------------------------------------------- */

static void test_split_is_as_even_as_the_blocks_allow(void **state)
{
    (void)state;
    const int want[][2] = {{0, 2}, {2, 2}, {4, 1}}; /* 5 blocks over 3 stages */
    for (int s = 0; s < 3; s++) {
        int first, count;
        pipe_split(5, 3, s, &first, &count);
        assert_int_equal(first, want[s][0]);
        assert_int_equal(count, want[s][1]);
    }
    int first, count;
    pipe_split(4, 2, 1, &first, &count);
    assert_int_equal(first, 2);
    assert_int_equal(count, 2);
}

/* The most micro-batches a stage holds at once under a schedule, checking on the way that
 * each micro-batch's forward comes before its backward and backwards run in order. */
static int live_peak(PipeSchedule schedule, int P, int s, int M)
{
    PipeAction actions[64];
    assert_int_equal(pipe_actions(schedule, P, s, M, actions), 2 * M);
    int live = 0, peak = 0, forwards = 0, backwards = 0;
    for (int i = 0; i < 2 * M; i++) {
        if (actions[i].kind == PIPE_FORWARD) {
            assert_int_equal(actions[i].micro_batch, forwards++);
            live++;
        } else {
            assert_int_equal(actions[i].micro_batch, backwards++);
            assert_true(backwards <= forwards);
            live--;
        }
        if (live > peak) peak = live;
    }
    return peak;
}

static void test_gpipe_holds_every_micro_batch_and_1f1b_at_most_p(void **state)
{
    (void)state;
    for (int P = 2; P <= 4; P++)
        for (int M = 1; M <= 9; M++)
            for (int s = 0; s < P; s++) {
                assert_int_equal(live_peak(PIPE_GPIPE, P, s, M), M);
                assert_int_equal(live_peak(PIPE_1F1B, P, s, M), M < P - s ? M : P - s);
            }
}

/* ---- train under mpirun --------------------------------------------------------------------- */

/* mpirun -np P --pipeline-stages P --micro-batches M --pipeline-schedule `schedule` with
 * `flags` saves the file one process saves with --accumulate M and `flags`. */
static void check_same_as_accumulate(int layers, int P, int M, const char *schedule, const char *flags)
{
    assert_int_equal(run("%s " SMALL " --layers %d --steps 3 --accumulate %d %s --save %s/one.st", REMAT_TRAIN_BIN,
                         layers, M, flags, dir), 0);
    const int status = run(LAUNCH "-np %d %s " SMALL " --layers %d --steps 3 --pipeline-stages %d --micro-batches %d "
                           "--pipeline-schedule %s %s --save %s/pipe.st", P, REMAT_TRAIN_BIN, layers, P, M, schedule,
                           flags, dir);
    if (status) fail_msg("pipeline of %d stages, %d micro-batches, %s %s: exit %d\n%s", P, M, schedule, flags, status,
                         errors);
    assert_same_file("one.st", "pipe.st");
}

static void test_pipelines_save_what_one_process_accumulating_saves(void **state)
{
    (void)state;
    const char *schedules[] = {"gpipe", "1f1b"}, *strategies[] = {"none", "full"}, *rngs[] = {"stream", "counter"};
    const struct { int layers, P, M; } shapes[] = {{2, 2, 3}, {5, 3, 4}};
    char flags[200];
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < 2; s++)
            for (int g = 0; g < 2; g++)
                for (int d = 0; d < 2; d++) {
                    snprintf(flags, sizeof flags, "--strategy %s --dropout-rng %s", strategies[g], rngs[d]);
                    check_same_as_accumulate(shapes[k].layers, shapes[k].P, shapes[k].M, schedules[s], flags);
                }
    check_same_as_accumulate(5, 2, 2, "1f1b", "--strategy sqrt");
    check_same_as_accumulate(4, 2, 3, "1f1b", "--strategy selective --dropout-rng counter --attention fused");
    check_same_as_accumulate(3, 3, 1, "gpipe", ""); /* one micro-batch: no accumulation */
}

/* Saved by a pipeline, resumed in one process, saved again, resumed by a pipeline of three:
 * the same bytes at every save as one process throughout. */
static void test_a_pipeline_resumes_and_is_resumed(void **state)
{
    (void)state;
    assert_int_equal(run("%s " SMALL " --layers 4 --steps 2 --accumulate 2 --save %s/r1.st", REMAT_TRAIN_BIN, dir), 0);
    assert_int_equal(run("%s " SMALL " --layers 4 --steps 4 --accumulate 2 --resume %s/r1.st --save %s/r2.st",
                         REMAT_TRAIN_BIN, dir, dir), 0);
    assert_int_equal(run("%s " SMALL " --layers 4 --steps 6 --accumulate 2 --resume %s/r2.st --save %s/r3.st",
                         REMAT_TRAIN_BIN, dir, dir), 0);
    assert_int_equal(run(LAUNCH "-np 2 %s " SMALL " --layers 4 --steps 2 --pipeline-stages 2 --micro-batches 2 "
                         "--save %s/p1.st", REMAT_TRAIN_BIN, dir), 0);
    assert_int_equal(run("%s " SMALL " --layers 4 --steps 4 --accumulate 2 --resume %s/p1.st --save %s/p2.st",
                         REMAT_TRAIN_BIN, dir, dir), 0);
    assert_int_equal(run(LAUNCH "-np 3 %s " SMALL " --layers 4 --steps 6 --pipeline-stages 3 --micro-batches 2 "
                         "--resume %s/p2.st --save %s/p3.st", REMAT_TRAIN_BIN, dir, dir), 0);
    assert_same_file("r1.st", "p1.st");
    assert_same_file("r2.st", "p2.st");
    assert_same_file("r3.st", "p3.st");
}

/* The number after `label` on stage `stage`'s line of the output. */
static unsigned long long stage_figure(int stage, const char *label)
{
    char line[32];
    snprintf(line, sizeof line, "    stage %d, ", stage);
    const char *at = strstr(output, line);
    assert_non_null(at);
    const char *end = strchr(at, '\n');
    const char *figure = strstr(at, label);
    if (!figure || figure > end) fail_msg("no \"%s\" on stage %d's line:\n%s", label, stage, output);
    return strtoull(figure + strlen(label), NULL, 10);
}

/* Runs train as P stages of 5 blocks with M micro-batches under `schedule`. */
static void run_ledgers(int P, int M, const char *schedule)
{
    const int status = run(LAUNCH "-np %d %s " SMALL " --layers 5 --steps 2 --quiet --pipeline-stages %d "
                           "--micro-batches %d --pipeline-schedule %s", P, REMAT_TRAIN_BIN, P, M, schedule);
    if (status) fail_msg("exit %d\n%s", status, errors);
}

static void test_the_ledgers_show_live_micro_batches_and_boundary_bytes(void **state)
{
    (void)state;
    run_ledgers(3, 6, "gpipe");
    assert_int_equal(stage_figure(0, "live micro-batches "), 6); /* GPipe: all M */
    const unsigned long long gpipe_peak = stage_figure(0, "("); /* "peak activations 1.2 MiB (1234567 B)" */
    run_ledgers(3, 6, "1f1b");
    assert_int_equal(stage_figure(0, "live micro-batches "), 3); /* 1F1B: P */
    assert_int_equal(stage_figure(1, "live micro-batches "), 2);
    assert_int_equal(stage_figure(2, "live micro-batches "), 1);
    assert_true(stage_figure(0, "(") < gpipe_peak); /* fewer micro-batches held, fewer activations */
    /* 2·M·B·T·D·4 over each boundary a step, counted by the stages on both sides: M = 6, B = 2,
     * T = 8, D = 16. */
    const unsigned long long boundary = 2ull * 6 * 2 * 8 * 16 * 4;
    for (int k = 0; k < 3; k++) assert_int_equal(stage_figure(k, " ms a step, "), boundary);
    char theory[96];
    snprintf(theory, sizeof theory, "each boundary moves 2*M*B*T*D*4 = %llu bytes a step", boundary);
    assert_non_null(strstr(output, theory));
    assert_non_null(strstr(output, "each rank idles (P-1)/(M+P-1) = 25.0%"));
    assert_non_null(strstr(output, ", idle "));
}

/* ---- the prediction ------------------------------------------------------------------------- */

/* Stage s's peak ACT as train --predict-only printed it, and the most it may add: a sent
 * gradient MPI has not yet said went (0 when its lines do not say so). */
static void predicted_stage(int s, unsigned long long *peak, unsigned long long *more)
{
    char line[32];
    snprintf(line, sizeof line, "\n  stage %d, ", s);
    const char *at = strstr(output, line), *figure = at ? strstr(at, " at once: ") : NULL;
    if (!figure) fail_msg("no line for stage %d in:\n%s", s, output);
    *peak = strtoull(figure + strlen(" at once: "), NULL, 10);
    const char *next = strstr(at + 1, "\n  stage "), *up = strstr(at, "and up to ");
    *more = up && (!next || up < next) ? strtoull(up + strlen("and up to "), NULL, 10) : 0;
}

/* The number after stage s's "key": in --predict-only's JSON (its stages in order). */
static unsigned long long json_stage(const char *json, int s, const char *key)
{
    char quoted[32];
    snprintf(quoted, sizeof quoted, "\"%s\": ", key);
    const char *at = strstr(json, "\"stages\": [");
    for (int k = 0; at && k <= s; k++) at = strstr(at + 1, quoted);
    if (!at) fail_msg("no %s for stage %d in:\n%s", quoted, s, json);
    return strtoull(at + strlen(quoted), NULL, 10);
}

/* --predict-only, which needs no mpirun, against the ledger of each stage of the same run's
 * first step, P stages of 5 blocks with M micro-batches; and its --results, a stage each,
 * against what it printed. */
static void check_prediction(int P, int M, const char *schedule, const char *strategy)
{
    char flags[320], path[64], json[2048];
    snprintf(flags, sizeof flags, SMALL " --layers 5 --steps 1 --quiet --pipeline-stages %d --micro-batches %d "
             "--pipeline-schedule %s --strategy %s", P, M, schedule, strategy);
    snprintf(path, sizeof path, "%s/predicted.json", dir);
    assert_int_equal(run("%s %s --predict-only --results %s", REMAT_TRAIN_BIN, flags, path), 0);
    slurp_text(path, json, sizeof json);
    unsigned long long peak[3], more[3];
    for (int s = 0; s < P; s++) {
        predicted_stage(s, &peak[s], &more[s]);
        assert_int_equal(json_stage(json, s, "activations"), peak[s]);
        assert_int_equal(json_stage(json, s, "up_to"), peak[s] + more[s]);
    }
    int stages = 0;
    for (const char *at = json; (at = strstr(at, "\"in_flight\": ")) != NULL; at++) stages++;
    assert_int_equal(stages, P);
    const int status = run(LAUNCH "-np %d %s %s", P, REMAT_TRAIN_BIN, flags);
    if (status) fail_msg("exit %d\n%s", status, errors);
    for (int s = 0; s < P; s++) {
        const unsigned long long got = stage_figure(s, "(");
        printf("  %s %s, stage %d: predicted %llu (+%llu), ledger %llu\n", schedule, strategy, s, peak[s], more[s], got);
        if (got < peak[s] || got > peak[s] + more[s])
            fail_msg("%s, %s: stage %d's peak activations %llu, predicted %llu (up to %llu more)", schedule, strategy,
                     s, got, peak[s], more[s]);
    }
}

static void test_predict_only_gives_each_stage_its_peak(void **state)
{
    (void)state;
    const char *strategies[] = {"none", "full", "selective"};
    for (int i = 0; i < 3; i++) {
        check_prediction(3, 4, "gpipe", strategies[i]);
        check_prediction(3, 4, "1f1b", strategies[i]);
    }
    check_prediction(2, 3, "1f1b", "none");
    /* 1F1B holds at most P − s micro-batches on stage s (GPipe every one, on every stage). */
    assert_int_equal(run("%s " SMALL " --layers 5 --pipeline-stages 2 --micro-batches 3 --predict-only",
                         REMAT_TRAIN_BIN), 0);
    assert_non_null(strstr(output, "stage 0, blocks 0-2 and the embedding, 2 micro-batch(es) at once"));
    assert_non_null(strstr(output, "stage 1, blocks 3-4 and the head, 1 micro-batch(es) at once"));
    assert_int_equal(run("%s " SMALL " --layers 2 --pipeline-stages 3 --predict-only", REMAT_TRAIN_BIN), 2);
    assert_non_null(strstr(errors, "a block at least per stage"));
}

/* ---- refusals and failures ------------------------------------------------------------------- */

/* Every rank sees the bad combination and exits 2; rank 0 alone says `says`, once. */
static void check_refused(int ranks, const char *flags, const char *says)
{
    const int status = ranks > 1 ? run(LAUNCH "-np %d %s " SMALL " --layers 2 %s", ranks, REMAT_TRAIN_BIN, flags)
                                 : run("%s " SMALL " --layers 2 %s", REMAT_TRAIN_BIN, flags);
    if (status != 2 || !strstr(errors, says) || strstr(strstr(errors, says) + 1, says) || strstr(errors, "MPI_ABORT"))
        fail_msg("%s on %d ranks: exit %d, wanted exit 2 and \"%s\" once; standard error was:\n%.2000s", flags,
                 ranks, status, says, errors);
}

static void test_bad_combinations_are_refused(void **state)
{
    (void)state;
    const char *combine = "--pipeline-stages does not combine with --zero, --accumulate";
    check_refused(2, "--pipeline-stages 2 --zero 1", combine);
    check_refused(2, "--pipeline-stages 2 --accumulate 2", combine);
    check_refused(2, "--pipeline-stages 2 --strategy budget --memory-budget 4MiB", combine);
    check_refused(2, "--pipeline-stages 2 --strategy full --offload boundary", combine);
    check_refused(2, "--pipeline-stages 2 --dump-step x.st", combine);
    check_refused(2, "--pipeline-stages 3", "--pipeline-stages 3 needs the GPT, one stage per rank (mpirun -np 3) and "
                  "a block at least per stage; got --model gpt, 2 ranks, 2 blocks");
    check_refused(3, "--pipeline-stages 3", "got --model gpt, 3 ranks, 2 blocks");
    check_refused(2, "--pipeline-stages 2 --micro-batches 0", "--micro-batches: '0' is not a whole number in 1..");
    check_refused(1, "--pipeline-stages 2", "--pipeline-stages does not apply");
    check_refused(2, "--micro-batches 4", "--micro-batches does not apply");
    const int mlp = run(LAUNCH "-np 2 %s --model mlp --layers 4 --pipeline-stages 2", REMAT_TRAIN_BIN);
    assert_int_equal(mlp, 2);
    assert_non_null(strstr(errors, "needs the GPT, one stage per rank (mpirun -np 2) and a block at least per stage; "
                               "got --model mlp, 2 ranks, 4 blocks"));
}

/* Rank 1's budget holds its parameters, gradients and optimizer state but not a step's
 * activations: the job ends, failing, with rank 1's reason, and rank 0, waiting for rank
 * 1's gradients, is ended too rather than hanging. */
static void test_a_failing_stage_ends_the_job(void **state)
{
    (void)state;
    const int status = run(LAUNCH "-np 1 %s " SMALL " --layers 2 --steps 3 --pipeline-stages 2 --micro-batches 4 : "
                           "-np 1 %s " SMALL " --layers 2 --steps 3 --pipeline-stages 2 --micro-batches 4 "
                           "--memory-budget 200KiB", REMAT_TRAIN_BIN, REMAT_TRAIN_BIN);
    assert_true(status != 0 && status != 124);
    assert_non_null(strstr(errors, "train: rank 1 of 2: out of memory"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_is_as_even_as_the_blocks_allow),
        cmocka_unit_test(test_gpipe_holds_every_micro_batch_and_1f1b_at_most_p),
        cmocka_unit_test(test_pipelines_save_what_one_process_accumulating_saves),
        cmocka_unit_test(test_a_pipeline_resumes_and_is_resumed),
        cmocka_unit_test(test_the_ledgers_show_live_micro_batches_and_boundary_bytes),
        cmocka_unit_test(test_predict_only_gives_each_stage_its_peak),
        cmocka_unit_test(test_bad_combinations_are_refused),
        cmocka_unit_test(test_a_failing_stage_ends_the_job),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
