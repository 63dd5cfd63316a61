/*
 * paper_accounting.h — train --predict-only --accounting paper: a transformer layer's
 * activation bytes as Korthikanti et al. count them ("Reducing Activation Recomputation in
 * Large Transformer Models", 2022: section 4, Table 2), and as the Hugging Face
 * Ultra-Scale Playbook plots them for its Llama presets.
 *
 * Their assumptions, not remat's: 16-bit values, 1-byte dropout masks, unfused attention
 * (every head's (s,s) scores kept), a 4h GeLU MLP, and Megatron's tensor parallelism of
 * degree t splitting the attention and MLP matmuls; no sequence parallelism, pipelines or
 * head. remat keeps fp32 values, has no tensor parallelism, and predicts its own step exactly.
 */
#ifndef REMAT_APP_PAPER_ACCOUNTING_H
#define REMAT_APP_PAPER_ACCOUNTING_H

#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "checkpoint/schedule.h"

/* The paper's letters: s tokens per sequence, b sequences, h channels, a heads, L layers,
 * t the tensor-parallel degree (1: none). */
typedef struct PaperShape {
    uint64_t s, b, h, a;
    int layers, t;
} PaperShape;

/* The bytes kept for backward under none, selective (the attention scores recomputed) or
 * full (each layer's input kept): *per_layer, Table 2's row, and *total, L of them and the
 * embedding's dropout mask (sbh bytes, section 4.3), which is what the Playbook's figures
 * plot. REMAT_EINVAL, nothing written, for another strategy, an empty shape, or a t that
 * does not divide the heads. */
RematStatus paper_activations(const PaperShape *p, StrategyKind strategy, uint64_t *per_layer, uint64_t *total);

/* Prints the table of the tensors counted and the sums, in bytes and in the Playbook's GB
 * (2^30 bytes); writes the sums to `results` (if not NULL) as JSON under "paper".
 * REMAT_EINVAL as above; REMAT_EIO for the file. */
RematStatus paper_accounting_report(const PaperShape *p, StrategyKind strategy, const char *results, FILE *out);

#endif /* REMAT_APP_PAPER_ACCOUNTING_H */
