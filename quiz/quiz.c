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
 * far; an invalid answer asks again; a typed answer's explanation waits for Enter.
 *
 * Every paragraph is wrapped at spaces to the terminal's width (COLUMNS, or 80, when the
 * output is not a terminal), counting columns, not bytes: an Arabic letter or a ✓ is one,
 * an Arabic vowel mark or a direction mark none. Arabic is printed in the order it is
 * stored; unless --bidi-terminal says the terminal shapes it, the quiz says once, in both
 * languages, that the page (quiz --html) shows it as it should read.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "quiz/page.h"
#include "base/file.h"
#include "base/flags.h"
#include "base/text.h"

/* REMAT_QUIZ_BANK, the bank in the source tree, comes from quiz/CMakeLists.txt. */

typedef struct Options {
    QuizLang lang;
    bool preview, no_shuffle, bidi_terminal;
    int answers[QUIZ_QUESTIONS]; /* --answers, each 0..3 */
    int n_answers;               /* 0: answers are typed */
    const char *results;
    const char *plots; /* NULL: <results>/plots */
    const char *html;  /* write the page here instead of asking */
    const char *bank;
    uint64_t seed;
} Options;

/* Says the last error on stderr, its controls made visible: it may quote the bank. */
static void complain(void)
{
    fputs("quiz: ", stderr);
    text_write_visible(stderr, remat_last_error(), strlen(remat_last_error()), NULL);
    fputc('\n', stderr);
}

/* The exit status of a run that would end with `status`: 1 instead of 0 if what it
 * printed could not be written (stdout on a full disk), saying so. */
static int finish(int status)
{
    if (file_flush_stdout() == REMAT_OK) return status;
    complain();
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
    {.name = "--bidi-terminal", .type = FLAG_SWITCH, .offset = AT(bidi_terminal),
     .help = "this terminal shapes Arabic right to left (VTE, Konsole,\nmlterm): do not point to the page for it"},
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
    if (parsed == FLAGS_BAD) complain();
    usage(&set, parsed == FLAGS_HELP ? stdout : stderr);
    return parsed == FLAGS_HELP ? finish(0) : 2;
}

/* ---- printing, wrapped to the terminal ------------------------------------------- */

static int width = 80; /* the columns a printed line may take: set once, in main */

/* The output's width: the terminal's, else COLUMNS when it is a number of 20 or more
 * (base/parse.h), else 80. */
static int output_width(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    int columns;
    return parse_int(getenv("COLUMNS"), 20, 1000000, &columns) ? columns : 80;
}

/* The length in bytes of the UTF-8 character at `s`, and in *cols the columns it takes:
 * 0 for an Arabic vowel mark (U+064B-U+065F, U+0670) or a direction mark (U+200E, U+200F). */
static size_t character(const char *s, int *cols)
{
    size_t n;
    const uint32_t c = text_next_char(s, strnlen(s, 4), &n);
    *cols = (c >= 0x064B && c <= 0x065F) || c == 0x0670 || c == 0x200E || c == 0x200F ? 0 : 1;
    return n;
}

/* The columns the `len` bytes at `s` take. */
static int columns(const char *s, size_t len)
{
    int total = 0;
    for (size_t i = 0; i < len;) {
        int cols;
        i += character(s + i, &cols);
        total += cols;
    }
    return total;
}

/* Whether the word at `s` is a unit of bytes, kept on the line of the number before it. */
static bool is_unit(const char *s)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    const size_t len = strspn(s, "BKMGTPi");
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
        if (len == strlen(units[u]) && !strncmp(s, units[u], len)) return true;
    return false;
}

/* Prints printf's `format` with its arguments, each line of the text a paragraph wrapped at
 * spaces to `width`: its leading blanks kept, its later lines indented by `hang` columns, a
 * number and its unit of bytes on one line. A word wider than a line is cut where the line
 * ends. */
static void say(int hang, const char *format, ...)
{
    static char text[1 << 15];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    for (const char *p = text; *p; p += *p == '\n') {
        const size_t lead = strspn(p, " ");
        int col = (int)lead;
        printf("%.*s", (int)lead, p);
        p += lead;
        for (bool first = true; *p && *p != '\n'; first = false) {
            size_t len = strcspn(p, " \n");
            while (p[len] == ' ' && is_unit(p + len + 1)) len += 1 + strcspn(p + len + 1, " \n");
            if (!first && col + 1 + columns(p, len) > width) {
                printf("\n%*s", hang, "");
                col = hang;
            } else if (!first) {
                putchar(' ');
                col++;
            }
            for (size_t i = 0, n; i < len; i += n) {
                int cols;
                n = character(p + i, &cols);
                if (col + cols > width && col > hang) {
                    printf("\n%*s", hang, "");
                    col = hang;
                }
                text_write_visible(stdout, p + i, n, NULL); /* the bank's text cannot drive the terminal */
                col += cols;
            }
            p += len + (p[len] == ' ');
        }
        putchar('\n');
    }
}

