/*
 * error.c — the thread-local "last error" behind remat_last_error().
 * See error.h for the convention. Messages longer than the buffer are truncated.
 */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_message[512];
static _Thread_local RematStatus last_status = REMAT_OK;

const char *remat_last_error(void) { return last_message; }

RematStatus remat_last_status(void) { return last_status; }

void remat_clear_error(void)
{
    last_message[0] = '\0';
    last_status = REMAT_OK;
}

RematStatus remat_fail(RematStatus status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, args);
    va_end(args);
    last_status = status;
    return status;
}
