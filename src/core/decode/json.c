/*
 * JSON rendering of decoded events for `perch dump`: one "fields" object per event whose keys
 * are the Microsoft documentation field names in lower_snake_case. Addresses and pointer-sized
 * values are "0x..." strings, UTF-16 text is converted to UTF-8 here (never at decode time),
 * 8-bit text is passed through when it is valid UTF-8 and has invalid bytes replaced by U+FFFD.
 * One writer function per decoded type, picked from a table indexed by type.
 */
#include <stdlib.h>

#include "decode/decode_internal.h"
#include "perch/utf16.h"
#include "util/mem.h"

#define TEXT_STACK 1024

static void key_u(perch_json *w, const char *key, uint64_t v)
{
    perch_json_key(w, key);
    perch_json_uint(w, v);
}

static void key_i(perch_json *w, const char *key, int64_t v)
{
    perch_json_key(w, key);
    perch_json_int(w, v);
}

static void key_x(perch_json *w, const char *key, uint64_t v)
{
    perch_json_key(w, key);
    perch_json_hex(w, v);
}

/* Writes a converted string through a stack buffer, or a heap one for long strings. */
static void val_wstr(perch_json *w, perch_wstr s)
{
    char stack[TEXT_STACK];
    if (!s.data) {
        perch_json_null(w);
        return;
    }
    size_t need = perch_utf16le_utf8_len(s.data, s.len);
    char *buf = need <= sizeof stack ? stack : perch__alloc(need);
    if (!buf) {
        perch_json_null(w);
        if (!w->error)
            w->error = PERCH_ENOMEM;
        return;
    }
    size_t n = perch_utf16le_to_utf8(s.data, s.len, buf, need);
    perch_json_string_n(w, buf, n);
    if (buf != stack)
        perch__free(buf);
}

static void key_wstr(perch_json *w, const char *key, perch_wstr s)
{
    perch_json_key(w, key);
    val_wstr(w, s);
}

static void key_astr(perch_json *w, const char *key, perch_astr s)
{
    char stack[TEXT_STACK];
    perch_json_key(w, key);
    if (!s.data) {
        perch_json_null(w);
        return;
    }
    /* Worst case every byte becomes the 3-byte U+FFFD. */
    size_t cap = (size_t)s.len * 3;
    char *buf = cap <= sizeof stack ? stack : perch__alloc(cap);
    if (!buf) {
        perch_json_null(w);
        if (!w->error)
            w->error = PERCH_ENOMEM;
        return;
    }
    const unsigned char *p = (const unsigned char *)s.data;
    size_t out = 0;
    for (size_t i = 0; i < s.len;) {
        size_t n = p[i] < 0x80 ? 1 : perch_utf8_seq_len((const uint8_t *)p + i, s.len - i);
        if (n == 0) {
            buf[out++] = (char)0xEF, buf[out++] = (char)0xBF, buf[out++] = (char)0xBD;
            i++;
            continue;
        }
        for (size_t k = 0; k < n; k++)
            buf[out++] = (char)p[i + k];
        i += n;
    }
    perch_json_string_n(w, buf, out);
    if (buf != stack)
        perch__free(buf);
}

static void key_ptrs(perch_json *w, const char *key, const perch_ptr_array *a)
{
    perch_json_key(w, key);
    perch_json_begin_array(w);
    for (uint32_t i = 0; i < a->count; i++)
        perch_json_hex(w, perch_ptr_at(a, i));
    perch_json_end_array(w);
}

static void write_cswitch(perch_json *w, const perch_decoded *d)
{
    const perch_cswitch *s = &d->cswitch;
    key_u(w, "new_thread_id", s->new_thread_id);
    key_u(w, "old_thread_id", s->old_thread_id);
    key_i(w, "new_thread_priority", s->new_thread_priority);
    key_i(w, "old_thread_priority", s->old_thread_priority);
    key_u(w, "previous_c_state", s->previous_cstate);
    key_i(w, "spare_byte", s->spare_byte);
    key_i(w, "old_thread_wait_reason", s->old_thread_wait_reason);
    if (d->version == 2)
        key_i(w, "old_thread_wait_mode", s->old_thread_wait_mode);
    else
        key_u(w, "thread_flags", s->thread_flags);
    key_i(w, "old_thread_state", s->old_thread_state);
    key_i(w, "old_thread_wait_ideal_processor", s->old_thread_wait_ideal_processor);
    key_u(w, "new_thread_wait_time", s->new_thread_wait_time);
    key_u(w, "reserved", s->reserved);
}

static void write_ready_thread(perch_json *w, const perch_decoded *d)
{
    const perch_ready_thread *r = &d->ready_thread;
    key_u(w, "t_thread_id", r->thread_id);
    key_i(w, "adjust_reason", r->adjust_reason);
    key_i(w, "adjust_increment", r->adjust_increment);
    key_u(w, "flag", r->flag);
    key_u(w, "reserved", r->reserved);
}

