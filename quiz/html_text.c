/*
 * html_text.c — escaping, and isolating left-to-right runs in Arabic (see html_text.h).
 *
 * How a run is found: the text is cut into stretches that hold no Arabic character; in
 * each, the run goes from its first to its last character that carries meaning (a Latin
 * letter or digit, or a symbol such as ² or √: is_run_char), then widens to the
 * punctuation that belongs to it (widen_run): the sign before a number, the percent sign
 * after it, the brackets it opened, and a pair of brackets or quotes around it. What is
 * left at a stretch's edges — spaces, a colon, a bracket the Arabic opened — stays with
 * the sentence. "(النظرية: 0.5 و1)" isolates "0.5" and "1" and leaves both brackets Arabic.
 */
#include "quiz/html_text.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

void html_escaped(FILE *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        switch (s[i]) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(s[i], out);
        }
    }
}

/* The code point of the UTF-8 sequence at s[0..len) and its length in *n (a malformed
 * byte counts as one character of its own, U+FFFD). */
static uint32_t next_char(const char *s, size_t len, size_t *n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t need = u[0] < 0x80 ? 1 : u[0] >= 0xF0 ? 4 : u[0] >= 0xE0 ? 3 : u[0] >= 0xC0 ? 2 : 0;
    if (need == 0 || need > len) {
        *n = 1;
        return 0xFFFD;
    }
    uint32_t c = need == 1 ? u[0] : u[0] & (0x7F >> need);
    for (size_t i = 1; i < need; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            *n = 1;
            return 0xFFFD;
        }
        c = (c << 6) | (u[i] & 0x3F);
    }
    *n = need;
    return c;
}

/* Letters, digits and punctuation of the Arabic script (its main and presentation-form
 * blocks). */
static bool is_arabic(uint32_t c)
{
    return (c >= 0x0600 && c <= 0x06FF) || (c >= 0x0750 && c <= 0x077F) || (c >= 0x08A0 && c <= 0x08FF) ||
           (c >= 0xFB50 && c <= 0xFDFF) || (c >= 0xFE70 && c <= 0xFEFF);
}

/* A character that carries a left-to-right run's meaning: a Latin letter or digit, or a
 * symbol such as ², ᵀ, √, · or ×. Spaces, ASCII punctuation, general punctuation (dashes,
 * quotation marks) and the no-break space are not: they belong to the sentence around. */
static bool is_run_char(uint32_t c)
{
    if (c < 0x80) return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
    return !is_arabic(c) && c != 0xA0 && c != 0xAB && c != 0xBB && !(c >= 0x2000 && c <= 0x206F);
}

/* Widens the left-to-right run s[*start..*end) inside the non-Arabic stretch s[from..to)
 * to the punctuation that belongs to it: a sign before a number, a percent sign after
 * one, the closing brackets of brackets it opened, and a pair of brackets or quotation
 * marks around it. */
static void widen_run(const char *s, size_t from, size_t to, size_t *start, size_t *end)
{
    if (*start > from && (s[*start - 1] == '+' || s[*start - 1] == '-') && s[*start] >= '0' && s[*start] <= '9')
        (*start)--;
    if (*end < to && s[*end] == '%') (*end)++;
    int open = 0;
    for (size_t i = *start; i < *end; i++) open += (s[i] == '(') - (s[i] == ')');
    while (open > 0 && *end < to && s[*end] == ')') {
        (*end)++;
        open--;
    }
    while (*start > from && *end < to &&
           ((s[*start - 1] == '(' && s[*end] == ')') || (s[*start - 1] == '"' && s[*end] == '"'))) {
        (*start)--;
        (*end)++;
    }
}

void html_text(FILE *out, const char *s, size_t len, QuizLang lang)
{
    if (lang != LANG_AR) {
        html_escaped(out, s, len);
        return;
    }
    size_t i = 0;
    while (i < len) {
        size_t n, j = i, start = 0, end = 0;
        bool found = false;
        while (j < len) { /* the stretch s[i..j) holds no Arabic character */
            uint32_t c = next_char(s + j, len - j, &n);
            if (is_arabic(c)) break;
            if (is_run_char(c)) {
                if (!found) start = j;
                found = true;
                end = j + n;
            }
            j += n;
        }
        if (found) {
            widen_run(s, i, j, &start, &end);
            html_escaped(out, s + i, start - i);
            fputs("<bdi dir=\"ltr\">", out);
            html_escaped(out, s + start, end - start);
            fputs("</bdi>", out);
            html_escaped(out, s + end, j - end);
        } else {
            html_escaped(out, s + i, j - i);
        }
        i = j; /* then the Arabic that follows, as it is */
        while (i < len && is_arabic(next_char(s + i, len - i, &n))) i += n;
        html_escaped(out, s + j, i - j);
    }
}

void html_string(FILE *out, const char *s, QuizLang lang)
{
    html_text(out, s, strlen(s), lang);
}

void html_words(FILE *out, QuizLang lang, const char *format, const char *const *args, const char *tag)
{
    const char *p = format;
    for (const char *conv; (conv = strchr(p, '%')) != NULL; p = conv + 2) {
        html_text(out, p, (size_t)(conv - p), lang);
        if (tag) fprintf(out, "<%s>", tag);
        html_string(out, *args++, lang);
        if (tag) fprintf(out, "</%s>", tag);
    }
    html_string(out, p, lang);
}

void html_json(FILE *out, const char *json)
{
    for (const char *c = json; *c; c++) {
        if (*c == '<' || *c == '>' || *c == '&') fprintf(out, "\\u%04x", *c);
        else fputc(*c, out);
    }
}
