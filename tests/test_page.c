/*
 * test_page.c — the quiz as one HTML page (quiz/page.c, `quiz --html`).
 *
 * `test_page` reads the written file: both languages and every question are in it, it
 * loads nothing from anywhere else, its text is escaped and its left-to-right runs are
 * isolated in the Arabic view, what was not measured or drawn says so, the footer says
 * what the results record and no more, and a page that cannot be written is a clear
 * error that leaves nothing behind.
 *
 * `test_page browser` opens the page in headless Chromium (Debian's `chromium`) and
 * answers it through its URL fragment, then checks the rendered DOM: the score for the
 * right answers is 8 of 8 in both languages and lower for wrong ones, the Arabic view is
 * right to left, every explanation (figures included) is the line the terminal quiz
 * prints for the same results, and no script error or blocked load happened. It leaves
 * screenshots of each language at phone and desktop widths in REMAT_PAGE_SHOTS_DIR. With
 * no chromium installed these tests are skipped, saying so, unless REMAT_REQUIRE_BROWSER
 * is set (as CI sets it), which makes a missing browser a failure.
 *
 * Both run on results written here: a record for every figure the bank quotes, each a
 * different value, except bench_dropout's (so question 7 is "not measured yet"), and the
 * plots committed in docs/img (dropout.png and memory_budget.png are not there, so
 * questions 7 and 8 say their plot is not drawn yet).
 */
#define _DEFAULT_SOURCE /* usleep */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "quiz/bank.h"
#include "quiz/explain_fill.h"
#include "quiz/page.h"

/* Answer sheets as the page's buttons number the options (the page is written with
 * --seed 7, and `#answers=` counts in the order the buttons show): the right answers,
 * filled in by setup, and the first button every time, right where --seed 7 put the
 * correct option first. */
static char RIGHT[32];
static const char *const ALL_FIRST = "1,1,1,1,1,1,1,1";
static int all_first_score;

static char scratch[] = "/tmp/remat_page_XXXXXX";
static char page[512];     /* the page `quiz --html` wrote from the scratch results */
static Bank *bank;
static char *dumps[LANG_COUNT][2]; /* its DOM in a browser, per language and answer sheet */

/* ---- helpers ------------------------------------------------------------------------ */

/* The whole file at `path` as a string the caller frees; NULL if it cannot be read. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, used = 0, n;
    char *text = malloc(cap);
    while ((n = fread(text + used, 1, cap - used - 1, f)) > 0) {
        used += n;
        if (used + 1 == cap) text = realloc(text, cap *= 2);
    }
    text[used] = '\0';
    fclose(f);
    return text;
}

/* Runs a shell command, its output (stdout and stderr) into a string the caller frees. */
static char *run(const char *cmd, int *exit_code)
{
    char full[4096];
    snprintf(full, sizeof full, "%s < /dev/null 2>&1", cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, used = 0, n;
    char *out = malloc(cap);
    while ((n = fread(out + used, 1, cap - used - 1, p)) > 0) {
        used += n;
        if (used + 1 == cap) out = realloc(out, cap *= 2);
    }
    out[used] = '\0';
    const int status = pclose(p);
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}

static size_t count(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what)) n++;
    return n;
}

/* The value a placeholder of format `format` is given in the scratch results (a text: two op
 * classes): the k-th figure of the bank, so that no two figures look alike; a byte count or a count
 * that is the lower end of an order of its question (`lower`) far smaller than the others, as it must be. */
static double fake_value(FigureFormat format, int k, bool lower)
{
    if (format == FORMAT_BYTES || format == FORMAT_RESIDENT)
        return (1048576.0 * (k + 1) + 65536.0 * k) * (lower ? 1 : 16);
    if (format == FORMAT_PERCENT) return 0.011 * (k + 1);
    if (format == FORMAT_EXCESS || format == FORMAT_CHANGE) return 1.0 + 0.013 * (k + 1);
    if (format == FORMAT_INT) return (10 + k) * (lower ? 1 : 16);
    return 0.125 * (k + 1);
}

/* A new results document of `bench`, run on day `day`, in `docs`: the header fields a
 * bench writes (docs/RESULTS.md), threads left out of bench_memory_budget's, a quiet
 * machine, and no tables yet. */
static cJSON *new_results(cJSON *docs, const char *bench, int day)
{
    cJSON *doc = cJSON_AddObjectToObject(docs, bench);
    char date[32];
    snprintf(date, sizeof date, "2026-01-%02dT10:00:00Z", day);
    cJSON_AddStringToObject(doc, "schema", "remat-bench/1");
    cJSON_AddStringToObject(doc, "bench", bench);
    cJSON_AddStringToObject(doc, "mode", "quick");
    cJSON_AddStringToObject(doc, "date", date);
    cJSON_AddStringToObject(doc, "git_commit", "0123456789abcdef0123456789abcdef01234567");
    cJSON_AddFalseToObject(doc, "git_dirty");
    cJSON *machine = cJSON_AddObjectToObject(doc, "machine");
    cJSON_AddStringToObject(machine, "hostname", "testhost");
    cJSON_AddStringToObject(machine, "os", "Linux 6.1 x86_64");
    cJSON_AddNumberToObject(machine, "cores", 2);
    cJSON_AddStringToObject(machine, "blas_core", "Haswell");
    cJSON_AddNumberToObject(machine, "loadavg_before", 0.25);
    cJSON_AddNumberToObject(machine, "loadavg_after", 1.5);
    cJSON_AddNumberToObject(machine, "cpu_steal", 0.002);
    cJSON_AddNumberToObject(machine, "others_cpu", 0.01);
    if (strcmp(bench, "bench_memory_budget")) cJSON_AddNumberToObject(doc, "threads", 2);
    cJSON_AddObjectToObject(doc, "tables");
    return doc;
}

