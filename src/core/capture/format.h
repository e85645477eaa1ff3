/*
 * The capture container's fixed layouts (file header and chunk header) and the per-chunk
 * coding state that the record encoder and decoder share, so both sides update it the same
 * way by construction. docs/capture-format.md is the byte-by-byte description of all this.
 */
#ifndef PERCH_CAPTURE_FORMAT_H
#define PERCH_CAPTURE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "perch/capture.h"

/* ---- file header: 64 bytes, little-endian ---------------------------------------------- */

#define CAP_MAGIC     "\x89PERCH\r\n"
#define CAP_MAGIC_LEN 8

/* The header as laid out on disk. Never cast bytes to it: it exists to pin the offsets with
 * static asserts; header.c reads and writes each field at its offsetof(). */
struct perch__cap_file_header {
    uint8_t magic[8];           /* 89 50 45 52 43 48 0d 0a: "\x89PERCH\r\n" */
    uint32_t version;           /* PERCH_CAPTURE_VERSION */
    uint32_t header_size;       /* bytes from the start of the file to the first chunk */
    uint64_t required_features; /* a reader refuses a bit it does not know */
    uint64_t optional_features; /* a reader ignores a bit it does not know */
    uint32_t chunk_bytes;       /* the writer's target chunk payload (informative) */
    uint32_t header_crc;        /* CRC-32C of header_size bytes with this field zeroed */
    uint8_t reserved[24];       /* zero; readers of version 1 ignore them */
};

_Static_assert(sizeof(struct perch__cap_file_header) == PERCH_CAPTURE_HEADER_SIZE,
               "capture file header is 64 bytes");
_Static_assert(offsetof(struct perch__cap_file_header, version) == 8, "version at 8");
_Static_assert(offsetof(struct perch__cap_file_header, header_size) == 12, "header_size at 12");
_Static_assert(offsetof(struct perch__cap_file_header, required_features) == 16, "req at 16");
_Static_assert(offsetof(struct perch__cap_file_header, optional_features) == 24, "opt at 24");
_Static_assert(offsetof(struct perch__cap_file_header, chunk_bytes) == 32, "chunk_bytes at 32");
_Static_assert(offsetof(struct perch__cap_file_header, header_crc) == 36, "crc at 36");
_Static_assert(offsetof(struct perch__cap_file_header, reserved) == 40, "reserved at 40");

typedef struct perch__cap_header_fields {
    uint32_t version;
    uint32_t header_size;
    uint64_t required_features;
    uint64_t optional_features;
    uint32_t chunk_bytes;
} perch__cap_header_fields;

/* Encodes the 64-byte header of this version (CRC included) into out. */
void perch__cap_header_encode(const perch__cap_header_fields *h,
                              uint8_t out[PERCH_CAPTURE_HEADER_SIZE]);

/* Checks the first 64 bytes (`fixed`) and, when header_size is larger, the rest
 * (`extra`, header_size - 64 bytes, may be NULL when there is none) and fills *h.
 * PERCH_EFORMAT (not a capture / bad size), PERCH_ECRC, PERCH_EVERSION or PERCH_EFEATURE
 * with a reason in why[why_len]. Call perch__cap_header_size() first to learn header_size. */
int perch__cap_header_check(const uint8_t fixed[PERCH_CAPTURE_HEADER_SIZE], const uint8_t *extra,
                            perch__cap_header_fields *h, char *why, size_t why_len);

/* The header_size field of a header whose magic matched, or 0 when the magic is wrong or
 * the size is outside [64, PERCH_CAPTURE_MAX_HEADER]. */
uint32_t perch__cap_header_size(const uint8_t fixed[PERCH_CAPTURE_HEADER_SIZE]);

/* ---- chunk header: 12 bytes ------------------------------------------------------------- */

struct perch__cap_chunk_header {
    uint16_t type;        /* perch_capture_chunk_type */
    uint16_t flags;       /* zero in version 1; readers ignore bits they do not know */
    uint32_t payload_len; /* <= PERCH_CAPTURE_MAX_CHUNK */
    uint32_t crc;         /* CRC-32C of bytes 0..7 of this header, then the payload */
};

_Static_assert(sizeof(struct perch__cap_chunk_header) == 12, "chunk header is 12 bytes");
_Static_assert(offsetof(struct perch__cap_chunk_header, payload_len) == 4, "len at 4");
_Static_assert(offsetof(struct perch__cap_chunk_header, crc) == 8, "crc at 8");

#define CAP_CHUNK_HEADER 12u

/* Mask byte of a sample record (docs/capture-format.md 4.8); the low four bits of sample and
 * slice masks are the thread's index in the MRU list + 1, 0 for a new thread. */
#define M_THREAD      0x0fu
#define S_CPU_SAME    0x10u
#define S_ATTR_SAME   0x20u
#define S_MODULE_SAME 0x40u
#define S_STACK_SAME  0x80u
/* Mask byte of a slice record (4.7). */
#define L_CPU_SAME   0x10u
#define L_READY_ZERO 0x20u
#define L_ATTR_SAME  0x40u
#define L_PMC        0x80u
/* Flags byte of a module record (4.4). */
#define MOD_HAS_PDB 0x1u
#define MOD_GUID    0x2u

/* Strings chunk flags (first varint of its payload). */
#define CAP_STRINGS_RESET 0x1u /* forget every string before this chunk; ids restart at 1 */

/* ---- per-chunk coding state: reset at every chunk start -------------------------------- */

/* Recently seen threads, most recent first, with what their last sample looked like. The
 * slots stay where they were put; `order` lists them by recency, four bits per position (bits
 * 4i..4i+3 hold the slot of position i), so moving a thread to the front moves a few bits, not
 * the slots. */
