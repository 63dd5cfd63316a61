/*
 * parse.c — reading numbers from the command line (see parse.h).
 */
#include "tensor/parse.h"

#include <errno.h>
#include <stdlib.h>

bool parse_int(const char *text, long lo, long hi, int *out)
{
    char *end = NULL;
    errno = 0;
    const long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}