/* Writes results/<bench>.json for every bench the bank quotes but `skip` (new_results),
 * and for every measurement a record matching its `where` with the quoted field set, and
 * a narrow interval from 9 samples beside each time. */
static void write_results(const char *skip)
{
    cJSON *docs = cJSON_CreateObject();
    int k = 0, day = 1;
    for (int q = 0; q < QUIZ_QUESTIONS; q++) {
        for (int i = 0; i < bank->questions[q].n_measurements; i++, k++) {
            const Measurement *m = &bank->questions[q].measurements[i];
            if (!strcmp(m->bench, skip)) continue;
            cJSON *doc = cJSON_GetObjectItem(docs, m->bench);
            if (!doc) doc = new_results(docs, m->bench, day++);
            cJSON *tables = cJSON_GetObjectItem(doc, "tables");
            cJSON *table = cJSON_GetObjectItem(tables, m->table);
            if (!table) cJSON_AddArrayToObject(cJSON_AddObjectToObject(tables, m->table), "records");
            cJSON *records = cJSON_GetObjectItem(cJSON_GetObjectItem(tables, m->table), "records");
            cJSON *record = NULL;
            for (cJSON *r = records->child; r && !record; r = r->next) {
                bool same = cJSON_GetArraySize(r) >= (m->where ? cJSON_GetArraySize(m->where) : 0);
                for (const cJSON *w = m->where ? m->where->child : NULL; w && same; w = w->next)
                    same = cJSON_Compare(w, cJSON_GetObjectItem(r, w->string), true);
                if (same) record = r;
            }
            if (!record) cJSON_AddItemToArray(records, record = m->where ? cJSON_Duplicate(m->where, true) : cJSON_CreateObject());
            if (cJSON_GetObjectItem(record, m->field)) continue;
            bool lower = false;
            for (int o = 0; o < bank->questions[q].n_orders; o++) lower |= bank->questions[q].orders[o].lower == m;
            const double value = fake_value(m->format, k, lower);
            if (m->format == FORMAT_TEXT) cJSON_AddStringToObject(record, m->field, "attn.qkv, mlp.fc");
            else cJSON_AddNumberToObject(record, m->field, value);
            if (m->time) { /* quiet and narrow: the times are quoted */
                char name[128];
                snprintf(name, sizeof name, "%s_lo", m->field);
                cJSON_AddNumberToObject(record, name, value - 0.02);
                snprintf(name, sizeof name, "%s_hi", m->field);
                cJSON_AddNumberToObject(record, name, value + 0.02);
                cJSON_AddNumberToObject(record, "samples", 9);
            }
        }
    }
    for (const cJSON *doc = docs->child; doc; doc = doc->next) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s.json", scratch, doc->string);
        char *text = cJSON_Print(doc);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        free(text);
    }
    cJSON_Delete(docs);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(scratch) || !(bank = bank_load(REMAT_QUIZ_BANK))) return -1;
    setenv("COLUMNS", "1000000", 1); /* the terminal quiz's paragraphs, a line each */
    int orders[8][QUIZ_OPTIONS];
    bank_option_orders(7, true, orders);
    for (int q = 0; q < QUIZ_QUESTIONS; q++) {
        int shown = 0;
        while (orders[q][shown] != bank->questions[q].correct) shown++;
        RIGHT[2 * q] = (char)('1' + shown);
        RIGHT[2 * q + 1] = q + 1 < QUIZ_QUESTIONS ? ',' : '\0';
        all_first_score += shown == 0;
    }
    write_results("bench_dropout");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/plots && cp %s/docs/img/scaling.png %s/docs/img/timeline.png "
             "%s/docs/img/placement.png %s/docs/img/selective.png %s/plots/",
             scratch, REMAT_SOURCE_DIR, REMAT_SOURCE_DIR, REMAT_SOURCE_DIR, REMAT_SOURCE_DIR, scratch);
    if (system(cmd) != 0) return -1;
    snprintf(page, sizeof page, "%s/quiz.html", scratch);
    snprintf(cmd, sizeof cmd, "%s --html %s --results %s --seed 7 >/dev/null 2>&1", REMAT_QUIZ_BIN, page, scratch);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    for (int l = 0; l < LANG_COUNT; l++) {
        free(dumps[l][0]);
        free(dumps[l][1]);
    }
    bank_free(bank);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", scratch);
    return system(cmd);
}

/* ---- the file ----------------------------------------------------------------------- */

