/*
 * html_text.h — text written into HTML, in the quiz's language (quiz/ keeps it to itself;
 * page.c is its user).
 *
 * Every text from the bank or the results goes through html_text, which escapes it for
 * HTML and, in Arabic, isolates each left-to-right run — a number with its unit, a file
 * name, code, a formula — in <bdi dir="ltr">. Inside a right-to-left sentence the Unicode
 * bidirectional algorithm otherwise resolves the brackets, signs and spaces at a run's
 * edges by the Arabic around them, and "O(N²)" or "+21.0%" can come out with a bracket or
 * its sign on the wrong side. English text is only escaped: it holds no right-to-left
 * text to isolate.
 *
 * What it is not: a general bidi implementation. It knows the Arabic script's blocks and
 * the punctuation the bank uses, and leaves the rest to the browser.
 */
#ifndef REMAT_QUIZ_HTML_TEXT_H
#define REMAT_QUIZ_HTML_TEXT_H

#include <stddef.h>
#include <stdio.h>

#include "quiz/bank.h"

/* Writes `len` bytes of `s` with &, <, >, " and ' escaped: safe as element text and
 * inside a double-quoted attribute. */
void html_escaped(FILE *out, const char *s, size_t len);

/* Writes `len` bytes of UTF-8 text `s` as HTML text in `lang`: escaped, and in Arabic each
 * left-to-right run isolated in <bdi dir="ltr">. */
void html_text(FILE *out, const char *s, size_t len, QuizLang lang);

/* html_text of a NUL-terminated string. */
void html_string(FILE *out, const char *s, QuizLang lang);

/* Writes a quiz_word format in `lang` whose conversions (%s, %c, %d; no %%) are all given as
 * strings in `args`, in order, each wrapped in <tag> when `tag` is not NULL. */
void html_words(FILE *out, QuizLang lang, const char *format, const char *const *args, const char *tag);

/* Writes the JSON text `json` for a <script type="application/json">: <, > and & (found
 * only inside its strings) as \u escapes, so that it cannot end its <script>. */
void html_json(FILE *out, const char *json);

#endif /* REMAT_QUIZ_HTML_TEXT_H */
