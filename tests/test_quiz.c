/*
 * test_quiz.c — the quiz program and its question bank: every question complete in both
 * languages; the right answers score 8/8 in English and Arabic and wrong ones score
 * accordingly; explanations quote measured figures or say plainly that they are not
 * measured yet; a malformed bank is a clear error; and the interactive quiz is played
 * through a pseudo-terminal, prompts, a wrong key and the end of input included.
 */
#define _DEFAULT_SOURCE /* forkpty */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <poll.h>
#include <pty.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "quiz/bank.h"
#include "quiz/explain_fill.h"

#ifndef REMAT_QUIZ_BIN
#define REMAT_QUIZ_BIN "quiz/quiz"
#endif
#ifndef REMAT_QUIZ_BANK
#define REMAT_QUIZ_BANK "quiz/questions.json"
#endif

/* The source quiz's correct options, 1-based, in its own order (shared/quiz-seed.md). */
static const char *const RIGHT = "2,4,1,3,4,2,3,1";

static char scratch[] = "/tmp/remat_quiz_XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(scratch) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", scratch);
    return system(cmd);
}

/* Runs the quiz with `args`, stdin from /dev/null; returns its output (caller frees). */
static char *run_quiz(const char *args, int *exit_code)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s < /dev/null 2>&1", REMAT_QUIZ_BIN, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, used = 0;
    char *out = malloc(cap);
    size_t n;
    while ((n = fread(out + used, 1, cap - used - 1, p)) > 0) {
        used += n;
        if (used + 1 == cap) out = realloc(out, cap *= 2);
    }
    out[used] = '\0';
    int status = pclose(p);
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}

static void test_bank_is_complete_in_both_languages(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    if (!b) fail_msg("%s", remat_last_error());
    assert_int_equal(b->n_questions, 8);
    for (int q = 0; q < 8; q++) {
        const Question *x = &b->questions[q];
        /* Arabic texts are Arabic: they contain letters of the Arabic block (UTF-8 lead
         * bytes 0xD8..0xDB). */
        const char *ar = x->question.lang[LANG_AR];
        bool arabic = false;
        for (const unsigned char *c = (const unsigned char *)ar; *c; c++) arabic |= *c >= 0xD8 && *c <= 0xDB;
        assert_true(arabic);
        assert_non_null(strstr(x->test_file, "tests/quiz/test_q"));
        assert_non_null(strstr(x->plot, ".png"));
        assert_int_equal(x->correct, RIGHT[2 * q] - '1');
    }
    bank_free(b);
}

static void test_right_answers_score_8_in_english_and_arabic(void **state)
{
    (void)state;
    char args[512];
    int code;
    snprintf(args, sizeof args, "--no-shuffle --answers %s --results %s", RIGHT, scratch);
    char *en = run_quiz(args, &code);
    assert_int_equal(code, 0);
    assert_non_null(strstr(en, "Score: 8 of 8"));
    assert_non_null(strstr(en, "Question 8 of 8"));
    /* No results in this directory: explanations say so instead of inventing figures. */
    assert_non_null(strstr(en, "not measured yet: run build/bench/"));
    free(en);
    snprintf(args, sizeof args, "--lang ar --no-shuffle --answers %s --results %s", RIGHT, scratch);
    char *ar = run_quiz(args, &code);
    assert_int_equal(code, 0);
    assert_non_null(strstr(ar, "النتيجة: 8 من 8"));
    assert_non_null(strstr(ar, "لم يُقَس بعد"));
    free(ar);
}

static void test_wrong_answers_score_accordingly(void **state)
{
    (void)state;
    char args[512];
    int code;
    /* Option 1 everywhere: right only for questions 3 and 8. */
    snprintf(args, sizeof args, "--no-shuffle --answers 1,1,1,1,1,1,1,1 --results %s", scratch);
    char *out = run_quiz(args, &code);
    assert_int_equal(code, 0);
    assert_non_null(strstr(out, "Score: 2 of 8"));
    assert_non_null(strstr(out, "✗ 1."));
    assert_non_null(strstr(out, "✓ 3."));
    free(out);
    /* Shuffled, the same letters mean other options; a fixed seed makes it repeatable. */
    snprintf(args, sizeof args, "--seed 5 --answers a,a,a,a,a,a,a,a --results %s", scratch);
    char *first = run_quiz(args, &code), *second = run_quiz(args, &code);
    assert_string_equal(first, second);
    free(first);
    free(second);
    /* An answer that is not 1-4 or a-d is a usage error. */
    snprintf(args, sizeof args, "--no-shuffle --answers 2,9 --results %s", scratch);
    out = run_quiz(args, &code);
    assert_int_equal(code, 2);
    free(out);
}

