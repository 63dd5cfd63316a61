/*
 * test_quiz.c — the quiz program and its question bank: every question complete in both
 * languages; the right answers score 8/8 in English and Arabic and wrong ones score
 * accordingly; explanations quote measured figures or say once which bench to run; times
 * are quoted only with their spread, and on results written here by hand (quiet and
 * narrow, busy, wide, too few samples, the older schema, contradicting intervals) only
 * when they can carry the lesson; a malformed bank is a clear error; and the interactive
 * quiz is played through a pseudo-terminal, prompts, a wrong key and the end of input
 * included.
 */
#define _DEFAULT_SOURCE /* forkpty */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pty.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/file.h"
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
    /* The quiz wraps its paragraphs to COLUMNS when not printing to a terminal; the tests
     * read a paragraph as one line, but the test of the wrapping, which sets its own. */
    setenv("COLUMNS", "1000000", 1);
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

static size_t count(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what)) n++;
    return n;
}

static void test_bank_is_complete_in_both_languages(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    if (!b) fail_msg("%s", remat_last_error());
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

/* Fails if the Arabic `text` (at `where`) uses another word for activation, checkpoint,
 * recomputation or offload than the bank's one term each: التنشيطات, نقاط التفتيش,
 * إعادة الحساب, التفريغ. */
static void assert_one_term_each(const char *text, const char *where)
{
    static const char *const others[] = {"تفعيل", "عمليات تنشيط", "نقطة حفظ", "نقاط حفظ", "نقطة تحقق", "نقاط تحقق",
                                         "إعادة الحوسبة", "إعادة حوسبة", "تحميل", "يتم استبداله", "للترميز"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (strstr(text, others[i])) fail_msg("%s says \"%s\": %s", where, others[i], text);
}

/* quiz/words.json as the program embeds it (quiz/CMakeLists.txt), parsed. */
static cJSON *parse_words(void)
{
    char *text;
    size_t size;
    if (file_read_all("test_quiz", REMAT_SOURCE_DIR "/quiz/words.json", QUIZ_MAX_FILE, &text, &size) != REMAT_OK)
        return NULL;
    cJSON *words = cJSON_Parse(text);
    free(text);
    return words;
}

/* Every text of quiz/words.json is there in both languages, and a format takes the same
 * printf conversions, in the same order, in both. */
static void test_words_take_the_same_arguments_in_both_languages(void **state)
{
    (void)state;
    cJSON *words = parse_words();
    assert_non_null(words);
    int texts = 0;
    for (const cJSON *w = words->child; w; w = w->next, texts++) {
        if (!cJSON_IsObject(w)) continue;
        char conversions[LANG_COUNT][32] = {"", ""};
        for (int l = 0; l < LANG_COUNT; l++) {
            const char *text = quiz_word((QuizLang)l, w->string);
            size_t n = 0;
            for (const char *p = strchr(text, '%'); p && n < 31; p = strchr(p + 2, '%')) conversions[l][n++] = p[1];
        }
        if (strcmp(conversions[LANG_EN], conversions[LANG_AR]))
            fail_msg("words.json: %s takes %%%s in English but %%%s in Arabic", w->string, conversions[LANG_EN],
                     conversions[LANG_AR]);
    }
    assert_true(texts > 60);
    cJSON_Delete(words);
}

static void test_arabic_says_one_term_each_throughout(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    assert_one_term_each(b->title.lang[LANG_AR], "the title");
    assert_one_term_each(b->description.lang[LANG_AR], "the description");
    for (int q = 0; q < QUIZ_QUESTIONS; q++) {
        const Question *x = &b->questions[q];
        assert_one_term_each(x->question.lang[LANG_AR], "a question");
        for (int o = 0; o < QUIZ_OPTIONS; o++) assert_one_term_each(x->options[o].lang[LANG_AR], "an option");
        for (int p = 0; p < x->n_parts; p++) {
            assert_one_term_each(x->parts[p].text.lang[LANG_AR], "an explanation");
            if (x->parts[p].otherwise.lang[LANG_AR]) assert_one_term_each(x->parts[p].otherwise.lang[LANG_AR], "an explanation");
        }
    }
    /* Question 6's answer is CPU memory, not the CPU. */
    assert_non_null(strstr(b->questions[5].options[1].lang[LANG_AR], "ذاكرة المعالج المركزي"));
    /* Question 1 asks what is traded (مقايضة), not what is replaced. */
    assert_non_null(strstr(b->questions[0].question.lang[LANG_AR], "تقايض"));
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
    /* No results in this directory: each explanation says once per bench which bench to
     * run (questions 4, 5 and 7 quote two: bench_scaling and bench_dtr, bench_selective and
     * bench_planner, bench_dropout and bench_selective), and teaches without figures rather
     * than inventing them. */
    assert_int_equal(count(en, "No figures from this machine yet: run build/bench/"), 11);
    assert_non_null(strstr(en, "No figures from this machine yet: run build/bench/bench_placement --quick to see them"));
    assert_null(strstr(en, "not measured"));
    assert_null(strchr(en, '{'));
    free(en);
    snprintf(args, sizeof args, "--lang ar --no-shuffle --answers %s --results %s", RIGHT, scratch);
    char *ar = run_quiz(args, &code);
    assert_int_equal(code, 0);
    assert_non_null(strstr(ar, "النتيجة: 8 من 8"));
    assert_int_equal(count(ar, "لا أرقام من هذا الجهاز بعد: شغّل build/bench/"), 11);
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
    /* The closing list shows the option chosen, and the right one where they differ. */
    assert_non_null(strstr(out, "  ✗ 1. your answer: Model accuracy · the answer: Extra computation (FLOPs)\n"));
    assert_non_null(strstr(out, "  ✓ 3. your answer: Checkpoint placement, operators, and hardware determine the "
                                "cost of replay\n"));
    free(out);
    snprintf(args, sizeof args, "--lang ar --no-shuffle --answers 1,1,1,1,1,1,1,1 --results %s", scratch);
    out = run_quiz(args, &code);
    assert_non_null(strstr(out, "  ✗ 1. إجابتك: دقة النموذج · الإجابة: "));
    free(out);
    /* Shuffled, the same letters mean other options; a fixed seed makes it repeatable. */
    snprintf(args, sizeof args, "--seed 5 --answers a,a,a,a,a,a,a,a --results %s", scratch);
    char *first = run_quiz(args, &code), *second = run_quiz(args, &code);
    assert_string_equal(first, second);
    free(first);
    free(second);
    /* An answer list that is not 1 to 8 answers of one character each, 1-4 or a-d,
     * separated by commas without spaces, is a usage error: nothing is asked. */
    static const char *const bad[] = {"2,9", "'1              x'", "1,2,3,4,1,2,3,4,1", "1,,2", "' 1'", "'1, 2'", "12",
                                      "1,", "''", "e"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "--no-shuffle --answers %s --results %s", bad[i], scratch);
        out = run_quiz(args, &code);
        assert_int_equal(code, 2);
        const bool empty = !strcmp(bad[i], "''");
        assert_non_null(strstr(out, empty ? "quiz: --answers needs a value (LIST)" : "quiz: --answers: '"));
        assert_true(empty || strstr(out, "is not 1 to 8 answers, each 1-4 or a-d, separated by commas without spaces"));
        assert_null(strstr(out, "Question 1 of 8"));
        free(out);
    }
    /* A seed is the whole text a number, and one that fits in 64 bits. */
    static const char *const seeds[] = {"99999999999999999999999", "' 5'", "-1", "5x", "18446744073709551616"};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        snprintf(args, sizeof args, "--seed %s --answers 1", seeds[i]);
        out = run_quiz(args, &code);
        assert_int_equal(code, 2);
        assert_non_null(strstr(out, "quiz: --seed: '"));
        assert_non_null(strstr(out, "is not a whole number in 0..18446744073709551615"));
        free(out);
    }
    out = run_quiz("--seed 18446744073709551615 --answers 1 --results /nonexistent", &code);
    assert_int_equal(code, 0);
    free(out);
}

static void test_help_gives_an_example_that_is_not_the_key(void **state)
{
    (void)state;
    int code;
    char *out = run_quiz("--help", &code);
    assert_int_equal(code, 0);
    assert_non_null(strstr(out, "--answers LIST"));
    assert_null(strstr(out, RIGHT));
    free(out);
}

