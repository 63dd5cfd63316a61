/*
 * crc32c.c — CRC-32C, with the CPU's crc32 instruction when it has one (see crc32c.h).
 */
#include "crc32c.h"

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

/* SSE4.2's crc32 computes exactly this CRC, 8 bytes per instruction. Compiled for SSE4.2
 * whatever -march says, and called only when the CPU reports it. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(const unsigned char *p, size_t n)
{
    uint64_t crc = 0xFFFFFFFFu;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t word;
        memcpy(&word, p, sizeof word); /* any alignment */
        crc = _mm_crc32_u64(crc, word);
    }
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
