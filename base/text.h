/*
 * text.h — text from outside (a question bank, a model's generated sample) written to a
 * terminal so that it cannot drive it.
 *
 * A terminal obeys the control characters in what it prints: ESC begins a sequence that
 * can move the cursor, retitle the window or rewrite what was printed before, and so do
 * the C1 controls (U+0080..U+009F, two bytes in UTF-8, one byte to an 8-bit terminal).
 * text_write_visible writes every such character as a visible escape instead, and every
 * other character of valid UTF-8 as it is: Arabic, ✓ and · pass untouched. Any other byte
 * that is not UTF-8 (a model's raw sample may hold some) passes too: a UTF-8 terminal shows
 * it as a replacement character, and an 8-bit one as a letter.
 *
 * Every room that reads UTF-8 a character at a time (the quiz wrapping a line, the page
 * finding Arabic) reads it with text_next_char.
 *
 * What it is not: a sanitizer for HTML or JSON (quiz/page.c escapes the page).
 */
#ifndef REMAT_TEXT_H
#define REMAT_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What text_next_char returns for a byte that does not begin valid UTF-8: above U+10FFFF. */
#define TEXT_NOT_UTF8 0x110000u

/* The code point of the UTF-8 character at s[0..len) (len >= 1), and its length in *n. A
 * byte that does not begin a valid one (RFC 3629: no overlong form, no surrogate, nothing
 * above U+10FFFF) is a character of its own: TEXT_NOT_UTF8, *n = 1. */
uint32_t text_next_char(const char *s, size_t len, size_t *n);

/* Writes `len` bytes of `text` to `out`: each C0 control but newline and tab, and DEL, as
 * \xHH; each C1 control as \u00HH, or as \xHH when it is a byte 0x80..0x9F that is not
 * part of valid UTF-8 (an 8-bit C1 control); every other byte as it is, and after each
 * newline `indent` (NULL: nothing). */
void text_write_visible(FILE *out, const char *text, size_t len, const char *indent);

#endif /* REMAT_TEXT_H */