static void test_a_bank_or_results_that_are_not_regular_files_are_refused(void **state)
{
    (void)state;
    char dir[512], fifo[512], args[1200];
    int code;
    snprintf(dir, sizeof dir, "%s/a-directory", scratch);
    snprintf(fifo, sizeof fifo, "%s/a-fifo", scratch);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    /* As the bank: a clear reason and exit 1, at once (a FIFO is not waited on). */
    snprintf(args, sizeof args, "--bank %s --preview", dir);
    char *out = run_quiz(args, &code);
    assert_int_equal(code, 1);
    assert_non_null(strstr(out, "quiz: cannot load the question bank: "));
    assert_non_null(strstr(out, "a-directory is a directory, not a regular file"));
    free(out);
    snprintf(args, sizeof args, "--bank %s --preview", fifo);
    out = run_quiz(args, &code);
    assert_int_equal(code, 1);
    assert_non_null(strstr(out, "a-fifo is a FIFO, not a regular file"));
    free(out);
    /* --results names a directory: an empty name (which would read from /) and a file are
     * usage errors. */
    out = run_quiz("--answers 1 --results ''", &code);
    assert_int_equal(code, 2);
    assert_non_null(strstr(out, "quiz: --results needs a value (DIR)"));
    free(out);
    snprintf(args, sizeof args, "--answers 1 --results %s", REMAT_QUIZ_BANK);
    out = run_quiz(args, &code);
    assert_int_equal(code, 2);
    assert_non_null(strstr(out, "questions.json is a regular file, not a directory"));
    free(out);
    /* As a results file: said under the explanation and on stderr; the quiz goes on. */
    char results[600];
    snprintf(results, sizeof results, "%s/bench_scaling.json", scratch);
    assert_int_equal(rename(dir, results), 0);
    snprintf(args, sizeof args, "--no-shuffle --answers 2 --results %s", scratch);
    out = run_quiz(args, &code);
    assert_int_equal(code, 0);
    assert_non_null(strstr(out, "The results cannot be read (reading the results: "));
    assert_non_null(strstr(out, "bench_scaling.json is a directory, not a regular file), so their figures are left out"));
    assert_non_null(strstr(out, "quiz: reading the results: "));
    assert_non_null(strstr(out, "Score: 1 of 8"));
    free(out);
    assert_int_equal(rmdir(results), 0);
    assert_int_equal(rename(fifo, results), 0);
    out = run_quiz(args, &code);
    assert_int_equal(code, 0);
    assert_non_null(strstr(out, "bench_scaling.json is a FIFO, not a regular file), so their figures are left out"));
    free(out);
    assert_int_equal(unlink(results), 0);
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

/* ---- results written by hand ------------------------------------------------------- */

/* What a hand-written results file says of one measurement: its value and, for a time,
 * its interval and samples (samples 0: the older schema, without them). */
typedef struct Given {
    const char *name;
    double value, lo, hi;
    int samples;
} Given;

/* The machine block of a hand-written results file; loadavg_before < 0: the older schema,
 * without the machine's state. */
typedef struct Machine {
    double loadavg_before, loadavg_after, cpu_steal, others_cpu;
} Machine;

static const Machine QUIET = {0.3, 1.9, 0.001, 0.02};
static const Machine OLD = {-1, 0, 0, 0};

/* The exact figures questions 3 and 6 teach from when their times cannot be quoted. */
static const Given EXACT[] = {
    {"blocks_flops", 0.311, 0, 0, 0},     {"attn_flops", 0.133, 0, 0, 0}, {"mlp_flops", 0.178, 0, 0, 0},
    {"blocks_saved", 2988442, 0, 0, 0},   {"attn_saved", 1772093, 0, 0, 0}, {"mlp_saved", 858112, 0, 0, 0},
    {"offload_flops", 0.0, 0, 0, 0},      {NULL, 0, 0, 0, 0}};

static double plausible(FigureFormat format)
{
    return format == FORMAT_BYTES || format == FORMAT_RESIDENT ? 1048576 : format == FORMAT_INT ? 64 : format == FORMAT_PERCENT ? 0.2
         : format == FORMAT_EXCESS || format == FORMAT_CHANGE ? 1.1 : 0.172;
}

static const Given *given_for(const Given *given, const char *name)
{
    for (; given && given->name; given++)
        if (!strcmp(given->name, name)) return given;
    return NULL;
}

/* Writes, for every measurement of `q`, a record as its bench would: the fields its
 * `where` names with their values, and the field it quotes set to the value `given` or
 * EXACT names (for the others, a plausible value of its format; for a text, two op classes), with `field`_lo, `field`_hi and `samples` for a time that
 * `given` gives samples for; measurements with the same `where` share a record. Each
 * bench's document gets the machine block `machine`. */
static const char *results_mode; /* the "mode" write_results records, or NULL for none */

static void write_results(const Question *q, const Given *given, Machine machine)
{
    cJSON *files = cJSON_CreateObject(); /* bench name -> document */
    for (int i = 0; i < q->n_measurements; i++) {
        const Measurement *m = &q->measurements[i];
        cJSON *doc = cJSON_GetObjectItem(files, m->bench);
        if (!doc) {
            cJSON_AddItemToObject(files, m->bench, doc = cJSON_CreateObject());
            cJSON_AddStringToObject(doc, "schema", "remat-bench/2");
            if (results_mode) cJSON_AddStringToObject(doc, "mode", results_mode);
            cJSON *block = cJSON_AddObjectToObject(doc, "machine");
            cJSON_AddNumberToObject(block, "cores", 2);
            if (machine.loadavg_before >= 0) {
                cJSON_AddNumberToObject(block, "loadavg_before", machine.loadavg_before);
                cJSON_AddNumberToObject(block, "loadavg_after", machine.loadavg_after);
                cJSON_AddNumberToObject(block, "cpu_steal", machine.cpu_steal);
                cJSON_AddNumberToObject(block, "others_cpu", machine.others_cpu);
            }
            cJSON_AddArrayToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(doc, "tables"), m->table), "records");
        }
        cJSON *tables = cJSON_GetObjectItem(doc, "tables");
        if (!cJSON_GetObjectItem(tables, m->table))
            cJSON_AddArrayToObject(cJSON_AddObjectToObject(tables, m->table), "records");
        cJSON *records = cJSON_GetObjectItem(cJSON_GetObjectItem(tables, m->table), "records");
        cJSON *rec = NULL;
        for (cJSON *r = records->child; r && !rec; r = r->next) {
            bool same = true;
            for (const cJSON *w = m->where ? m->where->child : NULL; w && same; w = w->next)
                same = cJSON_Compare(w, cJSON_GetObjectItem(r, w->string), true);
            if (same) rec = r;
        }
        if (!rec) cJSON_AddItemToArray(records, rec = m->where ? cJSON_Duplicate(m->where, true) : cJSON_CreateObject());
        const Given *g = given_for(given, m->name);
        if (!g) g = given_for(EXACT, m->name);
        if (!cJSON_GetObjectItem(rec, m->field) && m->format == FORMAT_TEXT)
            cJSON_AddStringToObject(rec, m->field, "attn.qkv, mlp.fc");
        if (!cJSON_GetObjectItem(rec, m->field)) cJSON_AddNumberToObject(rec, m->field, g ? g->value : plausible(m->format));
        if (g && g->samples > 0) {
            char name[128];
            snprintf(name, sizeof name, "%s_lo", m->field);
            cJSON_AddNumberToObject(rec, name, g->lo);
            snprintf(name, sizeof name, "%s_hi", m->field);
            cJSON_AddNumberToObject(rec, name, g->hi);
            cJSON_AddNumberToObject(rec, "samples", g->samples);
        }
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

static void remove_results(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -f %s/*.json", scratch);
    assert_int_equal(system(cmd), 0);
}

/* Question `q`'s explanation in `lang` from the scratch results. */
static void explain(const Bank *b, int q, QuizLang lang, char *text, size_t size)
{
    ResultsDir *r = results_open(scratch);
    assert_non_null(r);
    if (fill_explanation(text, size, &b->questions[q - 1], lang, r) != REMAT_OK) fail_msg("%s", remat_last_error());
    results_close(r);
}

/* Question `q`'s explanation in English into en and Arabic into ar, from results written
 * for it (write_results), removed afterwards. */
static void explain_given(const Bank *b, int q, const Given *given, Machine machine, char *en, char *ar, size_t size)
{
    write_results(&b->questions[q - 1], given, machine);
    explain(b, q, LANG_EN, en, size);
    explain(b, q, LANG_AR, ar, size);
    remove_results();
}

static void test_explanations_quote_measured_figures(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    static char en[8192], ar[8192];
    /* Question 7: two gradient differences, the masks' bytes, and the counter-based masks'
     * step time against the stream's, measured quietly and narrowly. */
    static const Given q7[] = {{"counter_time", 1.02, 1.00, 1.04, 9}, {NULL, 0, 0, 0, 0}};
    explain_given(b, 7, q7, QUIET, en, ar, sizeof en);
    assert_non_null(strstr(en, "by up to 0.172, and the determinism check"));
    assert_non_null(strstr(en, "the step that makes the masks again was 2.0% slower (0.0% to 4.0%, 9 paired steps)."));
    assert_null(strchr(en, '\n')); /* no note: nothing is missing */
    assert_null(strchr(en, '{'));
    assert_non_null(strstr(ar, "بما يصل إلى 0.172،"));
    bank_free(b);
}

/* A figure not measured names the command that measures it: a bench run as processes,
 * whose results are bench_zero_np2.json, through the launcher. */
static void test_a_missing_figure_names_its_command(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    ResultsDir *r = results_open(scratch); /* holds no results */
    char text[8192];
    assert_int_equal(fill_explanation(text, sizeof text, &b->questions[7], LANG_EN, r), REMAT_OK);
    assert_non_null(strstr(text, "run mpirun -np 2 build/bench/bench_zero --quick"));
    assert_non_null(strstr(text, "run mpirun -np 4 build/bench/bench_zero --quick"));
    assert_non_null(strstr(text, "run build/bench/bench_memory_budget --quick"));
    assert_non_null(strstr(text, "under ZeRO stage 1 each of K processes")); /* the remedy, without figures */
    results_close(r);
    bank_free(b);
}

/* Question 3's and 6's times, narrow: +28.5% (+24.1% to +31.0%) and so on. */
static const Given NARROW[] = {
    {"blocks_overhead", 1.285, 1.241, 1.310, 9}, {"attn_overhead", 1.120, 1.101, 1.139, 9},
    {"mlp_overhead", 1.150, 1.131, 1.170, 9},    {"offload_time", 1.010, 0.990, 1.030, 12},
    {"dropped_time", 1.050, 1.020, 1.080, 12},   {NULL, 0, 0, 0, 0}};

/* The notes below an explanation: everything after its first line. */
static const char *note_of(const char *text)
{
    const char *nl = strchr(text, '\n');
    assert_non_null(nl);
    return nl + 1;
}

static void test_quiet_narrow_times_are_quoted_with_their_spread(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    static char en[8192], ar[8192];
    explain_given(b, 3, NARROW, QUIET, en, ar, sizeof en);
    assert_non_null(strstr(en, "the step was 28.5% slower (24.1% to 31.0%, 9 paired steps) replaying whole blocks"));
    assert_non_null(strstr(en, "15.0% slower (13.1% to 17.0%, 9 paired steps) replaying only the MLP ops."));
    assert_non_null(strstr(ar, "أبطأ بنسبة 28.5% (من 24.1% إلى 31.0%، أزواج الخطوات: 9)"));
    assert_null(strchr(en, '\n'));
    assert_null(strchr(ar, '\n'));
    explain_given(b, 6, NARROW, QUIET, en, ar, sizeof en);
    /* An interval on both sides of no change names each side. */
    assert_non_null(strstr(en, "the step was 1.0% slower (1.0% faster to 3.0% slower, 12 paired steps) when the page"));
    assert_non_null(strstr(en, "When backward read the spill file from the disk instead, the step was 5.0% slower (2.0% "
                               "to 8.0%, 12 paired steps)."));
    assert_null(strchr(en, '\n'));
    bank_free(b);
}

static void test_times_measured_on_a_busy_machine_are_not_taught_from(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    static char en[8192], ar[8192];
    /* The same narrow intervals, but other processes ran for 60% of the CPU time. */
    explain_given(b, 3, NARROW, (Machine){2.1, 9.8, 0.0, 0.6}, en, ar, sizeof en);
    assert_null(strstr(en, "paired steps"));
    assert_null(strstr(en, "slower"));
    assert_non_null(strstr(en, "replaying whole blocks added 31.1% to the step's FLOPs and saved 2.85 MiB of activations"));
    assert_string_equal(note_of(en),
                        "This machine was busy while build/bench/bench_placement measured its times (other processes "
                        "ran for 60.0% of its CPU time and the hypervisor stole 0.0%; the 1-minute load average "
                        "reached 9.8 on 2 cores): they are too noisy to teach from. This explanation teaches from the "
                        "exact bytes and FLOPs instead; rerun build/bench/bench_placement --quick on a quiet machine "
                        "to see the times.");
    assert_null(strstr(ar, "أزواج الخطوات"));
    assert_non_null(strstr(note_of(ar), "كان هذا الجهاز مشغولًا حين قاس build/bench/bench_placement أزمنته"));
    /* Nothing else running but 12% of the CPU stolen by the hypervisor is busy too. */
    explain_given(b, 6, NARROW, (Machine){0.5, 0.7, 0.12, 0.01}, en, ar, sizeof en);
    assert_null(strstr(en, "the step was"));
    assert_null(strstr(en, "When backward read the spill file from the disk"));
    assert_non_null(strstr(en, "Each step wrote 1.00 MiB to the spill file and read it back during backward"));
    assert_non_null(strstr(en, "How much it costs depends on the disk"));
    assert_non_null(strstr(note_of(en), "and the hypervisor stole 12.0%;"));
    /* A load above the cores that the bench's own threads made (benches run back to back
     * leave a load of 2 or more on 2 cores) is not busy: nothing else ran. */
    explain_given(b, 3, NARROW, (Machine){2.3, 2.6, 0.002, 0.03}, en, ar, sizeof en);
    assert_non_null(strstr(en, "the step was 28.5% slower (24.1% to 31.0%, 9 paired steps) replaying whole blocks"));
    assert_null(strchr(en, '\n')); /* no note */
    bank_free(b);
}

static void test_wide_few_or_unknown_spreads_are_not_taught_from(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    static char en[8192], ar[8192];
    /* Quiet, but whole blocks' interval spans 150 points. */
    const Given wide[] = {{"blocks_overhead", 2.633, 1.900, 3.400, 9}, {"attn_overhead", 1.649, 1.6, 1.7, 9},
                          {"mlp_overhead", 1.868, 1.8, 1.9, 9}, {NULL, 0, 0, 0, 0}};
    explain_given(b, 3, wide, QUIET, en, ar, sizeof en);
    assert_null(strstr(en, "against no checkpointing, the step was"));
    assert_string_equal(note_of(en),
                        "The times build/bench/bench_placement measured vary too much to carry the lesson (163.3% "
                        "slower (90.0% to 240.0%, 9 paired steps)). This explanation teaches from the exact bytes and FLOPs "
                        "instead; rerun build/bench/bench_placement --quick on a quiet machine to see the times.");
    /* Narrow, but from 3 paired steps: too few for a 95% interval of a median. */
    const Given few[] = {{"offload_time", 1.010, 1.000, 1.020, 3}, {"dropped_time", 1.050, 1.040, 1.060, 3},
                         {NULL, 0, 0, 0, 0}};
    explain_given(b, 6, few, QUIET, en, ar, sizeof en);
    assert_null(strstr(en, "Against keeping everything in RAM"));
    assert_non_null(strstr(note_of(en), "build/bench/bench_offload timed too few steps to give an interval (1.0% "
                                        "slower (0.0% to 2.0%, 3 paired steps))"));
    /* Results of the older schema: no interval, no samples, no machine state. */
    explain_given(b, 6, NULL, OLD, en, ar, sizeof en);
    assert_null(strstr(en, "Against keeping everything in RAM"));
    assert_non_null(strstr(note_of(en), "The results of build/bench/bench_offload do not record how much its times "
                                        "varied or how busy the machine was"));
    assert_non_null(strstr(note_of(ar), "لا تسجّل نتائج build/bench/bench_offload مدى تفاوت أزمنته"));
    bank_free(b);
}

/* One time too wide, or from too few steps, silences only the part that quotes it: the
 * others are quoted, and the note says which was left out. */
static void test_a_time_that_cannot_carry_the_lesson_leaves_out_only_its_part(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    static char en[8192], ar[8192];
    const Given disk_wide[] = {{"offload_time", 1.331, 1.277, 1.348, 26}, {"dropped_time", 2.423, 2.100, 2.900, 26},
                               {NULL, 0, 0, 0, 0}};
    explain_given(b, 6, disk_wide, QUIET, en, ar, sizeof en);
    assert_non_null(strstr(en, "Against keeping everything in RAM, the step was 33.1% slower (27.7% to 34.8%, 26 paired "
                               "steps) when the page cache kept the spill file."));
    assert_null(strstr(en, "When backward read the spill file from the disk"));
    assert_non_null(strstr(en, "How much it costs depends on the disk"));
    assert_string_equal(note_of(en),
                        "One of the times build/bench/bench_offload measured varies too much to carry the lesson "
                        "(142.3% slower (110.0% to 190.0%, 26 paired steps)), so the explanation leaves it out; rerun "
                        "build/bench/bench_offload --quick on a quiet machine to see it.");
    assert_non_null(strstr(ar, "أبطأ بنسبة 33.1% (من 27.7% إلى 34.8%، أزواج الخطوات: 26)"));
    assert_non_null(strstr(note_of(ar), "أحد الأزمنة التي قاسها build/bench/bench_offload يتفاوت"));
    /* The other way round: the cached figure too wide, the disk's quoted. */
    const Given cache_wide[] = {{"offload_time", 1.331, 1.100, 1.600, 26}, {"dropped_time", 2.423, 2.350, 2.500, 26},
                                {NULL, 0, 0, 0, 0}};
    explain_given(b, 6, cache_wide, QUIET, en, ar, sizeof en);
    assert_null(strstr(en, "Against keeping everything in RAM"));
    assert_non_null(strstr(en, "Each step wrote 1.00 MiB to the spill file and read it back during backward"));
    assert_non_null(strstr(en, "When backward read the spill file from the disk instead, the step was 142.3% slower "
                               "(135.0% to 150.0%, 26 paired steps)."));
    assert_non_null(strstr(note_of(en), "One of the times build/bench/bench_offload measured varies too much to carry "
                                        "the lesson (33.1% slower (10.0% to 60.0%, 26 paired steps))"));
    /* One from too few steps, the other narrow. */
    const Given cache_few[] = {{"offload_time", 1.331, 1.320, 1.340, 4}, {"dropped_time", 2.423, 2.350, 2.500, 26},
                               {NULL, 0, 0, 0, 0}};
    explain_given(b, 6, cache_few, QUIET, en, ar, sizeof en);
    assert_null(strstr(en, "Against keeping everything in RAM"));
    assert_non_null(strstr(en, "the step was 142.3% slower"));
    assert_non_null(strstr(note_of(en), "One of the times build/bench/bench_offload measured comes from too few steps "
                                        "to give an interval (33.1% slower (32.0% to 34.0%, 4 paired steps))"));
    /* Both too wide: no time is quoted, and one note says so for the question. */
    const Given both_wide[] = {{"offload_time", 1.331, 1.100, 1.600, 26}, {"dropped_time", 2.423, 2.100, 2.900, 26},
                               {NULL, 0, 0, 0, 0}};
    explain_given(b, 6, both_wide, QUIET, en, ar, sizeof en);
    assert_null(strstr(en, "Against keeping everything in RAM"));
    assert_null(strstr(en, "the step was"));
    assert_string_equal(note_of(en),
                        "The times build/bench/bench_offload measured vary too much to carry the lesson (33.1% "
                        "slower (10.0% to 60.0%, 26 paired steps)). This explanation teaches from the exact bytes and FLOPs "
                        "instead; rerun build/bench/bench_offload --quick on a quiet machine to see the times.");
    bank_free(b);
}

static void test_no_explanation_states_a_comparison_its_intervals_contradict(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    static char en[8192], ar[8192];
    /* Offload with the page cache kept measured slower than reading the disk, each
     * interval narrow and apart: impossible but for noise. */
    const Given reversed[] = {{"offload_time", 3.988, 3.900, 4.100, 9}, {"dropped_time", 1.432, 1.400, 1.460, 9},
                              {NULL, 0, 0, 0, 0}};
    explain_given(b, 6, reversed, QUIET, en, ar, sizeof en);
    assert_null(strstr(en, "Against keeping everything in RAM"));
    assert_string_equal(note_of(en),
                        "The times build/bench/bench_offload measured contradict each other: the step was 298.8% "
                        "slower (290.0% to 310.0%, 9 paired steps) when the page cache kept the spill file and 43.2% "
                        "slower (40.0% to 46.0%, 9 paired steps) when backward read the disk, yet reading from the page "
                        "cache cannot be slower than reading the disk. Only noise does that. This explanation teaches "
                        "from the exact bytes and FLOPs instead; rerun build/bench/bench_offload --quick on a quiet "
                        "machine to see the times.");
    assert_non_null(strstr(note_of(ar), "تتناقض الأزمنة التي قاسها build/bench/bench_offload"));
    /* Overlapping intervals do not contradict the order: the times are quoted. */
    const Given close[] = {{"offload_time", 1.040, 1.010, 1.070, 9}, {"dropped_time", 1.030, 1.000, 1.060, 9},
                           {NULL, 0, 0, 0, 0}};
    explain_given(b, 6, close, QUIET, en, ar, sizeof en);
    assert_non_null(strstr(en, "the step was 4.0% slower (1.0% to 7.0%, 9 paired steps)"));
    /* Question 3: attention alone measured dearer than the whole blocks that hold it. */
    const Given dearer[] = {{"blocks_overhead", 1.20, 1.19, 1.21, 9}, {"attn_overhead", 1.30, 1.29, 1.31, 9},
                            {"mlp_overhead", 1.10, 1.09, 1.11, 9}, {NULL, 0, 0, 0, 0}};
    explain_given(b, 3, dearer, QUIET, en, ar, sizeof en);
    assert_null(strstr(en, "against no checkpointing, the step was"));
    assert_non_null(strstr(note_of(en), "the step was 30.0% slower (29.0% to 31.0%, 9 paired steps) replaying only the attention ops"));
    bank_free(b);
}

/* Loads the real bank edited by `edit` on its question `q` (0-based), written to a file;
 * returns what bank_load returned for it. */
static Bank *load_edited(int q, void (*edit)(cJSON *question))
{
    char path[512];
    snprintf(path, sizeof path, "%s/edited.json", scratch);
    Bank *good = bank_load(REMAT_QUIZ_BANK);
    cJSON *doc = cJSON_Duplicate(good->doc, true);
    bank_free(good);
    edit(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "questions"), q));
    char *text = cJSON_Print(doc);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    cJSON_Delete(doc);
    return bank_load(path);
}