static void test_without_a_terminal_the_quiz_previews(void **state)
{
    (void)state;
    int code;
    char *out = run_quiz("", &code);
    assert_int_equal(code, 0);
    assert_non_null(strstr(out, "Question 1 of 8"));
    assert_non_null(strstr(out, "Question 8 of 8"));
    assert_null(strstr(out, "Score:"));
    assert_null(strstr(out, "The answer:"));
    free(out);
    out = run_quiz("--bogus", &code);
    assert_int_equal(code, 2);
    free(out);
}

/* Writes, for every measurement of `q`, a record as its bench would: the fields its
 * `where` names with their values, and every field the question quotes set to `value`. */
static void write_results(const Question *q, double value)
{
    cJSON *files = cJSON_CreateObject(); /* bench name -> document */
    for (int i = 0; i < q->n_measurements; i++) {
        const Measurement *m = &q->measurements[i];
        cJSON *doc = cJSON_GetObjectItem(files, m->bench);
        if (!doc) cJSON_AddItemToObject(files, m->bench, doc = cJSON_CreateObject());
        cJSON *tables = cJSON_GetObjectItem(doc, "tables");
        if (!tables) cJSON_AddItemToObject(doc, "tables", tables = cJSON_CreateObject());
        cJSON *table = cJSON_GetObjectItem(tables, m->table);
        if (!table) cJSON_AddItemToObject(tables, m->table, table = cJSON_CreateObject());
        cJSON *records = cJSON_GetObjectItem(table, "records");
        if (!records) cJSON_AddItemToObject(table, "records", records = cJSON_CreateArray());
        cJSON *rec = m->where ? cJSON_Duplicate(m->where, true) : cJSON_CreateObject();
        for (int j = 0; j < q->n_measurements; j++)
            if (!cJSON_GetObjectItem(rec, q->measurements[j].field))
                cJSON_AddNumberToObject(rec, q->measurements[j].field, value);
        cJSON_AddItemToArray(records, rec);
    }
    for (const cJSON *doc = files->child; doc; doc = doc->next) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.json", scratch, doc->string);
        char *text = cJSON_Print(doc);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        free(text);
    }
    cJSON_Delete(files);
}

static void test_explanations_quote_measured_figures(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    const Question *q = &b->questions[6]; /* question 7: two gradient differences */
    assert_true(q->n_measurements >= 2);
    write_results(q, 0.172);
    ResultsDir *r = results_open(scratch);
    char text[4096];
    assert_int_equal(fill_explanation(text, sizeof text, q, LANG_EN, r), REMAT_OK);
    assert_int_equal(measured_count(q, r), q->n_measurements);
    assert_non_null(strstr(text, "0.172"));
    assert_null(strstr(text, "not measured"));
    results_close(r);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -f %s/*.json", scratch);
    assert_int_equal(system(cmd), 0);
    bank_free(b);
}

static void test_a_malformed_bank_names_the_file_and_field(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/bad.json", scratch);
    /* The real bank with question 4 cut down to three options. */
    Bank *good = bank_load(REMAT_QUIZ_BANK);
    cJSON *doc = cJSON_Duplicate(good->doc, true);
    bank_free(good);
    cJSON *options = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "questions"), 3), "options");
    cJSON_DeleteItemFromArray(options, 0);
    char *text = cJSON_Print(doc);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    cJSON_Delete(doc);
    assert_null(bank_load(path));
    assert_int_equal(remat_last_status(), REMAT_ECORRUPT);
    assert_non_null(strstr(remat_last_error(), "bad.json: questions[3].options: need 4 options, found 3"));

    f = fopen(path, "w");
    fputs("{\"title\": ", f);
    fclose(f);
    assert_null(bank_load(path));
    assert_non_null(strstr(remat_last_error(), "not valid JSON"));
    assert_null(bank_load("/nonexistent/questions.json"));
    assert_int_equal(remat_last_status(), REMAT_EIO);
    int code;
    char args[600];
    snprintf(args, sizeof args, "--bank %s", path);
    char *out = run_quiz(args, &code);
    assert_int_equal(code, 1);
    assert_non_null(strstr(out, "not valid JSON"));
    free(out);
}

