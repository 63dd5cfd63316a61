/*
 * ops_embedding.c — embedding: token ids in, vectors out.
 *
 * The input is not a float tensor but int32 token ids, which have no gradient; the
 * gradient goes to the tables. Token id v's row of wte receives the sum of dout over
 * every position where v occurs, which is a scatter-add (k_embedding_backward). The op
 * saves only the ids (4 bytes per token), not the (B,T,C) output.
 *
 * Ids are checked here, before the kernel reads a table row with them: an id outside
 * [0, V) would read outside the table. Letters: B batch, T time, C channels,
 * V vocabulary, T_max the position table's rows.
 */
#include "autograd/ops.h"

#include "tensor/kernels.h"
#include "autograd/ops_internal.h"

/* Backward of embedding. Forward was out[b,t] = wte[ids[b,t]] + wpe[t]; so
 *   dwte[ids[b,t]] += dout[b,t]    for every token,
 *   dwpe[t]        += Σ_b dout[b,t],
 * with B and T the saved ids' (B,T) and C dout's (B,T,C). */
static RematStatus embedding_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    Tensor *ids = saved_tensor(node, 0);
    if (!ids) return remat_last_status();
    float *dwte = dinputs[1] ? dinputs[1]->f32 : NULL, *dwpe = dinputs[2] ? dinputs[2]->f32 : NULL;
    if (dwte || dwpe)
        k_embedding_backward(dwte, dwpe, dout->f32, ids->i32, ids->shape[0], ids->shape[1], dout->shape[2]);
    tensor_free(ids);
    return REMAT_OK;
}

static const OpInfo EMBEDDING_OP = {.name = "embedding", .backward = embedding_backward};

Var *op_embedding(Var *ids, Var *wte, Var *wpe, const char *tag)
{
    Var *inputs[3] = {ids, wte, wpe};
    char label[64], is[48], ws[48], ps[48];
    const DType dtypes[3] = {DTYPE_I32, DTYPE_F32, DTYPE_F32}; /* ids, wte, wpe (optional) */
    if (ops_check_inputs(label, sizeof label, "embedding", tag, inputs, wpe ? 3 : 2, dtypes) != REMAT_OK)
        return NULL;
    const Tensor *Ids = ids->value, *Wte = wte->value, *Wpe = wpe ? wpe->value : NULL;
    if (Ids->ndim != 2 || Wte->ndim != 2)
        return remat_fail_null(REMAT_EINVAL, "%s: want ids (B,T) and wte (V,C), got %s and %s", label,
                               tensor_shape_str(is, sizeof is, Ids), tensor_shape_str(ws, sizeof ws, Wte));
    const int B = Ids->shape[0], T = Ids->shape[1], V = Wte->shape[0], C = Wte->shape[1];
    if (Wpe && (Wpe->ndim != 2 || Wpe->shape[1] != C || Wpe->shape[0] < T))
        return remat_fail_null(REMAT_EINVAL, "%s: wpe %s does not fit ids %s and wte %s (want (T_max,%d) "
                               "with T_max >= %d)", label, tensor_shape_str(ps, sizeof ps, Wpe),
                               tensor_shape_str(is, sizeof is, Ids), tensor_shape_str(ws, sizeof ws, Wte), C, T);
    for (size_t i = 0; i < Ids->numel; i++)
        if (Ids->i32[i] < 0 || Ids->i32[i] >= V)
            return remat_fail_null(REMAT_EINVAL, "%s: token id %d at (%zu,%zu) is outside the vocabulary [0, %d)",
                                   label, (int)Ids->i32[i], i / (size_t)T, i % (size_t)T, V);

    bool cached;
    Tensor *out = ops_output(&EMBEDDING_OP, tag, 0, DTYPE_F32, 3, (int[]){B, T, C}, &cached);
    if (!out) return NULL;
    if (!cached) k_embedding_forward(out->f32, Ids->i32, Wte->f32, Wpe ? Wpe->f32 : NULL, B, T, C);
    return ops_record(&EMBEDDING_OP, tag, inputs, wpe ? 3 : 2, out, &ids->value, 1, NULL, 0);
}
