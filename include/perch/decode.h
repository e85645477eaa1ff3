/*
 * Typed kernel events: the fixed-layout decoders that turn one normalized record
 * (include/perch/event.h) into one typed event.
 *
 * perch_decode() picks a decoder from one table keyed by (kernel group, opcode), or by
 * (provider GUID, opcode) for the few classic non-kernel providers Perch reads
 * (KernelTraceControl), checks the version against the range the table accepts, and reads the
 * payload through a bounds-checked little-endian cursor. Pointer-sized fields follow
 * ev->pointer_size (4 or 8), never the reader's; they are widened to uint64_t here.
 *
 * Nothing is allocated and no string is converted at decode time: strings, stack frames and
 * LBR entries are borrowed views into ev->payload (explicit byte lengths, no NUL included),
 * valid exactly as long as the payload is. Layouts and their sources: docs/events.md.
 *
 * Result semantics (see perch_decode below):
 *   0                 decoded. If the record's version is newer than the newest layout Perch
 *                     knows and the payload is at least as long as that layout needs, the fields
 *                     of the newest known layout are decoded and PERCH_DECODED_NEWER_VERSION is
 *                     set: the caller should count it.
 *   PERCH_EUNKNOWN    (group or provider, opcode) has no decoder: "not decoded", not an error.
 *   PERCH_ESHORT      the payload is too short for its (known) version, or a string that must be
 *                     NUL-terminated is not terminated inside the payload: an error.
 *   PERCH_EVERSION    a known event with a version older than any known layout, or a newer
 *                     version whose payload is shorter than the newest known layout: an error.
 *   PERCH_EFORMAT     a field's value is impossible whatever the payload length (a SID with
 *                     more than 15 sub-authorities).
 *   PERCH_EINVAL      ev or out is NULL, or ev->pointer_size is not 4 or 8.
 */
#ifndef PERCH_DECODE_H
#define PERCH_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/event.h"
#include "perch/json.h"
#include "perch/kind.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- borrowed views into the payload ------------------------------------------------------ */

/* UTF-16LE text: len bytes (even), NUL terminator not included. data is NULL when absent. */
typedef struct perch_wstr {
    const uint8_t *data;
    uint32_t len;
} perch_wstr;

/* 8-bit (ANSI/UTF-8) text: len bytes, NUL terminator not included. NULL when absent. */
typedef struct perch_astr {
    const char *data;
    uint32_t len;
} perch_astr;

/* Opaque bytes (e.g. a binary SID). len 0 when absent. */
typedef struct perch_bytes {
    const uint8_t *data;
    uint32_t len;
} perch_bytes;

/* An array of count pointer-sized values, pointer_size (4 or 8) bytes each, little-endian. */
typedef struct perch_ptr_array {
    const uint8_t *data;
    uint32_t count;
    uint8_t pointer_size;
} perch_ptr_array;