static void cut_an_option(cJSON *question)
{
    cJSON_DeleteItemFromArray(cJSON_GetObjectItem(question, "options"), 0);
}

static cJSON *part_of(cJSON *question, int p)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(question, "explanation"), p);
}

static void drop_otherwise(cJSON *question)
{
    cJSON_DeleteItemFromObject(part_of(question, 1), "otherwise");
}

static void arabic_without_a_figure(cJSON *question)
{
    cJSON_ReplaceItemInObject(part_of(question, 1), "ar", cJSON_CreateString("نص بلا أرقام."));
}

static void unknown_placeholder(cJSON *question)
{
    cJSON_ReplaceItemInObject(part_of(question, 0), "en", cJSON_CreateString("Kept {nothing_like_it}."));
}

static void order_of_a_byte_count(cJSON *question)
{
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(question, "order"), 0), "lower",
                              cJSON_CreateString("blocks_saved"));
}

static void correct_not_whole(cJSON *question)
{
    cJSON_ReplaceItemInObject(question, "correct", cJSON_CreateNumber(1.5));
}

/* Control sequences in the question's text: clear the screen, and CSI as a C1 control. */
static void escape_in_the_question(cJSON *question)
{
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(question, "question"), "en",
                              cJSON_CreateString("Which \x1b[2Jcost\xc2\x9b" "31m is traded?"));
}

