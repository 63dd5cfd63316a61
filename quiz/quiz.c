/*
 * quiz.c — the Activation Recomputation Quiz, in a terminal, in English or Arabic.
 *
 * Eight questions, each with four options shuffled by PCG32. After every answer: right or
 * wrong, the correct option, and an explanation quoting what this machine's benches
 * measured, with the test that proves the answer and the bench that measures it. The
 * score comes at the end, with a line per question.
 *
 *   quiz                       interactive (on a terminal)
 *   quiz --preview             every question and its options, no answers
 *   quiz --answers 2,4,1,...   a non-interactive run: one answer per question
 *   quiz --html FILE           the same quiz as one self-contained page (page.h)
 *
 * Without a terminal and without --answers it prints the preview and exits 0, so the main
 * job never waits for input nobody can give. End of input ends the quiz with the score so
 * far; an invalid answer asks again.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "quiz/bank.h"
#include "quiz/explain_fill.h"
#include "quiz/page.h"
#include "quiz/words.h"
#include "tensor/file.h"
#include "tensor/parse.h"

#ifndef REMAT_QUIZ_BANK
#define REMAT_QUIZ_BANK "quiz/questions.json"
#endif
#ifndef REMAT_QUIZ_PAGE_CSS
#define REMAT_QUIZ_PAGE_CSS "quiz/page.css"
#endif
#ifndef REMAT_QUIZ_PAGE_JS
#define REMAT_QUIZ_PAGE_JS "quiz/page.js"
#endif

typedef struct Options {
    QuizLang lang;
    bool preview, shuffle;
    bool has_answers;    /* --answers was given: answers[0 .. n_answers) */
    int answers[QUIZ_QUESTIONS], n_answers;
    const char *results;
    const char *plots; /* NULL: <results>/plots */
    const char *html;  /* write the page here instead of asking */
    const char *bank;
    uint64_t seed;
} Options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: quiz [--lang en|ar] [--preview] [--answers LIST] [--results DIR] [--seed N]\n"
            "            [--no-shuffle] [--bank FILE] [--html FILE [--plots DIR]]\n"
            "  The Activation Recomputation Quiz: 8 questions, with explanations that quote what\n"
            "  this machine's benches measured.\n"
            "  --lang en|ar     English (default) or Arabic (UTF-8; a terminal with bidi support\n"
            "                   shows it right to left)\n"
            "  --preview        every question with its options, no answers\n"
            "  --answers LIST   answer without a terminal, e.g. 2,4,1,3,4,2,3,1 (numbers or\n"
            "                   letters, in the order the options are shown; at most one per\n"
            "                   question, each exactly 1-4 or a-d; fewer end the quiz early)\n"
            "  --results DIR    where the benches wrote their JSON (default: results)\n"
            "  --html FILE      write the quiz, in both languages, as one self-contained HTML\n"
            "                   page to FILE instead of asking (open it in a browser); the\n"
            "                   URL fragment #lang=ar&answers=2,4,... answers it in the page\n"
            "  --plots DIR      the PNGs the page shows (default: RESULTS/plots, where\n"
            "                   bench/plots.sh draws them)\n"
            "  --seed N         the order of the options (default: a new order each run)\n"
            "  --no-shuffle     the options in the order of the source quiz\n"
            "  --bank FILE      the question bank (default: %s)\n"
            "  --help           this text\n",
            REMAT_QUIZ_BANK);
}

/* The exit status of a run that would end with `status`: 1 instead of 0 if what it
 * printed could not be written (stdout on a full disk), saying so. */
static int finish(int status)
{
    if (file_flush_stdout() == REMAT_OK) return status;
    fprintf(stderr, "quiz: %s\n", remat_last_error());
    return status ? status : 1;
}

/* 0..3 from "1".."4" or "a".."d" (surrounding blanks ignored); -1 otherwise. */
static int parse_answer(const char *text)
{
    while (isspace((unsigned char)*text)) text++;
    int c = tolower((unsigned char)text[0]);
    const char *rest = text[0] ? text + 1 : text;
    while (isspace((unsigned char)*rest)) rest++;
    if (*rest) return -1;
    if (c >= '1' && c <= '4') return c - '1';
    if (c >= 'a' && c <= 'd') return c - 'a';
    return -1;
}

