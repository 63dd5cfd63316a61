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
 *   quiz --answers 1,3,2,...   a non-interactive run: one answer per question
 *   quiz --html FILE           the same quiz as one self-contained page (page.h)
 *
 * Without a terminal and without --answers it prints the preview and exits 0, so the main
 * job never waits for input nobody can give. End of input ends the quiz with the score so
 * far; an invalid answer asks again.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
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
#include "base/file.h"
#include "base/flags.h"

/* REMAT_QUIZ_BANK, REMAT_QUIZ_PAGE_CSS and REMAT_QUIZ_PAGE_JS, the files in the source
 * tree, come from quiz/CMakeLists.txt. */

typedef struct Options {
    QuizLang lang;
    bool preview, no_shuffle;
    int answers[QUIZ_QUESTIONS]; /* --answers, each 0..3 */
    int n_answers;               /* 0: answers are typed */
    const char *results;
    const char *plots; /* NULL: <results>/plots */
    const char *html;  /* write the page here instead of asking */
    const char *bank;
    uint64_t seed;
} Options;

/* The exit status of a run that would end with `status`: 1 instead of 0 if what it
 * printed could not be written (stdout on a full disk), saying so. */
static int finish(int status)
{
    if (file_flush_stdout() == REMAT_OK) return status;
    fprintf(stderr, "quiz: %s\n", remat_last_error());
    return status ? status : 1;
}

/* 0..3 from "1".."4" or "a".."d" (or "A".."D"), exactly one character; -1 otherwise. */
static int parse_answer(const char *text, size_t len)
{
    if (len != 1) return -1;
    const int c = tolower((unsigned char)text[0]);
    if (c >= '1' && c <= '4') return c - '1';
    if (c >= 'a' && c <= 'd') return c - 'a';
    return -1;
}

/* --answers: 1 to 8 answers, comma-separated, each exactly one character of 1-4 or a-d
 * (no spaces, no empty answer). */
static RematStatus set_answers(void *opts, const char *v)
{
    Options *o = opts;
    for (const char *a = v;; a += strcspn(a, ",") + 1) {
        const int answer = parse_answer(a, strcspn(a, ","));
        if (o->n_answers == QUIZ_QUESTIONS || answer < 0)
            return remat_fail(REMAT_EINVAL, "'%s' is not 1 to 8 answers, each 1-4 or a-d, separated by commas "
                              "without spaces", v);
        o->answers[o->n_answers++] = answer;
        if (!a[strcspn(a, ",")]) return REMAT_OK;
    }
}

#define AT(field) offsetof(Options, field)
static const Flag FLAGS[] = {
    {.name = "--lang", .type = FLAG_NAME, .offset = AT(lang), .names = &QUIZ_LANG_NAMES, .value = "en|ar",
     .help = "English (default) or Arabic (UTF-8; a terminal with bidi\nsupport shows it right to left)"},
    {.name = "--preview", .type = FLAG_SWITCH, .offset = AT(preview),
     .help = "every question with its options, no answers"},
    {.name = "--answers", .type = FLAG_CUSTOM, .set = set_answers, .value = "LIST",
     .help = "answer without a terminal, e.g. 1,3,2,4,1,2,4,3 or a,c,b,d:\n"
             "one number 1-4 or letter a-d per question, in the order the\n"
             "options are shown, at most 8, no spaces"},
    {.name = "--results", .type = FLAG_TEXT, .offset = AT(results), .value = "DIR",
     .help = "where the benches wrote their JSON (default: results)"},
    {.name = "--html", .type = FLAG_TEXT, .offset = AT(html), .value = "FILE",
     .help = "write the quiz, in both languages, as one self-contained HTML\n"
             "page to FILE instead of asking (open it in a browser); the URL\n"
             "fragment #lang=ar&answers=1,3,... answers it in the page"},
    {.name = "--plots", .type = FLAG_TEXT, .offset = AT(plots), .value = "DIR",
     .help = "the PNGs the page shows (default: RESULTS/plots, where\nbench/plots.sh draws them)"},
    {.name = "--seed", .type = FLAG_U64, .offset = AT(seed), .value = "N",
     .help = "the order of the options (default: a new order each run)"},
    {.name = "--no-shuffle", .type = FLAG_SWITCH, .offset = AT(no_shuffle),
     .help = "the options in the order of the source quiz"},
    {.name = "--bank", .type = FLAG_TEXT, .offset = AT(bank), .value = "FILE",
     .help = "the question bank (default: " REMAT_QUIZ_BANK ")"},
};
#undef AT

