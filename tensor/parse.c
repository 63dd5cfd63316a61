/*
 * parse.c — reading numbers from the command line (see parse.h).
 *
 * Every parser here reads a span of characters with one helper, digits_value, which
 * accepts decimal digits and nothing else and notices overflow as it goes. Signs and
 * ranges are checked around it. No strtol: it skips leading white space and would have
 * to be told, case by case, what it let through.
 */
#include "tensor/parse.h"

#include <limits.h>
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