/* --answers: one answer per question, each exactly one of 1-4 or a-d, separated by commas,
 * at most one per question; fewer end the quiz early. False with a message on stderr. */
static bool parse_answer_list(const char *list, Options *o)
{
    o->n_answers = 0;
    for (const char *at = list;;) {
        const size_t len = strcspn(at, ",");
        if (o->n_answers == QUIZ_QUESTIONS) {
            fprintf(stderr, "quiz: --answers gives more than %d answers, one per question\n", QUIZ_QUESTIONS);
            return false;
        }
        const int a = len == 1 ? parse_answer((char[]){at[0], '\0'}) : -1;
        if (a < 0 || isspace((unsigned char)at[0])) {
            fprintf(stderr, "quiz: --answers: answer %d is '%.*s', not one of 1-4 or a-d\n", o->n_answers + 1,
                    (int)(len < 40 ? len : 40), at);
            return false;
        }
        o->answers[o->n_answers++] = a;
        if (!at[len]) return true;
        at += len + 1;
    }
}

static int parse_options(int argc, char **argv, Options *o)
{
    *o = (Options){.lang = LANG_EN, .shuffle = true, .results = "results", .bank = REMAT_QUIZ_BANK,
                   .seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32)};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(finish(0));
        } else if (!strcmp(a, "--preview")) {
            o->preview = true;
        } else if (!strcmp(a, "--no-shuffle")) {
            o->shuffle = false;
        } else if (!strcmp(a, "--lang") && v) {
            if (quiz_lang_parse(v, &o->lang) != REMAT_OK) goto bad;
            i++;
        } else if (!strcmp(a, "--answers") && v) {
            if (!parse_answer_list(v, o)) {
                usage(stderr);
                return 2;
            }
            o->has_answers = true;
            i++;
        } else if (!strcmp(a, "--results") && v) {
            o->results = v;
            i++;
        } else if (!strcmp(a, "--html") && v) {
            o->html = v;
            i++;
        } else if (!strcmp(a, "--plots") && v) {
            o->plots = v;
            i++;
        } else if (!strcmp(a, "--bank") && v) {
            o->bank = v;
            i++;
        } else if (!strcmp(a, "--seed") && v) {
            if (!parse_u64(v, 0, UINT64_MAX, &o->seed)) goto bad;
            i++;
        } else {
            fprintf(stderr, "quiz: unknown option or missing value: %s\n", a);
            usage(stderr);
            return 2;
        }
        continue;
    bad:
        fprintf(stderr, "quiz: bad value for %s: %s\n", a, v);
        usage(stderr);
        return 2;
    }
    return 0;
}

static void print_question(const Bank *b, int q, const int *order, QuizLang lang)
{
    printf("\n");
    printf(quiz_words(lang)->question_of, q + 1, b->n_questions);
    printf("\n%s\n", b->questions[q].question.lang[lang]);
    for (int i = 0; i < QUIZ_OPTIONS; i++)
        printf("  %d) %s\n", i + 1, b->questions[q].options[order[i]].lang[lang]);
}

/* Reads one line typed at the terminal into line[size], without its newline. False at the
 * end of input. A line too long for `line`, or holding a NUL byte, is read to its end and
 * comes back as "?", which is no answer, so that nothing in it is taken for one. */
static bool read_typed_line(char *line, size_t size)
{
    size_t n = 0;
    bool bad = false;
    int c;
    while ((c = getchar()) != EOF && c != '\n') {
        if (c == '\0' || n + 1 >= size) bad = true;
        else line[n++] = (char)c;
    }
    if (c == EOF && n == 0 && !bad) return false;
    line[n] = '\0';
    if (bad) snprintf(line, size, "?");
    return true;
}

/* The next answer: from --answers (o->has_answers), where *next counts those taken, or
 * typed at the terminal, asked again until it is one; -2 at the end of input. */
static int next_answer(const Options *o, int *next)
{
    if (o->has_answers) return *next < o->n_answers ? o->answers[(*next)++] : -2;
    for (;;) {
        printf("%s", quiz_words(o->lang)->your_answer);
        fflush(stdout);
        char line[64];
        if (!read_typed_line(line, sizeof line)) return -2;
        const int a = parse_answer(line);
        if (a >= 0) return a;
        printf("%s\n", quiz_words(o->lang)->invalid);
    }
}

