/*
 * test_dist_train.c — `mpirun -np K build/app/train ...` as a user runs it, against
 * `train --accumulate K` in one process: the files they save must be the same bytes
 * (parameters, optimizer state, generators), whatever the ZeRO stage, strategy or offload
 * (each rank its own spill file); a run saved on K ranks resumes on any other number, one
 * process included; a rank that fails ends the whole job with a message naming it,
 * never a hang; ranks given different flags, or resuming files that differ, say so on
 * every rank; and a bad command line is reported once, by rank 0.
 *
 * Each command runs under `timeout`, so a hang fails the test (status 124) instead of
 * stalling the suite. The launcher is the one CMake's FindMPI found; ranks are allowed to
 * run as root (CI) and to outnumber the cores.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef REMAT_TRAIN_BIN
#error "REMAT_TRAIN_BIN must name the train program"
#endif
#ifndef REMAT_MPIEXEC
#error "REMAT_MPIEXEC must name the MPI launcher"
#endif

/* A small GPT (dropout 0.1 by default), one thread, nothing printed but the saves. */
#define SMALL "--layers 2 --d-model 16 --heads 2 --seq 8 --batch 2 --eval-every 0 --eval-batches 1 --sample 0 " \
              "--quiet --threads 1"
/* Large enough that offload spills (64 KiB activations and more). */
#define WIDE "--layers 2 --d-model 64 --heads 2 --seq 64 --batch 4 --eval-every 0 --eval-batches 1 --sample 0 " \
             "--quiet --threads 1"
/* LeakSanitizer off in ranks (sanitizer builds): see tests/CMakeLists.txt. */
#define LAUNCH "ASAN_OPTIONS=detect_leaks=0 timeout 120 " REMAT_MPIEXEC " --oversubscribe "

static char dir[] = "/tmp/remat_dist_XXXXXX";
static char errors[65536]; /* the last command's standard error */

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

/* Runs the shell command made from `fmt`, its standard output discarded and its standard
 * error kept in `errors`; returns its exit status (124: timed out). */
static int run(const char *fmt, ...)
{
    char cmd[2048], log[300];
    snprintf(log, sizeof log, "%s/stderr.txt", dir);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof cmd - sizeof log - 16);
    snprintf(cmd + n, sizeof cmd - (size_t)n, " >/dev/null 2>%s", log);
    const int status = system(cmd);
    FILE *f = fopen(log, "r");
    size_t got = f ? fread(errors, 1, sizeof errors - 1, f) : 0;
    errors[got] = '\0';
    if (f) fclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The whole file at dir/name, in *size bytes (caller frees). */
static char *slurp(const char *name, size_t *size)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    rewind(f);
    char *bytes = malloc(*size ? *size : 1);
    assert_non_null(bytes);
    assert_int_equal(fread(bytes, 1, *size, f), *size);
    fclose(f);
    return bytes;
}

/* Fails unless dir/a and dir/b hold the same bytes. */
static void assert_same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(x, y, na);
    free(x);
    free(y);
}

/* mpirun -np K --zero `zero` with `flags` saves the file --accumulate K saves (one
 * process, which has nothing to shard, is not given --zero). */
static void check_same_as_accumulate(const char *model, int K, int zero, const char *flags)
{
    assert_int_equal(run("%s %s --steps 3 --accumulate %d %s --save %s/one.st", REMAT_TRAIN_BIN, model, K, flags, dir), 0);
    const int status = run(LAUNCH "-np %d %s %s --steps 3 --zero %d %s --save %s/ranks.st", K, REMAT_TRAIN_BIN, model,
                           zero, flags, dir);
    if (status) fprintf(stderr, "mpirun -np %d ... --zero %d %s: exit %d\n%s", K, zero, flags, status, errors);
    assert_int_equal(status, 0);
    assert_same_file("one.st", "ranks.st");
}

static void test_ranks_save_what_one_process_accumulating_saves(void **state)
{
    (void)state;
    const struct { int zero; const char *flags; } runs[] = {
        {2, "--strategy sqrt"}, {1, "--strategy budget --memory-budget 2MiB"},
        {0, "--strategy selective --policy dots"}, {3, "--strategy sqrt"}, {3, "--strategy selective"},
        /* counter-based masks, keyed by the micro-batch: the same whichever rank draws them */
        {2, "--strategy full --dropout-rng counter"},
        {3, "--strategy selective --dropout-rng counter --attention fused"}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++)
        check_same_as_accumulate(SMALL, 3, runs[i].zero, runs[i].flags);
}