/* Writes `text`, a JSON object, as the scratch results of `bench`, of the current schema
 * unless it says its own. */
static void write_text(const char *bench, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.json", scratch, bench);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    if (strstr(text, "\"schema\"")) fputs(text, f);
    else fprintf(f, "{\"schema\": \"remat-bench/2\", %s", text + 1);
    fclose(f);
}

/* Question `q`'s English explanation from the scratch results, expecting them to hold
 * an invalid figure: REMAT_ECORRUPT, with a message that ends as `error` does. */
static void explain_invalid(const Bank *b, int q, const char *error, char *text, size_t size)
{
    ResultsDir *r = results_open(scratch);
    assert_non_null(r);
    assert_int_equal(fill_explanation(text, size, &b->questions[q - 1], LANG_EN, r), REMAT_ECORRUPT);
    const char *message = remat_last_error();
    if (strlen(message) < strlen(error) || strcmp(message + strlen(message) - strlen(error), error))
        fail_msg("the error was\n  %s\nnot\n  ...%s", message, error);
    results_close(r);
    remove_results();
}

static void test_an_invalid_figure_is_treated_as_missing_naming_the_file_and_field(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    static char text[8192], want[1024];
    static const struct {
        const char *value, *why;
    } bad[] = {{"null", "it is not a number"}, {"-5", "it is negative"}, {"{\"a\": 1}", "it is not a number"},
               {"1e30", "it is too large to be a measurement"}, {"1.5", "it is not a whole number"},
               {"\"280 KiB\"", "it is not a number"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[1024];
        snprintf(json, sizeof json,
                 "{\"tables\": {\"steps\": {\"records\": [{\"n_layers\": 64, \"strategy\": \"full\", \"peak_act\": %s, "
                 "\"flop_overhead\": 0.334}, {\"n_layers\": 64, \"strategy\": \"none\", \"peak_act\": 540672}]}}}",
                 bad[i].value);
        write_text("bench_scaling", json);
        snprintf(want, sizeof want, "%s/bench_scaling.json: tables.steps.records[0].peak_act: %s, so it is treated as "
                 "not measured", scratch, bad[i].why);
        explain_invalid(b, 1, want, text, sizeof text);
        /* Not "kept 0 B" or "16777216.0 TiB": the part that quotes it is left out. */
        assert_null(strstr(text, "On this machine"));
        assert_non_null(strstr(text, "during backward. The loss and every gradient"));
        snprintf(want, sizeof want, "The figure tables.steps.records[0].peak_act in %s/bench_scaling.json is left "
                 "out: %s. Run build/bench/bench_scaling --quick again.", scratch, bad[i].why);
        assert_string_equal(note_of(text), want);
    }
    /* A time's interval: every bound checked, and the value inside it. */
    static const struct {
        const char *fields, *field, *why;
    } spreads[] = {
        {"\"time_overhead_lo\": \"x\", \"time_overhead_hi\": 1.3, \"samples\": 9", "time_overhead_lo", "it is not a number"},
        {"\"time_overhead_lo\": 1.25, \"time_overhead_hi\": 1.3, \"samples\": 9", "time_overhead_lo",
         "its interval does not hold the value"},
        {"\"time_overhead_lo\": 1.1, \"time_overhead_hi\": 1.3, \"samples\": 0", "samples", "it is not above zero"},
        {"\"time_overhead_lo\": 1.1, \"time_overhead_hi\": 1.3", "samples", "the rest of its interval is missing"},
    };
    for (size_t i = 0; i < sizeof spreads / sizeof spreads[0]; i++) {
        char json[1024];
        snprintf(json, sizeof json,
                 "{\"machine\": {\"cores\": 2, \"loadavg_before\": 0.1, \"loadavg_after\": 0.2, \"cpu_steal\": 0,"
                 " \"others_cpu\": 0},"
                 " \"tables\": {\"placements\": {\"records\": [{\"threads\": 2, \"placement\": \"whole blocks\", "
                 "\"time_overhead\": 1.2, %s}]}}}", spreads[i].fields);
        write_text("bench_placement", json);
        snprintf(want, sizeof want, "tables.placements.records[0].%s: %s, so it is treated as not measured",
                 spreads[i].field, spreads[i].why);
        explain_invalid(b, 3, want, text, sizeof text);
        assert_null(strstr(text, "+20.0%"));
    }
    bank_free(b);
}

/* The machine block: a negative load average is no load average. */
static void test_an_invalid_machine_block_is_treated_as_missing(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    static char text[8192];
    write_results(&b->questions[2], NARROW, QUIET);
    char path[512];
    snprintf(path, sizeof path, "%s/bench_placement.json", scratch);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char json[65536];
    json[fread(json, 1, sizeof json - 1, f)] = '\0';
    fclose(f);
    cJSON *doc = cJSON_Parse(json);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(doc, "machine"), "loadavg_before", cJSON_CreateNumber(-1));
    char *printed = cJSON_Print(doc);
    write_text("bench_placement", printed);
    free(printed);
    cJSON_Delete(doc);
    explain_invalid(b, 3, "bench_placement.json: machine.loadavg_before: it is negative, so it is treated as not measured",
                    text, sizeof text);
    assert_null(strstr(text, "paired steps"));
    assert_non_null(strstr(note_of(text), "The figure machine.loadavg_before in "));
    bank_free(b);
}

