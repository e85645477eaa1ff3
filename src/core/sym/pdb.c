/*
 * The PDB reader's entry point: the MSF container, the PDB info stream (version, signature,
 * age, GUID, the named stream map it skips, the feature codes that mark /DEBUG:FASTLINK
 * PDBs) and the DBI stream header (its age, machine, the symbol record stream and the sizes
 * of its substreams). Sources: LLVM's "The PDB Info Stream" and "The DBI Stream" pages and
 * Microsoft's pdb-rs notes (docs/symbols.md "PDB streams").
 */
#include <string.h>

#include "decode/cursor.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym/pdb_internal.h"
#include "sym/sym_internal.h"
#include "util/mem.h"

#define PDB_VC70                   20000404u
#define FEATURE_MINIMAL_DEBUG_INFO 0x494E494Du /* "MINI": /DEBUG:FASTLINK */
#define MAX_INFO_STREAM            (1u << 20)

/* Skips the named stream map (string buffer, then a hash table of present entries) and
 * reads the feature codes after it. */
static void read_features(perch__pdb_reader *rd, cursor *c)
{
    cur_skip(c, cur_u32(c));       /* string buffer */
    uint32_t present = cur_u32(c); /* entries */
    cur_skip(c, 4);                /* capacity */
    uint32_t words = cur_u32(c);
    cur_skip(c, words > cur_left(c) / 4 ? cur_left(c) + 1 : words * 4);
    words = cur_u32(c);
    cur_skip(c, words > cur_left(c) / 4 ? cur_left(c) + 1 : words * 4);
    cur_skip(c, present > cur_left(c) / 8 ? cur_left(c) + 1 : present * 8);
    cur_skip(c, 4); /* the obsolete name index count */
    while (!c->bad && cur_left(c) >= 4)
        if (cur_u32(c) == FEATURE_MINIMAL_DEBUG_INFO)
            rd->info->fastlink = true;
}

static int read_info(perch__pdb_reader *rd)
{
    uint8_t *s;
    uint32_t len;
    cursor c;
    if (!perch__msf_has(&rd->msf, PERCH__PDB_STREAM_INFO))
        return perch__sym_fail(rd->why, PERCH_EFORMAT, "the PDB has no info stream");
    int err = perch__msf_read(&rd->msf, PERCH__PDB_STREAM_INFO, MAX_INFO_STREAM, &s, &len, rd->why);
    if (err)
        return err;
    cur_init(&c, s, len, 8);
    rd->info->version = cur_u32(&c);
    rd->info->signature = cur_u32(&c);
    rd->info->age = cur_u32(&c);
    if (rd->info->version >= PDB_VC70)
        cur_guid(&c, &rd->info->guid);
    if (c.bad)
        err = perch__sym_fail(rd->why, PERCH_ETRUNC, "the PDB info stream is cut short");
    else if (rd->info->version >= PDB_VC70)
        read_features(rd, &c);
    perch__free(s);
    return err;
}

/* The DBI header and the offsets of the substreams used later. */
static int read_dbi(perch__pdb_reader *rd)
{
    cursor c;
    int32_t sz[7];
    int err = perch__msf_read(&rd->msf, PERCH__PDB_STREAM_DBI, UINT32_MAX, &rd->dbi, &rd->dbi_len,
                              rd->why);
    if (err || rd->dbi == NULL)
        return err;
    if (rd->dbi_len < 64)
        return perch__sym_fail(rd->why, PERCH_ETRUNC, "the DBI stream is cut short");
    cur_init(&c, rd->dbi, 64, 8);
    if ((int32_t)cur_u32(&c) != -1)
        return perch__sym_fail(rd->why, PERCH_EFORMAT, "the DBI stream has no -1 signature");
    cur_skip(&c, 4);
    rd->info->dbi_age = cur_u32(&c);
    cur_skip(&c, 8); /* global index, build, public index, DLL version */
    rd->sym_stream = cur_u16(&c);
    cur_skip(&c, 2);
    for (int i = 0; i < 5; i++)
        sz[i] = (int32_t)cur_u32(&c);
    cur_skip(&c, 4);
    sz[5] = (int32_t)cur_u32(&c); /* optional debug header */
    sz[6] = (int32_t)cur_u32(&c); /* edit and continue */
    cur_skip(&c, 2);
    rd->info->machine = cur_u16(&c);
    uint64_t at = 64, off[7];
    for (int i = 0; i < 7; i++) { /* substream order: mod, con, map, src, tsm, ec, dbg */
        int k = i == 5 ? 6 : i == 6 ? 5 : i;
        if (sz[k] < 0 || at + (uint64_t)sz[k] > rd->dbi_len)
            return perch__sym_fail(rd->why, PERCH_EFORMAT,
                                   "a DBI substream runs past the end of the stream");
        off[k] = at;
        at += (uint64_t)sz[k];
    }
    rd->mod_off = (uint32_t)off[0], rd->mod_len = (uint32_t)sz[0];
    rd->con_off = (uint32_t)off[1], rd->con_len = (uint32_t)sz[1];
    rd->dbg_off = (uint32_t)off[5], rd->dbg_len = (uint32_t)sz[5];
    return 0;
}

static int read_names(perch__pdb_reader *rd)
{
    int err = perch__pdb_read_sections(rd);
    if (!err && rd->sec_count == 0)
        return 0; /* no way from segment:offset to an RVA */
    if (!err)
        err = perch__pdb_read_contributions(rd);
    if (!err && !rd->info->fastlink)
        err = perch__pdb_read_modules(rd);
    if (!err && perch__msf_has(&rd->msf, rd->sym_stream)) {
        uint8_t *s;
        uint32_t len;
        err = perch__msf_read(&rd->msf, rd->sym_stream, UINT32_MAX, &s, &len, rd->why);
        if (!err)
            err = perch__pdb_read_records(rd, s, len, 0, true);
        perch__free(s);
    }
    return err;
}

int perch_pdb_read(const perch_input *in, const perch_pe_section *sections, uint32_t section_count,
                   perch_symtab *into, perch_pdb_info *info, const char **why)
{
    perch__pdb_reader rd;
    perch_pdb_info got;
    const char *reason = NULL;
    memset(&rd, 0, sizeof rd);
    memset(&got, 0, sizeof got);
    rd.info = &got;
    rd.tab = into;
    rd.why = &reason;
    rd.sym_stream = 0xFFFF;
    rd.secs = sections;
    rd.sec_count = section_count;
    int err = perch__msf_open(&rd.msf, in, rd.why);
    if (!err) {
        got.block_size = rd.msf.block_size;
        err = read_info(&rd);
    }
    if (!err)
        err = read_dbi(&rd);
    if (!err && into != NULL && rd.dbi != NULL)
        err = read_names(&rd);
    perch__free(rd.dbi);
    perch__free(rd.own_secs);
    perch__msf_close(&rd.msf);
    if (err)
        return perch__sym_fail(why, err, reason ? reason : perch_strerror(err));
    *info = got;
    return 0;
}
