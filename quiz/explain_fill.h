/*
 * explain_fill.h — an explanation with this machine's measured figures in it, and only
 * figures that can carry its lesson.
 *
 * An explanation's {placeholders} name the question's measurements (bank.h); each is read
 * from results/<bench>.json as the benches wrote it, through bench/results_read.h (the
 * schema's one reader). A figure that is not there is never made up, and a part of the explanation
 * that needs it is left out (or replaced by its `otherwise`); a note below the
 * explanation then says, once, which bench to run.
 *
 * Every figure is checked before it is quoted: its type, its sign and a plausible range for
 * its format (a byte count is a whole number from 0 to 1 PiB, a ratio of times is above 0,
 * ...). An invalid one — null, negative, an object, 1e30 — is treated as missing, and a
 * note and the returned error name the file and the field.
 *
 * Times. Bytes and FLOPs come from the ledgers and are exact; a time depends on how busy
 * the machine was. A time figure is quoted only with its interval and sample count
 * ("+28.5% (+24.1% to +31.0%, 9 paired steps)"), and only when it can carry the lesson.
 * None of the question's times can when
 *   - the results do not record the interval, the samples or the machine's state
 *     (results of an older bench): the spread is unknown;
 *   - the machine was busy: other processes ran for more than TIME_MAX_OTHERS of its CPU
 *     time while the bench ran, or the hypervisor stole more than TIME_MAX_STEAL. (Not
 *     the load average: a bench's own threads make it, 2 on 2 cores with nothing else
 *     running, and a load above the cores says nothing about who ran.);
 *   - two times contradict an order the question declares (the lower one's interval
 *     wholly above the higher one's): an explanation never states a comparison its own
 *     intervals contradict.
 * A question may also say why its times teach nothing when they come from a quick run
 * (quick_times, bank.h): then a quick run's times are not quoted either.
 * One time cannot, on its own account, when
 *   - it comes from fewer than TIME_MIN_SAMPLES samples (order statistics give no 95%
 *     interval for a median below 6);
 *   - its interval is wider than TIME_MAX_WIDTH of its value (±5 points of a ratio near 1).
 * Every part quoting a time that cannot carry the lesson gives way to its `otherwise`,
 * which teaches the same point from bytes and FLOPs. A note says why in plain words and
 * what to rerun: once for the question when no time is quoted, once per time left out
 * when others are.
 *
 * Both front ends fill explanations here, so the terminal and the page say the same words
 * and quote the same figures: explain_pieces walks an explanation and hands each piece
 * (the bank's words, a figure, a note) to a sink; fill_explanation is the sink that joins
 * them into text as the terminal prints it. The page's sink (page.c) writes the same
 * pieces as HTML, marking each figure.
 */
#ifndef REMAT_QUIZ_EXPLAIN_FILL_H
#define REMAT_QUIZ_EXPLAIN_FILL_H

#include <stddef.h>

#include "bench/results_read.h"
#include "quiz/bank.h"

#define TIME_MIN_SAMPLES 6
#define TIME_MAX_STEAL 0.05  /* "a few percent" of the CPU time */
#define TIME_MAX_OTHERS 0.25 /* half a core of two: what a compile or a browser tab takes */
#define TIME_MAX_WIDTH 0.10 /* (hi − lo) / value */

/* The results document of `bench` (results_document) if the quiz can quote it: readable,
 * and of a schema the quiz reads ("schema": "remat-bench/1" or "remat-bench/2"); NULL
 * otherwise. When the file is there but cannot be quoted, `why` (size bytes; may be NULL)
 * says why, naming the file ("... its schema is 'remat-bench/999', not ..."); else "". */
const cJSON *explain_results(ResultsDir *r, const char *bench, char *why, size_t size);

/* The machine while a bench ran, as its results' "machine" block records it. */
typedef struct RecordedMachine {
    double load_before, load_after; /* 1-minute load averages */
    double steal;                   /* the fraction of CPU time stolen by the hypervisor, 0..1 */
    double others;                  /* the fraction other processes ran, 0..1 */
    double cores;
} RecordedMachine;

/* Reads the machine block of a results document (results_document, results_read.h) into *m: false when
 * it does not record all five fields (results of an older bench) or one is not plausible
 * (a negative load, a steal above 1, no cores). */
bool results_machine(const cJSON *doc, RecordedMachine *m);

/* What one piece of a filled explanation is. */
typedef enum PieceKind {
    PIECE_TEXT,   /* the bank's own words, between placeholders */
    PIECE_FIGURE, /* a measured value, formatted: "280.0 KiB", "33.4%", a time with its spread */
    PIECE_NOTE,   /* a sentence of its own, after the explanation, about its figures: which
                     bench to run, which figure is invalid, why its times are not quoted */
} PieceKind;

/* Receives the pieces of an explanation in order: `len` bytes of `text` (not
 * NUL-terminated), of kind `kind`. Every note comes after the last text and figure. */
typedef void ExplainSink(void *ctx, PieceKind kind, const char *text, size_t len);

/* Walks question `q`'s explanation in `lang`, handing every piece to `sink`. Returns
 * REMAT_OK, or REMAT_ECORRUPT naming the file and field when a results file exists but
 * is malformed or holds an invalid figure (a note says so too); every piece is handed
 * over either way. */
RematStatus explain_pieces(const Question *q, QuizLang lang, ResultsDir *results, ExplainSink *sink, void *ctx);

/* Writes question `q`'s explanation in `lang` into `buf` (size bytes, truncated to fit)
 * with its figures, as the terminal prints it: the explanation on one line, then each
 * note on a line of its own. Returns what explain_pieces returns. */
RematStatus fill_explanation(char *buf, size_t size, const Question *q, QuizLang lang, ResultsDir *results);

/* Writes into `buf` (size bytes, truncated to fit) the runs q's figures come from, as a
 * sentence in `lang`: each bench it quotes that has results, once, with the mode and date
 * its results record ("Figures from: bench_offload (quick run, 2026-12-02T07:57:42Z)."),
 * so a reader knows a quick run's small configurations from a full run's. Empty when
 * none of them has results. */
void explain_sources(char *buf, size_t size, const Question *q, QuizLang lang, ResultsDir *results);

#endif /* REMAT_QUIZ_EXPLAIN_FILL_H */
