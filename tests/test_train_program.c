/*
 * test_train_program.c — the `train` program itself, run as a real process: what only a
 * process shows. The file-size limit (ulimit -f) and a standard output that cannot be
 * written, FIFOs given as files, and a process killed with SIGKILL while it saves.
 *
 * What this is not: the tests of the training loop and its command line, which call
 * train_parse_args and train_run in-process (test_train.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/platform.h"

#ifndef REMAT_TRAIN_BIN
#error "REMAT_TRAIN_BIN must name the train program"
#endif

static char dir[] = "/tmp/remat_train_program_XXXXXX";

static int group_setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

static void path_in_dir(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

/* How to run the program: where its stdout goes (NULL: <dir>/out.log; its stderr always
 * goes to <dir>/err.log), the soft file-size and address-space limits (0: none), and after
 * how many seconds to kill it with SIGKILL (0: never, but a watchdog kills it after 60 s). */
typedef struct Launch {
    const char *stdout_path;
    rlim_t file_size_limit;
    rlim_t address_space_limit;
    double kill_after;
} Launch;

/* Starts train with `args` (NULL-terminated) as `how` says; returns its pid. */
static pid_t start_train(const Launch *how, char *const *args)
{
    char *argv[40] = {REMAT_TRAIN_BIN};
    for (int i = 0; args[i] && i + 2 < 40; i++) argv[i + 1] = args[i];
    char out[512], err[512];
    path_in_dir(out, sizeof out, "out.log");
    path_in_dir(err, sizeof err, "err.log");
    fflush(stdout);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const int o = open(how->stdout_path ? how->stdout_path : out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || dup2(o, STDOUT_FILENO) < 0 || dup2(e, STDERR_FILENO) < 0) _exit(126);
        signal(SIGXFSZ, SIG_DFL); /* what a shell gives a program: the signal kills unless the program says */
        if (how->file_size_limit) {
            struct rlimit limit;
            getrlimit(RLIMIT_FSIZE, &limit);
            limit.rlim_cur = how->file_size_limit; /* only the soft limit: lowering the hard one is for good */
            if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(126);
        }
        if (how->address_space_limit) {
            struct rlimit limit;
            getrlimit(RLIMIT_AS, &limit);
            limit.rlim_cur = how->address_space_limit;
            if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(126);
        }
        execv(REMAT_TRAIN_BIN, argv);
        _exit(127);
    }
    return pid;
}

/* Waits for `pid`, killing it with SIGKILL after `seconds` (0: a 60 s watchdog that fails
 * the test: the program hung). Returns its wait status. */
