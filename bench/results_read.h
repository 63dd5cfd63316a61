/*
 * results_read.h — the one reader of the results schema that bench/results.h writes
 * (docs/RESULTS.md documents it): a results file parsed, a directory of them opened on
 * demand, a table's records and the record whose fields match. The quiz quotes its figures
 * through it, bench_all merges the benches' files through it, and the tests check them
 * through it.
 *
 *     ResultsDir *r = results_open("results");
 *     const cJSON *doc = results_document(r, "bench_scaling");      (NULL: not run yet)
 *     const cJSON *rec = results_find(results_records(doc, "steps"), where, NULL);
 *     results_close(r);
 *
 * What this is not: a judge of the figures (the quiz decides which are plausible and
 * which times can be taught from, quiz/explain_fill.h), nor a writer (bench/results.h).
 */
#ifndef REMAT_BENCH_RESULTS_READ_H
#define REMAT_BENCH_RESULTS_READ_H

#include <cjson/cJSON.h>
#include <stdbool.h>

/* The parsed results file at `path` (the caller owns it, cJSON_Delete). NULL with *missing
 * true when there is no such file (nothing is remembered as an error); NULL with *missing
 * false and an error when it cannot be read (REMAT_EIO, "reading the results: ...") or is
 * not valid JSON (REMAT_ECORRUPT, "<path> is not valid JSON"). */
cJSON *results_read_file(const char *path, bool *missing);

/* The results of the benches, read from one directory on demand. */
typedef struct ResultsDir ResultsDir;

/* Results read from `dir` (files are opened when first needed). The caller owns it
 * (results_close). NULL on no memory. */
ResultsDir *results_open(const char *dir);

/* Frees `r` and every document it read. NULL is a no-op. */
void results_close(ResultsDir *r);

/* The directory `r` reads from, as given to results_open. */
const char *results_dir(const ResultsDir *r);

/* The parsed <dir>/<bench>.json (e.g. bench "bench_scaling"), owned by `r`; NULL when the
 * file is missing or broken (results_broken says which). */
const cJSON *results_document(ResultsDir *r, const char *bench);

/* Why <dir>/<bench>.json, present, could not be read or parsed ("... is not valid
 * JSON"); NULL when it was read or is missing. The text is owned by `r`. */
const char *results_broken(ResultsDir *r, const char *bench);

/* The records of table `table` of a results document: a cJSON array owned by `doc`, or
 * NULL when there is no such table or it keeps its records in CSV only. */
const cJSON *results_records(const cJSON *doc, const char *table);

/* Whether every field named in `where` (an object, or NULL: any record) equals the
 * record's field of the same name: numbers, strings and booleans compared by value. */
bool results_record_matches(const cJSON *record, const cJSON *where);

/* The first of `records` (an array, or NULL) that results_record_matches `where`, with its
 * position in *index (may be NULL); NULL when none does. */
const cJSON *results_find(const cJSON *records, const cJSON *where, int *index);

#endif /* REMAT_BENCH_RESULTS_READ_H */