/* Issue 16: a question bank that is a directory aborted under AddressSanitizer and said
 * "cannot read the question bank" without the reason; one that is a FIFO hung in open();
 * a results file that is a directory was "not valid JSON". Each now says what it is. */
static void test_a_bank_or_results_that_is_no_regular_file_says_what_it_is(void **state)
{
    (void)state;
    char fifo[512], results[512], json_dir[600], cmd[1400];
    snprintf(fifo, sizeof fifo, "%s/bank.fifo", scratch);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    assert_null(bank_load(scratch));
    assert_int_equal(remat_last_status(), REMAT_EIO);
    assert_non_null(strstr(remat_last_error(), "is a directory, not a regular file"));
    assert_null(bank_load(fifo)); /* at once: nothing waits for a writer */
    assert_non_null(strstr(remat_last_error(), "is a FIFO, not a regular file"));
    int code;
    snprintf(cmd, sizeof cmd, "--bank %s --answers 1", fifo);
    char *out = run_quiz(cmd, &code);
    assert_int_equal(code, 1);
    assert_non_null(strstr(out, "is a FIFO, not a regular file"));
    free(out);
    assert_int_equal(unlink(fifo), 0);

    snprintf(results, sizeof results, "%s/results-dirs", scratch);
    snprintf(json_dir, sizeof json_dir, "%s/bench_scaling.json", results);
    assert_int_equal(mkdir(results, 0755), 0);
    assert_int_equal(mkdir(json_dir, 0755), 0);
    snprintf(cmd, sizeof cmd, "--no-shuffle --results %s --answers 2", results);
    out = run_quiz(cmd, &code);
    assert_int_equal(code, 0);
    assert_non_null(strstr(out, "bench_scaling.json is a directory, not a regular file"));
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", results);
    assert_int_equal(system(cmd), 0);
    /* --results that is a file, not a directory, is a mistake, not results not yet measured. */
    snprintf(cmd, sizeof cmd, "--results %s --answers 1", REMAT_QUIZ_BANK);
    out = run_quiz(cmd, &code);
    assert_int_equal(code, 1);
    assert_non_null(strstr(out, "is a regular file, not a directory of results"));
    free(out);
}

/* Issue 16: --answers "1              x" was taken as 1 and a ninth answer was ignored;
 * --seed 99999999999999999999999 was accepted. Each is now refused with exit 2. */
static void test_answers_and_seed_must_be_exactly_what_they_say(void **state)
{
    (void)state;
    static const struct {
        const char *args, *why;
    } bad[] = {
        {"--answers '1              x'", "answer 1 is '1              x', not one of 1-4 or a-d"},
        {"--answers 1,2,3,4,1,2,3,4,1", "more than 8 answers"},
        {"--answers 1,,2", "answer 2 is ''"},
        {"--answers '1, 2'", "answer 2 is ' 2'"},
        {"--answers ''", "answer 1 is ''"},
        {"--seed 99999999999999999999999 --preview", "bad value for --seed"},
        {"--seed ' 1' --preview", "bad value for --seed"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int code;
        char *out = run_quiz(bad[i].args, &code);
        if (code != 2 || !strstr(out, bad[i].why))
            fail_msg("quiz %s: exit %d, wanted 2 and \"%s\"", bad[i].args, code, bad[i].why);
        free(out);
    }
}

/* --html renames the page over its path: as root that replaced /dev/full with a regular
 * file. Anything but a regular file there is refused and left as it was (a FIFO here,
 * which the test can make safely). */
static void test_the_page_never_replaces_what_is_not_a_regular_file(void **state)
{
    (void)state;
    char fifo[512], args[600];
    snprintf(fifo, sizeof fifo, "%s/page.fifo", scratch);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    snprintf(args, sizeof args, "--html %s", fifo);
    int code;
    char *out = run_quiz(args, &code);
    assert_int_equal(code, 1);
    assert_non_null(strstr(out, "it is a FIFO, not a regular file"));
    free(out);
    struct stat st;
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(unlink(fifo), 0);
}

/* Issue 16: with its output on a full device, the quiz exited 0. */
static void test_output_that_cannot_be_written_fails(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "%s --preview > /dev/full 2>/dev/null", REMAT_QUIZ_BIN);
    const int status = system(cmd);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1);
}

