/*
 * parse.c — reading numbers from the command line (see parse.h).
 *
 * Every parser here reads a span of characters with one helper, digits_value, which
 * accepts decimal digits and nothing else and notices overflow as it goes. Signs and
 * ranges are checked around it. No strtol, for the reasons parse.h gives.
 */
#include "base/parse.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of the n characters at s, which must all be decimal digits (n >= 1), into
 * *value; false if they are not, or if the value does not fit in 64 bits. */
static bool digits_value(const char *s, size_t n, uint64_t *value)
{
    if (n == 0) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        const unsigned digit = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - digit) / 10) return false;
        v = 10 * v + digit;
    }
    *value = v;
    return true;
}

/* The n characters at s as a number in [lo, hi] that also fits an int: digits, after
 * one '-' when lo is negative. */
static bool span_to_int(const char *s, size_t n, long lo, long hi, int *out)
{
    const bool negative = n > 0 && s[0] == '-' && lo < 0;
    const size_t sign = negative ? 1 : 0;
    uint64_t magnitude;
    if (!digits_value(s + sign, n - sign, &magnitude) || magnitude > (uint64_t)LONG_MAX) return false;
    const long v = negative ? -(long)magnitude : (long)magnitude;
    if (v < lo || v > hi || v < INT_MIN || v > INT_MAX) return false;
    *out = (int)v;
    return true;
}

bool parse_int(const char *text, long lo, long hi, int *out)
{
    return text && span_to_int(text, strlen(text), lo, hi, out);
}

bool parse_u64(const char *text, uint64_t lo, uint64_t hi, uint64_t *out)
{
    uint64_t v;
    if (!text || !digits_value(text, strlen(text), &v) || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool parse_int_list(const char *text, long lo, long hi, int *out, size_t capacity, size_t *count)
{
    if (!text || !text[0]) return false;
    /* Two passes over the elements: the first checks them all, the second stores them,
     * so that a bad list changes nothing. */
    for (int pass = 0; pass < 2; pass++) {
        size_t n = 0;
        for (const char *element = text;; n++) {
            const size_t len = strcspn(element, ",");
            int value;
            if (n == capacity || !span_to_int(element, len, lo, hi, &value)) return false;
            if (pass == 1) out[n] = value;
            if (element[len] == '\0') break;
            element += len + 1;
        }
        if (pass == 1) *count = n + 1;
    }
    return true;
}

/* The length of the decimal number at the start of s: an optional '-', digits with at
 * most one '.' among or after them (at least one digit in all), then optionally 'e' or
 * 'E', an optional sign and digits. 0 if s does not start with one. */
static size_t decimal_length(const char *s)
{
    size_t i = s[0] == '-' ? 1 : 0, digits = 0;
    for (bool dot = false;; i++) {
        if (s[i] >= '0' && s[i] <= '9') digits++;
        else if (s[i] == '.' && !dot) dot = true;
        else break;
    }
    if (digits == 0) return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '-' || s[j] == '+') j++;
        const size_t first = j;
        while (s[j] >= '0' && s[j] <= '9') j++;
        if (j > first) i = j;
    }
    return i;
}

/* The n characters at s, which decimal_length accepted, as a finite double. */
static bool decimal_value(const char *s, size_t n, double *out)
{
    char buf[64];
    if (n >= sizeof buf) return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    const double v = strtod(buf, NULL);
    if (errno == ERANGE && v != 0.0) return false; /* overflow; underflow to 0 is a value */
    if (!isfinite(v)) return false;
    *out = v;
    return true;
}

bool parse_float(const char *text, double lo, double hi, bool hi_inclusive, float *out)
{
    const size_t n = text ? decimal_length(text) : 0;
    double v;
    if (n == 0 || text[n] != '\0' || !decimal_value(text, n, &v)) return false;
    /* The range holds for the decimal typed and for the float kept: 0.99999999 is below 1
     * but rounds to 1.0f. */
    const float f = (float)v;
    if (v < lo || v > hi || (!hi_inclusive && v == hi) || f < lo || f > hi || (!hi_inclusive && f == hi))
        return false;
    *out = f;
    return true;
}

RematStatus parse_memory_size(const char *text, size_t *bytes)
{
    static const struct { const char *unit; double scale; } UNITS[] = {
        {"", 1.0}, {"B", 1.0}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
    if (!text || !bytes) return remat_fail(REMAT_EINVAL, "memory size: no text");
    const size_t n = decimal_length(text);
    double v;
    if (n == 0 || text[0] == '-' || !decimal_value(text, n, &v) || v <= 0.0)
        return remat_fail(REMAT_EINVAL, "memory size '%s': expected a positive number and a unit (B, KiB, MiB "
                          "or GiB), e.g. 300MiB", text);
    const char *unit = text + n + (text[n] == ' ' ? 1 : 0);
    for (size_t i = 0; i < sizeof UNITS / sizeof UNITS[0]; i++) {
        if (strcmp(unit, UNITS[i].unit)) continue;
        const double b = v * UNITS[i].scale;
        if (b >= (double)SIZE_MAX || b < 1.0)
            return remat_fail(REMAT_EINVAL, "memory size '%s' is out of range", text);
        *bytes = (size_t)b;
        return REMAT_OK;
    }
    return remat_fail(REMAT_EINVAL, "memory size '%s': unknown unit '%s' (expected B, KiB, MiB or GiB)", text, unit);
}

const char *name_of(const NameTable *table, int value)
{
    return value >= 0 && value < table->count ? table->names[value] : "unknown";
}

RematStatus name_parse(const NameTable *table, const char *text, int *value)
{
    char list[256] = "";
    for (int k = 0; k < table->count; k++) {
        if (text && !strcmp(text, table->names[k])) {
            *value = k;
            return REMAT_OK;
        }
        const size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "", table->names[k]);
    }
    return remat_fail(REMAT_EINVAL, "'%s' is not one of %s", text ? text : "", list);
}
