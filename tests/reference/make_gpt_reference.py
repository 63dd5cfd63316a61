#!/usr/bin/env python3
"""Writes gpt_reference.safetensors: a tiny 2-layer GPT-2 (weights, one batch, the loss
and every parameter's gradient) computed by PyTorch, for tests/test_reference.c.

Run it from the repository root with Debian's python3-torch (not needed to build or test):

    /usr/bin/python3 tests/reference/make_gpt_reference.py tests/reference/gpt_reference.safetensors

The model is written here from the GPT-2 equations, independently of remat: pre-LayerNorm
blocks (eps 1e-5), causal multi-head attention, GELU (tanh approximation), a final
LayerNorm and an LM head tied to the token embedding; no dropout. Tensor names and layouts
are Hugging Face GPT-2's (Conv1D weights stored [in, out]). Everything is computed in
float64 and stored as float32, so the reference is more precise than what it checks.
Biases and LayerNorm parameters are random rather than 0 and 1, so that a wrong gradient
for them cannot hide.
"""
import json
import math
import struct
import sys

import torch

L, C, H, T, B, V = 2, 32, 4, 16, 4, 256
D = C // H


def make_params(gen):
    def normal(*shape, std=0.02, mean=0.0):
        return (torch.randn(*shape, generator=gen, dtype=torch.float64) * std + mean)

    p = {"wte.weight": normal(V, C), "wpe.weight": normal(T, C)}
    for i in range(L):
        h = f"h.{i}."
        p[h + "ln_1.weight"] = normal(C, std=0.1, mean=1.0)
        p[h + "ln_1.bias"] = normal(C, std=0.1)
        p[h + "attn.c_attn.weight"] = normal(C, 3 * C)
        p[h + "attn.c_attn.bias"] = normal(3 * C)
        p[h + "attn.c_proj.weight"] = normal(C, C)
        p[h + "attn.c_proj.bias"] = normal(C)
        p[h + "ln_2.weight"] = normal(C, std=0.1, mean=1.0)
        p[h + "ln_2.bias"] = normal(C, std=0.1)
        p[h + "mlp.c_fc.weight"] = normal(C, 4 * C)
        p[h + "mlp.c_fc.bias"] = normal(4 * C)
        p[h + "mlp.c_proj.weight"] = normal(4 * C, C)
        p[h + "mlp.c_proj.bias"] = normal(C)
    p["ln_f.weight"] = normal(C, std=0.1, mean=1.0)
    p["ln_f.bias"] = normal(C, std=0.1)
    return p


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def layernorm(x, w, b):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * w + b


def forward(p, idx, targets):
    x = p["wte.weight"][idx] + p["wpe.weight"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(L):
        h = f"h.{i}."
        a = layernorm(x, p[h + "ln_1.weight"], p[h + "ln_1.bias"])
        qkv = a @ p[h + "attn.c_attn.weight"] + p[h + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=2)
        q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ p[h + "attn.c_proj.weight"] + p[h + "attn.c_proj.bias"]
        m = layernorm(x, p[h + "ln_2.weight"], p[h + "ln_2.bias"])
        m = gelu_tanh(m @ p[h + "mlp.c_fc.weight"] + p[h + "mlp.c_fc.bias"])
        x = x + m @ p[h + "mlp.c_proj.weight"] + p[h + "mlp.c_proj.bias"]
    x = layernorm(x, p["ln_f.weight"], p["ln_f.bias"])
    logits = x @ p["wte.weight"].T
    return torch.nn.functional.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


def save_safetensors(path, tensors, metadata):
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        dtype = {torch.float32: "F32", torch.int32: "I32"}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUTPUT.safetensors")
    gen = torch.Generator().manual_seed(20261129)
    params = make_params(gen)
    idx = torch.randint(0, V, (B, T), generator=gen)
    targets = torch.randint(0, V, (B, T), generator=gen)
    for t in params.values():
        t.requires_grad_(True)
    loss = forward(params, idx, targets)
    loss.backward()

    out = {name: t.detach().float() for name, t in params.items()}
    out["input"] = idx.to(torch.int32)
    out["target"] = targets.to(torch.int32)
    out["loss"] = loss.detach().float().reshape(1)
    for name, t in params.items():
        out["grad." + name] = t.grad.float()
    meta = {"layers": str(L), "d_model": str(C), "heads": str(H), "seq": str(T), "batch": str(B),
            "made_by": "tests/reference/make_gpt_reference.py, PyTorch " + torch.__version__ + ", float64"}
    save_safetensors(sys.argv[1], out, meta)
    print(f"loss {loss.item():.6f}; wrote {len(out)} tensors to {sys.argv[1]}")


if __name__ == "__main__":
    main()
