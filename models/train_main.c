/*
 * train_main.c — the `train` program: parse the flags, run, exit 0 on success, 1 on a
 * failed run (the reason is printed), 2 on a bad command line. See train.h.
 *
 * Under mpirun (`mpirun -np K build/models/train ...`) it is one rank of K: rank 0 prints
 * the training log, every rank prints its own errors, prefixed with its rank, and a rank
 * that fails ends the whole job (the others would wait for it in the next collective).
 * Started plainly it is a single process and never starts MPI.
 */
#include <stdio.h>

#include "dist/group.h"
#include "models/train.h"

int main(int argc, char **argv)
{
    DistGroup world;
    if (dist_init(&argc, &argv, &world) != REMAT_OK) {
        fprintf(stderr, "train: %s\n", remat_last_error());
        return 1;
    }
    FILE *out = world.rank == 0 ? stdout : fopen("/dev/null", "w");
    if (!out) {
        fprintf(stderr, "train: rank %d: cannot open /dev/null for its log\n", world.rank);
        dist_abort(1);
    }
    TrainOptions opt;
    int parsed = train_parse_args(argc, argv, &opt, out, stderr);
    if (parsed != 0) {
        if (world.size > 1 && parsed == 2) dist_abort(2); /* every rank saw the same command line */
        dist_finalize();
        return parsed == 1 ? 0 : 2;
    }
    TrainReport report;
    RematStatus status = train_run(&opt, &report, out);
    train_report_free(&report);
    if (status != REMAT_OK) {
        fflush(stdout); /* block-buffered into a file: what the run printed comes first */
        if (world.size > 1) {
            fprintf(stderr, "train: rank %d of %d: %s\n", world.rank, world.size, remat_last_error());
            fflush(stderr);
            dist_abort(1);
        }
        fprintf(stderr, "train: %s\n", remat_last_error());
        return 1;
    }
    if (out != stdout) fclose(out);
    dist_finalize();
    return 0;
}
