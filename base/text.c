/*
 * text.c — UTF-8 read a character at a time, and text written to a terminal with its
 * control characters made visible (see text.h).
 */
#include "base/text.h"

#include <stdbool.h>

uint32_t text_next_char(const char *s, size_t len, size_t *n)
{
    const unsigned char *u = (const unsigned char *)s;
    const size_t need = u[0] < 0x80 ? 1 : u[0] < 0xC2 ? 0 : u[0] < 0xE0 ? 2 : u[0] < 0xF0 ? 3 : u[0] < 0xF5 ? 4 : 0;
    *n = 1;
    if (need == 0 || need > len) return TEXT_NOT_UTF8;
    if ((u[0] == 0xE0 && u[1] < 0xA0) || (u[0] == 0xED && u[1] > 0x9F) || (u[0] == 0xF0 && u[1] < 0x90) ||
        (u[0] == 0xF4 && u[1] > 0x8F))
        return TEXT_NOT_UTF8;
    uint32_t c = need == 1 ? u[0] : u[0] & (0x7F >> need);
    for (size_t i = 1; i < need; i++) {
        if ((u[i] & 0xC0) != 0x80) return TEXT_NOT_UTF8;
        c = (c << 6) | (u[i] & 0x3F);
    }
    *n = need;
    return c;
}

void text_write_visible(FILE *out, const char *text, size_t len, const char *indent)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0, n; i < len; i += n) {
        const uint32_t c = text_next_char(text + i, len - i, &n);
        const bool c0 = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7F;
        const bool stray_c1 = c == TEXT_NOT_UTF8 && s[i] < 0xA0; /* to an 8-bit terminal, a C1 control */
        if (c0 || stray_c1) fprintf(out, "\\x%02x", s[i]);
        else if (c >= 0x80 && c < 0xA0) fprintf(out, "\\u%04x", c); /* C1 */
        else fwrite(s + i, 1, n, out);
        if (s[i] == '\n' && indent) fputs(indent, out);
    }
}
