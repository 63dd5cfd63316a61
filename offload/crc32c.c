/*
 * crc32c.c — CRC-32C, with the CPU's crc32 instruction when it has one (see crc32c.h).
 */
#include "offload/crc32c.h"

#include <string.h>

#define CRC32C_POLY_REFLECTED 0x82F63B78u

uint32_t crc32c_ref(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        /* Divide by the polynomial one bit at a time: shift right, and subtract (XOR) the
         * polynomial whenever the bit shifted out was 1. */
        for (int bit = 0; bit < 8; bit++) crc = (crc >> 1) ^ (CRC32C_POLY_REFLECTED & (0u - (crc & 1u)));
    }
    return crc ^ 0xFFFFFFFFu;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>

/* a·b mod P, polynomials over GF(2) in the reflected order (bit 31 is x^0): a CRC
 * register r followed by n zero bytes becomes r·x^(8n) mod P. */
static uint32_t multiply_mod_p(uint32_t a, uint32_t b)
{
    uint32_t product = 0;
    for (uint32_t m = 1u << 31; m; m >>= 1) {
        if (a & m) product ^= b;
        b = (b >> 1) ^ (CRC32C_POLY_REFLECTED & (0u - (b & 1u))); /* b·x */
    }
    return product;
}

/* Bytes per stream in each round of crc32c_sse42, and x^(8·STREAM_BYTES) mod P (reflected),
 * the factor that moves a stream's CRC register past the STREAM_BYTES of the next one
 * (tests/test_offload.c checks the fast path against the reference across rounds). */
enum { STREAM_BYTES = 8192 };
#define SHIFT_PAST_STREAM 0x28461564u

/* Eight bytes at p into a CRC register, any alignment. */
__attribute__((target("sse4.2"))) static inline uint64_t crc_word(uint64_t crc, const unsigned char *p)
{
    uint64_t word;
    memcpy(&word, p, sizeof word);
    return _mm_crc32_u64(crc, word);
}

/* SSE4.2's crc32 computes exactly this CRC, 8 bytes per instruction; each takes three
 * cycles to give its result but a new one can start every cycle, so the buffer goes as
 * three streams side by side, rounds of 3 × STREAM_BYTES, three times as fast as one
 * chain of dependent instructions. The CRC is linear: the register after a stream of
 * STREAM_BYTES from state r is (r · x^(8·STREAM_BYTES) mod P) XOR that stream's CRC from
 * 0, which joins the three registers into one. Compiled for SSE4.2 whatever -march says,
 * and called only when the CPU reports it. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(const unsigned char *p, size_t n)
{
    uint64_t crc = 0xFFFFFFFFu;
    for (; n >= 3 * (size_t)STREAM_BYTES; p += 3 * STREAM_BYTES, n -= 3 * STREAM_BYTES) {
        uint64_t second = 0, third = 0;
        for (size_t i = 0; i < STREAM_BYTES; i += 8) {
            crc = crc_word(crc, p + i);
            second = crc_word(second, p + STREAM_BYTES + i);
            third = crc_word(third, p + 2 * STREAM_BYTES + i);
        }
        crc = multiply_mod_p(SHIFT_PAST_STREAM, (uint32_t)crc) ^ (uint32_t)second;
        crc = multiply_mod_p(SHIFT_PAST_STREAM, (uint32_t)crc) ^ (uint32_t)third;
    }
    for (; n >= 8; p += 8, n -= 8) crc = crc_word(crc, p);
    uint32_t c = (uint32_t)crc;
    for (; n > 0; p++, n--) c = _mm_crc32_u8(c, *p);
    return c ^ 0xFFFFFFFFu;
}

uint32_t crc32c(const void *data, size_t n)
{
    if (__builtin_cpu_supports("sse4.2")) return crc32c_sse42(data, n);
    return crc32c_ref(data, n);
}
#else
uint32_t crc32c(const void *data, size_t n) { return crc32c_ref(data, n); }
#endif
