/*
 * pipeline.c — the GPT's step as one stage of a pipeline (step.h): a micro-batch's forward and
 * backward on this stage, which parallel/pipeline.c runs as its schedule says, and what follows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt.h"
#include "models/step.h"

typedef struct InFlight { /* a micro-batch between its forward and its backward */
    Tape *tape;
    Var *input; /* the previous stage's output, whose gradient goes back; NULL on the first */
    Var *out;   /* the stage's output; on the last stage the loss */
} InFlight;

struct StepPipeline {
    Model *model;
    DistGroup group;
    PipeSchedule kind;
    int M, first, count; /* micro-batches a step; the stage's blocks */
    bool is_first, is_last;
    Schedule *schedule;  /* the strategy's, for the stage's blocks */
    InFlight *flight;    /* M */
    Tensor **sums;       /* the gradients summed in micro-batch order */
    PipeLedger ledger;
    size_t peak_act;
    const MicroBatch *batches; /* during a step */
    TrainCtx *ctx;
    Pcg32 step_rng, rng_after; /* the step's generator; where micro-batch 0's stream ends */
    float loss_sum;
};

StepPipeline *step_pipeline_create(Model *model, const Strategy *strategy, const DistGroup *g,
                                   PipeSchedule schedule, int micro_batches)
{
    StepPipeline *p = malloc(sizeof *p);
    if (!p) return remat_fail(REMAT_ENOMEM, "pipeline: no memory"), NULL;
    *p = (StepPipeline){.model = model, .group = *g, .kind = schedule, .M = micro_batches, .is_first = g->rank == 0,
                        .is_last = g->rank == g->size - 1, .flight = calloc((size_t)micro_batches, sizeof *p->flight),
                        .sums = calloc((size_t)model->n_params, sizeof *p->sums)};
    pipe_split(model->n_layers, g->size, g->rank, &p->first, &p->count);
    if (!p->flight || !p->sums) remat_fail(REMAT_ENOMEM, "pipeline: no memory");
    else if ((p->schedule = schedule_for_strategy(strategy, p->count))) return p;
    step_pipeline_free(p);
    return NULL;
}

void step_pipeline_free(StepPipeline *p)
{
    if (p) schedule_free(p->schedule), free(p->flight), free(p->sums);
    free(p);
}

/* Micro-batch r's forward: embedding (first stage), blocks, head (last). The first starts r's
 * dropout stream r strides ahead as one process does (step.h), the others where the last left it. */
static RematStatus stage_forward(void *user, int r, PipeIO *io)
{
    StepPipeline *p = user;
    InFlight *f = &p->flight[r];
    TrainCtx *ctx = p->ctx;
    ctx->rng = p->is_first ? p->step_rng : io->rng;
    if (p->is_first) pcg32_advance(&ctx->rng, (uint64_t)r * STEP_MICRO_BATCH_STRIDE);
    ctx->micro_batch = (uint32_t)r; /* counter-based masks' key */
    if (!(f->tape = tape_create())) return tensor_free(io->x), remat_last_status();
    Tape *outer = tape_set_current(f->tape);
    const MicroBatch *mb = &p->batches[r];
    Var *x = p->is_first ? p->model->embed(p->model, mb->input, ctx) : (f->input = var_create(io->x, true, "pipe.x"));
    Var *y = x ? schedule_forward(p->schedule, p->model->layers + p->first, p->count, x, ctx) : NULL;
    if (p->is_first) var_free(x);
    f->out = y && p->is_last ? p->model->head(p->model, y, mb->targets, ctx) : y;
    if (p->is_last) var_free(y);
    tape_set_current(outer);
    io->x = NULL;
    io->rng = ctx->rng;
    if (!f->out) return remat_last_status();
    if (!p->is_last) io->y = tensor_retain(f->out->value);
    if (p->is_last) p->loss_sum = r == 0 ? f->out->value->f32[0] : p->loss_sum + f->out->value->f32[0];
    if (p->is_last && r == 0) p->rng_after = ctx->rng; /* where the step leaves the stream */
    return REMAT_OK;
}

static void land(InFlight *f) /* after its backward */
{
    var_free(f->out);
    var_free(f->input);
    tape_free(f->tape);
    *f = (InFlight){0};
}

/* Micro-batch r's backward from zeroed gradients, then added to the sums. The first stage's wte
 * gradient starts as the head's, from the last stage: one process's backward runs the head first. */