/* A change of step time is worded by its sign, in both languages: a step that got
 * faster is never said to cost a negative percentage. */
static void test_a_change_is_worded_by_its_sign(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    /* Every time the bank quotes is a change, worded so. */
    for (int q = 0; q < QUIZ_QUESTIONS; q++)
        for (int m = 0; m < b->questions[q].n_measurements; m++)
            if (b->questions[q].measurements[m].time) assert_int_equal(b->questions[q].measurements[m].format, FORMAT_CHANGE);
    static char en[8192], ar[8192];
    const Given faster[] = {{"counter_time", 0.982, 0.964, 0.997, 9}, {NULL, 0, 0, 0, 0}};
    explain_given(b, 7, faster, QUIET, en, ar, sizeof en);
    assert_non_null(strstr(en, "the step that makes the masks again was 1.8% faster (0.3% to 3.6%, 9 paired steps)."));
    assert_non_null(strstr(ar, "أسرع بنسبة 1.8% (من 0.3% إلى 3.6%، أزواج الخطوات: 9)"));
    assert_null(strstr(en, "-1.8%"));
    assert_null(strstr(en, "cost"));
    const Given either[] = {{"counter_time", 0.982, 0.964, 1.003, 9}, {NULL, 0, 0, 0, 0}};
    explain_given(b, 7, either, QUIET, en, ar, sizeof en);
    assert_non_null(strstr(en, "was 1.8% faster (3.6% faster to 0.3% slower, 9 paired steps)."));
    assert_non_null(strstr(ar, "أسرع بنسبة 1.8% (من أسرع بنسبة 3.6% إلى أبطأ بنسبة 0.3%، أزواج الخطوات: 9)"));
    /* Question 3 with one placement faster than no checkpointing. */
    const Given mixed[] = {{"blocks_overhead", 1.20, 1.19, 1.21, 9}, {"attn_overhead", 1.05, 1.04, 1.06, 9},
                           {"mlp_overhead", 0.97, 0.96, 0.98, 9}, {NULL, 0, 0, 0, 0}};
    explain_given(b, 3, mixed, QUIET, en, ar, sizeof en);
    assert_non_null(strstr(en, "and 3.0% faster (2.0% to 4.0%, 9 paired steps) replaying only the MLP ops."));
    assert_null(strstr(en, "-3.0%"));
    bank_free(b);
}

/* Question 7's largest difference is the largest over the strategies its plot shows, not
 * one row's: sqrt's 0.155 here, where full's is 0.142. */
static void test_question_7_quotes_the_largest_difference_its_plot_shows(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    write_text("bench_dropout",
               "{\"tables\": {\"gradients\": {\"records\": ["
               "{\"strategy\": \"full\", \"rng_replay\": true, \"max_abs_grad_diff\": 0},"
               "{\"strategy\": \"full\", \"rng_replay\": false, \"max_abs_grad_diff\": 0.1419},"
               "{\"strategy\": \"sqrt\", \"rng_replay\": true, \"max_abs_grad_diff\": 0},"
               "{\"strategy\": \"sqrt\", \"rng_replay\": false, \"max_abs_grad_diff\": 0.1550},"
               "{\"strategy\": \"selective (attention_core)\", \"rng_replay\": true, \"max_abs_grad_diff\": 0},"
               "{\"strategy\": \"selective (attention_core)\", \"rng_replay\": false, \"max_abs_grad_diff\": 0.0218}"
               "]}}}");
    char en[8192], ar[8192];
    explain(b, 7, LANG_EN, en, sizeof en);
    explain(b, 7, LANG_AR, ar, sizeof ar);
    assert_non_null(strstr(en, "by at most 0; without it, by up to 0.155, and the determinism check"));
    assert_non_null(strstr(ar, "بما يصل إلى 0.155،"));
    remove_results();
    bank_free(b);
}

/* A quick run's offload times measure the disk's latency: question 6 says so and teaches
 * from bytes, and says which run its figures come from; question 3's quick times are
 * quoted as usual. */