/* The number after "key": in dir/name's JSON, or UINT64_MAX. */
static uint64_t json_number(const char *name, const char *key)
{
    size_t size;
    char *json = slurp(name, &size), quoted[32];
    json = realloc(json, size + 1);
    json[size] = '\0';
    snprintf(quoted, sizeof quoted, "\"%s\": ", key);
    const char *at = strstr(json, quoted);
    const uint64_t n = at ? strtoull(at + strlen(quoted), NULL, 10) : UINT64_MAX;
    free(json);
    return n;
}

/* train --predict-only --ranks 2 --zero S against rank 0's ledger in a run of two steps on
 * 2 ranks: every kind to the byte (params with stage 3's group whole, grads with the full
 * gradients stages 2 and 3 make beside the shard, the reduction's workspace, the other
 * rank's micro-batch waiting among the activations); the peak of all kinds at once to the
 * byte below stage 2, and from stage 2 a bound, high by less than the gradients of the
 * block or the rest (the embeddings and final norm) that backward was making then, which
 * it makes part by part. */
static void test_predict_only_ranks_equals_rank_0(void **state)
{
    (void)state;
    const uint64_t block = 4 * (12 * 16 * 16 + 13 * 16), rest = 4 * ((256 + 8) * 16 + 2 * 16); /* SMALL's */
    for (int zero = 0; zero <= 3; zero++)
        for (int full = 0; full < 2; full++) {
            const char *strategy = full ? "full" : "none";
            assert_int_equal(run("%s %s --strategy %s --ranks 2 --zero %d --predict-only --results %s/p.json",
                                 REMAT_TRAIN_BIN, SMALL, strategy, zero, dir), 0);
            assert_int_equal(run(LAUNCH "-np 2 %s %s --strategy %s --zero %d --steps 2 --results %s/m.json",
                                 REMAT_TRAIN_BIN, SMALL, strategy, zero, dir), 0);
            for (int k = 0; k < 5; k++) {
                const char *key = (const char *[]){"params", "grads", "optimizer", "activations", "workspace"}[k];
                assert_int_equal(json_number("p.json", key), json_number("m.json", key));
            }
            const uint64_t predicted = json_number("p.json", "peak"), measured = json_number("m.json", "peak");
            printf("  --zero %d --strategy %s: peak predicted %" PRIu64 ", measured %" PRIu64 "\n", zero, strategy,
                   predicted, measured);
            const uint64_t bound = zero >= 2 ? (block > rest ? block : rest) : 0;
            assert_true(predicted >= measured && predicted <= measured + bound);
        }
}

/* The doctor after a run at ZeRO stage 2 under full, whose activations are small: the
 * peak is the gradients backward makes in full before the reduce-scatter shards them. */
static void test_the_doctor_names_stage_2s_full_gradients(void **state)
{
    (void)state;
    assert_int_equal(run(LAUNCH "-np 2 %s %s --strategy full --zero 2 --steps 1 | tee %s/out.txt", REMAT_TRAIN_BIN,
                         SMALL, dir), 0);
    size_t size;
    char *text = slurp("out.txt", &size);
    text = realloc(text, size + 1);
    text[size] = '\0';
    assert_non_null(strstr(text, "at the peak (in backward)"));
    assert_non_null(strstr(text, "the peak holds the gradients backward makes in full"));
    free(text);
}

/* Offload on every rank: each spills to its own file (created unlinked in --offload-dir). */
static void test_ranks_with_offload_save_the_same(void **state)
{
    (void)state;
    char flags[400];
    snprintf(flags, sizeof flags, "--strategy full --offload all --offload-dir %s", dir);
    check_same_as_accumulate(WIDE, 2, 1, flags);
    snprintf(flags, sizeof flags, "--offload all --offload-dir %s", dir);
    check_same_as_accumulate(WIDE, 2, 2, flags);
    snprintf(flags, sizeof flags, "--strategy full --offload boundary --offload-dir %s", dir);
    check_same_as_accumulate(WIDE, 2, 3, flags);
}

/* Saved on 2 ranks (ZeRO-1), resumed on 3 (ZeRO-3), then in one process: the same bytes at
 * every save as one process accumulating 2, then 3, then 1 micro-batches. */
