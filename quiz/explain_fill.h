/*
 * explain_fill.h — an explanation with this machine's measured figures in it.
 *
 * An explanation's {placeholders} name the question's measurements (bank.h); each is read
 * from results/<bench>.json as the benches wrote it (bench/README.md documents the
 * schema). A figure that is not there is never made up: the placeholder becomes "(not
 * measured yet: run build/bench/<bench> --quick)", in the quiz's language.
 */
#ifndef REMAT_QUIZ_EXPLAIN_FILL_H
#define REMAT_QUIZ_EXPLAIN_FILL_H

#include <stddef.h>

#include "quiz/bank.h"

/* The results of the benches, read from one directory on demand. */
typedef struct ResultsDir ResultsDir;

/* Results read from `dir` (files are opened when first needed). NULL on no memory. */
ResultsDir *results_open(const char *dir);
void results_close(ResultsDir *r);

/* Writes question `q`'s explanation in `lang` into `buf` (size bytes) with every
 * placeholder filled. Returns REMAT_OK, or REMAT_ECORRUPT naming the file and field when a
 * results file exists but is malformed (the text then says so in place of the figure). */
RematStatus fill_explanation(char *buf, size_t size, const Question *q, QuizLang lang, ResultsDir *results);

/* How many of `q`'s measurements were found. */
int measured_count(const Question *q, ResultsDir *results);

#endif /* REMAT_QUIZ_EXPLAIN_FILL_H */
