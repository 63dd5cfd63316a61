/*
 * explain_fill.h — an explanation with this machine's measured figures in it.
 *
 * An explanation's {placeholders} name the question's measurements (bank.h); each is read
 * from results/<bench>.json as the benches wrote it (bench/README.md documents the
 * schema). A figure that is not there is never made up: the placeholder becomes "(not
 * measured yet: run build/bench/<bench> --quick)", in the quiz's language.
 *
 * Both front ends fill explanations here, so the terminal and the page say the same words
 * and quote the same figures: explain_pieces walks an explanation and hands each piece
 * (the bank's words, or one placeholder's value) to a sink; fill_explanation is the sink
 * that joins them into one line of text, as the terminal prints it. The page's sink
 * (page.c) writes the same pieces as HTML, marking each figure.
 */
#ifndef REMAT_QUIZ_EXPLAIN_FILL_H
#define REMAT_QUIZ_EXPLAIN_FILL_H

#include <stddef.h>

#include "quiz/bank.h"

/* The results of the benches, read from one directory on demand. */
typedef struct ResultsDir ResultsDir;

/* Results read from `dir` (files are opened when first needed). The caller owns it
 * (results_close). NULL on no memory. */
ResultsDir *results_open(const char *dir);

/* Frees `r` and every document it read. NULL is a no-op. */
void results_close(ResultsDir *r);

/* The directory `r` reads from, as given to results_open. */
const char *results_dir(const ResultsDir *r);

/* The parsed results/<bench>.json (e.g. bench "bench_scaling"), owned by `r`; NULL when
 * the file is missing or is not valid JSON. */
const cJSON *results_document(ResultsDir *r, const char *bench);

/* What one piece of a filled explanation is. */
typedef enum PieceKind {
    PIECE_TEXT,    /* the bank's own words, between placeholders */
    PIECE_FIGURE,  /* a measured value, formatted: "280.0 KiB", "33.4%", "+21.0%" */
    PIECE_MISSING, /* "(not measured yet: run build/bench/<bench> --quick)" */
    PIECE_BROKEN,  /* "(<file> is not valid JSON)": results that exist but are malformed */
} PieceKind;

/* Receives the pieces of an explanation in order: `len` bytes of `text` (not
 * NUL-terminated), of kind `kind`. */
typedef void ExplainSink(void *ctx, PieceKind kind, const char *text, size_t len);

/* Walks question `q`'s explanation in `lang`, handing every piece to `sink`. Returns
 * REMAT_OK, or REMAT_ECORRUPT naming the file and field when a results file exists but
 * is malformed (its placeholder then comes as a PIECE_BROKEN saying so); every piece is
 * handed over either way. */
RematStatus explain_pieces(const Question *q, QuizLang lang, ResultsDir *results, ExplainSink *sink, void *ctx);

/* Writes question `q`'s explanation in `lang` into `buf` (size bytes, truncated to fit)
 * with every placeholder filled, as one line of text. Returns what explain_pieces
 * returns. */
RematStatus fill_explanation(char *buf, size_t size, const Question *q, QuizLang lang, ResultsDir *results);

/* How many of `q`'s measurements were found. */
int measured_count(const Question *q, ResultsDir *results);

#endif /* REMAT_QUIZ_EXPLAIN_FILL_H */
