/*
 * bank.h — the quiz's question bank (quiz/questions.json), loaded and checked, and the
 * program's own words (quiz/words.json).
 *
 * The bank holds the quiz's title, subtitle and description, and 8 questions, each in
 * English and Arabic: the question, four options, the index of the correct one, an
 * explanation in parts with {placeholders}, the test that proves the answer (file and test
 * name), the bench that measures it, the plot bench/plots.sh draws of it, and the
 * measurements its placeholders quote — each naming a bench's results file, a table, the
 * record to pick and the field to read, and whether it is a time.
 *
 * An explanation is a list of parts, because what can be said depends on what was
 * measured: a part that quotes figures is shown only when all of them were measured (and,
 * for times, when they can carry the lesson: see explain_fill.h); otherwise its
 * `otherwise` text is tried, typically the same point made from exact bytes and FLOPs;
 * otherwise the part is left out. Parts without placeholders are always shown, so every
 * explanation still teaches with no results at all. A question may also name the order
 * two of its figures must come in, and why (FigureOrder, below).
 *
 * What it is not: a general JSON model. Texts point into the parsed document, which the
 * Bank owns until bank_free.
 */
#ifndef REMAT_QUIZ_BANK_H
#define REMAT_QUIZ_BANK_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/error.h"
#include "base/parse.h"

#define QUIZ_QUESTIONS 8 /* a bank has exactly this many */
#define QUIZ_OPTIONS 4
#define QUIZ_MAX_MEASUREMENTS 32 /* per question */

typedef enum QuizLang { LANG_EN = 0, LANG_AR, LANG_COUNT } QuizLang;

/* One text in both languages (strings owned by the bank). */
typedef struct QuizText {
    const char *lang[LANG_COUNT];
} QuizText;

/* How a figure is checked and written (explain_fill.c): up to FORMAT_TEXT, what a
 * measurement's "format" may name (described below); then the quiz's own, for what the
 * results record beside a figure (a time's samples, the machine's fractions of CPU time). */
typedef enum FigureFormat {
    FORMAT_BYTES, FORMAT_RESIDENT, FORMAT_PERCENT, FORMAT_EXCESS, FORMAT_CHANGE, FORMAT_NUMBER, FORMAT_INT, FORMAT_TEXT,
    FORMAT_COUNT, FORMAT_FRACTION
} FigureFormat;

/* A value an explanation quotes: {name} is replaced by `field` of the first record of
 * `table` in results/<bench>.json whose fields equal every entry of `where` (with
 * `largest`, "pick": "largest" in the bank, of the one among them whose `field` is
 * largest), written as `format` says: "bytes", "resident" (the bytes of a resident peak,
 * at most this machine's RAM), "percent" (FLOPs recomputed per FLOP done, 0..1 shown ×100), "excess"
 * (a ratio r shown as +(r − 1)×100%), "change" (a ratio of times r worded by its sign:
 * "4.0% slower", "1.8% faster"), "number", "int" or "text". A `time` is a figure derived
 * from wall time (a step's seconds, a ratio of times): its record also carries
 * `field`_lo, `field`_hi and `samples`, and it is quoted only with them. */
typedef struct Measurement {
    const char *name;
    const char *bench;
    const char *table;
    const cJSON *where; /* an object, possibly empty */
    const char *field;
    FigureFormat format;
    bool time;
    bool largest;
} Measurement;

/* One part of an explanation: `text`, or when its figures cannot be quoted, `otherwise`
 * (both languages NULL when the part has none). */
typedef struct ExplanationPart {
    QuizText text;
    QuizText otherwise;
} ExplanationPart;

/* The order two of a question's measurements must come in, both times or both exact
 * figures: `lower` is no more than `higher`, because `why` (a clause: "replaying attention
 * alone cannot cost more than replaying the whole block", "recomputing cannot keep more
 * activations than keeping them all"). Times that break it are noise, and none of the
 * question's is quoted; exact figures that break it are wrong, and neither is quoted. */
typedef struct FigureOrder {
    const Measurement *lower, *higher;
    QuizText why;
} FigureOrder;

typedef struct Question {
    QuizText question;
    QuizText options[QUIZ_OPTIONS];
    int correct; /* 0..3, in the order of `options` */
    ExplanationPart *parts;
    int n_parts;
    FigureOrder *orders;
    int n_orders;
    const char *test_file, *test_name;
    const char *bench; /* the program that measures it, under build/: "bench/bench_scaling" */
    const char *plot;  /* the PNG bench/plots.sh draws of it: "scaling.png" */
    QuizText plot_alt; /* what the plot shows, for a reader who cannot see it */
    QuizText quick_times; /* why its times teach nothing when measured by a quick run, or
                             both languages NULL when they do */
    Measurement measurements[QUIZ_MAX_MEASUREMENTS];
    int n_measurements;
} Question;

typedef struct Bank {
    QuizText title, subtitle, description;
    Question questions[QUIZ_QUESTIONS];
    cJSON *doc;
} Bank;

/* Loads and checks the bank at `path`. NULL on error: REMAT_EIO naming the file and the
 * reason if it cannot be read (missing, a directory, a FIFO); REMAT_ECORRUPT naming the
 * file and the field ("quiz/questions.json: questions[3].options: need 4 options, found
 * 3") for anything missing or malformed, a placeholder that names no measurement, or the
 * two languages of a part quoting different placeholders. */
Bank *bank_load(const char *path);

/* Frees the bank. NULL is a no-op. */
void bank_free(Bank *bank);

/* The measurement of `q` that the {placeholder} opening at `open` names, or NULL; its
 * closing '}' in *close (NULL when there is none). */
const Measurement *question_placeholder(const Question *q, const char *open, const char **close);

/* Whether `text`, a part of q's explanation (its placeholders checked by bank_load), quotes
 * one of q's time measurements. */
bool question_quotes_time(const Question *q, const char *text);

/* The order the options of each of the bank's questions are shown in: orders[q][i] is the
 * bank's index of the option shown (i + 1)-th. With `shuffle`, a Fisher–Yates shuffle
 * drawn from PCG32 seeded with `seed` (the same seed, the same orders); without, the
 * bank's own order. `orders` has a row per question. */
void bank_option_orders(uint64_t seed, bool shuffle, int orders[][QUIZ_OPTIONS]);

/* The largest bank or plot the quiz reads (with file_read_all, base/file.h). */
#define QUIZ_MAX_FILE (256 << 20)

/* "en", "ar": the names of QuizLang's values, and the keys of a text's languages in the bank. */
extern const NameTable QUIZ_LANG_NAMES;

/* ---- the program's own words ------------------------------------------------------------ */

/* The bank holds the questions; quiz/words.json holds what the program itself says around
 * them, in both languages: prompts, verdicts, the score, the notes under an explanation,
 * and the page's own labels and captions. The terminal and the page (page.h) use the same
 * verdicts and score line, so the two front ends say the same thing in the same words.
 * words.json is embedded in the program at build time (quiz/CMakeLists.txt): each key a
 * text in both languages, and an `about` saying where it is said and, for a printf format
 * (a text with %d, %c or %s), its arguments in order. tests/test_quiz.c checks that the
 * two languages of every format take the same ones. */

/* The text `key` of words.json in `lang` (static storage). A key that is not there is a
 * programming error: it is said on stderr, and the program aborts. */
const char *quiz_word(QuizLang lang, const char *key);

#endif /* REMAT_QUIZ_BANK_H */