static void test_page_holds_both_languages_and_every_question(void **state)
{
    (void)state;
    char *html = slurp(page);
    assert_non_null(html);
    assert_non_null(strstr(html, "<div class=\"view\" id=\"view-en\" data-view=\"en\" lang=\"en\" dir=\"ltr\">"));
    assert_non_null(strstr(html, "<div class=\"view\" id=\"view-ar\" data-view=\"ar\" lang=\"ar\" dir=\"rtl\">"));
    assert_int_equal(count(html, "<article class=\"question\""), 16);
    assert_int_equal(count(html, "<button type=\"button\" class=\"option\""), 64);
    /* Readable without JavaScript: every answer and explanation inside a <details>. */
    assert_int_equal(count(html, "<details class=\"answer\">"), 16);
    assert_int_equal(count(html, "<p class=\"explanation\">"), 16);
    /* The times are quoted with their spread, in both languages: question 3's three and
     * question 7's counter-based masks against the stream; question 6's come from a quick
     * run, which its explanation does not teach from (a note says so). */
    assert_int_equal(count(html, " paired steps)</span>"), 4);
    assert_int_equal(count(html, "أزواج الخطوات: <bdi dir=\"ltr\">9</bdi>)</span>"), 4);
    assert_int_equal(count(html, "<noscript>"), 2);
    /* The option order is the terminal's for the same seed: --seed 7 shuffled question 1. */
    int orders[8][QUIZ_OPTIONS];
    bank_option_orders(7, true, orders);
    const char *q1 = strstr(html, "id=\"en-q1\"");
    char want[96];
    snprintf(want, sizeof want, "class=\"option\" data-option=\"%d\"", orders[0][0] + 1);
    assert_non_null(q1);
    assert_ptr_equal(strstr(q1, "class=\"option\" data-option="), strstr(q1, want));
    /* Every quoted bench's results are there but bench_dropout's: one note, under question
     * 7, in each language (and the two notes for readers without JavaScript). */
    assert_int_equal(count(html, "<p class=\"note\">"), 2 + 2 + 2);
    assert_int_equal(count(html, "build/bench/bench_offload ran in quick mode"), 1);
    assert_int_equal(count(html, "<p class=\"sources\">Figures from: bench_scaling (quick run, "), 3);
    assert_int_equal(count(html, "<a class=\"full-size\" href=\"plots/scaling.png\"><img"), 2 * 3);
    assert_int_equal(count(html, "<noscript><p class=\"note\">"), 2);
    free(html);
}

static void test_page_is_self_contained(void **state)
{
    (void)state;
    char *html = slurp(page);
    assert_non_null(html);
    assert_null(strstr(html, "http://"));
    assert_null(strstr(html, "https://"));
    assert_null(strstr(html, "<link"));
    assert_null(strstr(html, "@import"));
    assert_non_null(strstr(html, "Content-Security-Policy\" content=\"default-src 'none'; img-src data:;"));
    /* Every source is inline: each src= is a data: URI; each href= a fragment, or a
     * plot's own file beside the page, which a reader may follow for its full size but
     * the page never loads. */
    size_t images = 0;
    for (const char *p = html; (p = strstr(p, " src=\"")) != NULL; p++, images++)
        assert_int_equal(strncmp(p, " src=\"data:image/png;base64,", 28), 0);
    for (const char *p = html; (p = strstr(p, " href=\"")) != NULL; p++)
        assert_true(p[7] == '#' || !strncmp(p + 7, "plots/", 6));
    /* Four plots in the scratch results, each under its questions in both languages
     * (scaling.png serves three). */
    assert_int_equal(images, 2 * 6);
    free(html);
}

static void test_page_escapes_text_and_isolates_left_to_right_runs_in_arabic(void **state)
{
    (void)state;
    /* A bank whose first question holds every character HTML gives a meaning to. */
    cJSON *doc = cJSON_Duplicate(bank->doc, true);
    cJSON *q1 = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "questions"), 0), "question");
    cJSON_ReplaceItemInObject(q1, "en", cJSON_CreateString("Is <b>x</b> & \"y\" 'z'?"));
    char path[600], out[600], cmd[2048];
    snprintf(path, sizeof path, "%s/escaping.json", scratch);
    snprintf(out, sizeof out, "%s/escaping.html", scratch);
    char *text = cJSON_Print(doc);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    cJSON_Delete(doc);
    snprintf(cmd, sizeof cmd, "%s --bank %s --html %s --results %s --no-shuffle", REMAT_QUIZ_BIN, path, out, scratch);
    int code;
    free(run(cmd, &code));
    assert_int_equal(code, 0);
    char *html = slurp(out);
    assert_non_null(html);
    assert_non_null(strstr(html, "Is &lt;b&gt;x&lt;/b&gt; &amp; &quot;y&quot; &#39;z&#39;?"));
    assert_null(strstr(html, "<b>x</b>"));
    /* In the Arabic view a formula, a parenthesised name, a quoted message and a figure
     * with its unit each read as one left-to-right run. */
    assert_non_null(strstr(html, "<bdi dir=\"ltr\">O(N²)</bdi> لجميع"));
    assert_non_null(strstr(html, "حسابات إضافية <bdi dir=\"ltr\">(FLOPs)</bdi>"));
    assert_non_null(strstr(html, "<bdi dir=\"ltr\">&quot;saved tensor 0 of linear #0 (h.0.mlp.fc) was freed&quot;</bdi>"));
    assert_non_null(strstr(html, "<span class=\"fig\"><bdi dir=\"ltr\">"));
    /* ... and the Arabic brackets around a number stay Arabic: "(النظرية: 0.5 و1)". */
    assert_non_null(strstr(html, "و<bdi dir=\"ltr\">1</bdi>)"));
    /* The English view isolates nothing: it has no right-to-left text. */
    const char *ar = strstr(html, "id=\"view-ar\"");
    assert_non_null(ar);
    const char *bdi = strstr(html, "<bdi");
    assert_true(bdi > ar);
    free(html);
}

