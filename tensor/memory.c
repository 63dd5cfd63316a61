/*
 * memory.c — the memory ledger (see memory.h).
 *
 * Each block is preceded by a 64-byte header that remembers its kind and size, so that
 * mem_free needs only the pointer and can catch a double free:
 *
 *     [ BlockHeader | padding to 64 B ][ caller's bytes ... ]
 *                                      ^ returned pointer, 64-byte aligned
 *
 * Blocks come from glibc's malloc, tuned once (in the first mem_alloc) so that a block freed
 * in one training step is reused by the next instead of going back to the kernel: by
 * default glibc maps every block over 128 KiB on its own and unmaps it on free, so each
 * step page-faults all its activations in again (measured: the GPT step of bench_step took
 * twice as long). The ledger's figures are unaffected: it counts what tensors hold, not
 * what the heap keeps. platform_resident_watch_start (base/platform.h) hands the kept
 * pages back (malloc_trim), so that its baseline holds no freed block.
 */
#include "tensor/memory.h"

#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/platform.h"

#define BLOCK_MAGIC_LIVE 0x52454d41u /* "REMA" */
#define BLOCK_MAGIC_FREED 0xdeadf4eeu

typedef struct BlockHeader {
    uint32_t magic;
    MemKind kind;
    size_t bytes;
} BlockHeader;

_Static_assert(sizeof(BlockHeader) <= MEM_ALIGNMENT, "header must fit in one alignment unit");
_Static_assert(MEM_DISK == MEM_KIND_COUNT - 1, "the resident kinds are the ones below MEM_DISK");

/* ---- the ledger's state ----------------------------------------------------------- */

static size_t current[MEM_KIND_COUNT];
static size_t peak[MEM_KIND_COUNT];
static size_t resident;
static MemPeakMoment peak_moment; /* its .resident is the resident peak */
static size_t live_blocks;
static size_t budget;
static size_t ceiling; /* what the machine has for this process: 0 when unknown */
static struct Pressure {
    MemPressureFn fn;
    void *ctx;
} pressure;

static struct Timeline {
    MemEvent *events;
    size_t capacity, count, dropped;
    bool recording;
    double start; /* platform_seconds() when it began */
} timeline;

/* One change of `delta` bytes of `kind`, already checked: the kind's and the resident
 * totals, their peaks, and the timeline's event when it records. */
static void apply(MemKind kind, int64_t delta)
{
    current[kind] = (size_t)((int64_t)current[kind] + delta);
    if (current[kind] > peak[kind]) peak[kind] = current[kind];
    if (kind != MEM_DISK) {
        resident = (size_t)((int64_t)resident + delta);
        if (resident > peak_moment.resident) {
            peak_moment.resident = resident;
            memcpy(peak_moment.current, current, sizeof current);
            peak_moment.phase = flops_phase();
        }
    }
    if (!timeline.recording) return;
    if (timeline.count == timeline.capacity) {
        timeline.dropped++;
        return;
    }
    MemEvent *e = &timeline.events[timeline.count++];
    *e = (MemEvent){.seconds = platform_seconds() - timeline.start, .flops = flops_total(), .phase = flops_phase(),
                    .kind = kind, .delta = delta};
    memcpy(e->current, current, sizeof current);
}

/* REMAT_EOOM, saying what was asked and what is resident, if `bytes` more of `kind` cross the lower limit. */
static RematStatus check_budget(MemKind kind, size_t bytes)
{
    if (kind == MEM_DISK) return REMAT_OK;
    while (budget && pressure.fn && resident + bytes > budget && pressure.fn(pressure.ctx, bytes))
        continue; /* evictions */
    const bool machine = ceiling && (!budget || ceiling < budget); /* the lower limit holds */
    const size_t limit = machine ? ceiling : budget;
    if (limit == 0 || resident + bytes <= limit) return REMAT_OK;
    char want[32], cap[32], held[256];
    const char *what = machine ? "the ceiling of this machine's memory" : "budget";
    return remat_fail(REMAT_EOOM, "out of memory: tried to allocate %s of %s; resident: %s; %s %s",
                      mem_format_bytes(want, sizeof want, bytes), name_of(&MEM_KIND_NAMES, kind),
                      mem_describe_resident(held, sizeof held), what, mem_format_bytes(cap, sizeof cap, limit));
}

/* ---- allocation ------------------------------------------------------------------- */

void *mem_alloc(MemKind kind, size_t bytes)
{
    /* Once: glibc's largest mmap threshold (32 MiB on 64-bit), and a trim threshold far
     * above any step's working set, so that freed blocks up to 32 MiB stay in the heap. */
    static bool heap_tuned;
    if (!heap_tuned) {
        mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
        mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
        heap_tuned = true;
    }
    /* What is refused before asking the host: a kind that is not allocated, a size that
     * makes no sense, and crossing the budget. */
    if ((unsigned)kind >= MEM_DISK)
        return remat_fail_null(REMAT_EINVAL, "mem_alloc: kind %d cannot be allocated (disk bytes are accounted "
                               "with mem_account)", (int)kind);
    if (bytes == 0)
        return remat_fail_null(REMAT_EINVAL, "mem_alloc: zero-byte allocation of %s", name_of(&MEM_KIND_NAMES, kind));
    if (bytes > SIZE_MAX / 2)
        return remat_fail_null(REMAT_EINVAL, "mem_alloc: %zu bytes of %s is not a sensible size", bytes,
                               name_of(&MEM_KIND_NAMES, kind));
    if (check_budget(kind, bytes) != REMAT_OK) return NULL;

    size_t total = MEM_ALIGNMENT + (bytes + MEM_ALIGNMENT - 1) / MEM_ALIGNMENT * MEM_ALIGNMENT;
    unsigned char *raw = aligned_alloc(MEM_ALIGNMENT, total);
    char want[32];
    if (!raw)
        return remat_fail_null(REMAT_ENOMEM, "host allocator failed to provide %s of %s",
                               mem_format_bytes(want, sizeof want, bytes), name_of(&MEM_KIND_NAMES, kind));
    *(BlockHeader *)raw = (BlockHeader){.magic = BLOCK_MAGIC_LIVE, .kind = kind, .bytes = bytes};
    live_blocks++;
    apply(kind, (int64_t)bytes);
    return raw + MEM_ALIGNMENT;
}