static void write_thread(perch_json *w, const perch_decoded *d)
{
    const perch_thread *t = &d->thread;
    key_u(w, "process_id", t->process_id);
    key_u(w, "t_thread_id", t->thread_id);
    key_x(w, "stack_base", t->stack_base);
    key_x(w, "stack_limit", t->stack_limit);
    key_x(w, "user_stack_base", t->user_stack_base);
    key_x(w, "user_stack_limit", t->user_stack_limit);
    if (d->version == 2)
        key_x(w, "start_addr", t->start_addr);
    else
        key_x(w, "affinity", t->affinity);
    key_x(w, "win32_start_addr", t->win32_start_addr);
    key_x(w, "teb_base", t->teb_base);
    key_u(w, "sub_process_tag", t->sub_process_tag);
    if (d->version >= 3) {
        key_u(w, "base_priority", t->base_priority);
        key_u(w, "page_priority", t->page_priority);
        key_u(w, "io_priority", t->io_priority);
        key_u(w, "thread_flags", t->thread_flags);
    }
    if (t->thread_name.data)
        key_wstr(w, "thread_name", t->thread_name);
}

static void write_thread_set_name(perch_json *w, const perch_decoded *d)
{
    key_u(w, "process_id", d->thread_set_name.process_id);
    key_u(w, "thread_id", d->thread_set_name.thread_id);
    key_wstr(w, "thread_name", d->thread_set_name.thread_name);
}

static void write_sampled_profile(perch_json *w, const perch_decoded *d)
{
    const perch_sampled_profile *s = &d->sampled_profile;
    key_x(w, "instruction_pointer", s->instruction_pointer);
    key_u(w, "thread_id", s->thread_id);
    key_u(w, "count", s->count);
    key_u(w, "flags", s->flags);
    perch_json_key(w, "executing_dpc");
    perch_json_bool(w, perch_sampled_profile_dpc(s));
    perch_json_key(w, "executing_isr");
    perch_json_bool(w, perch_sampled_profile_isr(s));
    key_u(w, "priority", perch_sampled_profile_priority(s));
    key_u(w, "rank", s->rank);
}

static void write_pmc_sample(perch_json *w, const perch_decoded *d)
{
    key_x(w, "instruction_pointer", d->pmc_sample.instruction_pointer);
    key_u(w, "thread_id", d->pmc_sample.thread_id);
    key_u(w, "profile_source", d->pmc_sample.profile_source);
    key_u(w, "reserved", d->pmc_sample.reserved);
}

static void write_pmc_config(perch_json *w, const perch_decoded *d)
{
    perch_wstr name;
    uint32_t pos = 0;
    key_u(w, "counter_count", d->pmc_config.counter_count);
    perch_json_key(w, "counter_name");
    perch_json_begin_array(w);
    while (perch_wstr_list_next(&d->pmc_config.counter_names, &pos, &name))
        val_wstr(w, name);
    perch_json_end_array(w);
}

static void write_profile_interval(perch_json *w, const perch_decoded *d)
{
    const perch_profile_interval *iv = &d->profile_interval;
    key_u(w, "source", iv->source);
    key_u(w, "new_interval", iv->new_interval);
    key_u(w, "old_interval", iv->old_interval);
    if (iv->source_name.data)
        key_wstr(w, "source_name", iv->source_name);
}

static void write_lbr(perch_json *w, const perch_decoded *d)
{
    const perch_lbr *l = &d->lbr;
    key_u(w, "time_stamp", l->timestamp);
    key_u(w, "process_id", l->process_id);
    key_u(w, "thread_id", l->thread_id);
    key_x(w, "filters", l->filters);
    perch_json_key(w, "branches");
    perch_json_begin_array(w);
    for (uint32_t i = 0; i < l->entry_count; i++) {
        perch_json_begin_object(w);
        key_x(w, "from", perch_lbr_from(l, i));
        key_x(w, "to", perch_lbr_to(l, i));
        perch_json_end_object(w);
    }
    perch_json_end_array(w);
}

static void write_stack_walk(perch_json *w, const perch_decoded *d)
{
    key_u(w, "event_time_stamp", d->stack_walk.event_timestamp);
    key_u(w, "stack_process", d->stack_walk.process_id);
    key_u(w, "stack_thread", d->stack_walk.thread_id);
    key_ptrs(w, "stack", &d->stack_walk.frames);
}

static void write_stack_key_ref(perch_json *w, const perch_decoded *d)
{
    key_u(w, "event_time_stamp", d->stack_key_ref.event_timestamp);
    key_u(w, "stack_process", d->stack_key_ref.process_id);
    key_u(w, "stack_thread", d->stack_key_ref.thread_id);
    key_x(w, "stack_key", d->stack_key_ref.stack_key);
}

