/*
 * parse.h — reading numbers from the command line, the same way in every program
 * (train, the benches, the quiz): the whole text must be the number, in range.
 */
#ifndef REMAT_PARSE_H
#define REMAT_PARSE_H

#include <stdbool.h>

/* Parses `text` as a whole decimal number in [lo, hi] into *out; false (and *out
 * unchanged) if it is empty, has trailing characters, overflows or is out of range. */
bool parse_int(const char *text, long lo, long hi, int *out);

#endif /* REMAT_PARSE_H */