static RematStatus stage_backward(void *user, int r, PipeIO *io)
{
    StepPipeline *p = user;
    InFlight *f = &p->flight[r];
    const Model *m = p->model;
    Var *wte = m->params[0].var; /* the GPT's first parameter (gpt.h): the embedding's and the head's */
    for (int i = 0; i < m->n_params; i++) var_zero_grad(m->params[i].var);
    if (io->tied && !wte->grad) wte->grad = tensor_create(MEM_GRAD, DTYPE_F32, wte->value->ndim, wte->value->shape);
    if (io->tied && wte->grad) memcpy(wte->grad->f32, io->tied->f32, io->tied->numel * sizeof(float));
    RematStatus status = io->tied && !wte->grad ? remat_last_status() : REMAT_OK;
    p->ctx->micro_batch = (uint32_t)r; /* a replay's counter-based masks */
    Tape *outer = tape_set_current(f->tape);
    if (status == REMAT_OK) status = p->is_last ? backward(f->out) : backward_from(f->out, io->dy);
    tape_set_current(outer);
    tensor_free(io->dy);
    tensor_free(io->tied);
    *io = (PipeIO){0};
    if (status == REMAT_OK && !p->is_first) io->dx = f->input->grad, f->input->grad = NULL; /* goes back */
    if (status == REMAT_OK && p->is_last && !(io->tied = tensor_clone(wte->grad, MEM_GRAD)))
        status = remat_last_status();
    if (status == REMAT_OK && p->M > 1) step_accumulate(m, p->sums, r);
    land(f);
    return status;
}

/* Parameter v's gradient, from stage `root`. */
static RematStatus share_grad(Var *v, int root)
{
    if (!v->grad && !(v->grad = tensor_zeros(MEM_GRAD, v->value->ndim, v->value->shape))) return remat_last_status();
    pipe_bcast(v->grad->f32, v->grad->numel * sizeof(float), root);
    return REMAT_OK;
}

/* Every gradient from its stage, in file order (model.h): wte, wpe from the first, each block's
 * from its stage (GPT blocks hold alike), ln_f from the last; then the loss and generator. */
static RematStatus share(StepPipeline *p, float *loss)
{
    const Model *m = p->model;
    const int last = p->group.size - 1;
    RematStatus status = REMAT_OK;
    int i = 0;
    for (; m->params[i].var != m->layers[0]->params[0].var && status == REMAT_OK; i++)
        status = share_grad(m->params[i].var, 0);
    for (int s = 0, first, count; s <= last; s++) {
        pipe_split(m->n_layers, last + 1, s, &first, &count);
        for (int k = 0; k < m->layers[first]->n_params * count && status == REMAT_OK; k++, i++)
            status = share_grad(m->params[i].var, s);
    }
    for (; i < m->n_params && status == REMAT_OK; i++) status = share_grad(m->params[i].var, last);
    struct { float loss; Pcg32 rng; } end = {p->loss_sum / (float)p->M, p->rng_after};
    pipe_bcast(&end, sizeof end, last);
    *loss = end.loss;
    p->rng_after = end.rng;
    return status;
}

RematStatus step_pipeline_run(StepPipeline *p, Optimizer *optim, const MicroBatch *batches, TrainCtx *ctx,
                              StepResult *out)
{
    const Model *m = p->model;
    const uint32_t step_micro_batch = ctx->micro_batch;
    p->batches = batches;
    p->ctx = ctx;
    p->step_rng = ctx->rng;
    const Tensor *in = batches[0].input->value;
    const PipeStage stage = {.forward = stage_forward, .backward = stage_backward, .ctx = p, .ndim = 3,
                             .shape = {in->shape[0], in->shape[1], gpt_config(m)->d_model},
                             .tied_numel = m->params[0].var->value->numel};
    RematStatus status = pipe_run(&p->group, p->kind, p->M, &stage, &p->ledger);
    ctx->rng = p->step_rng;
    ctx->micro_batch = step_micro_batch;
    if (status == REMAT_OK && p->M > 1) step_apply_sums(m, p->sums, p->M);
    float loss = NAN;
    if (status == REMAT_OK) status = share(p, &loss);
    if (status == REMAT_OK && !isfinite(loss))
        status = remat_fail(REMAT_ESTATE, "step: the loss is not finite (%g): training diverged; the parameters "
                            "and the optimizer state are left as they were before this step", (double)loss);
    if (status == REMAT_OK && optim) status = optim_step(optim, NULL, NULL);
    if (status == REMAT_OK) ctx->rng = p->rng_after;
    *out = (StepResult){.loss = loss};
    for (int r = 0; r < p->M; r++) land(&p->flight[r]); /* left only on error */
    for (int i = 0; i < m->n_params; i++) tensor_free(p->sums[i]), p->sums[i] = NULL;
    if (mem_peak(MEM_ACT) > p->peak_act) p->peak_act = mem_peak(MEM_ACT);
    return status;
}

const PipeLedger *step_pipeline_ledger(const StepPipeline *p, size_t *peak_act)
{
    *peak_act = p->peak_act;
    return &p->ledger;
}
