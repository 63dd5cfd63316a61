/*
 * data.h — the text data loader for the char-level GPT: bytes in, (inputs, targets) out.
 *
 * The whole text file is read into memory once. Every byte is one token, so the
 * vocabulary is 256 (a token is the byte's value, 0..255; UTF-8 characters outside ASCII
 * become two or more tokens). The text is split into two contiguous parts: the first
 * (1 - val_fraction) of the bytes are the training split, the last val_fraction the
 * validation split. A window never crosses from one split into the other.
 *
 * A batch is B windows of T+1 consecutive tokens, each starting at a position drawn
 * uniformly with PCG32 from the chosen split. Row b of `inputs` holds tokens
 * start_b .. start_b+T-1 and row b of `targets` holds start_b+1 .. start_b+T: the target
 * at (b,t) is the token that follows the input at (b,t).
 *
 * What this is not: a tokenizer, a streaming reader or a shuffler of epochs. The text is
 * the dataset, not a tensor: its bytes are plain host memory owned by TextData and are
 * not charged to the memory ledger (they are neither parameters nor activations, and a
 * training step never allocates or frees them).
 */
#ifndef REMAT_DATA_H
#define REMAT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "tensor/rng.h"

#define TEXT_VOCAB_SIZE 256 /* one token per byte value */

typedef enum TextSplit { TEXT_TRAIN = 0, TEXT_VAL } TextSplit;

/* A loaded text. Callers may read the fields; only text_data_free changes them. */
typedef struct TextData {
    char *path;          /* the file it was read from (a copy in the TextData's block, for messages) */
    uint8_t *bytes;      /* the whole file, `size` bytes, host memory owned here */
    size_t size;         /* bytes in the file = train_size + val_size */
    size_t train_size;   /* bytes[0 .. train_size) is the training split */
    size_t val_size;     /* bytes[train_size .. size) is the validation split */
} TextData;

/* Reads the file at `path` and splits it: the last floor(size * val_fraction) bytes are
 * the validation split, the rest the training split. Each split must hold at least two
 * bytes (one input and its target), and the file must be smaller than 4 GiB (window
 * starts are 32-bit draws). The caller owns the result and releases it with
 * text_data_free. On error returns NULL: REMAT_EIO naming the path and the system's
 * reason when the file cannot be opened or read, or saying what it is when it is not a
 * regular file (a FIFO is refused at once, not waited on); REMAT_EINVAL when val_fraction is not
 * in (0, 0.5] or the file is too short (or too long) for the split; REMAT_ENOMEM. */
TextData *text_data_load(const char *path, double val_fraction);

/* Releases `d` and its bytes. NULL is a no-op. */
void text_data_free(TextData *d);

/* Fills one batch from `split`: `inputs` (B,T) and `targets` (B,T), row-major, caller-owned
 * arrays of B*T int32 tokens each. Draws B window starts from `rng` with pcg32_bounded,
 * one per row in row order, so the same generator state gives the same batch.
 * On error returns REMAT_EINVAL (a NULL pointer, B or T not positive, or T+1 longer than
 * the split) and changes nothing: neither the arrays nor the generator. */
RematStatus text_data_batch(const TextData *d, TextSplit split, Pcg32 *rng, int B, int T,
                            int32_t *inputs, int32_t *targets);

#endif /* REMAT_DATA_H */
