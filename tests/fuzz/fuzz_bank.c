/*
 * fuzz_bank.c — libFuzzer target for the quiz's question bank (quiz/bank.c).
 *
 * Each input is a whole bank file. bank_load must refuse it with REMAT_ECORRUPT (or
 * REMAT_ENOMEM), or load exactly QUIZ_QUESTIONS questions whose every text, in both
 * languages, is a non-empty string, whose right answer is one of its options and whose
 * measurements are complete; the option orders drawn from it must be permutations. A
 * broken promise aborts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_input.h"
#include "quiz/bank.h"

static void broken(const char *what)
{
    fprintf(stderr, "fuzz_bank: %s (last error: %s)\n", what, remat_last_error());
    abort();
}

static void check_text(const QuizText *t)
{
    for (int l = 0; l < LANG_COUNT; l++)
        if (!t->lang[l] || !t->lang[l][0]) broken("a loaded text is missing or empty");
}

static void check_question(const Question *q)
{
    check_text(&q->question);
    if (q->n_parts < 1) broken("a question has no explanation");
    for (int p = 0; p < q->n_parts; p++) {
        check_text(&q->parts[p].text);
        const QuizText *o = &q->parts[p].otherwise;
        if (o->lang[0] || o->lang[1]) check_text(o); /* an `otherwise` is whole or absent */
    }
    for (int i = 0; i < QUIZ_OPTIONS; i++) check_text(&q->options[i]);
    if (q->correct < 0 || q->correct >= QUIZ_OPTIONS) broken("the right answer is not one of the options");
    if (!q->test_file || !q->test_name || !q->bench) broken("a question lost its test or bench");
    for (int m = 0; m < q->n_measurements; m++) {
        const Measurement *x = &q->measurements[m];
        if (!x->name || !x->bench || !x->table || !x->field || x->format > FORMAT_TEXT) broken("a measurement is incomplete");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    remat_clear_error();
    Bank *b = bank_load(fuzz_input_path(data, size));
    if (!b) {
        if (remat_last_status() != REMAT_ECORRUPT && remat_last_status() != REMAT_ENOMEM)
            broken("bank_load refused a bank with a status outside its contract");
        return 0;
    }
    check_text(&b->title);
    for (int q = 0; q < QUIZ_QUESTIONS; q++) check_question(&b->questions[q]);
    int orders[QUIZ_QUESTIONS][QUIZ_OPTIONS];
    bank_option_orders(size, true, orders);
    for (int q = 0; q < QUIZ_QUESTIONS; q++) {
        unsigned seen = 0;
        for (int i = 0; i < QUIZ_OPTIONS; i++)
            if (orders[q][i] >= 0 && orders[q][i] < QUIZ_OPTIONS) seen |= 1u << orders[q][i];
        if (seen != (1u << QUIZ_OPTIONS) - 1) broken("an option order is not a permutation");
    }
    bank_free(b);
    return 0;
}
