/*
 * page.h — the quiz as one self-contained HTML page: `quiz --html FILE`.
 *
 * A browser shows Arabic right to left where most terminals cannot, and can put each
 * answer's evidence under it. The page holds the eight questions in English and Arabic
 * with a switch between them, the options in the order the terminal would show them, the
 * answer checked in the page, then the explanation filled by explain_fill.h (the same
 * words and figures the terminal prints), the test that proves the answer, the bench that
 * measures it and the plot bench/plots.sh drew of it; at the end the score with the
 * chosen and the right answers, and a footer saying when and on what machine the figures
 * were measured, as far as the results record it.
 *
 * Self-contained: the style and the script are inline (the page's template, quiz/page.html,
 * is embedded in the program), the plots are data: URIs, and a
 * Content-Security-Policy forbids the page any other source. A URL fragment
 * `#lang=ar&answers=1,3,2,...` chooses the language and answers the questions (each
 * number an option in the bank's own order, as `quiz --no-shuffle` shows them), so a
 * result can be shared and a test can answer through the page itself. Without JavaScript
 * every question stays readable, its answer inside a <details>.
 *
 * What it is not: a server or a template engine. The page is written once, top to bottom.
 */
#ifndef REMAT_QUIZ_PAGE_H
#define REMAT_QUIZ_PAGE_H

#include "quiz/explain_fill.h"

/* What a page is made from; every pointer is borrowed. */
typedef struct PageSources {
    const Bank *bank;
    const char *bank_file;              /* the file the bank was loaded from */
    const int (*orders)[QUIZ_OPTIONS]; /* per question, the option order shown (bank_option_orders) */
    ResultsDir *results;                /* the benches' results: figures and the footer */
    const char *plots_dir;              /* the PNGs bench/plots.sh drew from those results */
} PageSources;

/* Writes the page to `path` atomically: into a temporary file beside it, without a name
 * while it is written where the file system allows (O_TMPFILE: a kill leaves nothing),
 * renamed over `path` once complete, so a reader never sees half a page. `path` must be
 * absent or a regular file in a directory this process can write (file_check_writable),
 * and not one of the page's inputs (the bank, a results file, a plot: compared as files,
 * not names): anything else is refused with REMAT_EIO or REMAT_EINVAL before anything is
 * built, never replaced. Returns REMAT_OK; REMAT_EIO naming the file and the reason when
 * the page cannot be written (the temporary file is removed and whatever was at `path` is
 * left untouched). A results file or plot that exists but is malformed does not stop the
 * page: the page says so in place of the figure or plot, and page_write returns
 * REMAT_ECORRUPT naming it after writing the page. */
RematStatus page_write(const char *path, const PageSources *src);

#endif /* REMAT_QUIZ_PAGE_H */
