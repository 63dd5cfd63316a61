/*
 * results.h — the one results schema every bench writes: <dir>/<bench>.json, and a CSV per
 * table beside it (docs/RESULTS.md documents the schema field by field).
 *
 *     typedef struct Row { int n_layers; size_t peak_act; } Row;    (what the bench measures)
 *     static const ResultsColumn COLUMNS[] = {COLUMN(Row, n_layers, INT, "layers", SHOW("N", "", 4, 0)),
 *                                             COLUMN(Row, peak_act, SIZE, "bytes", SHOW("peak", "MiB", 8, 2))};
 *     Results *r = results_create("bench_scaling", "quiz questions 1 and 4", quick);
 *     results_config_num(r, "width", 256);
 *     ResultsTable *t = RESULTS_TABLE(r, "steps", "one training step per depth", COLUMNS);
 *     results_print_head(t, 0);
 *     results_add_row(t, &(Row){.n_layers = 64, .peak_act = 1234567});   (printed and recorded)
 *     if (results_write(r, "results") != REMAT_OK) ...remat_last_error()...
 *     results_free(r);
 *
 * A Results holds what one run of a bench measured: who ran it (machine, threads, OpenBLAS
 * core and threading, date, git commit), how (the bench's config), and tables of records.
 * A table declares its fields and their units once, as columns of the row struct a bench
 * measures into; results_add_row records a row through them and prints the columns it
 * shows: the printed table and the recorded one are one declaration. A field only some
 * rows have names the row's flag that says so (WHEN). Mistakes while filling (two
 * estimates of one record from different runs, cJSON out of memory) are remembered and
 * reported by results_write, so a bench does not check every call.
 *
 * What this is not: a JSON library (that is cJSON, from Debian's libcjson-dev) or a
 * reader of results (that is bench/results_read.h, which the quiz and the tests share).
 */
#ifndef REMAT_BENCH_RESULTS_H
#define REMAT_BENCH_RESULTS_H

#include "bench/timing.h"

#define RESULTS_SCHEMA "remat-bench/2"

typedef struct Results Results;
typedef struct ResultsTable ResultsTable;

/* How a column is read from a bench's row struct (results_add_row). */
typedef enum ColumnType {
    COLUMN_SET,      /* not read from the row: an estimate's _lo, _hi and samples */
    COLUMN_SIZE,     /* size_t: bytes, counts */
    COLUMN_U64,      /* uint64_t: FLOPs */
    COLUMN_INT,      /* int */
    COLUMN_DOUBLE,   /* double */
    COLUMN_STR,      /* const char *; NULL: left out */
    COLUMN_STR_ARRAY, /* char[]: a string held in the row */
    COLUMN_BOOL,     /* bool */
    COLUMN_ESTIMATE, /* Estimate (COLUMN_TIMED): the field, then <name>_lo, <name>_hi and samples;
                        left out when it has no samples (not measured in this row) */
} ColumnType;

/* How a column is printed in the bench's table on stdout (SHOW): its heading, and the unit
 * it is printed in, which scales the recorded figure unless it is the recorded unit
 * ("KiB", "MiB", "GiB" of bytes, "GFLOP" of FLOPs, "GB/s" of bytes per second, "ms" and
 * "us" of seconds, "%" of a ratio; an Estimate in "+%" is an overhead as
 * estimate_ratio_str prints it, with its rounds), in `width` characters with `decimals`
 * decimals (negative: in scientific notation, with -decimals of them). An Estimate prints
 * its interval beside its value; a field a row leaves out prints "-". A column without
 * SHOW is recorded only. */
typedef struct ColumnShow {
    const char *head, *unit;
    int width, decimals;
    unsigned panels; /* the printed tables it is in, a bit each: 1 << 0 the one results_add_row
                        prints, 1 << 1...: tables printed apart (results_print_row) */
} ColumnShow;

/* A field and where it is in the row struct a bench measures into: its name
 * (lower_snake_case; NULL: printed only) and unit ("bytes", "FLOPs", "seconds", "ratio",
 * "layers", ...; "" for a label). The strings must outlive the table. */
typedef struct ResultsColumn {
    const char *name;
    const char *unit;
    ColumnType type;
    size_t offset; /* offsetof(Row, member) */
    size_t when;   /* 1 + offsetof(Row, flag) of the bool that says whether a row has the
                      field (WHEN); 0: every row has it */
    ColumnShow show;
} ResultsColumn;

/* The column named as `Row`'s `member` and read from it, of ColumnType COLUMN_<type>:
 * COLUMN(StepRow, peak_act, SIZE, "bytes"). COLUMN_AS names it otherwise. After the unit,
 * SHOW prints it and WHEN(Row, flag) leaves it out of a row whose bool `flag` is false. */