static void usage(const FlagSet *set, FILE *out)
{
    fprintf(out, "usage: quiz");
    flags_synopsis(set, out);
    fprintf(out, " [--help]\n"
                 "  The Activation Recomputation Quiz: 8 questions, with explanations that quote what\n"
                 "  this machine's benches measured.\n");
    flags_usage(set, NULL, false, out);
    fprintf(out, "  --help              this text\n");
}

/* The options of the command line: -1 to run, else the exit status: 0 after --help (1 if
 * it could not be written), 2 for a bad flag (said on stderr, with the usage). */
static int parse_options(int argc, char **argv, Options *o)
{
    *o = (Options){.lang = LANG_EN, .results = "results", .bank = REMAT_QUIZ_BANK,
                   .seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32)};
    unsigned given = 0;
    const FlagSet set = {.flags = FLAGS, .n = sizeof FLAGS / sizeof FLAGS[0], .opts = o, .accepted = ~0u,
                         .given = &given};
    const int parsed = flags_parse(&set, 1, argc, argv);
    if (parsed == FLAGS_RUN) return -1;
    if (parsed == FLAGS_BAD) fprintf(stderr, "quiz: %s\n", remat_last_error());
    usage(&set, parsed == FLAGS_HELP ? stdout : stderr);
    return parsed == FLAGS_HELP ? finish(0) : 2;
}

static void print_question(const Bank *b, int q, const int *order, QuizLang lang)
{
    printf("\n");
    printf(quiz_words(lang)->question_of, q + 1, b->n_questions);
    printf("\n%s\n", b->questions[q].question.lang[lang]);
    for (int i = 0; i < QUIZ_OPTIONS; i++)
        printf("  %d) %s\n", i + 1, b->questions[q].options[order[i]].lang[lang]);
}

/* The answer to question q, from --answers or typed on the terminal; -2 at the end of
 * input. A typed answer is one character, blanks around it allowed, on a line of at most
 * MAX_TYPED bytes with no NUL in it; anything else is asked again. */
#define MAX_TYPED 16
static int next_answer(const Options *o, int q)
{
    if (o->n_answers) return q < o->n_answers ? o->answers[q] : -2;
    char *line = NULL;
    size_t cap = 0;
    int a = -2;
    for (;;) {
        printf("%s", quiz_words(o->lang)->your_answer);
        fflush(stdout);
        const ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) break;
        size_t len = (size_t)n, start = 0;
        while (len && isspace((unsigned char)line[len - 1])) len--;
        while (start < len && isspace((unsigned char)line[start])) start++;
        const bool clean = (size_t)n <= MAX_TYPED && strlen(line) == (size_t)n; /* no NUL inside */
        if (clean && (a = parse_answer(line + start, len - start)) >= 0) break;
        a = -2;
        printf("%s\n", quiz_words(o->lang)->invalid);
    }
    free(line);
    return a;
}

/* --html: the page instead of the terminal. 0 when written (a malformed results file or
 * plot is reported, and the page says so in its place), 1 when it could not be. */
static int write_page(const Options *o, const Bank *bank, const int orders[][QUIZ_OPTIONS], ResultsDir *results)
{
    char plots[1024];
    snprintf(plots, sizeof plots, "%s/plots", o->results);
    const PageSources src = {.bank = bank, .orders = orders, .results = results,
                             .plots_dir = o->plots ? o->plots : plots,
                             .style_file = REMAT_QUIZ_PAGE_CSS, .script_file = REMAT_QUIZ_PAGE_JS};
    RematStatus status = page_write(o->html, &src);
    if (status != REMAT_OK) fprintf(stderr, "quiz: %s\n", remat_last_error());
    return status == REMAT_OK || status == REMAT_ECORRUPT ? 0 : 1;
}

static void print_header(const Bank *b, QuizLang lang)
{
    printf("%s\n%s\n%s\n", b->subtitle.lang[lang], b->title.lang[lang], b->description.lang[lang]);
}

