/*
 * train_main.c — the `train` program: parse the flags, run, exit 0 on success, 1 on a
 * failed run or output that could not be written (the reason is printed), 2 on a bad
 * command line. See train.h.
 *
 * Under mpirun (`mpirun -np K build/app/train ...`) it is one rank of K: rank 0 prints
 * the training log and what is wrong with a bad command line (every rank exits 2 on it),
 * every rank prints the errors of its run, prefixed with its rank, and a rank that fails
 * ends the whole job (the others would wait for it in the next collective).
 * Started plainly it is a single process and calls nothing of parallel/.
 */
#include "parallel/group.h"
#include "app/train.h"
#include "base/file.h"

int main(int argc, char **argv)
{
    file_size_limit_as_error(); /* ulimit -f: "File too large", and offload redoes the step in RAM */
    const bool launched = dist_under_launcher();
    DistGroup world = {.rank = 0, .size = 1};
    if (launched && dist_init(&argc, &argv, &world) != REMAT_OK) {
        fprintf(stderr, "train: %s\n", remat_last_error());
        return 1;
    }
    FILE *out = world.rank == 0 ? stdout : fopen("/dev/null", "w");
    if (!out) {
        fprintf(stderr, "train: rank %d: cannot open /dev/null for its log\n", world.rank);
        dist_abort(1);
    }
    /* Every rank sees the same command line and reaches the same verdict: rank 0 alone
     * says what is wrong with it, and all end quietly, none waiting for another. */
    TrainOptions opt;
    const int parsed = train_parse_args(argc, argv, &opt, out, world.rank == 0 ? stderr : out);
    const RematStatus status = parsed == 0 ? train_run(&opt, NULL, out) : REMAT_OK;
    if (status != REMAT_OK && world.size > 1) {
        fflush(stdout); /* block-buffered into a file: what the run printed comes first */
        fprintf(stderr, "train: rank %d of %d: %s\n", world.rank, world.size, remat_last_error());
        fflush(stderr);
        dist_abort(1);
    }
    if (out != stdout) fclose(out);
    /* What the run printed comes before its error (stdout is block-buffered into a file),
     * and a run whose output could not be written has failed too. */
    char why[1024];
    snprintf(why, sizeof why, "%s", status != REMAT_OK ? remat_last_error() : "");
    const RematStatus flushed = file_flush_stdout();
    if (launched) dist_finalize();
    if (flushed != REMAT_OK) fprintf(stderr, "train: %s\n", remat_last_error());
    if (status != REMAT_OK) fprintf(stderr, "train: %s\n", why);
    return parsed == 2 ? 2 : status != REMAT_OK || flushed != REMAT_OK ? 1 : 0;
}