/* Reads from the pty until `want` appears (or the child closes it); keeps what was read. */
static bool read_until(int fd, char *buf, size_t size, size_t *used, const char *want)
{
    while (!strstr(buf, want)) {
        ssize_t n = read(fd, buf + *used, size - *used - 1);
        if (n <= 0) return false;
        *used += (size_t)n;
        buf[*used] = '\0';
    }
    return true;
}

/* How many times `want` occurs in `text`. */
static int occurrences(const char *text, const char *want)
{
    int n = 0;
    for (const char *at = text; (at = strstr(at, want)); at++) n++;
    return n;
}

/* As read_until, until `want` has appeared `times` times; false after 20 s without it. */
static bool read_until_count(int fd, char *buf, size_t size, size_t *used, const char *want, int times)
{
    while (occurrences(buf, want) < times) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 20000) != 1) {
            fprintf(stderr, "no \"%s\" #%d within 20 s; the terminal showed:\n%s\n", want, times, buf);
            return false;
        }
        ssize_t n = read(fd, buf + *used, size - *used - 1);
        if (n <= 0) return false;
        *used += (size_t)n;
        buf[*used] = '\0';
    }
    return true;
}

static void test_interactive_quiz_through_a_terminal(void **state)
{
    (void)state;
    int fd;
    pid_t pid = forkpty(&fd, NULL, NULL, NULL);
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(REMAT_QUIZ_BIN, "quiz", "--no-shuffle", "--results", scratch, (char *)NULL);
        _exit(127);
    }
    static char out[1 << 17];
    size_t used = 0;
    out[0] = '\0';
    assert_true(read_until(fd, out, sizeof out, &used, "Your answer"));
    assert_int_equal(write(fd, "x\n", 2), 2); /* not an answer: asked again */
    assert_true(read_until(fd, out, sizeof out, &used, "Please answer 1-4 or a-d."));
    /* Issue 16: "1", a NUL and junk was taken as 1, and a line of 63 characters and a 3
     * as 3 (the tail a 64-byte fgets left for the next read). Both are no answer. */
    const char nul[] = "1\0junk\n";
    assert_int_equal(write(fd, nul, sizeof nul - 1), (ssize_t)(sizeof nul - 1));
    assert_true(read_until_count(fd, out, sizeof out, &used, "Please answer 1-4 or a-d.", 2));
    char long_line[65];
    memset(long_line, 'x', sizeof long_line);
    long_line[sizeof long_line - 2] = '3';
    long_line[sizeof long_line - 1] = '\n';
    assert_int_equal(write(fd, long_line, sizeof long_line), (ssize_t)sizeof long_line);
    assert_true(read_until_count(fd, out, sizeof out, &used, "Please answer 1-4 or a-d.", 3));
    assert_null(strstr(out, "Question 2 of 8"));
    assert_int_equal(write(fd, "b\n", 2), 2); /* question 1, right */
    assert_true(read_until(fd, out, sizeof out, &used, "Question 2 of 8"));
    assert_int_equal(write(fd, "1\n", 2), 2); /* question 2, wrong */
    assert_true(read_until(fd, out, sizeof out, &used, "Question 3 of 8"));
    assert_int_equal(write(fd, "\x04", 1), 1); /* end of input (Ctrl-D) */
    read_until(fd, out, sizeof out, &used, "\x01never"); /* read until the quiz exits */
    int status;
    waitpid(pid, &status, 0);
    close(fd);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_non_null(strstr(out, "Right. The answer: 2)"));
    assert_non_null(strstr(out, "Not quite. The answer: 4)"));
    assert_non_null(strstr(out, "Input ended"));
    assert_non_null(strstr(out, "Score: 1 of 8"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bank_is_complete_in_both_languages),
        cmocka_unit_test(test_right_answers_score_8_in_english_and_arabic),
        cmocka_unit_test(test_wrong_answers_score_accordingly),
        cmocka_unit_test(test_without_a_terminal_the_quiz_previews),
        cmocka_unit_test(test_explanations_quote_measured_figures),
        cmocka_unit_test(test_a_malformed_bank_names_the_file_and_field),
        cmocka_unit_test(test_a_bank_or_results_that_is_no_regular_file_says_what_it_is),
        cmocka_unit_test(test_answers_and_seed_must_be_exactly_what_they_say),
        cmocka_unit_test(test_output_that_cannot_be_written_fails),
        cmocka_unit_test(test_the_page_never_replaces_what_is_not_a_regular_file),
        cmocka_unit_test(test_interactive_quiz_through_a_terminal),
    };
    return cmocka_run_group_tests_name("quiz", tests, setup, teardown);
}