/* The header and every question with its options, without answers. */
static void print_preview(const Bank *bank, const int orders[][QUIZ_OPTIONS], QuizLang lang)
{
    print_header(bank, lang);
    for (int q = 0; q < bank->n_questions; q++) print_question(bank, q, orders[q], lang);
    printf("\n%s\n", quiz_words(lang)->preview_note);
}

/* Question q answered `given` (an index into its options): right or wrong, the answer, the
 * explanation with this machine's figures, the test that proves it and the bench that
 * measures it. Returns whether it was right. */
static bool print_verdict(const Question *question, const int order[QUIZ_OPTIONS], int given, QuizLang lang,
                          ResultsDir *results)
{
    const QuizWords *w = quiz_words(lang);
    const bool right = given == question->correct;
    int shown = 0;
    while (order[shown] != question->correct) shown++;
    printf("%s ", right ? w->right : w->wrong);
    printf(w->correct_was, '1' + shown, question->options[question->correct].lang[lang]);
    static char text[1 << 15];
    if (fill_explanation(text, sizeof text, question, lang, results) != REMAT_OK)
        fprintf(stderr, "quiz: %s\n", remat_last_error());
    printf("\n%s\n", text);
    printf(w->proof, question->test_file, question->test_name);
    printf("\n");
    char program[256];
    snprintf(program, sizeof program, "build/%s", question->bench);
    printf(w->measure, program);
    printf("\n");
    return right;
}

/* The score, then each question asked with the option chosen (and the answer if wrong). */
static void print_score(const Bank *bank, const int *given, int asked, int score, QuizLang lang)
{
    const QuizWords *w = quiz_words(lang);
    printf("\n");
    printf(w->score, score, bank->n_questions);
    printf("\n");
    for (int q = 0; q < asked; q++) {
        const Question *question = &bank->questions[q];
        const bool right = given[q] == question->correct;
        printf("  %s %d. %s: %s", right ? "✓" : "✗", q + 1, w->chosen, question->options[given[q]].lang[lang]);
        if (!right) printf(" · %s: %s", w->the_answer, question->options[question->correct].lang[lang]);
        printf("\n");
    }
}

/* The quiz on the terminal: the header, every question, read an answer (typed, or from
 * --answers), judge it and explain; then the score. */
static void ask_all(const Options *o, const Bank *bank, const int orders[][QUIZ_OPTIONS], ResultsDir *results)
{
    print_header(bank, o->lang);
    int given[QUIZ_QUESTIONS], score = 0, asked = 0;
    for (int q = 0; q < bank->n_questions; q++) {
        print_question(bank, q, orders[q], o->lang);
        const int a = next_answer(o, q);
        if (a == -2) {
            printf("\n%s\n", quiz_words(o->lang)->ended);
            break;
        }
        asked++;
        given[q] = orders[q][a];
        score += print_verdict(&bank->questions[q], orders[q], given[q], o->lang, results);
    }
    print_score(bank, given, asked, score, o->lang);
}

int main(int argc, char **argv)
{
    file_size_limit_as_error(); /* ulimit -f: --html fails with "File too large" instead of dying */
    Options o;
    const int parsed = parse_options(argc, argv, &o);
    if (parsed >= 0) return parsed;
    struct stat st; /* a results directory that does not exist yet is fine: nothing measured */
    if (stat(o.results, &st) == 0 && !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "quiz: --results %s is %s, not a directory\n", o.results, file_kind(st.st_mode));
        return 2;
    }
    Bank *bank = bank_load(o.bank);
    ResultsDir *results = bank ? results_open(o.results) : NULL;
    if (!results) {
        fprintf(stderr, "quiz: %s\n", bank ? "no memory for the results" : remat_last_error());
        bank_free(bank);
        return 1;
    }
    int orders[QUIZ_QUESTIONS][QUIZ_OPTIONS], status = 0;
    bank_option_orders(bank, o.seed, !o.no_shuffle, orders);
    if (o.html) status = write_page(&o, bank, orders, results);
    else if (o.preview || (!o.n_answers && !isatty(STDIN_FILENO))) print_preview(bank, orders, o.lang);
    else ask_all(&o, bank, orders, results);
    results_close(results);
    bank_free(bank);
    return finish(status);
}