static void test_page_says_what_was_not_measured_and_what_the_results_do_not_record(void **state)
{
    (void)state;
    char *html = slurp(page);
    assert_non_null(html);
    assert_non_null(strstr(html, "<p class=\"note\">No figures from this machine yet: run build/bench/bench_dropout "
                                 "--quick to see them in this explanation.</p>"));
    assert_non_null(strstr(html, "<p class=\"note\">لا أرقام من هذا الجهاز بعد: شغّل <bdi dir=\"ltr\">"
                                 "build/bench/bench_dropout --quick</bdi> لتظهر في هذا التفسير.</p>"));
    char missing[1024];
    snprintf(missing, sizeof missing, "(plot dropout.png not drawn yet: run bench/plots.sh %s %s/plots)", scratch, scratch);
    assert_non_null(strstr(html, missing));
    /* The footer: what every results file agrees on once, what differs by bench, and what
     * the schema does not record said plainly. */
    assert_non_null(strstr(html, "<dd><time>2026-01-01T10:00:00Z</time> to <time>2026-01-09T10:00:00Z</time></dd>"));
    assert_non_null(strstr(html, "<dd>0123456789ab, no uncommitted changes</dd>"));
    assert_non_null(strstr(html, "<dd>quick (small configurations)</dd>"));
    assert_non_null(strstr(html, "2 cores, OpenBLAS kernels for Haswell (the CPU&#39;s model is not recorded in the results)"));
    assert_non_null(strstr(html, "<dt>Load while measuring</dt><dd>other processes ran for 1.0% of the CPU time; "
                                 "1-minute load average 0.2 before, 1.5 after; 0.2% of the CPU time stolen by the "
                                 "hypervisor</dd>"));
    assert_non_null(strstr(html, "not recorded in the results (<code>bench_memory_budget</code>)"));
    free(html);
}

static void test_page_to_an_unwritable_path_is_a_clear_error(void **state)
{
    (void)state;
    char cmd[2048];
    int code;
    snprintf(cmd, sizeof cmd, "%s --html /nonexistent-remat-dir/quiz.html --results %s", REMAT_QUIZ_BIN, scratch);
    char *out = run(cmd, &code);
    assert_int_equal(code, 1);
    assert_non_null(strstr(out, "quiz: cannot write /nonexistent-remat-dir/quiz.html: its directory "
                                "/nonexistent-remat-dir: No such file or directory"));
    free(out);
    /* A directory where the page should go: refused before anything is written, and no
     * temporary file is left beside it. */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/a-directory", scratch);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(cmd, sizeof cmd, "%s --html %s --results %s", REMAT_QUIZ_BIN, dir, scratch);
    out = run(cmd, &code);
    assert_int_equal(code, 1);
    assert_non_null(strstr(out, "it is a directory, not a regular file"));
    free(out);
    snprintf(cmd, sizeof cmd, "ls %s | grep -c '\\.tmp\\.'", scratch);
    out = run(cmd, &code);
    assert_string_equal(out, "0\n");
    free(out);
    rmdir(dir);
}

/* The page never replaces a file it is made from: a results file (however its path is
 * spelled), the bank or a plot. The file is compared, not the name; nothing is written. */
static void test_page_over_one_of_its_inputs_is_refused(void **state)
{
    (void)state;
    char bank_copy[600], cmd[2048];
    snprintf(bank_copy, sizeof bank_copy, "%s/bank.json", scratch);
    snprintf(cmd, sizeof cmd, "cp %s %s", REMAT_QUIZ_BANK, bank_copy);
    assert_int_equal(system(cmd), 0);
    static const char *const inputs[] = {"%s/bench_offload.json", "%s/./plots/../bench_offload.json",
                                         "%s/bank.json", "%s/plots/scaling.png"};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        char out_path[600];
        snprintf(out_path, sizeof out_path, inputs[i], scratch);
        char *before = slurp(out_path);
        assert_non_null(before);
        snprintf(cmd, sizeof cmd, "cd %s && %s --html ./%s --bank %s --results . --seed 7", scratch, REMAT_QUIZ_BIN,
                 out_path + strlen(scratch) + 1, bank_copy);
        int code;
        char *out = run(cmd, &code);
        assert_int_equal(code, 1);
        assert_non_null(strstr(out, ", a file the page is made from"));
        char *after = slurp(out_path);
        assert_string_equal(before, after);
        free(out), free(before), free(after);
    }
    snprintf(cmd, sizeof cmd, "ls %s | grep -c '\\.tmp\\.'", scratch);
    int code;
    char *out = run(cmd, &code);
    assert_string_equal(out, "0\n");
    free(out);
    remove(bank_copy);
}