static void test_a_quick_run_teaches_offload_from_bytes(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    static char en[8192], ar[8192];
    results_mode = "quick";
    explain_given(b, 6, NARROW, QUIET, en, ar, sizeof en);
    assert_null(strstr(en, "paired steps"));
    assert_non_null(strstr(en, "Each step wrote 1.00 MiB to the spill file and read it back during backward"));
    assert_string_equal(note_of(en),
                        "build/bench/bench_offload ran in quick mode, on small configurations: at that size a step of "
                        "the MLP takes a few milliseconds, so offload's times measure the disk's latency rather than "
                        "the bytes it moves, and say nothing about offload at full size. This explanation teaches from "
                        "the exact bytes instead; run build/bench/bench_offload without --quick, on a quiet machine, "
                        "to see the times.");
    assert_non_null(strstr(note_of(ar), "شُغّل build/bench/bench_offload في النمط السريع"));
    write_results(&b->questions[5], NARROW, QUIET);
    ResultsDir *r = results_open(scratch);
    assert_non_null(r);
    explain_sources(en, sizeof en, &b->questions[5], LANG_EN, r);
    assert_string_equal(en, "Figures from: bench_offload (quick run, date not recorded).");
    explain_sources(ar, sizeof ar, &b->questions[5], LANG_AR, r);
    assert_string_equal(ar, "مصدر الأرقام: bench_offload (تشغيل سريع، التاريخ غير مسجَّل).");
    results_close(r);
    remove_results();
    explain_given(b, 3, NARROW, QUIET, en, ar, sizeof en);
    assert_non_null(strstr(en, "28.5% slower (24.1% to 31.0%, 9 paired steps)"));
    results_mode = NULL;
    bank_free(b);
}

/* Each figure is named for what it measures, and a change of model is said. */
static void test_explanations_name_what_each_figure_measures(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    static char en[8192], ar[8192];
    explain_given(b, 5, NULL, QUIET, en, ar, sizeof en);
    assert_non_null(strstr(en, "a layer with fused attention kept 1.00 MiB where a layer with the naive attention kept"));
    assert_null(strstr(en, "attention core kept"));
    explain_given(b, 8, NULL, QUIET, en, ar, sizeof en);
    assert_non_null(strstr(en, "For the GPT that bench_memory_budget trains on this machine"));
    assert_non_null(strstr(en, "bench_zero trains another model, a much smaller GPT, so its bytes are smaller"));
    assert_non_null(strstr(ar, "ويدرّب bench_zero نموذجًا آخر"));
    /* Questions 2 and 6 talk about the MLP: question 2 shows the MLP's plot, question 6
     * says its plot draws another model. */
    assert_string_equal(b->questions[1].plot, "scaling.png");
    assert_string_equal(b->questions[5].plot, "timeline.png");
    explain_given(b, 6, NULL, QUIET, en, ar, sizeof en);
    assert_non_null(strstr(en, "The plot below draws these strategies on another model, the small GPT of bench_timeline"));
    bank_free(b);
}

/* Question 5 quotes bench_planner's frontier: what the op-level planner kept on the GPT at the
 * budget where it gained most over dp, and its recompute FLOPs against full's, in both
 * languages; without the frontier that sentence alone is left out, and a note names the bench. */
static void test_question_5_quotes_what_the_op_level_planner_kept(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    static char en[8192], ar[8192];
    static const Given q5[] = {{"frontier_budget", 50331648, 0, 0, 0}, {"frontier_layers", 12, 0, 0, 0},
                               {"frontier_ops", 0.125, 0, 0, 0},       {"frontier_full", 0.31, 0, 0, 0},
                               {NULL, 0, 0, 0, 0}};
    explain_given(b, 5, q5, QUIET, en, ar, sizeof en);
    assert_non_null(strstr(en, "at 48.0 MiB, the budget where it gained most over a planner that keeps or recomputes "
                               "whole layers, it ran 12 blocks keeping only the outputs of attn.qkv, mlp.fc and "
                               "recomputing the rest, for 12.5% extra FLOPs where full recomputes 31.0%"));
    assert_non_null(strstr(ar, "شغّل 12 من الكتل لا يحتفظ فيها إلا بمخرجات attn.qkv, mlp.fc"));
    assert_non_null(strstr(ar, "بنسبة 12.5%، في حين تزيدها إعادة حساب الكتل كاملةً بنسبة 31.0%"));
    assert_null(strchr(en, '\n'));
    /* More recomputed than full: an exact figure that is wrong, so neither is quoted. */
    static const Given wrong[] = {{"frontier_ops", 0.5, 0, 0, 0}, {"frontier_full", 0.31, 0, 0, 0}, {NULL, 0, 0, 0, 0}};
    write_results(&b->questions[4], wrong, QUIET);
    ResultsDir *r = results_open(scratch);
    assert_int_equal(fill_explanation(en, sizeof en, &b->questions[4], LANG_EN, r), REMAT_ECORRUPT);
    results_close(r);
    remove_results();
    assert_null(strstr(en, "the op-level planner (--planner ops) makes this choice"));
    assert_non_null(strstr(note_of(en), "bench_planner.json is left out"));
    /* bench_planner run without --pareto: its results have no frontier. */
    write_results(&b->questions[4], q5, QUIET);
    char path[600];
    snprintf(path, sizeof path, "%s/bench_planner.json", scratch);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"schema\": \"remat-bench/2\", \"machine\": {\"cores\": 2}, \"tables\": {}}", f);
    fclose(f);
    explain(b, 5, LANG_EN, en, sizeof en);
    remove_results();
    assert_null(strstr(en, "the op-level planner (--planner ops) makes this choice"));
    assert_non_null(strstr(en, "The dots_saveable policy goes the other way"));
    assert_non_null(strstr(note_of(en), "bench_planner.json holds no record"));
    bank_free(b);
}

/* The columns a line of UTF-8 takes on a terminal: a character each, but Arabic vowel
 * marks (U+064B-U+065F, U+0670) and direction marks (U+200E, U+200F), which take none. */
static int line_columns(const char *s, size_t len)
{
    int cols = 0;
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)s[i], d = i + 1 < len ? (unsigned char)s[i + 1] : 0;
        const unsigned char e = i + 2 < len ? (unsigned char)s[i + 2] : 0;
        if ((c & 0xC0) == 0x80) continue;
        if (c == 0xD9 && ((d >= 0x8B && d <= 0x9F) || d == 0xB0)) continue;
        if (c == 0xE2 && d == 0x80 && (e == 0x8E || e == 0x8F)) continue;
        cols++;
    }
    return cols;
}

/* Fails if a line of `out` is wider than `width` columns. */
static void assert_lines_fit(const char *out, int width, const char *what)
{
    for (const char *line = out; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] == '\n')) {
        const size_t len = strcspn(line, "\r\n");
        if (line_columns(line, len) > width) fail_msg("%s: a line of %d columns: %.*s", what, line_columns(line, len), (int)len, line);
    }
}

/* Everything the quiz prints, in both languages, fits the width: 80 columns when the
 * output is not a terminal, COLUMNS when that says otherwise. */
static void test_every_line_fits_the_terminal(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    for (int q = 0; q < QUIZ_QUESTIONS; q++) {
        write_results(&b->questions[q], NARROW, QUIET);
    }
    static const char *const widths[] = {NULL, "60"};
    for (int w = 0; w < 2; w++) {
        if (widths[w]) setenv("COLUMNS", widths[w], 1);
        else unsetenv("COLUMNS");
        for (int l = 0; l < LANG_COUNT; l++) {
            char args[512];
            int code;
            snprintf(args, sizeof args, "--lang %s --answers 1,1,1,1,1,1,1,1 --results %s", l ? "ar" : "en", scratch);
            char *out = run_quiz(args, &code);
            assert_int_equal(code, 0);
            assert_lines_fit(out, widths[w] ? 60 : 80, l ? "ar" : "en");
            assert_non_null(strstr(out, l ? "النتيجة: " : "Score: "));
            free(out);
        }
    }
    setenv("COLUMNS", "1000000", 1);
    remove_results();
    bank_free(b);
}

/* In Arabic the quiz says once, in both languages, that the page shows it as it reads,
 * unless --bidi-terminal says this terminal shapes it. */
