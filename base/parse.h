/*
 * parse.h — reading numbers from the command line, the same way in every program
 * (train, the benches, the quiz): the whole text must be the number, in range.
 *
 * "The whole text" is meant literally. A number is decimal digits, with a leading '-'
 * only where negative values are allowed: no leading or trailing space, no '+', no
 * "0x", no empty text. The C library's strtol and strtoull are more forgiving than a
 * command line should be — both skip leading white space, and strtoull takes " -1" as
 * 18446744073709551615 — so these functions check the characters themselves before
 * converting.
 *
 * Floating-point values are held to the same rule: digits with at most one '.', an
 * optional leading '-' and an optional exponent ("1e-3", "2.5E2"). strtod alone would
 * also take leading space, '+', hexadecimal ("0x1p-3"), "inf" and "nan".
 *
 * The names of enum values are read the same way everywhere too: through a NameTable.
 */
#ifndef REMAT_PARSE_H
#define REMAT_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Parses `text` as a whole decimal number in [lo, hi] into *out; false (and *out
 * unchanged) if it is NULL or empty, has any character besides the digits and (when lo
 * is negative) one leading '-', overflows or is out of range. */
bool parse_int(const char *text, long lo, long hi, int *out);

/* As parse_int for an unsigned 64-bit value in [lo, hi]: digits only, no sign at all. */
bool parse_u64(const char *text, uint64_t lo, uint64_t hi, uint64_t *out);

/* Parses a comma-separated list of at most `capacity` numbers, each as parse_int with
 * [lo, hi], into out[0 .. *count). False (and out and *count unchanged) if the text is
 * NULL or empty, an element is empty ("1,,2", ",1", "1,") or bad, or there are more than
 * `capacity` elements. */
bool parse_int_list(const char *text, long lo, long hi, int *out, size_t capacity, size_t *count);

/* Parses `text` as a whole finite decimal number in [lo, hi] (or [lo, hi) when
 * hi_inclusive is false), both as typed and once stored as a float, into *out; false (and
 * *out unchanged) otherwise. */
bool parse_float(const char *text, double lo, double hi, bool hi_inclusive, float *out);

/* Parses a size such as "300MiB", "1.5GiB", "4096" or "64 KiB" (a decimal number as
 * parse_float takes it, then at most one space and a unit: B, KiB, MiB or GiB; none
 * means bytes) into whole bytes, rounded down. REMAT_EINVAL, saying what was wrong, for
 * anything else: empty text, a negative, zero or non-finite number, an unknown unit,
 * junk after it, less than one byte or more than SIZE_MAX. */
RematStatus parse_memory_size(const char *text, size_t *bytes);

/* ---- names of enum values ------------------------------------------------------------- */

/* The names of an enum's values, one table per enum, in its room: names[v] is value v's
 * name. Every enum read from the command line or a file is read through its table, so
 * every bad value is refused with the same message. */
typedef struct NameTable {
    const char *const *names;
    int count;
} NameTable;

/* The name of `value`, or "unknown" if the table has none. */
const char *name_of(const NameTable *table, int value);

/* The value called `text` into *value; else REMAT_EINVAL, *value unchanged, with the one
 * message of a bad value: "'x' is not one of none, full, sqrt, selective, budget". */
RematStatus name_parse(const NameTable *table, const char *text, int *value);

#endif /* REMAT_PARSE_H */