static int wait_train(pid_t pid, double seconds)
{
    const double deadline = platform_seconds() + (seconds > 0 ? seconds : 60.0);
    int status;
    for (;;) {
        const pid_t done = waitpid(pid, &status, WNOHANG);
        assert_true(done >= 0);
        if (done == pid) return status;
        if (platform_seconds() >= deadline) break;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (seconds <= 0) fail_msg("train did not finish within 60 s: it waited for something");
    return status;
}

/* Runs train to its end and returns its exit status (fails the test if a signal ended it,
 * saying which). */
static int run_train(const Launch *how, char *const *args)
{
    const int status = wait_train(start_train(how, args), 0);
    if (WIFSIGNALED(status)) fail_msg("train was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    return WEXITSTATUS(status);
}

/* The text of <dir>/<name> (up to 64 KiB), in a static buffer. */
static const char *log_text(const char *name)
{
    static char text[1 << 16];
    char path[512];
    path_in_dir(path, sizeof path, name);
    FILE *f = fopen(path, "r");
    text[0] = '\0';
    if (f) {
        text[fread(text, 1, sizeof text - 1, f)] = '\0';
        fclose(f);
    }
    return text;
}

/* ---- the process's environment --------------------------------------------------------- */

/* Issue 16: under `ulimit -f`, SIGXFSZ killed train ("File size limit exceeded", exit
 * 153) and lost its output, where its README promises "File too large" and the step
 * redone in RAM. */
static void test_file_size_limit_gives_file_too_large_and_the_step_is_redone_in_ram(void **state)
{
    (void)state;
    char spill[512];
    path_in_dir(spill, sizeof spill, "spill");
    assert_int_equal(mkdir(spill, 0755), 0);
    char *args[] = {"--layers", "2", "--d-model", "64", "--heads", "4", "--seq", "64", "--batch", "4", "--steps", "3",
                    "--eval-batches", "1", "--sample", "0", "--offload", "all", "--offload-dir", spill, NULL};
    const Launch how = {.file_size_limit = 64 * 1024};
    assert_int_equal(run_train(&how, args), 0);
    const char *out = log_text("out.log");
    assert_non_null(strstr(out, "File too large"));
    assert_non_null(strstr(out, "step 1 is redone with its activations in RAM"));
    assert_non_null(strstr(out, "step     3  validation loss"));
}

/* Issue 16: with its standard output on a full device, train exited 0, though nobody saw
 * what it printed. It must fail, saying so on stderr. */
/* Under `ulimit -v` too small for OpenBLAS's buffers, OpenBLAS retried its buffer forever
 * at 100% CPU, in one process or holding up every rank of a job: train now refuses before
 * its first matmul, naming the limit to ask for. (2 threads under 500 MiB hung; under a
 * limit below what OpenBLAS maps as it loads, about 300 MiB, no program reaches main.) (AddressSanitizer reserves terabytes of
 * address space for its shadow memory, so a sanitized build cannot start under any such
 * limit: there the test has nothing to check.) */
static void test_an_address_space_limit_too_small_for_openblas_is_refused(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip();
#endif
    const Launch how = {.address_space_limit = (rlim_t)500 << 20};
    char *args[] = {"--steps", "1", "--threads", "2", "--eval-every", "0", "--sample", "0", NULL};
    assert_int_equal(run_train(&how, args), 1);
    assert_non_null(strstr(log_text("err.log"), "the address-space limit (ulimit -v) is 500 MiB"));
    assert_non_null(strstr(log_text("err.log"), "run fewer threads"));
}

static void test_output_that_cannot_be_written_fails_the_run(void **state)
{
    (void)state;
    char *args[] = {"--model", "mlp", "--layers", "2", "--d-model", "8", "--steps", "2", NULL};
    const Launch full = {.stdout_path = "/dev/full"};
    assert_int_equal(run_train(&full, args), 1);
    assert_non_null(strstr(log_text("err.log"), "train: cannot write to standard output: No space left on device"));
    char *help[] = {"--help", NULL};
    assert_int_equal(run_train(&full, help), 1);
    const Launch plain = {0};
    assert_int_equal(run_train(&plain, args), 0);
}

/* A FIFO given as the corpus or as the file to resume is refused at once, saying what it
 * is; the program never waits for a writer. */
static void test_fifos_are_refused_not_waited_on(void **state)
{
    (void)state;
    char fifo[512];
    path_in_dir(fifo, sizeof fifo, "run.fifo");
    assert_int_equal(mkfifo(fifo, 0644), 0);
    char *data[] = {"--data", fifo, "--steps", "1", NULL};
    char *resume[] = {"--model", "mlp", "--layers", "2", "--d-model", "8", "--resume", fifo, NULL};
    char *save[] = {"--model", "mlp", "--layers", "2", "--d-model", "8", "--save", fifo, NULL};
    char *const *cases[] = {data, resume, save};
    const Launch how = {0};
    for (int c = 0; c < 3; c++) {
        assert_int_equal(run_train(&how, cases[c]), 1);
        assert_non_null(strstr(log_text("err.log"), "is a FIFO, not a regular file"));
    }
    assert_int_equal(unlink(fifo), 0);
}

/* ---- a save killed at any point ----------------------------------------------------------- */

/* The whole file at `path` (*size bytes, owned by the caller); NULL if it cannot be read. */
static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(*size ? *size : 1);
    if (data && fread(data, 1, *size, f) != *size) {
        free(data);
        data = NULL;
    }
    fclose(f);
    return data;
}

static bool same_file(const char *a, const char *b)
{
    size_t na, nb;
    unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
    const bool same = x && y && na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

static void copy_file(const char *from, const char *to)
{
    size_t n;
    unsigned char *data = slurp(from, &n);
    assert_non_null(data);
    FILE *f = fopen(to, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    free(data);
}

/* The entries of `path`, a directory, but . and .. */
static int entries_in(const char *path)
{
    DIR *d = opendir(path);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

enum { KILLS = 10 };

/* The crash-consistency test of issue 16 through the real program: `train --resume F
 * --save F` is killed with SIGKILL at KILLS points spread over its run, most of them
 * while it writes its 25 MB file. After every kill F must be, byte for byte, either the
 * file it resumed from or the one an uninterrupted run writes; the directory must hold
 * nothing else; and F must resume to the same file, byte for byte, as an uninterrupted
 * run does. */
static void test_killed_while_saving_keeps_the_old_file_which_resumes_bit_identically(void **state)
{
    (void)state;
    char work[512], base[600], victim[600], next[600], expected[600], next_expected[600];
    path_in_dir(work, sizeof work, "crash");
    assert_int_equal(mkdir(work, 0755), 0);
    snprintf(base, sizeof base, "%s/base.st", dir);
    snprintf(expected, sizeof expected, "%s/step3.st", dir);
    snprintf(next_expected, sizeof next_expected, "%s/step4.st", dir);
    snprintf(victim, sizeof victim, "%s/run.st", work);
    snprintf(next, sizeof next, "%s/next.st", dir);
    /* 2 layers of width 1024 with AdamW: 8.4 MB of parameters, 25 MB in the file. */
#define MODEL "--model", "mlp", "--layers", "2", "--d-model", "1024", "--batch", "4", "--eval-batches", "1", "--quiet"
    const Launch how = {0};
    assert_int_equal(run_train(&how, (char *[]){MODEL, "--steps", "2", "--save", base, NULL}), 0);
    assert_int_equal(run_train(&how, (char *[]){MODEL, "--steps", "3", "--resume", base, "--save", expected, NULL}), 0);
    assert_int_equal(run_train(&how, (char *[]){MODEL, "--steps", "4", "--resume", expected, "--save", next_expected,
                                                NULL}),
                     0);
    char *victim_run[] = {MODEL, "--steps", "3", "--resume", victim, "--save", victim, NULL};
    char *resume_victim[] = {MODEL, "--steps", "4", "--resume", victim, "--save", next, NULL};
#undef MODEL
    /* How long an uninterrupted run takes here; the save is its last part. */
    copy_file(base, victim);
    const double start = platform_seconds();
    assert_int_equal(run_train(&how, victim_run), 0);
    const double whole = platform_seconds() - start;
    assert_true(same_file(victim, expected));

    int old = 0, new = 0;
    /* Kill points from 40% to 105% of the run's length: past start-up, into the save. On a
     * busy machine runs vary; if no kill came before the save ended, earlier ones follow
     * (5%, 10%, ... of the run), so that the old file's survival is always tested. */
    for (int k = 0; k < KILLS || (old == 0 && k < 3 * KILLS); k++) {
        copy_file(base, victim);
        const double at = k < KILLS ? whole * (0.40 + 0.65 * (k + 0.5) / KILLS) : whole * 0.05 * (k - KILLS + 1);
        const int status = wait_train(start_train(&how, victim_run), at);
        const bool killed = WIFSIGNALED(status);
        assert_true(killed || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
        if (entries_in(work) != 1) fail_msg("after a kill at %.0f ms the directory holds %d files", at * 1e3,
                                            entries_in(work));
        const bool is_old = same_file(victim, base), is_new = same_file(victim, expected);
        if (!is_old && !is_new) fail_msg("after a kill at %.0f ms the file is neither the old nor the new one", at * 1e3);
        old += is_old;
        new += is_new;
        /* It resumes as the whole run would have: the file it leaves is byte for byte the one. */
        if ((is_old && old == 1) || (is_new && new == 1)) {
            if (is_old) {
                assert_int_equal(run_train(&how, victim_run), 0);
                assert_true(same_file(victim, expected));
            }
            assert_int_equal(run_train(&how, resume_victim), 0);
            assert_true(same_file(next, next_expected));
        }
    }
    printf("  one run %.0f ms (the machine busy); %d kills left the old file, %d the new one, each whole, and "
           "nothing else in the directory\n", whole * 1e3, old, new);
    assert_true(old > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_size_limit_gives_file_too_large_and_the_step_is_redone_in_ram),
        cmocka_unit_test(test_an_address_space_limit_too_small_for_openblas_is_refused),
        cmocka_unit_test(test_output_that_cannot_be_written_fails_the_run),
        cmocka_unit_test(test_fifos_are_refused_not_waited_on),
        cmocka_unit_test(test_killed_while_saving_keeps_the_old_file_which_resumes_bit_identically),
    };
    return cmocka_run_group_tests_name("train_program", tests, group_setup, group_teardown);
}