static void print_question(const Bank *b, int q, const int *order, QuizLang lang)
{
    printf("\n");
    say(0, quiz_word(lang, "question_of"), q + 1, QUIZ_QUESTIONS);
    say(0, "%s", b->questions[q].question.lang[lang]);
    for (int i = 0; i < QUIZ_OPTIONS; i++) say(5, "  %d) %s", i + 1, b->questions[q].options[order[i]].lang[lang]);
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
        printf("%s", quiz_word(o->lang, "your_answer"));
        fflush(stdout);
        const ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) break;
        size_t len = (size_t)n, start = 0;
        while (len && isspace((unsigned char)line[len - 1])) len--;
        while (start < len && isspace((unsigned char)line[start])) start++;
        const bool clean = (size_t)n <= MAX_TYPED && strlen(line) == (size_t)n; /* no NUL inside */
        if (clean && (a = parse_answer(line + start, len - start)) >= 0) break;
        a = -2;
        say(0, "%s", quiz_word(o->lang, "invalid"));
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
    const PageSources src = {.bank = bank, .bank_file = o->bank, .orders = orders, .results = results,
                             .plots_dir = o->plots ? o->plots : plots};
    RematStatus status = page_write(o->html, &src);
    if (status != REMAT_OK) complain();
    return status == REMAT_OK || status == REMAT_ECORRUPT ? 0 : 1;
}

/* The header; in Arabic, unless the terminal is known to shape it, a note in both
 * languages that the page shows it as it should read. */
static void print_header(const Bank *b, const Options *o)
{
    if (o->lang == LANG_AR && !o->bidi_terminal)
        say(0, "%s\n%s\n", quiz_word(LANG_EN, "no_bidi"), quiz_word(LANG_AR, "no_bidi"));
    say(0, "%s\n%s\n%s", b->subtitle.lang[o->lang], b->title.lang[o->lang], b->description.lang[o->lang]);
}

/* The header and every question with its options, without answers. */
static void print_preview(const Bank *bank, const int orders[][QUIZ_OPTIONS], const Options *o)
{
    print_header(bank, o);
    for (int q = 0; q < QUIZ_QUESTIONS; q++) print_question(bank, q, orders[q], o->lang);
    say(0, "\n%s", quiz_word(o->lang, "preview_note"));
}

/* Question q answered `given` (an index into its options): right or wrong, the answer, the
 * explanation with this machine's figures, the test that proves it and the bench that
 * measures it. Returns whether it was right. */
static bool print_verdict(const Question *question, const int order[QUIZ_OPTIONS], int given, QuizLang lang,
                          ResultsDir *results)
{
    const bool right = given == question->correct;
    int shown = 0;
    while (order[shown] != question->correct) shown++;
    static char text[1 << 15];
    snprintf(text, sizeof text, quiz_word(lang, "correct_was"), '1' + shown,
             question->options[question->correct].lang[lang]);
    say(0, "%s %s", quiz_word(lang, right ? "right" : "wrong"), text);
    if (fill_explanation(text, sizeof text, question, lang, results) != REMAT_OK) complain();
    say(0, "%s", text);
    say(0, quiz_word(lang, "proof"), question->test_file, question->test_name);
    char program[256];
    snprintf(program, sizeof program, "build/%s", question->bench);
    say(0, quiz_word(lang, "measure"), program);
    explain_sources(text, sizeof text, question, lang, results);
    if (text[0]) say(0, "%s", text);
    return right;
}

/* The score, then each question asked with the option chosen (and the answer if wrong). */
static void print_score(const Bank *bank, const int *given, int asked, int score, QuizLang lang)
{
    printf("\n");
    say(0, quiz_word(lang, "score"), score, QUIZ_QUESTIONS);
    for (int q = 0; q < asked; q++) {
        const Question *question = &bank->questions[q];
        const char *chosen = question->options[given[q]].lang[lang];
        if (given[q] == question->correct)
            say(7, "  ✓ %d. %s: %s", q + 1, quiz_word(lang, "chosen"), chosen);
        else
            say(7, "  ✗ %d. %s: %s · %s: %s", q + 1, quiz_word(lang, "chosen"), chosen, quiz_word(lang, "the_answer"),
                question->options[question->correct].lang[lang]);
    }
}

/* Waits for Enter after a typed answer's explanation, before question q + 1; false at the
 * end of input. */
static bool wait_for_enter(const Options *o, int q)
{
    if (o->n_answers || q + 1 == QUIZ_QUESTIONS) return true;
    say(0, "\n%s", quiz_word(o->lang, "next"));
    fflush(stdout);
    int c;
    while ((c = getchar()) != EOF && c != '\n') continue;
    return c != EOF;
}

/* The quiz on the terminal: the header, every question, read an answer (typed, or from
 * --answers), judge it and explain; then the score. */
static void ask_all(const Options *o, const Bank *bank, const int orders[][QUIZ_OPTIONS], ResultsDir *results)
{
    print_header(bank, o);
    int given[QUIZ_QUESTIONS], score = 0, asked = 0;
    for (int q = 0; q < QUIZ_QUESTIONS; q++) {
        print_question(bank, q, orders[q], o->lang);
        const int a = next_answer(o, q);
        if (a >= 0) {
            given[asked++] = orders[q][a];
            score += print_verdict(&bank->questions[q], orders[q], given[q], o->lang, results);
        }
        if (a < 0 || !wait_for_enter(o, q)) {
            say(0, "\n%s", quiz_word(o->lang, "ended"));
            break;
        }
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
        if (bank) fprintf(stderr, "quiz: no memory for the results\n");
        else complain();
        bank_free(bank);
        return 1;
    }
    int orders[QUIZ_QUESTIONS][QUIZ_OPTIONS], status = 0;
    width = output_width();
    bank_option_orders(o.seed, !o.no_shuffle, orders);
    if (o.html) status = write_page(&o, bank, orders, results);
    else if (o.preview || (!o.n_answers && !isatty(STDIN_FILENO))) print_preview(bank, orders, &o);
    else ask_all(&o, bank, orders, results);
    results_close(results);
    bank_free(bank);
    return finish(status);
}
