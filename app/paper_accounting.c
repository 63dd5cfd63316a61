/*
 * paper_accounting.c — Korthikanti et al.'s count of a layer's activations (see
 * paper_accounting.h) as one table, a row per tensor their section 4.1 says backward needs.
 */
#include "app/paper_accounting.h"

#include <inttypes.h>

#include "base/file.h"

/* One tensor kept for backward: `values` of them per token and channel (sbh), or per
 * attention score (as²b) when `scores`. */
typedef struct PaperTensor {
    const char *name;
    int bytes;      /* per value: 2 (16-bit) or 1 (a dropout mask) */
    int values;
    bool scores;
    bool split;     /* by t: made inside the tensor-parallel matmuls, so each rank keeps 1/t */
    bool selective; /* kept under selective recomputation (which remakes the scores alone) */
    bool full;      /* kept under full recomputation: the layer's input alone */
} PaperTensor;

/* Section 4.1's tensors, in the layer's order; Table 2 sums the columns: outside the
 * split matmuls 10sbh (2 + 2 + 1 + 2 + 2 + 1), inside them 24sbh (4 + 2 + 2 + 8 + 8) and
 * 5as²b (2 + 1 + 2); selective drops the 5as²b; full keeps the 2sbh of the first row. */
static const PaperTensor PAPER_TENSORS[] = {
    {.name = "LayerNorm 1 input (the layer's)", .bytes = 2, .values = 1, .selective = true, .full = true},
    {.name = "Q, K, V matmuls' input", .bytes = 2, .values = 1, .selective = true},
    {.name = "Q and K, for QK^T", .bytes = 2, .values = 2, .split = true, .selective = true},
    {.name = "softmax output", .bytes = 2, .values = 1, .scores = true, .split = true},
    {.name = "softmax dropout mask", .bytes = 1, .values = 1, .scores = true, .split = true},
    {.name = "dropped-out probabilities", .bytes = 2, .values = 1, .scores = true, .split = true},
    {.name = "V", .bytes = 2, .values = 1, .split = true, .selective = true},
    {.name = "output projection input", .bytes = 2, .values = 1, .split = true, .selective = true},
    {.name = "attention dropout mask", .bytes = 1, .values = 1, .selective = true},
    {.name = "LayerNorm 2 input", .bytes = 2, .values = 1, .selective = true},
    {.name = "MLP first linear input", .bytes = 2, .values = 1, .selective = true},
    {.name = "GeLU input (4h)", .bytes = 2, .values = 4, .split = true, .selective = true},
    {.name = "MLP second linear input (4h)", .bytes = 2, .values = 4, .split = true, .selective = true},
    {.name = "MLP dropout mask", .bytes = 1, .values = 1, .selective = true},
};
enum { N_PAPER_TENSORS = sizeof PAPER_TENSORS / sizeof PAPER_TENSORS[0] };

static bool kept(const PaperTensor *x, StrategyKind strategy)
{
    return strategy == STRATEGY_NONE || (strategy == STRATEGY_SELECTIVE ? x->selective : x->full);
}

/* The bytes of `x` on one rank: exact, since t divides the heads and so h (h = a · head size). */
static uint64_t tensor_bytes(const PaperTensor *x, const PaperShape *p)
{
    const uint64_t values = (uint64_t)x->values * (x->scores ? p->a * p->s * p->s * p->b : p->s * p->b * p->h);
    return (uint64_t)x->bytes * (x->split ? values / (uint64_t)p->t : values);
}

RematStatus paper_activations(const PaperShape *p, StrategyKind strategy, uint64_t *per_layer, uint64_t *total)
{
    if (strategy != STRATEGY_NONE && strategy != STRATEGY_SELECTIVE && strategy != STRATEGY_FULL)
        return remat_fail(REMAT_EINVAL, "--accounting paper counts the paper's three strategies, none, selective "
                          "and full; not --strategy %s", name_of(&STRATEGY_NAMES, strategy));
    if (!p->s || !p->b || !p->h || !p->a || p->layers < 1 || p->t < 1 || p->h % p->a || p->a % (uint64_t)p->t)
        return remat_fail(REMAT_EINVAL, "--accounting paper needs t to divide the heads, and the heads the channels; "
                          "got h %" PRIu64 ", a %" PRIu64 ", t %d", p->h, p->a, p->t);
    uint64_t layer = 0;
    for (int i = 0; i < N_PAPER_TENSORS; i++)
        if (kept(&PAPER_TENSORS[i], strategy)) layer += tensor_bytes(&PAPER_TENSORS[i], p);
    *per_layer = layer;
    *total = (uint64_t)p->layers * layer + p->s * p->b * p->h;
    return REMAT_OK;
}

RematStatus paper_accounting_report(const PaperShape *p, StrategyKind strategy, const char *results, FILE *out)
{
    uint64_t per_layer, total;
    if (paper_activations(p, strategy, &per_layer, &total) != REMAT_OK) return remat_last_status();
    fprintf(out, "activations as Korthikanti et al. count them (--accounting paper: 16-bit values, 1-byte dropout "
            "masks,\nunfused attention), s %" PRIu64 ", b %" PRIu64 ", h %" PRIu64 ", a %" PRIu64 ", t %d, strategy "
            "%s:\n  %-32s %5s %7s %4s %9s %4s %16s\n", p->s, p->b, p->h, p->a, p->t, name_of(&STRATEGY_NAMES, strategy),
            "tensor kept for backward", "bytes", "values", "/t", "selective", "full", "bytes per layer");
    for (int i = 0; i < N_PAPER_TENSORS; i++) {
        const PaperTensor *x = &PAPER_TENSORS[i];
        fprintf(out, "  %-32s %5d %d %-5s %4s %9s %4s %16" PRIu64 "\n", x->name, x->bytes, x->values,
                x->scores ? "as^2b" : "sbh", x->split ? "yes" : "no", x->selective ? "yes" : "no",
                x->full ? "yes" : "no", kept(x, strategy) ? tensor_bytes(x, p) : 0);
    }
    const double gb = 1024.0 * 1024.0 * 1024.0; /* the Playbook's GB */
    const uint64_t layers = (uint64_t)p->layers * per_layer, mask = total - layers;
    fprintf(out, "  %-24s %14" PRIu64 " bytes\n  x L = %-18d %14" PRIu64 " bytes (%.3f GB)\n  %-24s %14" PRIu64
            " bytes\n  %-24s %14" PRIu64 " bytes (%.3f GB)\n  (GB: 2^30 bytes, as the Ultra-Scale Playbook counts)\n",
            "per layer (Table 2)", per_layer, p->layers, layers, (double)layers / gb, "embedding's dropout mask",
            mask, "total", total, (double)total / gb);
    if (!results) return REMAT_OK;
    char json[160];
    snprintf(json, sizeof json, "{\"paper\": {\"per_layer\": %" PRIu64 ", \"layers\": %" PRIu64 ", \"activations\": %"
             PRIu64 "}}\n", per_layer, layers, total);
    return file_replace_text("--results", results, json);
}