static void write_stack_key_def(perch_json *w, const perch_decoded *d)
{
    key_x(w, "stack_key", d->stack_key_def.stack_key);
    key_ptrs(w, "stack", &d->stack_key_def.frames);
}

static void write_image(perch_json *w, const perch_decoded *d)
{
    const perch_image *im = &d->image;
    key_x(w, "image_base", im->image_base);
    key_u(w, "image_size", im->image_size);
    key_u(w, "process_id", im->process_id);
    key_u(w, "image_checksum", im->image_checksum);
    key_u(w, "time_date_stamp", im->time_date_stamp);
    if (d->version >= 3) {
        key_u(w, "signature_level", im->signature_level);
        key_u(w, "signature_type", im->signature_type);
    }
    key_u(w, "reserved0", im->reserved0);
    key_x(w, "default_base", im->default_base);
    key_u(w, "reserved1", im->reserved1);
    key_u(w, "reserved2", im->reserved2);
    key_u(w, "reserved3", im->reserved3);
    key_u(w, "reserved4", im->reserved4);
    key_wstr(w, "file_name", im->file_name);
}

static void write_kernel_base(perch_json *w, const perch_decoded *d)
{
    key_x(w, "image_base", d->kernel_base.image_base);
}

static void write_sid(perch_json *w, const perch_bytes *sid)
{
    char text[PERCH_SID_TEXT_MAX];
    perch_json_key(w, "user_sid");
    if (sid->len && perch_sid_format(sid, text, sizeof text) >= 0)
        perch_json_string(w, text);
    else
        perch_json_null(w);
}

static void write_process(perch_json *w, const perch_decoded *d)
{
    const perch_process *p = &d->process;
    key_x(w, "unique_process_key", p->unique_process_key);
    key_u(w, "process_id", p->process_id);
    key_u(w, "parent_id", p->parent_id);
    key_u(w, "session_id", p->session_id);
    key_i(w, "exit_status", p->exit_status);
    key_x(w, "directory_table_base", p->directory_table_base);
    if (d->version >= 4)
        key_u(w, "flags", p->flags);
    write_sid(w, &p->user_sid);
    key_astr(w, "image_file_name", p->image_file_name);
    key_wstr(w, "command_line", p->command_line);
    if (d->version >= 4) {
        key_wstr(w, "package_full_name", p->package_full_name);
        key_wstr(w, "application_id", p->application_id);
    }
    if (p->has_exit_time)
        key_u(w, "exit_time", p->exit_time);
}

static void write_header_extension(perch_json *w, const perch_decoded *d)
{
    perch_json_key(w, "group_mask");
    perch_json_begin_array(w);
    for (int i = 0; i < 8; i++)
        perch_json_hex(w, d->header_extension.group_mask[i]);
    perch_json_end_array(w);
    key_u(w, "kernel_event_version", d->header_extension.kernel_event_version);
}

static void write_image_id(perch_json *w, const perch_decoded *d)
{
    key_x(w, "image_base", d->image_id.image_base);
    key_u(w, "image_size", d->image_id.image_size);
    key_u(w, "process_id", d->image_id.process_id);
    key_u(w, "time_date_stamp", d->image_id.time_date_stamp);
    key_wstr(w, "original_file_name", d->image_id.original_file_name);
}

static void write_dbg_id_rsds(perch_json *w, const perch_decoded *d)
{
    char guid[37];
    perch_guid_format(&d->dbg_id_rsds.guid, guid);
    key_x(w, "image_base", d->dbg_id_rsds.image_base);
    key_u(w, "process_id", d->dbg_id_rsds.process_id);
    perch_json_key(w, "guid_sig");
    perch_json_string(w, guid);
    key_u(w, "age", d->dbg_id_rsds.age);
    key_astr(w, "pdb_file_name", d->dbg_id_rsds.pdb_file_name);
}

typedef void (*write_fn)(perch_json *w, const perch_decoded *d);

static const write_fn writers[PERCH_DECODED_TYPE_COUNT] = {
#define PERCH_DECODED_WRITER(upper, lower) [PERCH_DECODED_##upper] = write_##lower,
    PERCH_DECODED_TYPE_MAP(PERCH_DECODED_WRITER)
#undef PERCH_DECODED_WRITER
};

int perch_decoded_write_json(perch_json *w, const perch_decoded *d)
{
    perch_json_key(w, "fields");
    perch_json_begin_object(w);
    if (d->type < PERCH_DECODED_TYPE_COUNT && writers[d->type])
        writers[d->type](w, d);
    if (d->pmc_count) {
        perch_json_key(w, "pmc");
        perch_json_begin_array(w);
        for (unsigned i = 0; i < d->pmc_count && i < PERCH_EVENT_MAX_PMC; i++)
            perch_json_uint(w, d->pmc[i]);
        perch_json_end_array(w);
    }
    perch_json_end_object(w);
    return w->error;
}