static void test_arabic_in_a_terminal_points_to_the_page(void **state)
{
    (void)state;
    char args[512];
    int code;
    snprintf(args, sizeof args, "--lang ar --answers 2 --results %s", scratch);
    char *out = run_quiz(args, &code);
    assert_int_equal(code, 0);
    assert_int_equal(count(out, "a terminal that does not shape it right to left"), 1);
    assert_int_equal(count(out, "والطرفية التي لا تعرضها من اليمين إلى اليسار"), 1);
    assert_int_equal(count(out, "results/quiz.html"), 4);
    free(out);
    snprintf(args, sizeof args, "--lang ar --bidi-terminal --answers 2 --results %s", scratch);
    out = run_quiz(args, &code);
    assert_null(strstr(out, "results/quiz.html"));
    free(out);
    snprintf(args, sizeof args, "--answers 2 --results %s", scratch);
    out = run_quiz(args, &code);
    assert_null(strstr(out, "results/quiz.html"));
    free(out);
}

/* Question 1's bench_scaling results with `schema` (a JSON value, or NULL for none) and
 * the peak activations, recomputed share and layers given. */
static void write_scaling(const char *schema, const char *full_act, const char *share, const char *none_act)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{%s%s%s\"tables\": {\"steps\": {\"records\": [{\"n_layers\": 64, \"strategy\": \"full\", \"peak_act\": %s, "
             "\"flop_overhead\": %s}, {\"n_layers\": 64, \"strategy\": \"none\", \"peak_act\": %s}]}}}",
             schema ? "\"schema\": " : "", schema ? schema : "", schema ? ", " : "", full_act, share, none_act);
    char path[512];
    snprintf(path, sizeof path, "%s/bench_scaling.json", scratch);
    FILE *f = fopen(path, "w"); /* not write_text, which adds a schema where there is none */
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
}

/* The quiz quotes only figures it can believe: results of a schema it reads, each figure
 * in the range of what it is, bytes in the order they must come in. Any other is left
 * out, as if not measured, and a note and the error say why. */
static void test_figures_the_quiz_cannot_believe_are_not_quoted(void **state)
{
    (void)state;
    Bank *b = bank_load(REMAT_QUIZ_BANK);
    assert_non_null(b);
    static char text[8192], want[1024];
    static const struct {
        const char *schema, *said;
    } schemas[] = {{"\"remat-bench/999\"", "its schema is 'remat-bench/999'"}, {"2", "its schema is not a string"},
                   {NULL, "its schema is not recorded"}};
    for (size_t i = 0; i < sizeof schemas / sizeof schemas[0]; i++) {
        write_scaling(schemas[i].schema, "286728", "0.334", "540680");
        snprintf(want, sizeof want, "%s/bench_scaling.json: %s, not remat-bench/1 or remat-bench/2", scratch,
                 schemas[i].said);
        explain_invalid(b, 1, want, text, sizeof text);
        assert_null(strstr(text, "On this machine"));
        assert_non_null(strstr(text, "The results cannot be read ("));
    }
    write_scaling("\"remat-bench/1\"", "286728", "0.334", "540680"); /* the older schema is read */
    explain(b, 1, LANG_EN, text, sizeof text);
    assert_non_null(strstr(text, "kept 280.0 KiB of activations at its peak instead of 528.0 KiB"));
    remove_results();
    /* A share of the FLOPs recomputed is at most all of them; none is 0.0%, never -0.0%. */
    write_scaling("\"remat-bench/2\"", "286728", "1.5", "540680");
    snprintf(want, sizeof want, "tables.steps.records[0].flop_overhead: it is too large to be a measurement, so it is "
             "treated as not measured");
    explain_invalid(b, 1, want, text, sizeof text);
    write_scaling("\"remat-bench/2\"", "286728", "-0.0", "540680");
    explain(b, 1, LANG_EN, text, sizeof text);
    assert_non_null(strstr(text, "spent 0.0% more FLOPs"));
    assert_null(strstr(text, "-0.0%"));
    remove_results();
    /* Recomputing cannot keep more activations than keeping them all: both are left out. */
    write_scaling("\"remat-bench/2\"", "540680", "0.334", "286728");
    snprintf(want, sizeof want, "tables.steps.records[1].peak_act: it contradicts tables.steps.records[0].peak_act, "
             "since recomputing cannot keep more activations than keeping them all, so it is treated as not measured");
    explain_invalid(b, 1, want, text, sizeof text);
    assert_null(strstr(text, "On this machine"));
    snprintf(want, sizeof want, "The figure tables.steps.records[0].peak_act in %s/bench_scaling.json is left out: it "
             "contradicts tables.steps.records[1].peak_act, since recomputing cannot keep more activations than "
             "keeping them all. Run build/bench/bench_scaling --quick again.", scratch);
    assert_non_null(strstr(text, want));
    /* A resident peak is at most this machine's RAM. */
    const double ram = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    char json[1024];
    snprintf(json, sizeof json, "{\"tables\": {\"budget\": {\"records\": [{\"attention\": \"fused\", \"seq\": 128, "
             "\"budget\": 1048576, \"peak_resident\": %.0f}]}}}", 2 * ram);
    write_text("bench_selective", json);
    explain_invalid(b, 5, "tables.budget.records[0].peak_resident: it is too large to be a measurement, so it is "
                    "treated as not measured", text, sizeof text);
    bank_free(b);
}

static void test_a_malformed_bank_names_the_file_and_field(void **state)
{
    (void)state;
    /* The real bank with question 4 cut down to three options. */
    assert_null(load_edited(3, cut_an_option));
    assert_int_equal(remat_last_status(), REMAT_ECORRUPT);
    assert_non_null(strstr(remat_last_error(), "edited.json: questions[3].options: need 4 options, found 3"));

    char path[512];
    snprintf(path, sizeof path, "%s/bad.json", scratch);
    FILE *    f = fopen(path, "w");
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
    /* The correct option is an index: 1.5 is refused, naming the question. */
    assert_null(load_edited(4, correct_not_whole));
    assert_non_null(strstr(remat_last_error(), "edited.json: questions[4].correct: must be an option index, a whole number"));
}

/* The bank's text reaches the terminal with its control characters visible, never obeyed;
 * Arabic and the quiz's own ✓ pass as they are. */
static void test_control_characters_in_the_bank_are_shown_not_obeyed(void **state)
{
    (void)state;
    Bank *edited = load_edited(0, escape_in_the_question);
    assert_non_null(edited);
    bank_free(edited);
    char args[600];
    snprintf(args, sizeof args, "--bank %s/edited.json --no-shuffle --answers 2 --results %s", scratch, scratch);
    int code;
    char *out = run_quiz(args, &code);
    assert_int_equal(code, 0);
    assert_non_null(strstr(out, "Which \\x1b[2Jcost\\u009b31m is traded?"));
    assert_null(strchr(out, 0x1b));
    assert_null(strstr(out, "\xc2\x9b"));
    assert_non_null(strstr(out, "  ✓ 1. your answer: "));
    free(out);
    snprintf(args, sizeof args, "--bank %s/edited.json --lang ar --preview", scratch);
    out = run_quiz(args, &code);
    assert_non_null(strstr(out, "التنشيطات"));
    free(out);
}

