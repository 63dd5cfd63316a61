/*
 * make_model_seeds.c — writes the valid files of the committed seed corpora in
 * tests/fuzz/corpus/: a training file and a parameters-only file of the run that
 * fuzz_model_file loads into, and a file of every dtype for fuzz_safetensors. The bad
 * inputs beside them were written by hand from issue 16 and the tests.
 *
 *     make_model_seeds CORPUS_DIR     (writes CORPUS_DIR/model_file/... and .../safetensors/...)
 */
#include <stdio.h>
#include <string.h>

#include "models/mlp.h"
#include "app/model_file.h"

static int check(RematStatus status)
{
    if (status != REMAT_OK) fprintf(stderr, "make_model_seeds: %s\n", remat_last_error());
    return status != REMAT_OK;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_model_seeds CORPUS_DIR\n");
        return 2;
    }
    Model *model = mlp_create(&(MlpConfig){.n_layers = 2, .width = 4, .seed = 1});
    OptimConfig config = optim_adamw_defaults(1e-3f);
    Optimizer *opt = model ? optim_create(&config, model->params, model->n_params) : NULL;
    if (!opt) return check(REMAT_ENOMEM);
    TrainState state = {.step = 3};
    pcg32_seed(&state.data_rng, 1337, 0xda7a);
    pcg32_seed(&state.dropout_rng, 1337, 0xd0);
    const StMeta meta[] = {{"remat.model", "mlp"}, {"remat.layers", "2"}, {"remat.d_model", "4"}};

    char path[4096];
    int failed = 0;
    snprintf(path, sizeof path, "%s/model_file/training.safetensors", argv[1]);
    failed |= check(model_save(model, opt, &state, meta, 3, path));
    snprintf(path, sizeof path, "%s/model_file/parameters.safetensors", argv[1]);
    failed |= check(model_save(model, NULL, NULL, meta, 3, path));

    Tensor *ids = tensor_create(MEM_WORK, DTYPE_I32, 1, (int[]){3});
    Tensor *mask = tensor_create(MEM_WORK, DTYPE_U8, 3, (int[]){1, 2, 3});
    if (!ids || !mask) return check(REMAT_ENOMEM);
    memset(ids->data, 7, ids->bytes);
    memset(mask->data, 1, mask->bytes);
    const StEntry entries[] = {{"wte.weight", model->params[0].var->value}, {"ids", ids}, {"mask", mask}};
    snprintf(path, sizeof path, "%s/safetensors/every_dtype.safetensors", argv[1]);
    failed |= check(st_save(path, entries, 3, meta, 1));

    tensor_free(ids);
    tensor_free(mask);
    optim_free(opt);
    model_free(model);
    return failed;
}
