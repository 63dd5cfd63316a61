/*
 * train_main.c — the `train` program: parse the flags, run, exit 0 on success, 1 on a
 * failed run (the reason is printed), 2 on a bad command line. See train.h.
 */
#include <stdio.h>

#include "models/train.h"

int main(int argc, char **argv)
{
    TrainOptions opt;
    int parsed = train_parse_args(argc, argv, &opt, stdout, stderr);
    if (parsed == 1) return 0;
    if (parsed != 0) return 2;
    TrainReport report;
    RematStatus status = train_run(&opt, &report, stdout);
    train_report_free(&report);
    if (status != REMAT_OK) {
        fflush(stdout); /* block-buffered into a file: what the run printed comes first */
        fprintf(stderr, "train: %s\n", remat_last_error());
        return 1;
    }
    return 0;
}
