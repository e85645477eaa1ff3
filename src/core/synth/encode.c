/*
 * Payload encoders for the variable-size event families the generator writes with 64-bit
 * pointers: Process v4, Thread v3 (with the Windows 10 ThreadName tail), Image v3 and the
 * KernelTraceControl DbgID_RSDS record. Each family has a _len (payload bytes) and a _put that
 * fills exactly that many bytes. Offsets are those of docs/synth.md (layouts reference 1.8 to
 * 1.10).
 */
#include <stdio.h>
#include <string.h>

#include "synth_internal.h"

#define TOKEN_USER_LEN 16u /* 2 * P: PSID pointer, Attributes, padding */

static const char *sid_of(const struct synth_proc_tpl *tpl, uint32_t *len)
{
    static const char system_sid[] = "\x01\x01\x00\x00\x00\x00\x00\x05\x12\x00\x00\x00";
    static const char user_sid[] = "\x01\x05\x00\x00\x00\x00\x00\x05\x15\x00\x00\x00"
                                   "\x9a\x3c\x1d\x6e\x47\x51\x0b\x2a\xd3\x88\x19\x5c"
                                   "\xe9\x03\x00\x00";
    if (tpl->session == 1) {
        *len = 28;
        return user_sid;
    }
    *len = 12;
    return system_sid;
}

uint32_t perch__synth_process_len(const struct synth_sim *s, const struct synth_proc *p)
{
    const struct synth_proc_tpl *tpl = &perch__synth_tpls[p->tpl];
    uint32_t sid;
    (void)s;
    sid_of(tpl, &sid);
    return 36u + TOKEN_USER_LEN + sid + (uint32_t)strlen(tpl->name) + 1u +
           (uint32_t)synth_utf16_len(tpl->cmdline) + 2u + 2u;
}

void perch__synth_process_put(uint8_t *d, const struct synth_sim *s, const struct synth_proc *p,
                              int32_t exit_status)
{
    const struct synth_proc_tpl *tpl = &perch__synth_tpls[p->tpl];
    uint32_t sid;
    const char *sid_bytes = sid_of(tpl, &sid);
    (void)s;
    d = synth_u64(d, p->key);
    d = synth_u32(d, p->pid);
    d = synth_u32(d, p->ppid);
    d = synth_u32(d, tpl->session);
    d = synth_u32(d, (uint32_t)exit_status);
    d = synth_u64(d, 0x1AD000ull + ((uint64_t)p->pid << 12)); /* DirectoryTableBase */
    d = synth_u32(d, 0);                                      /* Flags */
    d = synth_u64(d, p->key + 0x4C0);                         /* TOKEN_USER.User.Sid */
    d = synth_u64(d, 0);                                      /* Attributes + padding */
    memcpy(d, sid_bytes, sid);
    d = perch__synth_ansi(d + sid, tpl->name);
    d = perch__synth_utf16(d, tpl->cmdline);
    d = perch__synth_utf16(d, ""); /* PackageFullName */
    perch__synth_utf16(d, "");     /* ApplicationId */
}

void perch__synth_thread_name(const struct synth_thread *t, char *out, size_t cap)
{
    const char *name = perch__synth_roles[t->role].thread_name;
    if (t->role == ROLE_GAME_WORKER)
        snprintf(out, cap, "%s %u", name, (unsigned)t->number);
    else
        snprintf(out, cap, "%s", name);
}

uint32_t perch__synth_thread_len(const struct synth_sim *s, const struct synth_thread *t)
{
    char name[32];
    (void)s;
    perch__synth_thread_name(t, name, sizeof name);
    return 72u + (uint32_t)synth_utf16_len(name);
}

static uint64_t affinity(const struct synth_sim *s, const struct synth_thread *t)
{
    if (t->role == ROLE_IDLE)
        return 1ull << t->cpu;
    return s->cpus >= 64 ? UINT64_MAX : (1ull << s->cpus) - 1;
}

void perch__synth_thread_put(uint8_t *d, const struct synth_sim *s, const struct synth_thread *t)
{
    const struct synth_role *r = &perch__synth_roles[t->role];
    const struct synth_proc *p = &s->procs[t->proc];
    uint64_t kstack = 0xFFFFF68000000000ull + ((uint64_t)t->tid << 15) + (t->cpu << 12);
    bool user = !r->kernel_only;
    char name[32];
    d = synth_u32(d, p->pid);
    d = synth_u32(d, t->tid);
    d = synth_u64(d, kstack);
    d = synth_u64(d, kstack - 0x6000);
    d = synth_u64(d, user ? 0x000000AB00000000ull + ((uint64_t)t->tid << 20) : 0);
    d = synth_u64(d, user ? 0x000000AB00000000ull + ((uint64_t)t->tid << 20) - 0x100000 : 0);
    d = synth_u64(d, affinity(s, t));
    d = synth_u64(d, user ? perch__synth_user_ip(s, t, 0)
                          : perch__synth_kmods[0].base + 0x3A1F20 + t->role * 0x40u);
    d = synth_u64(d, user ? 0x000000ABC0000000ull + ((uint64_t)t->tid << 13) : 0);
    d = synth_u32(d, 0);          /* SubProcessTag */
    d = synth_u8(d, r->priority); /* BasePriority */
    d = synth_u8(d, 5);           /* PagePriority */
    d = synth_u8(d, 2);           /* IoPriority */
    d = synth_u8(d, 0);           /* ThreadFlags */
    perch__synth_thread_name(t, name, sizeof name);
    perch__synth_utf16(d, name);
}

uint32_t perch__synth_image_len(const struct synth_module *m)
{
    return 56u + (uint32_t)synth_utf16_len(m->path);
}

void perch__synth_image_put(uint8_t *d, const struct synth_module *m, uint64_t base, uint32_t pid)
{
    d = synth_u64(d, base);
    d = synth_u64(d, m->size);
    d = synth_u32(d, pid);
    d = synth_u32(d, (uint32_t)synth_hash(m->timestamp, m->size) & 0x00FFFFFFu); /* checksum */
    d = synth_u32(d, m->timestamp);
    d = synth_u8(d, 12); /* SignatureLevel */
    d = synth_u8(d, 1);  /* SignatureType */
    d = synth_u16(d, 0);
    d = synth_u64(d, base < 0xFFFF800000000000ull ? base : 0); /* DefaultBase */
    memset(d, 0, 16);                                          /* Reserved1..4 */
    perch__synth_utf16(d + 16, m->path);
}

uint32_t perch__synth_rsds_len(const struct synth_module *m)
{
    return 32u + (uint32_t)strlen(m->pdb) + 1u;
}

void perch__synth_rsds_put(uint8_t *d, const struct synth_module *m, const perch_synth_image *image,
                           uint64_t base, uint32_t pid)
{
    uint64_t h = synth_hash(m->timestamp, m->size);
    uint64_t l = synth_hash(h, 0x5253445300000000ull); /* "RSDS" */
    perch_guid sig = {(uint32_t)h, (uint16_t)(h >> 32), (uint16_t)(h >> 48), {0}};
    for (int i = 0; i < 8; i++)
        sig.data4[i] = (uint8_t)(l >> (8 * i));
    if (image != NULL)
        sig = image->pdb_guid;
    d = synth_u64(d, base);
    d = synth_u32(d, pid);
    d = perch__synth_guid(d, &sig);
    d = synth_u32(d, image ? image->pdb_age : 1u + m->timestamp % 3u); /* Age */
    perch__synth_ansi(d, m->pdb);
}
