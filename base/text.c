/*
 * text.c — text written to a terminal with its control characters made visible (see
 * text.h).
 */
#include "base/text.h"

#include <stdbool.h>

/* The length of the valid UTF-8 character at s[0..len) (RFC 3629: no overlong form, no
 * surrogate, nothing above U+10FFFF), or 0 when it is not one. */
static size_t utf8_length(const unsigned char *s, size_t len)
{
    const size_t n = s[0] < 0x80 ? 1 : s[0] < 0xC2 ? 0 : s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : s[0] < 0xF5 ? 4 : 0;
    if (n == 0 || n > len) return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] > 0x9F) || (s[0] == 0xF0 && s[1] < 0x90) ||
        (s[0] == 0xF4 && s[1] > 0x8F))
        return 0;
    return n;
}

void text_write_visible(FILE *out, const char *text, size_t len, const char *indent)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0, n; i < len; i += n) {
        n = utf8_length(s + i, len - i);
        const bool c0 = n == 1 && ((s[i] < 0x20 && s[i] != '\n' && s[i] != '\t') || s[i] == 0x7F);
        const bool stray_c1 = n == 0 && s[i] < 0xA0; /* not UTF-8: to an 8-bit terminal, a C1 control */
        n += n == 0;                                  /* a byte that is not UTF-8 goes on its own */
        if (c0 || stray_c1) fprintf(out, "\\x%02x", s[i]);
        else if (n == 2 && s[i] == 0xC2 && s[i + 1] < 0xA0) fprintf(out, "\\u%04x", s[i + 1]); /* C1 */
        else fwrite(s + i, 1, n, out);
        if (s[i] == '\n' && indent) fputs(indent, out);
    }
}
