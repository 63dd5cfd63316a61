/*
 * fuzz_parse.c — libFuzzer target for the command-line parsers of base/parse.c:
 * parse_int, parse_u64, parse_int_list, parse_float and parse_memory_size.
 *
 * Each input, up to its first NUL, is one command-line value. A value a parser accepts
 * must be exactly what its contract allows — digits, a '-' only where negatives are
 * allowed, no empty list element — in range, and equal to what the C library reads from
 * the same text; a refused value must leave the output alone. A broken promise aborts.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"

static void broken(const char *parser, const char *text, const char *what)
{
    fprintf(stderr, "fuzz_parse: %s(\"%s\"): %s\n", parser, text, what);
    abort();
}

/* Whether `text` is digits, with one leading '-' if `sign` allows it. */
static bool plain_number(const char *text, bool sign)
{
    if (sign && text[0] == '-') text++;
    if (!text[0]) return false;
    for (; *text; text++)
        if (*text < '0' || *text > '9') return false;
    return true;
}

static void check_int(const char *text, long lo, long hi)
{
    int v = 0x5eed;
    if (!parse_int(text, lo, hi, &v)) {
        if (v != 0x5eed) broken("parse_int", text, "refused, but changed its output");
        return;
    }
    errno = 0;
    const long expected = strtol(text, NULL, 10);
    if (!plain_number(text, lo < 0) || errno || expected != v || v < lo || v > hi)
        broken("parse_int", text, "accepted what its contract refuses");
}

static void check_u64(const char *text)
{
    uint64_t v = 77;
    if (!parse_u64(text, 1, UINT64_MAX - 1, &v)) {
        if (v != 77) broken("parse_u64", text, "refused, but changed its output");
        return;
    }
    errno = 0;
    const unsigned long long expected = strtoull(text, NULL, 10);
    if (!plain_number(text, false) || errno || expected != v || v < 1 || v == UINT64_MAX)
        broken("parse_u64", text, "accepted what its contract refuses");
}

static void check_list(const char *text)
{
    enum { CAPACITY = 8 };
    int out[CAPACITY];
    size_t n = 99;
    if (!parse_int_list(text, -5, 1024, out, CAPACITY, &n)) {
        if (n != 99) broken("parse_int_list", text, "refused, but changed its count");
        return;
    }
    size_t commas = 0;
    for (const char *c = text; *c; c++) commas += *c == ',';
    if (n != commas + 1 || n > CAPACITY || text[0] == ',' || text[strlen(text) - 1] == ',' || strstr(text, ",,"))
        broken("parse_int_list", text, "accepted a list with an empty element or too many");
    const char *element = text;
    for (size_t i = 0; i < n; i++) {
        char *end;
        const long expected = strtol(element, &end, 10);
        if (out[i] != expected || out[i] < -5 || out[i] > 1024 || (*end != ',' && *end != '\0'))
            broken("parse_int_list", text, "an element is not what the text says");
        element = end + 1;
    }
}

static void check_memory_size(const char *text)
{
    size_t bytes = 0;
    if (parse_memory_size(text, &bytes) == REMAT_OK) {
        if (bytes == 0) broken("parse_memory_size", text, "accepted a size of 0 bytes");
    } else if (remat_last_status() != REMAT_EINVAL || bytes != 0) {
        broken("parse_memory_size", text, "refused with another status than REMAT_EINVAL, or changed its output");
    }
}

static void check_float(const char *text)
{
    float v = -7.0f;
    if (parse_float(text, -1e6, 1e6, true, &v)) {
        char *end = NULL;
        const float expected = (float)strtod(text, &end);
        if (*end || v != expected || v < -1e6f || v > 1e6f)
            broken("parse_float", text, "accepted a value strtod reads otherwise, or out of range");
        for (const char *c = text; *c; c++)
            if (!strchr("0123456789.-+eE", *c)) broken("parse_float", text, "accepted a character besides a decimal's");
    } else if (v != -7.0f) {
        broken("parse_float", text, "refused, but changed its output");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    check_int(text, 1, 4096);
    check_int(text, -100, 100);
    check_int(text, INT32_MIN, INT32_MAX);
    check_u64(text);
    check_list(text);
    check_float(text);
    check_memory_size(text);
    free(text);
    return 0;
}
