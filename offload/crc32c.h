/*
 * crc32c.h — CRC-32C (Castagnoli), the checksum every spilled record carries.
 *
 * What it is: the CRC of iSCSI, ext4 metadata and SSE4.2's crc32 instruction: polynomial
 * 0x1EDC6F41 (0x82F63B78 bit-reflected), initial value and final XOR 0xFFFFFFFF. A record
 * is a few MiB read back once per step, so the checksum must cost little next to the copy:
 * crc32c uses the CPU's crc32 instruction (8 bytes per instruction, three independent
 * streams at a time, joined by the CRC's linearity: about 20 GB/s here, against 8 with
 * one stream) when it has one, and falls back to the reference otherwise. crc32c_ref is
 * the definition written as a loop, one bit at a time, kept beside it as the reference the
 * tests check the fast path against, as every kernel in remat has one (it runs at a few
 * hundred MB/s).
 *
 * What it is not: a cryptographic hash. It catches flipped bits, torn writes and
 * stale data, not an adversary.
 *
 * Published check values (RFC 3720, appendix B.4, and the CRC catalogue's "check"):
 * crc32c("123456789") = 0xE3069283; 32 zero bytes give 0x8A9136AA.
 */
#ifndef REMAT_CRC32C_H
#define REMAT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of `n` bytes at `data` (n = 0 gives 0). Pure: no state, any thread. */
uint32_t crc32c(const void *data, size_t n);

/* The same value, computed one bit at a time: the reference. */
uint32_t crc32c_ref(const void *data, size_t n);

#endif /* REMAT_CRC32C_H */