static void test_a_bank_keeps_its_explanations_honest(void **state)
{
    (void)state;
    /* A part that quotes a time must say what it says without it too. */
    assert_null(load_edited(2, drop_otherwise));
    assert_non_null(strstr(remat_last_error(), "questions[2].explanation[1]: quotes a time, so it needs an `otherwise`"));
    /* Both languages quote the same figures. */
    assert_null(load_edited(0, arabic_without_a_figure));
    assert_non_null(strstr(remat_last_error(), "questions[0].explanation[1]: en quotes {n_layers full_act none_act "
                                               "full_recompute } but ar quotes {}"));
    assert_null(load_edited(1, unknown_placeholder));
    assert_non_null(strstr(remat_last_error(), "questions[1].explanation[0].en: the placeholder {nothing_like_it} "
                                               "names no measurement"));
    /* An order compares two times or two exact figures. */
    assert_null(load_edited(2, order_of_a_byte_count));
    assert_non_null(strstr(remat_last_error(), "questions[2].order[0]: blocks_saved and blocks_overhead are not both "
                                               "times or both exact"));
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

static void test_interactive_quiz_through_a_terminal(void **state)
{
    (void)state;
    int fd;
    struct winsize size = {.ws_row = 24, .ws_col = 80};
    pid_t pid = forkpty(&fd, NULL, NULL, &size);
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
    /* A NUL inside the line, and a 63-byte line ending in 3: neither is an answer. */
    out[0] = '\0';
    used = 0;
    assert_int_equal(write(fd, "1\0junk\n", 7), 7);
    assert_true(read_until(fd, out, sizeof out, &used, "Please answer 1-4 or a-d."));
    char long_line[64];
    memset(long_line, ' ', 62);
    long_line[62] = '3';
    long_line[63] = '\n';
    out[0] = '\0';
    used = 0;
    assert_int_equal(write(fd, long_line, 64), 64);
    assert_true(read_until(fd, out, sizeof out, &used, "Please answer 1-4 or a-d."));
    assert_null(strstr(out, "The answer:"));
    out[0] = '\0'; /* from here on, the quiz's own lines (and the answers echoed) */
    used = 0;
    assert_int_equal(write(fd, "b\n", 2), 2); /* question 1, right */
    assert_true(read_until(fd, out, sizeof out, &used, "Press Enter for the next question."));
    assert_null(strstr(out, "Question 2 of 8")); /* the explanation waits to be read */
    assert_int_equal(write(fd, "\n", 1), 1);
    assert_true(read_until(fd, out, sizeof out, &used, "Question 2 of 8"));
    assert_int_equal(write(fd, "1\n", 2), 2); /* question 2, wrong */
    assert_true(read_until(fd, out, sizeof out, &used, "Press Enter for the next question."));
    assert_int_equal(write(fd, "\n", 1), 1);
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
    /* Every line fits the width the terminal reports; the prompt is left out, since the
     * answer echoed after it ends its line, which the pty may show before or after. */
    const char *prompt = "Your answer (1-4 or a-d): ";
    for (char *p; (p = strstr(out, prompt)) != NULL;) memmove(p, p + strlen(prompt), strlen(p + strlen(prompt)) + 1);
    assert_lines_fit(out, 80, "the 80-column terminal");
}

/* The whole file at REMAT_SOURCE_DIR/`path`, NUL-terminated, in a buffer the caller
 * frees; NULL if it cannot be read. */
static char *source_file(const char *path)
{
    char full[1024];
    snprintf(full, sizeof full, "%s/%s", REMAT_SOURCE_DIR, path);
    char *text;
    size_t size;
    return file_read_all("test_quiz", full, QUIZ_MAX_FILE, &text, &size) == REMAT_OK ? text : NULL;
}

/* Every key the quiz's code names in a quiz_word call, and every reason a figure is
 * invalid ("why_..."), is a text of quiz/words.json: a key that is not there would abort
 * the program where it is said, perhaps on a path no other test takes. */
static void test_every_word_the_code_says_is_in_words_json(void **state)
{
    (void)state;
    static const char *const files[] = {"quiz/explain_fill.c", "quiz/page.c", "quiz/quiz.c"};
    cJSON *words = parse_words();
    int keys = 0;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char *code = source_file(files[f]);
        assert_non_null(code);
        for (const char *q = strchr(code, '"'); q; q = strchr(q + 1, '"')) {
            const char *end = strchr(q + 1, '"');
            const size_t len = (size_t)(end - q - 1);
            const char *call = q;
            while (call > code && call[-1] != ';' && call[-1] != '{' && strncmp(call, "quiz_word(", 10)) call--;
            const bool said = !strncmp(call, "quiz_word(", 10) && !memchr(call, ')', (size_t)(q - call) - 9);
            char key[64];
            snprintf(key, sizeof key, "%.*s", (int)(len < 63 ? len : 63), q + 1);
            if ((said || !strncmp(key, "why_", 4)) && strspn(key, "abcdefghijklmnopqrstuvwxyz_") == len && len) {
                if (!cJSON_GetObjectItem(words, key)) fail_msg("%s says \"%s\", which words.json has not", files[f], key);
                keys++;
            }
            q = end;
        }
        free(code);
    }
    assert_true(keys > 50);
    cJSON_Delete(words);
}

/* docs/TOUR.md points students at functions in files: "`region_backward()` in
 * `checkpoint/checkpoint.c`". Every file it names in backticks exists, and every
 * function named before it ("`a()`, `b()` and `c()` in `file`") is defined or declared
 * there, so that the tour follows the code when it moves. */
static void test_the_tour_names_code_that_exists(void **state)
{
    (void)state;
    char *tour = source_file("docs/TOUR.md");
    assert_non_null(tour);
    const char *pending[16];
    size_t lens[16];
    int n_pending = 0, files = 0, functions = 0;
    for (const char *tick = strchr(tour, '`'); tick; tick = strchr(tick + 1, '`')) {
        const char *end = strchr(tick + 1, '`');
        if (!end || memchr(tick + 1, '\n', (size_t)(end - tick - 1))) continue;
        const size_t len = (size_t)(end - tick - 1);
        const char *token = tick + 1;
        if (len > 2 && !strncmp(end - 2, "()", 2) && n_pending < 16) {
            pending[n_pending] = token;
            lens[n_pending++] = len - 2;
        } else if (len > 2 && memchr(token, '/', len) && (!strncmp(end - 2, ".c", 2) || !strncmp(end - 2, ".h", 2))) {
            char path[256];
            snprintf(path, sizeof path, "%.*s", (int)len, token);
            char *code = source_file(path);
            if (!code) fail_msg("docs/TOUR.md names %s, which does not exist", path);
            for (int i = 0; i < n_pending; i++) {
                char call[128];
                snprintf(call, sizeof call, "%.*s(", (int)lens[i], pending[i]);
                if (!strstr(code, call)) fail_msg("docs/TOUR.md puts %.*s() in %s, which has no %s", (int)lens[i], pending[i], path, call);
                functions++;
            }
            free(code);
            n_pending = 0;
            files++;
        }
        tick = end;
    }
    free(tour);
    assert_true(files >= 20);
    assert_true(functions >= 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bank_is_complete_in_both_languages),
        cmocka_unit_test(test_arabic_says_one_term_each_throughout),
        cmocka_unit_test(test_words_take_the_same_arguments_in_both_languages),
        cmocka_unit_test(test_right_answers_score_8_in_english_and_arabic),
        cmocka_unit_test(test_wrong_answers_score_accordingly),
        cmocka_unit_test(test_without_a_terminal_the_quiz_previews),
        cmocka_unit_test(test_help_gives_an_example_that_is_not_the_key),
        cmocka_unit_test(test_a_bank_or_results_that_are_not_regular_files_are_refused),
        cmocka_unit_test(test_explanations_quote_measured_figures),
        cmocka_unit_test(test_quiet_narrow_times_are_quoted_with_their_spread),
        cmocka_unit_test(test_a_change_is_worded_by_its_sign),
        cmocka_unit_test(test_question_7_quotes_the_largest_difference_its_plot_shows),
        cmocka_unit_test(test_a_quick_run_teaches_offload_from_bytes),
        cmocka_unit_test(test_explanations_name_what_each_figure_measures),
        cmocka_unit_test(test_question_5_quotes_what_the_op_level_planner_kept),
        cmocka_unit_test(test_every_line_fits_the_terminal),
        cmocka_unit_test(test_arabic_in_a_terminal_points_to_the_page),
        cmocka_unit_test(test_times_measured_on_a_busy_machine_are_not_taught_from),
        cmocka_unit_test(test_wide_few_or_unknown_spreads_are_not_taught_from),
        cmocka_unit_test(test_a_time_that_cannot_carry_the_lesson_leaves_out_only_its_part),
        cmocka_unit_test(test_no_explanation_states_a_comparison_its_intervals_contradict),
        cmocka_unit_test(test_an_invalid_figure_is_treated_as_missing_naming_the_file_and_field),
        cmocka_unit_test(test_an_invalid_machine_block_is_treated_as_missing),
        cmocka_unit_test(test_a_missing_figure_names_its_command),
        cmocka_unit_test(test_figures_the_quiz_cannot_believe_are_not_quoted),
        cmocka_unit_test(test_a_malformed_bank_names_the_file_and_field),
        cmocka_unit_test(test_a_bank_keeps_its_explanations_honest),
        cmocka_unit_test(test_control_characters_in_the_bank_are_shown_not_obeyed),
        cmocka_unit_test(test_output_that_cannot_be_written_fails),
        cmocka_unit_test(test_the_page_never_replaces_what_is_not_a_regular_file),
        cmocka_unit_test(test_interactive_quiz_through_a_terminal),
        cmocka_unit_test(test_every_word_the_code_says_is_in_words_json),
        cmocka_unit_test(test_the_tour_names_code_that_exists),
    };
    return cmocka_run_group_tests_name("quiz", tests, setup, teardown);
}
