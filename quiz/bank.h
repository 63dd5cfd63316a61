/*
 * bank.h — the quiz's question bank (quiz/questions.json), loaded and checked.
 *
 * The bank holds the quiz's title, subtitle and description, and 8 questions, each in
 * English and Arabic: the question, four options, the index of the correct one, an
 * explanation with {placeholders}, the test that proves the answer (file and test name),
 * the bench that measures it, the plot bench/plots.sh draws of it, and the measurements
 * its placeholders quote — each naming a bench's results file, a table, the record to
 * pick and the field to read.
 *
 * What it is not: a general JSON model. Texts point into the parsed document, which the
 * Bank owns until bank_free.
 */
#ifndef REMAT_QUIZ_BANK_H
#define REMAT_QUIZ_BANK_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "tensor/error.h"

#define QUIZ_QUESTIONS 8 /* a bank has exactly this many */
#define QUIZ_OPTIONS 4

typedef enum QuizLang { LANG_EN = 0, LANG_AR, LANG_COUNT } QuizLang;

/* One text in both languages (strings owned by the bank). */
typedef struct QuizText {
    const char *lang[LANG_COUNT];
} QuizText;

/* A value an explanation quotes: {name} is replaced by `field` of the first record of
 * `table` in results/<bench>.json whose fields equal every entry of `where`, written as
 * `format` says: "bytes", "percent" (a ratio shown ×100), "excess" (a ratio r shown as
 * +(r − 1)×100%), "number", "int" or "text". */
typedef struct Measurement {
    const char *name;
    const char *bench;
    const char *table;
    const cJSON *where; /* an object, possibly empty */
    const char *field;
    const char *format;
} Measurement;

typedef struct Question {
    int id;
    QuizText question;
    QuizText options[QUIZ_OPTIONS];
    int correct; /* 0..3, in the order of `options` */
    QuizText explanation;
    const char *test_file, *test_name;
    const char *bench; /* the program that measures it, under build/: "bench/bench_scaling" */
    const char *plot;  /* the PNG bench/plots.sh draws of it: "scaling.png" */
    QuizText plot_alt; /* what the plot shows, for a reader who cannot see it */
    Measurement *measurements;
    int n_measurements;
} Question;

typedef struct Bank {
    QuizText title, subtitle, description;
    Question *questions;
    int n_questions;
    cJSON *doc;
} Bank;

/* Loads and checks the bank at `path`. NULL on error: REMAT_EIO if it cannot be read;
 * REMAT_ECORRUPT naming the file and the field ("quiz/questions.json: questions[3].options:
 * need 4 options, found 3") for anything missing or malformed. */
Bank *bank_load(const char *path);

/* Frees the bank. NULL is a no-op. */
void bank_free(Bank *bank);

/* The order the options of each of the bank's questions are shown in: orders[q][i] is the
 * bank's index of the option shown (i + 1)-th. With `shuffle`, a Fisher–Yates shuffle
 * drawn from PCG32 seeded with `seed` (the same seed, the same orders); without, the
 * bank's own order. `orders` has a row per question. */
void bank_option_orders(const Bank *bank, uint64_t seed, bool shuffle, int orders[][QUIZ_OPTIONS]);

/* "en" or "ar" to a language; REMAT_EINVAL otherwise. */
RematStatus quiz_lang_parse(const char *name, QuizLang *lang);

#endif /* REMAT_QUIZ_BANK_H */
