/*
 * fuzz_results.c — libFuzzer target for the benches' results as the quiz reads them
 * (quiz/explain_fill.c): every figure looked up, checked and formatted, times judged, and
 * the explanations filled.
 *
 * Each input is one results file. It is offered as the results of every bench the bank
 * quotes (a directory of symbolic links to the input's in-memory file), and every
 * question's explanation is filled in both languages. Besides a crash, a sanitizer
 * report or a leak, a finding is: a status other than REMAT_OK or REMAT_ECORRUPT; a
 * placeholder left in the text; or a time quoted while a note below says the times are
 * not taught from.
 */
#define _GNU_SOURCE /* memmem */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz_input.h"
#include "quiz/bank.h"
#include "quiz/explain_fill.h"

static void broken(int q, QuizLang lang, const char *what, const char *text)
{
    fprintf(stderr, "fuzz_results: question %d (%s): %s\n%s\n", q + 1, lang == LANG_AR ? "ar" : "en", what, text);
    abort();
}

static Bank *bank;
static char dir[512];

/* Removes the directory of links when the fuzzer exits. */
static void cleanup(void)
{
    for (int q = 0; bank && q < QUIZ_QUESTIONS; q++) {
        for (int m = 0; m < bank->questions[q].n_measurements; m++) {
            char link[1024];
            snprintf(link, sizeof link, "%s/%s.json", dir, bank->questions[q].measurements[m].bench);
            unlink(link);
        }
    }
    rmdir(dir);
    bank_free(bank);
}

/* The bank, and a directory in which every bench it quotes has results: a link to `input`. */
static const Bank *setup(const char *input)
{
    if (bank) return bank;
    if (!(bank = bank_load(REMAT_QUIZ_BANK))) {
        fprintf(stderr, "fuzz_results: %s\n", remat_last_error());
        abort();
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/remat-fuzz-results-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) abort();
    atexit(cleanup);
    for (int q = 0; q < QUIZ_QUESTIONS; q++) {
        for (int m = 0; m < bank->questions[q].n_measurements; m++) {
            char link[1024];
            snprintf(link, sizeof link, "%s/%s.json", dir, bank->questions[q].measurements[m].bench);
            if (access(link, F_OK) != 0 && symlink(input, link) != 0) abort();
        }
    }
    return bank;
}

/* What a time with its spread always holds (a piece of words.json's paired_spread). */
static const char *const SPREAD[LANG_COUNT] = {[LANG_EN] = " paired steps)", [LANG_AR] = "أزواج الخطوات: "};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const Bank *b = setup(fuzz_input_path(data, size));
    ResultsDir *results = results_open(dir);
    if (!results) abort();
    static char text[1 << 16];
    for (int q = 0; q < QUIZ_QUESTIONS; q++) {
        for (int l = 0; l < LANG_COUNT; l++) {
            const QuizLang lang = (QuizLang)l;
            remat_clear_error();
            const RematStatus s = fill_explanation(text, sizeof text, &b->questions[q], lang, results);
            if (s != REMAT_OK && s != REMAT_ECORRUPT) broken(q, lang, "a status outside the contract", text);
            const size_t first = strcspn(text, "\n");
            if (memchr(text, '{', first)) broken(q, lang, "a placeholder left in the explanation", text);
            /* A time quoted (with its spread) and a note saying the times are not taught
             * from, which every such note ends with (the end of words.json's time_instead),
             * never come together. */
            const char *instead = strstr(quiz_word(lang, "time_instead"), "%s") + 2;
            if (memmem(text, first, SPREAD[lang], strlen(SPREAD[lang])) && strstr(text + first, instead))
                broken(q, lang, "a time quoted under a note that says times are not", text);
        }
    }
    results_close(results);
    return 0;
}