/* Whether process `pid` has a file open in directory `dir` (its descriptors' targets). */
static bool has_open_in(pid_t pid, const char *dir)
{
    char fds[64], link[600], target[1024];
    snprintf(fds, sizeof fds, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(fds);
    bool found = false;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        snprintf(link, sizeof link, "%s/%s", fds, e->d_name);
        const ssize_t n = readlink(link, target, sizeof target - 1);
        target[n > 0 ? n : 0] = '\0';
        found = !strncmp(target, dir, strlen(dir)) && target[strlen(dir)] == '/';
    }
    if (d) closedir(d);
    return found;
}

/* A quiz killed while it writes the page leaves nothing beside it: the page is written
 * unnamed (O_TMPFILE) and named only once complete. A large plot makes the write last. */
static void test_page_killed_while_written_leaves_nothing(void **state)
{
    (void)state;
    char dir[600], plots[600], png[700], page_path[700];
    snprintf(dir, sizeof dir, "%s/killed", scratch);
    snprintf(plots, sizeof plots, "%s/big-plots", scratch);
    snprintf(png, sizeof png, "%s/scaling.png", plots);
    snprintf(page_path, sizeof page_path, "%s/quiz.html", dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(mkdir(plots, 0755), 0);
    FILE *f = fopen(png, "wb");
    static const unsigned char head[24] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13,
                                           'I', 'H', 'D', 'R', 0, 0, 1, 0, 0, 0, 1, 0};
    fwrite(head, 1, sizeof head, f);
    assert_int_equal(fseek(f, 64 << 20, SEEK_SET), 0); /* 64 MiB, mostly a hole */
    fputc(0, f);
    fclose(f);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        execl(REMAT_QUIZ_BIN, "quiz", "--html", page_path, "--results", scratch, "--plots", plots, (char *)NULL);
        _exit(127);
    }
    bool caught = false;
    for (int i = 0; i < 200000 && !caught; i++) {
        caught = has_open_in(pid, dir);
        if (!caught) usleep(50);
    }
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    if (!caught) fail_msg("the quiz finished before it could be killed while writing");
    char cmd[1300]; /* room for both paths */
    snprintf(cmd, sizeof cmd, "ls -A %s", dir);
    int code;
    char *out = run(cmd, &code);
    assert_string_equal(out, "");
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, plots);
    assert_int_equal(system(cmd), 0);
}

static void test_page_write_reports_a_bad_plot(void **state)
{
    (void)state;
    char plots[600], png[700], path[600];
    snprintf(plots, sizeof plots, "%s/bad-plots", scratch);
    snprintf(png, sizeof png, "%s/scaling.png", plots);
    snprintf(path, sizeof path, "%s/bad.html", scratch);
    assert_int_equal(mkdir(plots, 0755), 0);
    FILE *f = fopen(png, "w");
    fputs("not a PNG", f);
    fclose(f);
    int orders[8][QUIZ_OPTIONS];
    bank_option_orders(1, false, orders);
    ResultsDir *results = results_open(scratch);
    PageSources src = {.bank = bank, .bank_file = REMAT_QUIZ_BANK, .orders = (const int (*)[QUIZ_OPTIONS])orders,
                       .results = results, .plots_dir = plots};
    /* A plot that is not a PNG: the page is written and says so; the call reports it. */
    assert_int_equal(page_write(path, &src), REMAT_ECORRUPT);
    assert_non_null(strstr(remat_last_error(), "scaling.png is not a readable PNG file"));
    char *html = slurp(path);
    assert_non_null(html);
    assert_non_null(strstr(html, "scaling.png is not a readable PNG file)"));
    free(html);
    results_close(results);
}

/* The words the script reads are quiz/words.json whole, written so that none of its text
 * ("the <details> that holds the answer") can end the <script> that holds it. */
static void test_page_script_words_cannot_end_their_script(void **state)
{
    (void)state;
    char *html = slurp(page);
    assert_non_null(html);
    const char *open = "<script type=\"application/json\" id=\"quiz-words\">";
    char *from = strstr(html, open);
    assert_non_null(from);
    from += strlen(open);
    char *to = strstr(from, "</script>");
    assert_non_null(to);
    *to = '\0';
    assert_null(strchr(from, '<'));
    assert_non_null(strstr(from, "the \\u003cdetails\\u003e that holds the answer"));
    cJSON *words = cJSON_Parse(from);
    assert_non_null(words);
    const cJSON *right = cJSON_GetObjectItem(cJSON_GetObjectItem(words, "right"), "ar");
    assert_string_equal(right->valuestring, quiz_word(LANG_AR, "right"));
    cJSON_Delete(words);
    free(html);
}

/* ---- in a browser ------------------------------------------------------------------- */

static const char *browser;     /* chromium's path, or NULL when none is installed */

static const char *find_browser(void)
{
    static const char *const names[] = {"chromium", "chromium-browser"};
    static char path[1024];
    const char *dirs = getenv("PATH");
    for (size_t i = 0; dirs && i < sizeof names / sizeof names[0]; i++) {
        for (const char *d = dirs; *d;) {
            const size_t len = strcspn(d, ":");
            snprintf(path, sizeof path, "%.*s/%s", (int)len, d, names[i]);
            if (len && access(path, X_OK) == 0) return path;
            d += len + (d[len] == ':');
        }
    }
    return NULL;
}

