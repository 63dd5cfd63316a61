/*
 * model_file.h — a model's parameters, and optionally everything needed to resume its
 * training bit for bit, in one safetensors file.
 *
 * Tensors are stored under the parameters' own names, which for the GPT are Hugging Face
 * GPT-2's ("wte.weight", "h.0.attn.c_attn.weight" stored [in, out], ...), so a file loads
 * into PyTorch by name. A training file adds the optimizer's state ("optim.m.<name>",
 * "optim.v.<name>" for AdamW; "optim.velocity.<name>" for SGD with momentum) and, in the
 * metadata, the step count and both generators' states (batch sampling and dropout).
 *
 * Writes are atomic (temp file, fsync, rename): a crash or a full disk leaves the previous
 * file whole. Loads are all-or-nothing: every tensor is read and checked before any
 * parameter is overwritten.
 */
#ifndef REMAT_MODEL_FILE_H
#define REMAT_MODEL_FILE_H

#include "models/model.h"
#include "app/safetensors.h"

/* Where a training run is, beyond its parameters and optimizer state. */
typedef struct TrainState {
    int step;          /* steps completed */
    Pcg32 data_rng;    /* draws the training batches */
    Pcg32 dropout_rng; /* draws dropout masks (TrainCtx.rng) */
} TrainState;

/* Writes the model's parameters to `path`; with `opt` and `state` (both or neither),
 * also the optimizer state and the training state. `meta` (n_meta entries, may be NULL)
 * adds string metadata such as the model's configuration. REMAT_EIO on a write failure,
 * and REMAT_EINVAL, naming the tensor and the element, when a tensor to be saved holds a
 * NaN or an infinity (a diverged run); either way any old file at `path` is untouched. */
RematStatus model_save(const Model *model, const Optimizer *opt, const TrainState *state,
                       const StMeta *meta, int n_meta, const char *path);

/* Reads parameters (and, when `opt` and `state` are given, the optimizer and training
 * state) from the file at `path` into an already built model of the same configuration:
 * from `file` when the caller has it open (st_load; it stays the caller's), having read
 * its configuration (st_meta) before building the model it belongs to, so that the file
 * is opened and parsed once; else opened here. On error — a missing file or one that is
 * not a regular file (REMAT_EIO), a bad file, one for another configuration
 * (REMAT_ECORRUPT, naming the tensor and both dtypes and shapes), a tensor holding a NaN
 * or an infinity, or an AdamW second moment holding a negative value (REMAT_ECORRUPT,
 * naming the tensor and the element), or training metadata that is not exactly as
 * model_save writes it (REMAT_ECORRUPT, naming the key) — changes nothing. */
RematStatus model_load(Model *model, Optimizer *opt, TrainState *state, const char *path, const StFile *file);

#endif /* REMAT_MODEL_FILE_H */
