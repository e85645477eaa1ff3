/*
 * Process group decoders: Start (1), End (2), DCStart (3), DCEnd (4) and Defunct (39), v3-v5,
 * and the text form of the SID they carry. Layout and sources: docs/events.md, "Process".
 *
 * The UserSID field is either a u32 zero (no SID) or a TOKEN_USER of 2 * P bytes whose
 * contents are meaningless in a trace, followed by a binary SID of 8 + 4 * SubAuthorityCount
 * bytes.
 */
#include <stdio.h>

#include "decode/decode_internal.h"

#define SID_MAX_SUB_AUTHORITIES 15u

/* Reads the UserSID field into *sid (len 0 when absent). Returns 0 or PERCH_EFORMAT. */
static int read_sid(cursor *c, perch_bytes *sid)
{
    sid->data = NULL;
    sid->len = 0;
    uint32_t start = c->pos;
    if (cur_u32(c) == 0)
        return 0;
    c->pos = start;
    cur_skip(c, 2u * c->psize);
    const uint8_t *head = cur_take(c, 8);
    if (!head)
        return 0;
    if (head[1] > SID_MAX_SUB_AUTHORITIES)
        return PERCH_EFORMAT;
    if (!cur_take(c, 4u * head[1]))
        return 0;
    sid->data = head;
    sid->len = 8u + 4u * head[1];
    return 0;
}

static void process_strings(cursor *c, unsigned version, perch_process *p)
{
    p->image_file_name = cur_astr(c);
    p->command_line = cur_wstr(c);
    if (version >= 4) {
        p->package_full_name = cur_wstr(c);
        p->application_id = cur_wstr(c);
    }
    /* ExitTime: v5 (seen on Defunct); optional because no source says every v5 has it. */
    if (version >= 5 && !c->bad && cur_left(c) >= 8) {
        p->exit_time = cur_u64(c);
        p->has_exit_time = true;
    }
}

int perch__decode_process(const perch_event *ev, unsigned version, perch_decoded *out,
                          perch_decode_diag *diag)
{
    cursor c;
    perch_process p = {0};
    cur_init(&c, ev->payload, ev->payload_len, ev->pointer_size);
    p.unique_process_key = cur_ptr(&c);
    p.process_id = cur_u32(&c);
    p.parent_id = cur_u32(&c);
    p.session_id = cur_u32(&c);
    p.exit_status = (int32_t)cur_u32(&c);
    p.directory_table_base = cur_ptr(&c);
    if (version >= 4)
        p.flags = cur_u32(&c);
    uint32_t sid_at = c.pos;
    if (read_sid(&c, &p.user_sid) < 0)
        return perch__decode_fail(diag, PERCH_EFORMAT, sid_at + 1, 0,
                                  "Process.UserSID sub-authority count above 15");
    process_strings(&c, version, &p);
    if (c.bad)
        return perch__decode_short(diag, &c, "Process");
    out->process = p;
    return perch__decode_rest(&c);
}

int perch_sid_format(const perch_bytes *sid, char *out, size_t cap)
{
    char tmp[PERCH_SID_TEXT_MAX];
    if (!sid || !sid->data || sid->len < 8 || sid->data[1] > SID_MAX_SUB_AUTHORITIES ||
        sid->len != 8u + 4u * sid->data[1])
        return PERCH_EFORMAT;
    const uint8_t *s = sid->data;
    uint64_t authority = 0;
    for (int i = 2; i < 8; i++)
        authority = authority << 8 | s[i]; /* big-endian, 48 bits */
    int n = snprintf(tmp, sizeof tmp, "S-%u-%llu", s[0], (unsigned long long)authority);
    for (unsigned i = 0; i < s[1]; i++)
        n += snprintf(tmp + n, sizeof tmp - (size_t)n, "-%lu", (unsigned long)le32(s + 8 + 4 * i));
    if ((size_t)n + 1 > cap)
        return PERCH_ELIMIT;
    for (int i = 0; i <= n; i++)
        out[i] = tmp[i];
    return n;
}