/* Skips the calling test when no browser is installed, unless one is required. */
static bool have_browser(void)
{
    if (browser) return true;
    if (getenv("REMAT_REQUIRE_BROWSER"))
        fail_msg("REMAT_REQUIRE_BROWSER is set but no chromium is on PATH (Debian: apt-get install chromium)");
    print_message("no chromium on PATH: the browser tests are skipped (Debian: apt-get install chromium)\n");
    return false;
}

/* Opens the page at `fragment` in headless Chromium with `action` ("--dump-dom", or
 * "--screenshot=FILE --window-size=W,H"); returns what it printed on stdout (the DOM for
 * --dump-dom), caller frees. Fails the test on a script error or blocked load the page
 * recorded, or a console message it logged. */
static char *open_page(const char *fragment, const char *action)
{
    char cmd[4096], dom[600], log[600];
    snprintf(dom, sizeof dom, "%s/dom.html", scratch);
    snprintf(log, sizeof log, "%s/browser.log", scratch);
    snprintf(cmd, sizeof cmd,
             "'%s' --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars "
             "--force-device-scale-factor=1 --user-data-dir='%s/profile' --enable-logging=stderr --v=0 "
             "%s 'file://%s#%s' >'%s' 2>'%s'",
             browser, scratch, action, page, fragment, dom, log);
    const int status = system(cmd);
    char *stderr_text = slurp(log);
    assert_non_null(stderr_text);
    if (status != 0) fail_msg("chromium failed (status %d):\n%s", status, stderr_text);
    /* Console lines look like: [...:INFO:CONSOLE:1] "message", source: file:///...quiz.html (1) */
    for (const char *line = stderr_text; *line;) {
        const size_t len = strcspn(line, "\n");
        char one[1024];
        snprintf(one, sizeof one, "%.*s", (int)(len < sizeof one - 1 ? len : sizeof one - 1), line);
        if (strstr(one, ":CONSOLE") && strstr(one, page)) fail_msg("the page logged: %s", one);
        line += len + (line[len] == '\n');
    }
    free(stderr_text);
    char *out = slurp(dom);
    assert_non_null(out);
    return out;
}

/* The start tag of the element whose id is `id` ("html": the <html> element), with its
 * attributes as the DOM holds them. */
static void start_tag(const char *dom, const char *id, char *buf, size_t size)
{
    char marker[64];
    snprintf(marker, sizeof marker, strcmp(id, "html") ? " id=\"%s\"" : "<%s", id);
    const char *at = strstr(dom, marker);
    assert_non_null(at);
    while (at > dom && *at != '<') at--;
    snprintf(buf, size, "%.*s>", (int)strcspn(at, ">"), at);
}

/* The text of the element with id `id`, up to its first child element. */
static void element_text(const char *dom, const char *id, char *buf, size_t size)
{
    char marker[64];
    snprintf(marker, sizeof marker, "id=\"%s\"", id);
    const char *at = strstr(dom, marker);
    assert_non_null(at);
    at = strchr(at, '>') + 1;
    snprintf(buf, size, "%.*s", (int)strcspn(at, "<"), at);
}

/* Text content of the HTML in s[0..len): tags dropped, the entities the serializer
 * writes turned back into characters. */
static void text_content(const char *s, size_t len, char *buf, size_t size)
{
    static const char *const entities[][2] = {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"},
                                              {"&quot;", "\""}, {"&#39;", "'"}, {"&nbsp;", "\xC2\xA0"}};
    size_t used = 0;
    for (size_t i = 0; i < len && used + 4 < size;) {
        if (s[i] == '<') {
            while (i < len && s[i] != '>') i++;
            i++;
            continue;
        }
        bool replaced = false;
        for (size_t e = 0; e < sizeof entities / sizeof entities[0] && !replaced; e++) {
            const size_t n = strlen(entities[e][0]);
            if (!strncmp(s + i, entities[e][0], n)) {
                used += (size_t)sprintf(buf + used, "%s", entities[e][1]);
                i += n;
                replaced = true;
            }
        }
        if (!replaced) buf[used++] = s[i++];
    }
    buf[used] = '\0';
}

/* The checks every dumped page passes: the script ran to its end, and recorded no error
 * or blocked load. */
static void assert_page_ran(const char *dom)
{
    char tag[512];
    start_tag(dom, "html", tag, sizeof tag);
    if (strstr(tag, "data-js-error")) fail_msg("the page recorded an error: %s", tag);
    assert_non_null(strstr(tag, "data-ready=\"true\""));
    assert_null(strstr(dom, "http://"));
    assert_null(strstr(dom, "https://"));
}

/* The DOM of the page answered with `sheet` (RIGHT or ALL_FIRST) in `lang`, opened once
 * and kept in `dumps` for every test that reads it. */
static const char *answered_page(QuizLang lang, const char *sheet)
{
    const int s = sheet == RIGHT ? 0 : 1;
    if (!dumps[lang][s]) {
        char fragment[128];
        snprintf(fragment, sizeof fragment, "lang=%s&answers=%s", lang == LANG_AR ? "ar" : "en", sheet);
        dumps[lang][s] = open_page(fragment, "--dump-dom");
        assert_page_ran(dumps[lang][s]);
    }
    return dumps[lang][s];
}

