/*
 * progress.c — the progress bar (see progress.h).
 */
#include "base/progress.h"

#include <string.h>
#include <unistd.h>

enum { BAR_WIDTH = PROGRESS_BAR_SIZE - 3, LABEL_WIDTH = 48 };

char *progress_bar(char buf[PROGRESS_BAR_SIZE], int done, int total)
{
    const int filled = total > 0 ? (int)((long)BAR_WIDTH * done / total) : BAR_WIDTH;
    buf[0] = '[';
    for (int i = 0; i < BAR_WIDTH; i++) buf[1 + i] = i < filled ? '#' : '.';
    buf[BAR_WIDTH + 1] = ']';
    buf[BAR_WIDTH + 2] = '\0';
    return buf;
}

void progress_begin(Progress *p, FILE *out, int total)
{
    *p = (Progress){.out = out, .total = total, .tty = isatty(fileno(out)) == 1};
}

void progress_set(Progress *p, int done, const char *label)
{
    p->done = done;
    if (p->tty) {
        char bar[PROGRESS_BAR_SIZE];
        fprintf(p->out, "\r  %s %4d/%-4d %-*.*s", progress_bar(bar, p->done, p->total), p->done, p->total,
                LABEL_WIDTH, LABEL_WIDTH, label);
    } else if (strcmp(label, p->label) != 0) {
        fprintf(p->out, "  measuring %s (%d/%d)\n", label, p->done, p->total);
    }
    snprintf(p->label, sizeof p->label, "%s", label);
    fflush(p->out);
}

void progress_tick(Progress *p, const char *label)
{
    progress_set(p, p->done + 1, label);
}

void progress_end(Progress *p)
{
    if (p->tty) fprintf(p->out, "\r%*s\r", BAR_WIDTH + LABEL_WIDTH + 16, "");
    fflush(p->out);
}
