/*
 * words.c — the quiz program's own words, read from the embedded words.json (see words.h).
 */
#include "quiz/words.h"

#include <stdio.h>
#include <stdlib.h>

#include "quiz/embedded.h"

const char *quiz_words_json(void)
{
    return QUIZ_WORDS_JSON;
}

const char *quiz_word(QuizLang lang, const char *key)
{
    static cJSON *words; /* parsed once, kept for the life of the program */
    if (!words) words = cJSON_Parse(QUIZ_WORDS_JSON);
    const cJSON *texts = cJSON_GetObjectItemCaseSensitive(words, key);
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(texts, QUIZ_LANG_NAMES.names[lang]);
    if (cJSON_IsString(text)) return text->valuestring;
    fprintf(stderr, "quiz: quiz/words.json has no %s text \"%s\"\n", QUIZ_LANG_NAMES.names[lang], key);
    abort();
}