static void print_header(const Bank *b, QuizLang lang)
{
    printf("%s\n%s\n%s\n", b->subtitle.lang[lang], b->title.lang[lang], b->description.lang[lang]);
}

/* --html: the page instead of the terminal. 0 when written (a malformed results file or
 * plot is reported, and the page says so in its place), 1 when it could not be. */
static int write_page(const Options *o, const Bank *bank, const int orders[][QUIZ_OPTIONS])
{
    char plots[1024];
    snprintf(plots, sizeof plots, "%s/plots", o->results);
    ResultsDir *results = results_open(o->results);
    if (!results) {
        fprintf(stderr, "quiz: no memory for the results\n");
        return 1;
    }
    const PageSources src = {.bank = bank, .orders = orders, .results = results,
                             .plots_dir = o->plots ? o->plots : plots,
                             .style_file = REMAT_QUIZ_PAGE_CSS, .script_file = REMAT_QUIZ_PAGE_JS};
    RematStatus status = page_write(o->html, &src);
    results_close(results);
    if (status != REMAT_OK) fprintf(stderr, "quiz: %s\n", remat_last_error());
    return status == REMAT_OK || status == REMAT_ECORRUPT ? 0 : 1;
}

int main(int argc, char **argv)
{
    file_size_limit_as_error(); /* ulimit -f: --html fails with "File too large" instead of dying */
    Options o;
    int parsed = parse_options(argc, argv, &o);
    if (parsed) return parsed;
    struct stat st; /* results not yet measured are said so; results that are a file are a mistake */
    if (stat(o.results, &st) == 0 && !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "quiz: --results %s is %s, not a directory of results\n", o.results, file_kind(st.st_mode));
        return 1;
    }
    Bank *bank = bank_load(o.bank);
    if (!bank) {
        fprintf(stderr, "quiz: %s\n", remat_last_error());
        return 1;
    }
    const QuizWords *w = quiz_words(o.lang);
    int orders[QUIZ_QUESTIONS][QUIZ_OPTIONS];
    bank_option_orders(bank, o.seed, o.shuffle, orders);
    if (o.html) {
        int status = write_page(&o, bank, orders);
        bank_free(bank);
        return finish(status);
    }
    print_header(bank, o.lang);

    if (o.preview || (!o.has_answers && !isatty(STDIN_FILENO))) {
        for (int q = 0; q < bank->n_questions; q++) print_question(bank, q, orders[q], o.lang);
        printf("\n%s\n", w->preview_note);
        bank_free(bank);
        return finish(0);
    }

    ResultsDir *results = results_open(o.results);
    int taken = 0, given[QUIZ_QUESTIONS], score = 0, asked = 0;
    for (int q = 0; q < bank->n_questions; q++) {
        const Question *question = &bank->questions[q];
        print_question(bank, q, orders[q], o.lang);
        int a = next_answer(&o, &taken);
        if (a == -2) {
            printf("\n%s\n", w->ended);
            break;
        }
        asked++;
        given[q] = orders[q][a];
        const bool right = given[q] == question->correct;
        score += right;
        int shown = 0;
        while (orders[q][shown] != question->correct) shown++;
        printf("%s ", right ? w->right : w->wrong);
        printf(w->correct_was, '1' + shown, question->options[question->correct].lang[o.lang]);
        char text[4096];
        if (fill_explanation(text, sizeof text, question, o.lang, results) != REMAT_OK)
            fprintf(stderr, "quiz: %s\n", remat_last_error());
        printf("\n%s\n", text);
        printf(w->proof, question->test_file, question->test_name);
        printf("\n");
        char program[256];
        snprintf(program, sizeof program, "build/%s", question->bench);
        printf(w->measure, program);
        printf("\n");
    }

    printf("\n");
    printf(w->score, score, bank->n_questions);
    printf("\n");
    for (int q = 0; q < asked; q++)
        printf("  %s %d. %s\n", given[q] == bank->questions[q].correct ? "✓" : "✗", q + 1,
               bank->questions[q].options[bank->questions[q].correct].lang[o.lang]);
    results_close(results);
    bank_free(bank);
    return finish(0);
}