/* Element i (< count) of a pointer array, widened to 64 bits. No bounds check: i < count. */
static inline uint64_t perch_ptr_at(const perch_ptr_array *a, uint32_t i)
{
    const uint8_t *p = a->data + (size_t)i * a->pointer_size;
    uint64_t v = (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
    if (a->pointer_size == 8)
        v |= (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
             (uint64_t)p[7] << 56;
    return v;
}

/* A sequence of count NUL-terminated UTF-16LE strings occupying len bytes (terminators
 * included). perch_decode() has checked that all count strings are terminated inside it. */
typedef struct perch_wstr_list {
    const uint8_t *data;
    uint32_t len;
    uint32_t count;
} perch_wstr_list;

/* Iterates a string list: start with *pos = 0; returns true and sets *out to the next string
 * (terminator excluded) or false at the end of the list. */
bool perch_wstr_list_next(const perch_wstr_list *l, uint32_t *pos, perch_wstr *out);

/* ---- event types -------------------------------------------------------------------------- */

#define PERCH_DECODED_TYPE_MAP(X)                                                                  \
    X(CSWITCH, cswitch)                                                                            \
    X(READY_THREAD, ready_thread)                                                                  \
    X(THREAD, thread)                   /* Start 1, End 2, DCStart 3, DCEnd 4 */                   \
    X(THREAD_SET_NAME, thread_set_name) /* opcode 72 */                                            \
    X(SAMPLED_PROFILE, sampled_profile)                                                            \
    X(PMC_SAMPLE, pmc_sample)             /* PmcCounterProf, opcode 47 */                          \
    X(PMC_CONFIG, pmc_config)             /* PmcCounterConfig, opcode 48 */                        \
    X(PROFILE_INTERVAL, profile_interval) /* SetInterval 0x48, CollectionStart/End 0x49/0x4A */    \
    X(LBR, lbr)                                                                                    \
    X(STACK_WALK, stack_walk)                                                                      \
    X(STACK_KEY_REF, stack_key_ref)       /* StackKeyKernel 37, StackKeyUser 38 */                 \
    X(STACK_KEY_DEF, stack_key_def)       /* KeyCreate 34, KeyDelete 35, KeyRundown 36 */          \
    X(IMAGE, image)                       /* Load 10, Unload 2, DCStart 3, DCEnd 4 */              \
    X(KERNEL_BASE, kernel_base)           /* Image group opcode 0x21 */                            \
    X(PROCESS, process)                   /* Start 1, End 2, DCStart 3, DCEnd 4, Defunct 39 */     \
    X(HEADER_EXTENSION, header_extension) /* Header group opcodes 5 and 32 */                      \
    X(IMAGE_ID, image_id)                 /* KernelTraceControl opcode 0 */                        \
    X(DBG_ID_RSDS, dbg_id_rsds)           /* KernelTraceControl opcodes 36 and 37 */

typedef enum perch_decoded_type {
    PERCH_DECODED_NONE = 0,
#define PERCH_DECODED_TYPE_ENUM(upper, lower) PERCH_DECODED_##upper,
    PERCH_DECODED_TYPE_MAP(PERCH_DECODED_TYPE_ENUM)
#undef PERCH_DECODED_TYPE_ENUM
        PERCH_DECODED_TYPE_COUNT
} perch_decoded_type;

/* "cswitch", "thread", ...; NULL for an out-of-range value. */
const char *perch_decoded_type_name(perch_decoded_type type);

/* perch_decoded.flags */
#define PERCH_DECODED_NEWER_VERSION 0x0001u /* version newer than the newest known layout */
#define PERCH_DECODED_TRAILING      0x0002u /* payload longer than the layout (bytes ignored) */

/* KernelTraceControl: the classic (non-kernel) provider of ImageID and DbgID events in merged
 * traces, b3e675d7-2554-4f18-830b-2762732560de. */
extern const perch_guid perch_kernel_trace_control_guid;

/* ---- per-family payloads ------------------------------------------------------------------ */

/* CSwitch v2..v4, 24 bytes at any pointer size. Byte 13 is OldThreadWaitMode in v2 and
 * ThreadFlags in v3+: the other field is 0. */
typedef struct perch_cswitch {
    uint32_t new_thread_id;
    uint32_t old_thread_id;
    int8_t new_thread_priority;
    int8_t old_thread_priority;
    uint8_t previous_cstate;
    int8_t spare_byte;
    int8_t old_thread_wait_reason;
    int8_t old_thread_wait_mode; /* v2 only */
    uint8_t thread_flags;        /* v3+ only */
    int8_t old_thread_state;
    int8_t old_thread_wait_ideal_processor;
    uint32_t new_thread_wait_time;
    uint32_t reserved;
} perch_cswitch;

/* ReadyThread v2, 8 bytes. */
typedef struct perch_ready_thread {
    uint32_t thread_id; /* TThreadId: the thread being readied */
    int8_t adjust_reason;
    int8_t adjust_increment;
    uint8_t flag;
    uint8_t reserved;
} perch_ready_thread;

/* Thread Start/End/DCStart/DCEnd v2..v4. Offset 8+4P is StartAddr in v2 and Affinity in v3+:
 * the other field is 0. thread_name: v4, or a v3 record with trailing bytes (may be empty,
 * data NULL when the record carries none). */
typedef struct perch_thread {
    uint32_t process_id;
    uint32_t thread_id; /* TThreadId */
    uint64_t stack_base;
    uint64_t stack_limit;
    uint64_t user_stack_base;
    uint64_t user_stack_limit;
    uint64_t start_addr; /* v2 */
    uint64_t affinity;   /* v3+ */
    uint64_t win32_start_addr;
    uint64_t teb_base;
    uint32_t sub_process_tag;
    uint8_t base_priority; /* v3+ (0 in v2) */
    uint8_t page_priority; /* v3+ */
    uint8_t io_priority;   /* v3+ */
    uint8_t thread_flags;  /* v3+ */
    perch_wstr thread_name;
} perch_thread;

/* Thread SetName (opcode 72) v2. */
typedef struct perch_thread_set_name {
    uint32_t process_id;
    uint32_t thread_id;
    perch_wstr thread_name;
} perch_thread_set_name;

/* SampledProfile v2: P + 8 bytes. */
typedef struct perch_sampled_profile {
    uint64_t instruction_pointer;
    uint32_t thread_id;
    uint16_t count;
    uint8_t flags; /* bit0 ExecutingDpc, bit1 ExecutingIsr, bits3..7 Priority */
    uint8_t rank;
} perch_sampled_profile;

static inline bool perch_sampled_profile_dpc(const perch_sampled_profile *s)
{
    return (s->flags & 0x01u) != 0;
}
static inline bool perch_sampled_profile_isr(const perch_sampled_profile *s)
{
    return (s->flags & 0x02u) != 0;
}
static inline uint8_t perch_sampled_profile_priority(const perch_sampled_profile *s)
{
    return (uint8_t)(s->flags >> 3);
}

/* PmcCounterProf (PMC interrupt sample) v2: P + 8 bytes. */
typedef struct perch_pmc_sample {
    uint64_t instruction_pointer;
    uint32_t thread_id;
    uint16_t profile_source;
    uint16_t reserved;
} perch_pmc_sample;

/* PmcCounterConfig v2: u32 CounterCount, then CounterCount NUL-terminated UTF-16 names. */
typedef struct perch_pmc_config {
    uint32_t counter_count;
    perch_wstr_list counter_names;
} perch_pmc_config;

/* SetInterval (0x48, v2), CollectionStart (0x49) / CollectionEnd (0x4A) (v3: + SourceName). */
typedef struct perch_profile_interval {
    uint32_t source;
    uint32_t new_interval; /* 100 ns units */
    uint32_t old_interval;
    perch_wstr source_name; /* data NULL when absent (SetInterval, or v2) */
} perch_profile_interval;

/* LBR sample (Spare1 group, opcode 32). Header {u64 TimeStamp; u32 ProcessId; u32 ThreadId;
 * u32 Filters} then entries of entry_stride bytes, each starting with (From, To) pointers.
 * Entry 0 is the most recent branch. Single public source: see docs/events.md. */
typedef struct perch_lbr {
    uint64_t timestamp; /* raw clock of the capture */
    uint32_t process_id;
    uint32_t thread_id;
    uint32_t filters;
    const uint8_t *entries;
    uint32_t entry_count;
    uint8_t entry_stride; /* bytes per entry */
    uint8_t pointer_size;
} perch_lbr;

static inline uint64_t perch_lbr_from(const perch_lbr *l, uint32_t i)
{
    perch_ptr_array a = {l->entries + (size_t)i * l->entry_stride, 2, l->pointer_size};
    return perch_ptr_at(&a, 0);
}
static inline uint64_t perch_lbr_to(const perch_lbr *l, uint32_t i)
{
    perch_ptr_array a = {l->entries + (size_t)i * l->entry_stride, 2, l->pointer_size};
    return perch_ptr_at(&a, 1);
}

/* StackWalk_Event v2: frames innermost first (frame 0 is the IP for samples). */
typedef struct perch_stack_walk {
    uint64_t event_timestamp; /* raw header timestamp of the event the stack belongs to */
    uint32_t process_id;      /* StackProcess */
    uint32_t thread_id;       /* StackThread */
    perch_ptr_array frames;
} perch_stack_walk;

/* StackKeyKernel (37) / StackKeyUser (38) v2: a reference to a cached stack. */
typedef struct perch_stack_key_ref {
    uint64_t event_timestamp;
    uint32_t process_id;
    uint32_t thread_id;
    uint64_t stack_key;
} perch_stack_key_ref;

/* KeyCreate (34) / KeyDelete (35) / KeyRundown (36) v2: a cached stack's definition. */
typedef struct perch_stack_key_def {
    uint64_t stack_key;
    perch_ptr_array frames;
} perch_stack_key_def;

/* Image Load/Unload/DCStart/DCEnd v2/v3. v2 has a u32 Reserved0 where v3 has SignatureLevel,
 * SignatureType and a u16 Reserved0: in v2 signature_* are 0 and reserved0 holds the u32. */
typedef struct perch_image {
    uint64_t image_base;
    uint64_t image_size;
    uint32_t process_id;
    uint32_t image_checksum;
    uint32_t time_date_stamp;
    uint8_t signature_level;
    uint8_t signature_type;
    uint32_t reserved0;
    uint64_t default_base;
    uint32_t reserved1, reserved2, reserved3, reserved4;
    perch_wstr file_name;
} perch_image;

/* KernelBase (Image group 0x21) v2: the kernel's image base. */
typedef struct perch_kernel_base {
    uint64_t image_base;
} perch_kernel_base;

/* Process Start/End/DCStart/DCEnd/Defunct v3..v5. */
typedef struct perch_process {
    uint64_t unique_process_key;
    uint32_t process_id;
    uint32_t parent_id;
    uint32_t session_id;
    int32_t exit_status;
    uint64_t directory_table_base;
    uint32_t flags;             /* v4+ (0 in v3) */
    perch_bytes user_sid;       /* binary SID (rev, count, authority, subauths); len 0: none */
    perch_astr image_file_name; /* 8-bit */
    perch_wstr command_line;
    perch_wstr package_full_name; /* v4+; data NULL in v3 */
    perch_wstr application_id;    /* v4+; data NULL in v3 */
    uint64_t exit_time;           /* v5 (FILETIME), 0 before */
    bool has_exit_time;
} perch_process;

/* Header group Extension (5) / EndExtension (32) v2. */
typedef struct perch_header_extension {
    uint32_t group_mask[8];
    uint32_t kernel_event_version;
} perch_header_extension;

/* KernelTraceControl ImageID (opcode 0). */
typedef struct perch_image_id {
    uint64_t image_base;
    uint64_t image_size;
    uint32_t process_id;
    uint32_t time_date_stamp;
    perch_wstr original_file_name;
} perch_image_id;

/* KernelTraceControl DbgID_RSDS (opcode 36, also 37): the module's CodeView PDB identity. */
typedef struct perch_dbg_id_rsds {
    uint64_t image_base;
    uint32_t process_id;
    perch_guid guid; /* PDB signature */
    uint32_t age;
    perch_astr pdb_file_name;
} perch_dbg_id_rsds;

/* ---- the decoded event -------------------------------------------------------------------- */

typedef struct perch_decoded {
    uint8_t type;         /* perch_decoded_type */
    uint8_t kind;         /* perch_kind of (group, opcode) */
    uint8_t opcode;       /* copied from the record */
    uint8_t version;      /* copied from the record */
    uint8_t pointer_size; /* copied from the record */
    uint8_t pmc_count;    /* valid values in pmc[] (PMC counters that rode on the record) */
    uint16_t flags;       /* PERCH_DECODED_* */
    uint64_t pmc[PERCH_EVENT_MAX_PMC];
    union {
#define PERCH_DECODED_UNION_MEMBER(upper, lower) perch_##lower lower;
        PERCH_DECODED_TYPE_MAP(PERCH_DECODED_UNION_MEMBER)
#undef PERCH_DECODED_UNION_MEMBER
    };
} perch_decoded;

/* Why a decode failed: which field, at which payload offset, how many bytes it needed. */
typedef struct perch_decode_diag {
    int code;         /* the returned PERCH_E* */
    uint32_t offset;  /* payload byte offset where reading failed */
    uint32_t need;    /* bytes needed there (0 when not applicable) */
    const char *what; /* static text naming the event and field, e.g. "Process.UserSID" */
} perch_decode_diag;

/* Decodes ev into *out. Never allocates, never reads outside ev->payload[0, payload_len).
 * On success returns 0 and fills *out (borrowing ev->payload; PMC values are copied). On any
 * error *out is untouched and, when diag is not NULL, *diag says why (diag is untouched on
 * success). Return values: see the top of this file. Thread-safe: no state. */
int perch_decode(const perch_event *ev, perch_decoded *out, perch_decode_diag *diag);

/* True when perch_decode has a decoder for this (group or provider, opcode), any version. */
bool perch_decode_known(const perch_event *ev);

/* Counters a caller keeps across perch_decode calls (the model's ledger uses them). */
typedef struct perch_decode_stats {
    uint64_t decoded;                           /* returned 0 */
    uint64_t newer_version;                     /* returned 0 with PERCH_DECODED_NEWER_VERSION */
    uint64_t unknown;                           /* PERCH_EUNKNOWN: not decoded, not an error */
    uint64_t errors;                            /* any other negative result */
    uint64_t by_type[PERCH_DECODED_TYPE_COUNT]; /* successes by type */
} perch_decode_stats;

/* Adds one perch_decode result (rc, and d when rc == 0) to s. */
void perch_decode_stats_add(perch_decode_stats *s, int rc, const perch_decoded *d);

/* Writes a SID (as held in perch_process.user_sid) as "S-1-5-18" into out (cap bytes, NUL
 * terminated). Returns the length written, or PERCH_EFORMAT for a malformed SID (out untouched)
 * or PERCH_ELIMIT when cap is too small (out untouched). 192 bytes always suffice. */
int perch_sid_format(const perch_bytes *sid, char *out, size_t cap);

#define PERCH_SID_TEXT_MAX 192

/* Writes the key "fields" and, as its value, an object with d's decoded fields (call it inside
 * an open object). Keys are the Microsoft documentation field names in lower_snake_case
 * (new_thread_id, instruction_pointer, image_base, file_name, ...). Pointer-sized values and
 * addresses are "0x..." strings, other integers are numbers, UTF-16 strings are converted to
 * UTF-8 (invalid units become U+FFFD), stacks are arrays of "0x..." strings, and PMC counter
 * values (when d->pmc_count > 0) are a "pmc" array of numbers. Returns the writer's sticky
 * error (0 or a negative PERCH_E*). d must come from a successful perch_decode() whose payload
 * is still valid. */
int perch_decoded_write_json(perch_json *w, const perch_decoded *d);

#ifdef __cplusplus
}
#endif

#endif