/* The terminal quiz's output for `answers` in `lang`, on the scratch results. */
static char *terminal_quiz(QuizLang lang, const char *answers)
{
    char cmd[2048];
    int code;
    snprintf(cmd, sizeof cmd, "%s --lang %s --seed 7 --answers %s --results %s", REMAT_QUIZ_BIN,
             lang == LANG_AR ? "ar" : "en", answers, scratch);
    char *out = run(cmd, &code);
    assert_int_equal(code, 0);
    return out;
}

/* The first line of `out` that starts as `format` (a quiz_word format) does up to its first
 * conversion, copied into buf; false if there is none. */
static bool line_starting(const char *out, const char *format, char *buf, size_t size)
{
    const size_t n = strcspn(format, "%");
    for (const char *line = out; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] == '\n')) {
        if (!strncmp(line, format, n)) {
            snprintf(buf, size, "%.*s", (int)strcspn(line, "\n"), line);
            return true;
        }
    }
    return false;
}

static void test_page_in_a_browser_scores_right_and_wrong_answers(void **state)
{
    (void)state;
    if (!have_browser()) skip();
    for (int l = 0; l < LANG_COUNT; l++) {
        const char *code = l == LANG_AR ? "ar" : "en";
        const char *const sheets[] = {RIGHT, ALL_FIRST};
        for (int s = 0; s < 2; s++) {
            char score[256], expected[256];
            const char *dom = answered_page((QuizLang)l, sheets[s]);
            element_text(dom, "score", score, sizeof score);
            char *terminal = terminal_quiz((QuizLang)l, sheets[s]);
            assert_true(line_starting(terminal, quiz_word((QuizLang)l, "score"), expected, sizeof expected));
            assert_string_equal(score, expected);
            snprintf(expected, sizeof expected, quiz_word((QuizLang)l, "score"), s == 0 ? 8 : all_first_score, 8);
            assert_string_equal(score, expected);
            /* The language chosen is the page's: the Arabic view right to left, the other
             * view hidden. */
            char tag[512], want[64];
            start_tag(dom, "html", tag, sizeof tag);
            snprintf(want, sizeof want, "<html lang=\"%s\" dir=\"%s\"", code, l == LANG_AR ? "rtl" : "ltr");
            assert_non_null(strstr(tag, want));
            start_tag(dom, "view-ar", tag, sizeof tag);
            assert_non_null(strstr(tag, " lang=\"ar\" dir=\"rtl\""));
            assert_true((strstr(tag, " hidden") != NULL) == (l != LANG_AR));
            start_tag(dom, "view-en", tag, sizeof tag);
            assert_true((strstr(tag, " hidden") != NULL) == (l == LANG_AR));
            /* Every answered question's explanation is open; a wrong answer is marked. */
            assert_int_equal(count(dom, "<details class=\"answer\" open=\"\">"), 16);
            assert_int_equal(count(dom, "class=\"option wrong\""), s == 0 ? 0 : 2 * (8 - all_first_score));
            /* The answer n given in the address is the n-th button: the first, here. */
            const char *first = strstr(dom, l == LANG_AR ? "id=\"ar-q1\"" : "id=\"en-q1\"");
            assert_non_null(first);
            first = strstr(first, "<button");
            if (s == 1) assert_true(strstr(first, "aria-pressed=\"true\"") < strchr(first, '>'));
            free(terminal);
        }
    }
}

/* Whether a part's text quotes a figure of bench_dropout, whose results the page's test
 * leaves out. */
static bool quotes_bench_dropout(const Question *question, const char *text)
{
    for (const char *open = strchr(text, '{'); open; open = strchr(open + 1, '{')) {
        const size_t len = strcspn(open + 1, "}");
        for (int i = 0; i < question->n_measurements; i++) {
            const Measurement *m = &question->measurements[i];
            if (strlen(m->name) == len && !strncmp(m->name, open + 1, len) && !strcmp(m->bench, "bench_dropout"))
                return true;
        }
    }
    return false;
}

/* The figures question `q`'s explanation quotes when every bench but bench_dropout has
 * quiet, narrow results: every placeholder of every part's own text, but in parts that
 * quote bench_dropout. */
static size_t quoted_figures(int q, QuizLang lang)
{
    const Question *question = &bank->questions[q];
    size_t n = 0;
    for (int p = 0; p < question->n_parts; p++) {
        const char *text = question->parts[p].text.lang[lang];
        if (question->quick_times.lang[lang] && question_quotes_time(question, text))
            text = question->parts[p].otherwise.lang[lang]; /* a quick run's times: from bytes */
        if (!quotes_bench_dropout(question, text)) n += count(text, "{");
    }
    return n;
}

