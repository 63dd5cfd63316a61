/*
 * words.h — what the quiz program itself says, in English and Arabic.
 *
 * The bank (bank.h) holds the questions; this holds the program's own words around them:
 * prompts, verdicts, the score, the notes under an explanation, and the page's own labels
 * and captions. The terminal and the page (page.h) use the same verdicts and score line,
 * so the two front ends say the same thing in the same words.
 *
 * The words are data, quiz/words.json, embedded in the program at build time
 * (quiz/CMakeLists.txt): each key a text in both languages, and an `about` saying where
 * it is said and, for a printf format (a text with %d, %c or %s), its arguments in order.
 * tests/test_quiz.c checks that the two languages of every format take the same ones.
 */
#ifndef REMAT_QUIZ_WORDS_H
#define REMAT_QUIZ_WORDS_H

#include "quiz/bank.h"

/* The text `key` of words.json in `lang` (static storage). A key that is not there is a
 * programming error: it is said on stderr, and the program aborts. */
const char *quiz_word(QuizLang lang, const char *key);

/* The whole of words.json, for the page's script (static storage). */
const char *quiz_words_json(void);

#endif /* REMAT_QUIZ_WORDS_H */