static void test_resume_across_world_sizes(void **state)
{
    (void)state;
    assert_int_equal(run("%s " SMALL " --steps 2 --accumulate 2 --save %s/r1.st", REMAT_TRAIN_BIN, dir), 0);
    assert_int_equal(run("%s " SMALL " --steps 4 --accumulate 3 --resume %s/r1.st --save %s/r2.st", REMAT_TRAIN_BIN,
                         dir, dir), 0);
    assert_int_equal(run("%s " SMALL " --steps 6 --resume %s/r2.st --save %s/r3.st", REMAT_TRAIN_BIN, dir, dir), 0);
    assert_int_equal(run(LAUNCH "-np 2 %s " SMALL " --zero 1 --steps 2 --save %s/d1.st", REMAT_TRAIN_BIN, dir), 0);
    assert_int_equal(run(LAUNCH "-np 3 %s " SMALL " --zero 3 --steps 4 --resume %s/d1.st --save %s/d2.st",
                         REMAT_TRAIN_BIN, dir, dir), 0);
    assert_int_equal(run("%s " SMALL " --steps 6 --resume %s/d2.st --save %s/d3.st", REMAT_TRAIN_BIN, dir, dir), 0);
    assert_same_file("r1.st", "d1.st");
    assert_same_file("r2.st", "d2.st");
    assert_same_file("r3.st", "d3.st");
}

/* Bad input on rank 1 alone (its corpus does not exist): the job ends, failing, with rank
 * 1's reason; the other rank, waiting for it, is ended too rather than hanging. */
static void test_a_rank_with_bad_input_ends_the_job(void **state)
{
    (void)state;
    const int status = run(LAUNCH "-np 1 %s " SMALL " --steps 3 : -np 1 %s " SMALL " --steps 3 --data %s/missing.txt",
                           REMAT_TRAIN_BIN, REMAT_TRAIN_BIN, dir);
    assert_true(status != 0 && status != 124);
    assert_non_null(strstr(errors, "train: rank 1 of 2:"));
    assert_non_null(strstr(errors, "missing.txt"));
}

/* A memory budget too small on rank 1 alone: the job ends with rank 1's out-of-memory
 * message, which says what that rank holds. 180 KiB holds the rank's parameters, gradients
 * and optimizer state (169 KiB, checked before the model is built), not its activations. */
static void test_a_rank_over_its_budget_ends_the_job(void **state)
{
    (void)state;
    const int status = run(LAUNCH "-np 1 %s " SMALL " --steps 3 --strategy budget --memory-budget 4MiB : "
                           "-np 1 %s " SMALL " --steps 3 --strategy budget --memory-budget 180KiB",
                           REMAT_TRAIN_BIN, REMAT_TRAIN_BIN);
    assert_true(status != 0 && status != 124);
    assert_non_null(strstr(errors, "train: rank 1 of 2: memory budget 180.0 KiB is below what any"));
    assert_non_null(strstr(errors, "params, grads, optimizer"));
    /* Below even the parameters, gradients and optimizer state, it says so before building. */
    const int early = run(LAUNCH "-np 1 %s " SMALL " --steps 3 : -np 1 %s " SMALL " --steps 3 --strategy budget "
                          "--memory-budget 100KiB", REMAT_TRAIN_BIN, REMAT_TRAIN_BIN);
    assert_true(early != 0 && early != 124);
    assert_non_null(strstr(errors, "train: rank 1 of 2: the model's parameters (42.2 KiB)"));
    assert_non_null(strstr(errors, "need 169.0 KiB on each of 2 ranks under ZeRO stage 0"));
}

/* Two ranks, rank 0 given `flags0` and rank 1 `flags1`: the job fails, no hang, and each
 * rank says what `says` (the start of a difference, "--steps is 4 here, 3 on rank 0", as
 * rank 1 sees it) and what rank 0 sees; every rank ends itself, with no MPI_Abort. */
static void check_ranks_disagree(const char *flags0, const char *flags1, const char *says, const char *rank0_says)
{
    const int status = run(LAUNCH "-np 1 %s " SMALL " %s : -np 1 %s " SMALL " %s", REMAT_TRAIN_BIN, flags0,
                           REMAT_TRAIN_BIN, flags1);
    char one[256], zero[256];
    snprintf(one, sizeof one, "train: rank 1 of 2: %s", says);
    snprintf(zero, sizeof zero, "train: rank 0 of 2: %s", rank0_says);
    if (status == 0 || status == 124 || !strstr(errors, one) || !strstr(errors, zero) || strstr(errors, "MPI_ABORT"))
        fail_msg("%s : %s: exit %d, wanted \"%s\" and \"%s\"; standard error was:\n%.2000s", flags0, flags1,
                 status, one, zero, errors);
}

