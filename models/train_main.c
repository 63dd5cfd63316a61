/*
 * train_main.c — the `train` program: parse the flags, run, exit 0 on success, 1 on a
 * failed run or output that could not be written (the reason is printed), 2 on a bad
 * command line. See train.h.
 */
#include <stdio.h>

#include "models/train.h"
#include "tensor/file.h"

int main(int argc, char **argv)
{
    file_size_limit_as_error(); /* ulimit -f: "File too large", and offload redoes the step in RAM */
    TrainOptions opt;
    const int parsed = train_parse_args(argc, argv, &opt, stdout, stderr);
    if (parsed == 2) return 2;
    RematStatus status = REMAT_OK;
    if (parsed == 0) {
        TrainReport report;
        status = train_run(&opt, &report, stdout);
        train_report_free(&report);
    }
    /* What the run printed comes before its error (stdout is block-buffered into a file),
     * and a run whose output could not be written has failed too. */
    char why[1024];
    snprintf(why, sizeof why, "%s", status != REMAT_OK ? remat_last_error() : "");
    if (file_flush_stdout() != REMAT_OK) fprintf(stderr, "train: %s\n", remat_last_error());
    else if (status == REMAT_OK) return 0;
    if (status != REMAT_OK) fprintf(stderr, "train: %s\n", why);
    return 1;
}
