/*
 * words.h — what the quiz program itself says, in English and Arabic.
 *
 * The bank (bank.h) holds the questions; this holds the program's own words around them:
 * prompts, verdicts, the score, the notes under an explanation, and the page's own labels
 * and captions. The terminal and the page (page.h) use the same verdicts and score line,
 * so the two front ends say the same thing in the same words. Texts with %d, %c or %s are
 * printf formats, their arguments in the order the comment gives.
 */
#ifndef REMAT_QUIZ_WORDS_H
#define REMAT_QUIZ_WORDS_H

#include "quiz/bank.h"

typedef struct QuizWords {
    const char *question_of;  /* %d question number, %d questions: "Question 1 of 8" */
    const char *your_answer;  /* the terminal's prompt */
    const char *invalid;      /* an answer that is not 1-4 or a-d */
    const char *right, *wrong; /* the verdict */
    const char *correct_was;  /* %c the option's number as shown, %s its text */
    const char *proof;        /* %s test file, %s test name */
    const char *measure;      /* %s the bench's program: "build/bench/bench_scaling" */
    const char *score;        /* %d right answers, %d questions: "Score: 8 of 8" */
    const char *chosen, *the_answer; /* the score's list: "your answer: ... · the answer: ..." */
    const char *preview_note; /* after the preview, without a terminal */
    const char *ended;        /* end of input before the last question */
    const char *next;         /* after an explanation, when the answers are typed */
    const char *no_bidi;      /* Arabic in a terminal that may not shape it: names the page */

    /* A time quoted with its spread: %s the value, %s and %s the interval's bounds, %d
     * the samples: "+28.5% (+24.1% to +31.0%, 9 paired steps)". A ratio of times comes
     * from paired steps, a time from timed steps. */
    const char *paired_spread, *timed_spread;
    const char *slower, *faster; /* %s a change's size: "4.0% slower", by its sign */

    /* Where a question's figures come from: %s the runs, each "bench (how, date)". */
    const char *sources;
    const char *quick_run, *full_run, *unrecorded_run, *undated;

    /* Notes below an explanation, about its figures (%s a bench's program). */
    const char *not_run;      /* %s program: no results file */
    const char *not_recorded; /* %s results file, %s program: no matching record */
    const char *unreadable;   /* %s what is wrong with the results file, %s program */
    const char *invalid_figure; /* %s field, %s results file, %s why (invalid_why), %s program */
    const char *invalid_why[7]; /* explain_fill.c's FigureProblem, in its order */
    const char *out_of_order;   /* the last FigureProblem: %s the other field, %s the bank's why */

    /* Why the times are not taught from, then what the explanation does instead. */
    const char *time_busy;    /* %s program, %s others' CPU share, %s steal, %s load, %d cores */
    const char *time_unknown; /* %s program */
    const char *time_few;     /* %s program, %s the figure with its spread */
    const char *time_wide;    /* %s program, %s the figure with its spread */
    const char *time_few_left_out;  /* %s program, %s the figure with its spread, %s program */
    const char *time_wide_left_out; /* %s program, %s the figure with its spread, %s program */
    const char *time_contradicted; /* %s program, %s the bank's clause with the figures */
    const char *time_quick;   /* %s program, %s the question's quick_times (bank.h) */
    const char *time_instead; /* %s program */
    const char *time_instead_full; /* %s program: after time_quick */

    /* The page's own (page.h). */
    const char *language_name;               /* in its own language, for the switch */
    const char *noscript;                    /* with JavaScript off */
    const char *answer_summary;              /* the <details> that holds the answer */
    const char *plot_missing;                /* %s plot file, %s results dir, %s plots dir */
    const char *plot_broken;                 /* %s plot file: present but not a readable PNG */
    const char *plot_caption;                /* %s plot file */
    const char *result_title, *again;        /* the score section */
    const char *footer_title;                /* where the figures come from */
    const char *when, *commit, *cpu, *threads, *load, *mode, *system, *benches; /* footer labels */
    const char *no_results;                  /* %s results dir: nothing there */
    const char *unrecorded;                  /* a footer field the results do not hold */
    const char *cpu_line;                    /* %s cores, %s OpenBLAS core */
    const char *load_line;                   /* %s others' CPU share, %s load before, %s after, %s CPU steal */
    const char *dirty, *clean;               /* after the commit */
    const char *quick, *full;                /* the benches' modes */
    const char *range;                       /* %s first date, %s last date */
    const char *comma, *semicolon;           /* between the items of a list */
} QuizWords;

/* The words of `lang` (static storage). */
const QuizWords *quiz_words(QuizLang lang);

#endif /* REMAT_QUIZ_WORDS_H */