void *mem_calloc(MemKind kind, size_t bytes)
{
    void *block = mem_alloc(kind, bytes);
    if (block) memset(block, 0, bytes);
    return block;
}

void mem_free(void *block)
{
    if (!block) return;
    BlockHeader *h = (BlockHeader *)((unsigned char *)(uintptr_t)block - MEM_ALIGNMENT);
    if (h->magic != BLOCK_MAGIC_LIVE) {
        fprintf(stderr, "remat: mem_free(%p): %s\n", block,
                h->magic == BLOCK_MAGIC_FREED ? "block was already freed" : "not a block from mem_alloc");
        abort();
    }
    h->magic = BLOCK_MAGIC_FREED;
    live_blocks--;
    apply(h->kind, -(int64_t)h->bytes);
    free(h);
}

RematStatus mem_account(MemKind kind, int64_t delta)
{
    if ((unsigned)kind >= MEM_KIND_COUNT)
        return remat_fail(REMAT_EINVAL, "mem_account: unknown kind %d", (int)kind);
    if (delta < 0 && (size_t)(-delta) > current[kind])
        return remat_fail(REMAT_EINVAL, "mem_account: removing %" PRId64 " bytes of %s, which holds %zu",
                          -delta, name_of(&MEM_KIND_NAMES, kind), current[kind]);
    if (delta > 0 && check_budget(kind, (size_t)delta) != REMAT_OK) return REMAT_EOOM;
    apply(kind, delta);
    return REMAT_OK;
}

/* ---- what the ledger knows -------------------------------------------------------- */

size_t mem_current(MemKind kind) { return (unsigned)kind < MEM_KIND_COUNT ? current[kind] : 0; }
size_t mem_peak(MemKind kind) { return (unsigned)kind < MEM_KIND_COUNT ? peak[kind] : 0; }
size_t mem_resident(void) { return resident; }
size_t mem_live_blocks(void) { return live_blocks; }
MemPeakMoment mem_peak_moment(void) { return peak_moment; }

void mem_reset_peaks(void)
{
    memcpy(peak, current, sizeof peak);
    peak_moment.resident = resident;
    memcpy(peak_moment.current, current, sizeof current);
    peak_moment.phase = flops_phase();
}

void mem_set_budget(size_t bytes) { budget = bytes; }
size_t mem_budget(void) { return budget; }

size_t mem_set_ceiling(size_t bytes)
{
    const size_t before = ceiling;
    ceiling = bytes;
    return before;
}
size_t mem_ceiling(void) { return ceiling; }

void mem_set_pressure(MemPressureFn fn, void *ctx) { pressure = (struct Pressure){fn, ctx}; }

/* ---- timeline --------------------------------------------------------------------- */

RematStatus mem_timeline_start(size_t capacity)
{
    if (capacity == 0) return remat_fail(REMAT_EINVAL, "mem_timeline_start: capacity must be > 0");
    MemEvent *events = calloc(capacity, sizeof *events); /* labels NULL but a mark's */
    if (!events) return remat_fail(REMAT_ENOMEM, "mem_timeline_start: no room for %zu events", capacity);
    mem_timeline_free(); /* the older recording */
    timeline =
        (struct Timeline){.events = events, .capacity = capacity, .recording = true, .start = platform_seconds()};
    return REMAT_OK;
}

void mem_timeline_mark(MemKind kind, const char *label)
{
    const size_t count = timeline.count;
    apply(kind, 0); /* changes no total, no peak: only the event */
    if (timeline.count > count) timeline.events[count].label = label;
}

void mem_timeline_stop(void) { timeline.recording = false; }

const MemEvent *mem_timeline_events(size_t *count)
{
    if (count) *count = timeline.count;
    return timeline.events;
}

size_t mem_timeline_dropped(void) { return timeline.dropped; }

void mem_timeline_free(void)
{
    free(timeline.events);
    memset(&timeline, 0, sizeof timeline);
}

/* ---- names and formatting --------------------------------------------------------- */

static const char *const KINDS[MEM_KIND_COUNT] = {"params", "grads", "optimizer", "activations", "workspace", "disk"};
const NameTable MEM_KIND_NAMES = {KINDS, MEM_KIND_COUNT};

char *mem_format_bytes(char *buf, size_t size, size_t bytes)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    double value = (double)bytes / 1024.0;
    int unit = 0;
    for (; value >= 1024.0 && unit < 3; unit++) value /= 1024.0;
    if (bytes < 1024) snprintf(buf, size, "%zu B", bytes);
    else snprintf(buf, size, value < 10.0 ? "%.2f %s" : "%.1f %s", value, units[unit]);
    return buf;
}

char *mem_describe_resident(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < MEM_DISK; k++) { /* the resident kinds */
        char amount[32];
        int n = snprintf(buf + used, size > used ? size - used : 0, "%s%s %s", used ? ", " : "",
                         name_of(&MEM_KIND_NAMES, k), mem_format_bytes(amount, sizeof amount, current[k]));
        if (n < 0 || (size_t)n >= size - used) break;
        used += (size_t)n;
    }
    return buf;
}