#define CAP_MRU 15

typedef struct perch__cap_thread_slot {
    uint64_t key;
    uint32_t tid;
    uint16_t cpu;
    uint64_t ip;
    uint64_t module_key;
    uint32_t stack_id;
} perch__cap_thread_slot;

typedef struct perch__cap_mru {
    unsigned count;
    uint64_t order; /* CAP_MRU positions of 4 bits: slot index of each, most recent first */
    perch__cap_thread_slot slot[CAP_MRU];
} perch__cap_mru;

/* Recent stacks of this chunk (their outermost frames) for shared-suffix coding. Only
 * stack chunks use it, so the writer and reader keep one, emptied at each stack chunk start. */
#define CAP_STACK_RING   16
#define CAP_STACK_SUFFIX 256

typedef struct perch__cap_stack_ring {
    unsigned count;
    unsigned next;
    uint32_t len[CAP_STACK_RING];
    uint64_t frames[CAP_STACK_RING][CAP_STACK_SUFFIX]; /* the last len frames of the stack */
} perch__cap_stack_ring;

typedef struct perch__cap_state {
    uint64_t ts;   /* previous timestamp (the type's main one) */
    uint64_t key;  /* previous explicit key */
    uint64_t addr; /* previous first frame / ip / branch address */
    uint64_t id;   /* previous stack id */
    uint16_t cpu;
    uint8_t attr_kind, attr_flags; /* previous sample attributes */
    uint16_t attr_source;
    uint32_t attr_count;
    uint16_t s_flags; /* previous slice attributes */
    int8_t s_prio, s_wait_reason, s_wait_mode, s_state;
    perch__cap_mru mru;
} perch__cap_state;

void perch__cap_state_reset(perch__cap_state *s);

/* The slot at MRU position pos (< m->count). */
static inline perch__cap_thread_slot *perch__cap_mru_at(perch__cap_mru *m, unsigned pos)
{
    return &m->slot[(m->order >> (4 * pos)) & 0xf];
}

/* The position of slot j (< m->count) in the MRU: the lowest position whose 4 bits are j
 * (a zero-nibble search; positions from count on never come first, j being below count). */
static inline unsigned perch__cap_mru_pos(const perch__cap_mru *m, unsigned j)
{
    static const uint64_t ones = 0x0111111111111111u; /* 1 in each of the CAP_MRU positions */
    uint64_t x = m->order ^ (ones * j);
    uint64_t zero = (x - ones) & ~x & (ones << 3);
    return (unsigned)__builtin_ctzll(zero) / 4;
}

/* The slot of (key, tid), or -1. The list must hold each thread once (the encoder's use: it
 * inserts only what find did not find), so the slots are searched in storage order. */
static inline int perch__cap_mru_find_slot(const perch__cap_mru *m, uint64_t key, uint32_t tid)
{
    for (unsigned j = 0; j < m->count; j++)
        if (m->slot[j].key == key && m->slot[j].tid == tid)
            return (int)j;
    return -1;
}

/* The position of (key, tid) in the MRU, or -1 (each thread held once, as above). */
static inline int perch__cap_mru_find(const perch__cap_mru *m, uint64_t key, uint32_t tid)
{
    int j = perch__cap_mru_find_slot(m, key, tid);
    return j < 0 ? -1 : (int)perch__cap_mru_pos(m, (unsigned)j);
}

/* The order word with position pos moved to the front (its slot then at position 0). */
static inline uint64_t perch__cap_order_promote(uint64_t order, unsigned pos)
{
    uint64_t below = ((uint64_t)1 << (4 * pos)) - 1; /* positions 0..pos-1 */
    uint64_t moved = (order >> (4 * pos)) & 0xf;
    uint64_t above = order & ~((below << 4) | 0xf); /* positions pos+1.. */
    return above | (order & below) << 4 | moved;
}

/* The slot a new thread takes in a list of count threads: the next free one, or the oldest's
 * when the list is full. */
static inline unsigned perch__cap_order_victim(uint64_t order, unsigned count)
{
    return count < CAP_MRU ? count : (unsigned)(order >> (4 * (CAP_MRU - 1))) & 0xf;
}

/* The order word with slot s put at the front and the last position dropped. */
static inline uint64_t perch__cap_order_push(uint64_t order, unsigned s)
{
    return ((order << 4) | s) & (((uint64_t)1 << (4 * CAP_MRU)) - 1);
}

/* Moves position pos (< m->count) to the front; returns the front slot. */
static inline perch__cap_thread_slot *perch__cap_mru_promote(perch__cap_mru *m, unsigned pos)
{
    m->order = perch__cap_order_promote(m->order, pos);
    return &m->slot[m->order & 0xf];
}

/* Inserts a new thread at the front (the oldest falls off when the list is full, its slot
 * reused), its other fields from *init. */
static inline perch__cap_thread_slot *perch__cap_mru_insert(perch__cap_mru *m,
                                                            const perch__cap_thread_slot *init)
{
    unsigned s = perch__cap_order_victim(m->order, m->count);
    if (m->count < CAP_MRU)
        m->count++;
    m->order = perch__cap_order_push(m->order, s);
    m->slot[s] = *init;
    return &m->slot[s];
}

/* Forgets every stack (a new chunk starts). */
void perch__cap_ring_reset(perch__cap_stack_ring *r);

/* Remembers the outermost frames of a stack. */
void perch__cap_ring_push(perch__cap_stack_ring *r, const uint64_t *frames, uint32_t count);

/* Ring entry j (0 = most recent): its frames and count. NULL when j >= count. */
const uint64_t *perch__cap_ring_get(const perch__cap_stack_ring *r, unsigned j, uint32_t *len);

#endif
