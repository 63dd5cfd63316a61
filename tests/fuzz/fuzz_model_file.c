/*
 * fuzz_model_file.c — libFuzzer target for model files as train reads them: model_load
 * into a training run (a 2-layer MLP chain of width 4 with AdamW, the model
 * make_model_seeds writes files for) and st_meta, as train reads a resumed file's
 * configuration.
 *
 * Each input is a whole file. model_load must either accept it — and then every
 * parameter and optimizer value is finite and the generators' increments are odd — or
 * refuse it with REMAT_EIO, REMAT_ECORRUPT or REMAT_ENOMEM and change nothing: not a
 * byte of the parameters or optimizer state, not the training state. A broken promise
 * aborts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_input.h"
#include "models/mlp.h"
#include "app/model_file.h"

static Model *model;
static Optimizer *opt;
static size_t baseline_blocks; /* the ledger's blocks once the run is built */

static void broken(const char *what)
{
    fprintf(stderr, "fuzz_model_file: %s (last error: %s)\n", what, remat_last_error());
    abort();
}

/* Every tensor model_load may write: the parameters and both AdamW states of each. */
static int tensors_of_the_run(Tensor **out)
{
    int n = 0;
    for (int i = 0; i < model->n_params; i++) {
        out[n++] = model->params[i].var->value;
        optim_state(opt, i, &out[n], &out[n + 1]);
        n += 2;
    }
    return n;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    model = mlp_create(&(MlpConfig){.n_layers = 2, .width = 4, .seed = 1});
    OptimConfig config = optim_adamw_defaults(1e-3f);
    opt = model ? optim_create(&config, model->params, model->n_params) : NULL;
    if (!opt) broken("cannot build the model the files are loaded into");
    baseline_blocks = mem_live_blocks();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(data, size);
    Tensor *live[64];
    const int n = tensors_of_the_run(live);
    unsigned char *before[64];
    for (int i = 0; i < n; i++) {
        before[i] = malloc(live[i]->bytes);
        if (!before[i]) broken("no memory for the snapshot");
        memcpy(before[i], live[i]->data, live[i]->bytes);
    }
    TrainState state = {.step = -1}, state_before = state;

    remat_clear_error();
    if (model_load(model, opt, &state, path, NULL) == REMAT_OK) {
        for (int i = 0; i < n; i++)
            for (size_t k = 0; k < live[i]->numel; k++)
                if (!isfinite(live[i]->f32[k])) broken("a loaded value is not finite");
        if (state.step < 0 || !(state.data_rng.inc & 1) || !(state.dropout_rng.inc & 1))
            broken("the loaded training state is not one model_save writes");
    } else {
        const RematStatus s = remat_last_status();
        if (s != REMAT_EIO && s != REMAT_ECORRUPT && s != REMAT_ENOMEM) broken("model_load failed with another status");
        for (int i = 0; i < n; i++)
            if (memcmp(before[i], live[i]->data, live[i]->bytes) != 0) broken("a failed load changed a tensor");
        if (memcmp(&state, &state_before, sizeof state) != 0) broken("a failed load changed the training state");
    }
    for (int i = 0; i < n; i++) free(before[i]);

    StFile *opened = st_load(path); /* how train reads a resumed file's configuration */
    if (opened) (void)st_meta(opened, "remat.step");
    st_close(opened);
    if (mem_live_blocks() != baseline_blocks) broken("tensors left in the ledger");
    return 0;
}