static void test_page_in_a_browser_quotes_the_terminal_figures(void **state)
{
    (void)state;
    if (!have_browser()) skip();
    for (int l = 0; l < LANG_COUNT; l++) {
        const QuizLang lang = (QuizLang)l;
        const char *dom = answered_page(lang, RIGHT);
        char *terminal = terminal_quiz(lang, RIGHT);
        const char *view = strstr(dom, lang == LANG_AR ? "id=\"view-ar\"" : "id=\"view-en\"");
        assert_non_null(view);
        /* The terminal prints the explanation and its notes, a line each, between the
         * answer and the proof; the page a paragraph each, between the same two. */
        const char *answer = quiz_word(lang, "correct_was"), *proof = quiz_word(lang, "proof");
        const size_t answer_prefix = strcspn(answer, "%"), proof_prefix = strcspn(proof, "%");
        const char *line = terminal;
        for (int q = 0; q < QUIZ_QUESTIONS; q++) {
            static char shown[32768], printed[32768], inner[32768];
            const char *from = strstr(view, "<p class=\"correct\">");
            assert_non_null(from);
            from = strstr(from, "</p>") + 4;
            const char *to = strstr(from, "<p class=\"proof\">");
            assert_non_null(to);
            /* Each paragraph's text, a line each. */
            size_t used = 0;
            shown[0] = '\0';
            for (const char *p = strstr(from, "<p"); p && p < to; p = strstr(p + 1, "<p")) {
                const char *text = strchr(p, '>') + 1;
                text_content(text, (size_t)(strstr(text, "</p>") - text), inner, sizeof inner);
                used += (size_t)snprintf(shown + used, sizeof shown - used, "%s%s", used ? "\n" : "", inner);
            }
            /* Each placeholder a figure of its own in the page. */
            snprintf(inner, sizeof inner, "%.*s", (int)(to - from), from);
            assert_int_equal(count(inner, "<span class=\"fig\">"), quoted_figures(q, lang));
            char prefix[64];
            snprintf(prefix, sizeof prefix, "%.*s", (int)answer_prefix, answer);
            line = strstr(line, prefix); /* after the verdict: "Right. The answer: 2) ..." */
            assert_non_null(line);
            line = strchr(line, '\n') + 1;
            const char *end = line;
            while (strncmp(end, proof, proof_prefix)) {
                end = strchr(end, '\n');
                assert_non_null(end);
                end++;
            }
            snprintf(printed, sizeof printed, "%.*s", (int)(end - line - 1), line);
            if (strcmp(shown, printed))
                fail_msg("question %d (%s): the page says\n  %s\nthe terminal says\n  %s", q + 1,
                         lang == LANG_AR ? "ar" : "en", shown, printed);
            view = to;
            line = end;
        }
        free(terminal);
    }
}

static void test_page_in_a_browser_screenshots_each_language(void **state)
{
    (void)state;
    if (!have_browser()) skip();
    static const struct {
        const char *name;
        int width, height;
    } sizes[] = {{"phone", 390, 4000}, {"desktop", 1280, 3000}};
    mkdir(REMAT_PAGE_SHOTS_DIR, 0755);
    for (int l = 0; l < LANG_COUNT; l++) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            char shot[1024], action[1200], fragment[128];
            snprintf(shot, sizeof shot, "%s/quiz-%s-%s.png", REMAT_PAGE_SHOTS_DIR, l == LANG_AR ? "ar" : "en", sizes[s].name);
            remove(shot);
            snprintf(action, sizeof action, "--screenshot='%s' --window-size=%d,%d", shot, sizes[s].width, sizes[s].height);
            snprintf(fragment, sizeof fragment, "lang=%s&answers=2,1,1,3,4,2,3,1", l == LANG_AR ? "ar" : "en");
            free(open_page(fragment, action));
            /* A PNG of the window's width (its IHDR chunk: width at byte 16, big-endian). */
            FILE *f = fopen(shot, "rb");
            assert_non_null(f);
            unsigned char head[24];
            assert_int_equal(fread(head, 1, sizeof head, f), sizeof head);
            fclose(f);
            assert_memory_equal(head + 1, "PNG", 3);
            const int width = head[16] << 24 | head[17] << 16 | head[18] << 8 | head[19];
            assert_int_equal(width, sizes[s].width);
            print_message("screenshot: %s\n", shot);
        }
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest file_tests[] = {
        cmocka_unit_test(test_page_holds_both_languages_and_every_question),
        cmocka_unit_test(test_page_is_self_contained),
        cmocka_unit_test(test_page_escapes_text_and_isolates_left_to_right_runs_in_arabic),
        cmocka_unit_test(test_page_says_what_was_not_measured_and_what_the_results_do_not_record),
        cmocka_unit_test(test_page_to_an_unwritable_path_is_a_clear_error),
        cmocka_unit_test(test_page_write_reports_a_bad_plot),
        cmocka_unit_test(test_page_script_words_cannot_end_their_script),
        cmocka_unit_test(test_page_over_one_of_its_inputs_is_refused),
        cmocka_unit_test(test_page_killed_while_written_leaves_nothing),
    };
    const struct CMUnitTest browser_tests[] = {
        cmocka_unit_test(test_page_in_a_browser_scores_right_and_wrong_answers),
        cmocka_unit_test(test_page_in_a_browser_quotes_the_terminal_figures),
        cmocka_unit_test(test_page_in_a_browser_screenshots_each_language),
    };
    if (argc > 1 && !strcmp(argv[1], "browser")) {
        browser = find_browser();
        return cmocka_run_group_tests_name("page in a browser", browser_tests, setup, teardown);
    }
    return cmocka_run_group_tests_name("page", file_tests, setup, teardown);
}