/* Ranks given flags that must agree, or resuming files that differ, would hang or train
 * on without a word: they compare before training, and every rank names the difference. */
static void test_ranks_that_disagree_end_the_job(void **state)
{
    (void)state;
    check_ranks_disagree("--steps 3", "--steps 4", "--steps is 4 here, 3 on rank 0", "--steps is 3 here, 4 on rank 1");
    check_ranks_disagree("--steps 3 --seed 1", "--steps 3 --seed 2", "--seed is 2 here, 1 on rank 0",
                         "--seed is 1 here, 2 on rank 1");
    check_ranks_disagree("--steps 3 --zero 1", "--steps 3 --zero 2", "--zero is 2 here, 1 on rank 0",
                         "--zero is 1 here, 2 on rank 1");
    /* Each rank resumes its own copy: saved at other steps, then at one step from other seeds. */
    assert_int_equal(run("%s " SMALL " --steps 2 --save %s/a2.st", REMAT_TRAIN_BIN, dir), 0);
    assert_int_equal(run("%s " SMALL " --steps 3 --save %s/a3.st", REMAT_TRAIN_BIN, dir), 0);
    assert_int_equal(run("%s " SMALL " --steps 2 --seed 7 --save %s/b2.st", REMAT_TRAIN_BIN, dir), 0);
    char a2[300], a3[300], b2[300];
    snprintf(a2, sizeof a2, "--steps 5 --zero 1 --resume %s/a2.st", dir);
    snprintf(a3, sizeof a3, "--steps 5 --zero 1 --resume %s/a3.st", dir);
    snprintf(b2, sizeof b2, "--steps 5 --zero 1 --resume %s/b2.st", dir);
    check_ranks_disagree(a2, a3, "the resumed step is 3 here, 2 on rank 0", "the resumed step is 2 here, 3 on rank 1");
    check_ranks_disagree(a2, b2, "the parameters' digest is ", "the parameters' digest is ");
}

/* --accumulate and mpirun are two ways to the same step, not to be combined. */
static void test_accumulate_under_mpirun_is_refused(void **state)
{
    (void)state;
    const int status = run(LAUNCH "-np 2 %s " SMALL " --steps 1 --accumulate 2", REMAT_TRAIN_BIN);
    assert_true(status != 0 && status != 124);
    assert_non_null(strstr(errors, "--accumulate 2 on 2 ranks"));
}

/* How many times `needle` occurs in `haystack`. */
static int count(const char *haystack, const char *needle)
{
    int n = 0;
    for (const char *at = haystack; (at = strstr(at, needle)); at += strlen(needle)) n++;
    return n;
}

/* A bad command line under mpirun: every rank saw it and exits 2, but only rank 0 says
 * why and prints the usage, once, whole; the others leave quietly, without the launcher's
 * note about an aborted job. */
static void test_a_bad_command_line_is_printed_once(void **state)
{
    (void)state;
    const int status = run(LAUNCH "-np 3 %s " SMALL " --bogus", REMAT_TRAIN_BIN);
    assert_int_equal(status, 2);
    if (count(errors, "train: unknown flag --bogus\n") != 1 || count(errors, "usage: train ") != 1 ||
        strstr(errors, "MPI_ABORT"))
        fail_msg("wanted the error and the usage once, and no abort; standard error was:\n%.2000s", errors);
    assert_non_null(strstr(errors, "--policy without selective) is refused.\n")); /* the usage's last line */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranks_save_what_one_process_accumulating_saves),
        cmocka_unit_test(test_ranks_with_offload_save_the_same),
        cmocka_unit_test(test_predict_only_ranks_equals_rank_0),
        cmocka_unit_test(test_the_doctor_names_stage_2s_full_gradients),
        cmocka_unit_test(test_resume_across_world_sizes),
        cmocka_unit_test(test_a_rank_with_bad_input_ends_the_job),
        cmocka_unit_test(test_a_rank_over_its_budget_ends_the_job),
        cmocka_unit_test(test_ranks_that_disagree_end_the_job),
        cmocka_unit_test(test_accumulate_under_mpirun_is_refused),
        cmocka_unit_test(test_a_bad_command_line_is_printed_once),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