#define COLUMN(Row, member, type, unit, ...) COLUMN_AS(#member, Row, member, type, unit, __VA_ARGS__)
#define COLUMN_AS(NAME, Row, member, TYPE, UNIT, ...)                                                   \
    {.name = NAME, .unit = UNIT, .type = COLUMN_##TYPE, .offset = offsetof(Row, member), __VA_ARGS__}
#define SHOW(head, unit, width, decimals) SHOW_IN(1u, head, unit, width, decimals)
#define SHOW_IN(panels, head, unit, width, decimals) .show = {head, unit, width, decimals, panels}
#define WHEN(Row, flag) .when = offsetof(Row, flag) + 1
/* A time-derived column read from an Estimate member, with its _lo and _hi; a table with
 * one also declares COLUMN_SAMPLES. */
#define COLUMN_TIMED(Row, member, unit, ...) COLUMN_TIMED_AS(#member, Row, member, unit, __VA_ARGS__)
#define COLUMN_TIMED_AS(NAME, Row, member, UNIT, ...)                                                   \
    COLUMN_AS(NAME, Row, member, ESTIMATE, UNIT, __VA_ARGS__), COLUMN_SETTER(NAME "_lo", UNIT),          \
        COLUMN_SETTER(NAME "_hi", UNIT)
#define COLUMN_SAMPLES COLUMN_SETTER("samples", "timed runs each time-derived field comes from")
/* A figure printed beside the fields (SHOW) but not recorded: no field of the table. */
#define COLUMN_PRINTED(Row, member, TYPE, ...) {.type = COLUMN_##TYPE, .offset = offsetof(Row, member), __VA_ARGS__}
/* A field filled with the estimate before it, not read from the row. */
#define COLUMN_SETTER(NAME, UNIT) {.name = NAME, .unit = UNIT, .type = COLUMN_SET}

/* The number of entries of a static array of fields or columns. */
#define RESULTS_COUNT(array) ((int)(sizeof(array) / sizeof(array)[0]))

/* A new, empty Results for `bench` (e.g. "bench_scaling"), answering `question`, run in
 * quick mode or not. It records the machine (and its state now: bench/timing.h's
 * MachineState, completed by its state when the results are written), the thread count
 * in use now, the date and the git commit (read from the source tree at run time;
 * "unknown" without git). The caller owns it (results_free). NULL on error (out of
 * memory). */
Results *results_create(const char *bench, const char *question, bool quick);

/* Frees `r` and its tables. NULL is a no-op. */
void results_free(Results *r);

/* Adds `key` to the run's config: a number, a string, or a list of whole numbers. */
void results_config_num(Results *r, const char *key, double value);
void results_config_str(Results *r, const char *key, const char *value);
void results_config_ints(Results *r, const char *key, const int *values, int n);

/* Adds a table called `name` with the named ones of `columns` as its fields (the array is
 * borrowed and must outlive `r`; it may include printed ones, COLUMN_PRINTED). Its records
 * go to a CSV file: <bench>.csv for the first table, <bench>.<name>.csv for the others;
 * with in_json they are also in the JSON (a long event log sets it false and the JSON only
 * names its CSV). Returns the table (owned by `r`), or NULL after remembering an error. */
ResultsTable *results_row_table(Results *r, const char *name, const char *about, const ResultsColumn *columns,
                                int n_columns, bool in_json);

/* results_row_table of a static array of columns, with its records in the JSON. */
#define RESULTS_TABLE(r, name, about, columns) \
    results_row_table(r, name, about, columns, RESULTS_COUNT(columns), true)

/* Appends a record to `t` with every column read from the struct at `row` (an estimate
 * as the field, <field>_lo, <field>_hi and the record's samples, which all its estimates
 * must share), and prints the row's shown columns on stdout (if it has any). A NULL table
 * (an earlier error) is a no-op. */
void results_add_row(ResultsTable *t, const void *row);

/* Prints the headings of `t`'s columns shown in table `panel` (0, 1...) on stdout: a line of headings, a
 * line of units. Nothing for a NULL table. */
void results_print_head(const ResultsTable *t, int panel);

/* Prints the struct at `row` as results_add_row does, with the columns of `panel`. */
void results_print_row(const ResultsTable *t, const void *row, int panel);

/* Writes <dir>/<bench>.json and the tables' CSV files (the machine's state completed with
 * its state now: load average, steal, context switches and CPU time since results_create),
 * each through a temporary file renamed into place, creating `dir` (and its parents) if
 * needed. Returns REMAT_OK, or the first error remembered while filling, or REMAT_EIO
 * naming the file that could not be written. */
RematStatus results_write(Results *r, const char *dir);

/* Checks, before any measuring, that results_write can write `bench`'s files into `dir`:
 * creates `dir` (and its parents) if needed, and checks <dir>/<bench>.json as
 * file_check_writable does (a directory that is a file, one this process may not write
 * in, a JSON path that is a directory...). REMAT_OK or REMAT_EIO naming what is wrong. */
RematStatus results_check_dir(const char *dir, const char *bench);

/* As results_write, but the JSON goes to <dir>/summary.json and also holds, under
 * "benches", the parsed <dir>/<name>.json of each of the n `benches` that has one (bench_all
 * merges everything it ran this way). A file that is missing is left out; one that does
 * not parse is an error (REMAT_ECORRUPT naming it). */
RematStatus results_write_summary(Results *r, const char *dir, const char *const *benches, int n);

#endif /* REMAT_BENCH_RESULTS_H */
