/*
 * The MSF 7.00 container (see msf.h). The superblock (page 0) holds the page size, the page
 * count, the directory's size and, from byte 52, the page numbers of the directory's page
 * map; the page map lists the directory's pages; the directory lists every stream's size
 * and pages. Sources: LLVM's "The MSF File Format" and Microsoft's pdb-rs "MSF" notes
 * (docs/symbols.md "MSF").
 */
#include <string.h>

#include "decode/cursor.h"
#include "perch/error.h"
#include "sym/msf.h"
#include "sym/sym_internal.h"
#include "util/mem.h"

static const char big_magic[32] = "Microsoft C/C++ MSF 7.00\r\n\x1a"
                                  "DS\0\0\0";
static const char jg_magic[44] = "Microsoft C/C++ program database 2.00\r\n\x1a"
                                 "JG\0\0";

#define HDR_MAP 52 /* offset of big_stream_pages_map[] in the superblock */

void perch__msf_close(perch__msf *m)
{
    perch__free(m->sizes);
    perch__free(m->first);
    perch__free(m->blocks);
    memset(m, 0, sizeof *m);
}

bool perch__msf_has(const perch__msf *m, uint32_t s)
{
    return s < m->stream_count && m->sizes[s] != PERCH__MSF_NIL;
}

uint32_t perch__msf_size(const perch__msf *m, uint32_t s)
{
    return perch__msf_has(m, s) ? m->sizes[s] : 0;
}

static uint32_t blocks_for(const perch__msf *m, uint32_t bytes)
{
    return bytes == PERCH__MSF_NIL
               ? 0
               : (uint32_t)(((uint64_t)bytes + m->block_size - 1) / m->block_size);
}

/* Reads len bytes spread over the pages list[0..] into dst, coalescing runs of consecutive
 * pages into one read. */
static int read_pages(const perch__msf *m, const uint32_t *list, uint8_t *dst, uint32_t len,
                      const char **why)
{
    uint32_t i = 0;
    while (len > 0) {
        uint32_t run = 1;
        uint64_t want = m->block_size;
        if (list[i] >= m->block_count)
            return perch__sym_fail(why, PERCH_EFORMAT, "a stream page is past the page count");
        while (want < len && list[i + run] == list[i] + run && list[i + run] < m->block_count) {
            run++;
            want += m->block_size;
        }
        uint32_t n = want < len ? (uint32_t)want : len;
        int err = perch_input_read_exact(m->in, (uint64_t)list[i] * m->block_size, dst, n);
        if (err)
            return perch__sym_read_fail(why, err, PERCH_ETRUNC,
                                        "a stream page is past the end of the file");
        dst += n;
        len -= n;
        i += run;
    }
    return 0;
}

int perch__msf_read(const perch__msf *m, uint32_t s, uint32_t max, uint8_t **buf, uint32_t *len,
                    const char **why)
{
    uint32_t n = perch__msf_size(m, s);
    n = n < max ? n : max;
    *buf = NULL;
    *len = 0;
    if (n == 0)
        return 0;
    if (n > m->in->size)
        return perch__sym_fail(why, PERCH_EFORMAT, "a stream is larger than the file");
    uint8_t *b = perch__alloc(n);
    if (b == NULL)
        return PERCH_ENOMEM;
    int err = read_pages(m, m->blocks + m->first[s], b, n, why);
    if (err) {
        perch__free(b);
        return err;
    }
    *buf = b;
    *len = n;
    return 0;
}

/* Reads the directory (dir_size bytes) through the page map named in the superblock hdr. */
static int read_directory(perch__msf *m, const uint8_t *hdr, uint32_t dir_size, uint8_t **out,
                          const char **why)
{
    uint32_t bs = m->block_size, pages = blocks_for(m, dir_size);
    uint32_t map_pages = (uint32_t)(((uint64_t)pages * 4 + bs - 1) / bs);
    if (HDR_MAP + 4ull * map_pages > bs)
        return perch__sym_fail(why, PERCH_EFORMAT, "the directory's page map does not fit");
    uint32_t *map = perch__calloc(map_pages, (size_t)bs);
    uint32_t *list = perch__calloc(pages + 1u, sizeof *list);
    uint8_t *dir = perch__alloc(dir_size);
    uint32_t *map_list = perch__calloc(map_pages + 1u, sizeof *map_list);
    int err = map && list && dir && map_list ? 0 : PERCH_ENOMEM;
    for (uint32_t i = 0; i < map_pages && !err; i++)
        map_list[i] = le32(hdr + HDR_MAP + 4 * i);
    if (!err)
        err = read_pages(m, map_list, (uint8_t *)map, pages * 4, why);
    for (uint32_t i = 0; i < pages && !err; i++)
        list[i] = le32((const uint8_t *)map + 4 * i);
    if (!err)
        err = read_pages(m, list, dir, dir_size, why);
    perch__free(map);
    perch__free(list);
    perch__free(map_list);
    if (err) {
        perch__free(dir);
        return err;
    }
    *out = dir;
    return 0;
}

/* Splits the directory into stream sizes and page lists. */
static int parse_directory(perch__msf *m, const uint8_t *dir, uint32_t dir_size, const char **why)
{
    uint32_t words = dir_size / 4, ns = le32(dir), used = 0;
    if (ns == 0 || ns > words - 1)
        return perch__sym_fail(why, PERCH_EFORMAT, "the stream directory is malformed");
    m->sizes = perch__calloc(ns, sizeof *m->sizes);
    m->first = perch__calloc(ns, sizeof *m->first);
    m->blocks = perch__calloc(words - 1 - ns + 1u, sizeof *m->blocks);
    if (!m->sizes || !m->first || !m->blocks)
        return PERCH_ENOMEM;
    for (uint32_t s = 0; s < ns; s++) {
        m->sizes[s] = le32(dir + 4 + 4 * s);
        m->first[s] = used;
        uint32_t nb = blocks_for(m, m->sizes[s]);
        if (nb > words - 1 - ns - used)
            return perch__sym_fail(why, PERCH_EFORMAT, "the stream directory is cut short");
        for (uint32_t b = 0; b < nb; b++) {
            m->blocks[used + b] = le32(dir + 4 * (1 + ns + used + b));
            if (m->blocks[used + b] >= m->block_count)
                return perch__sym_fail(why, PERCH_EFORMAT, "a stream page is past the page count");
        }
        used += nb;
    }
    m->stream_count = ns;
    return 0;
}

static int check_superblock(perch__msf *m, const uint8_t *hdr, size_t got, uint32_t *dir_size,
                            const char **why)
{
    if (got >= sizeof jg_magic && memcmp(hdr, jg_magic, sizeof jg_magic) == 0)
        return perch__sym_fail(why, PERCH_EVERSION,
                               "a PDB 2.00 (JG) file, from Visual C++ 6 or older: only MSF "
                               "7.00 PDBs are read");
    if (got < HDR_MAP + 4 || memcmp(hdr, big_magic, sizeof big_magic) != 0)
        return perch__sym_fail(why, PERCH_EFORMAT, "not a PDB (no MSF 7.00 signature)");
    uint32_t bs = le32(hdr + 32);
    if (bs < 512 || bs > 65536 || (bs & (bs - 1)) != 0)
        return perch__sym_fail(why, PERCH_EFORMAT,
                               "the page size is not a power of two from 512 to 65536");
    m->block_size = bs;
    m->block_count = le32(hdr + 40);
    if ((uint64_t)m->block_count * bs > m->in->size + bs - 1)
        m->block_count = (uint32_t)((m->in->size + bs - 1) / bs); /* a cut file: its pages */
    *dir_size = le32(hdr + 44);
    if (*dir_size < 8 || *dir_size % 4 != 0 || *dir_size > m->in->size)
        return perch__sym_fail(why, PERCH_EFORMAT, "the stream directory size is invalid");
    return 0;
}

int perch__msf_open(perch__msf *m, const perch_input *in, const char **why)
{
    uint8_t *hdr = perch__alloc(65536);
    uint8_t *dir = NULL;
    uint32_t dir_size = 0;
    size_t got = 0;
    int err;
    memset(m, 0, sizeof *m);
    m->in = in;
    if (hdr == NULL)
        return PERCH_ENOMEM;
    got = in->size < 65536 ? (size_t)in->size : 65536;
    err = perch_input_read_exact(in, 0, hdr, got);
    if (!err)
        err = check_superblock(m, hdr, got, &dir_size, why);
    if (!err && got < m->block_size)
        err = perch__sym_fail(why, PERCH_ETRUNC, "the file ends inside its first page");
    if (!err)
        err = read_directory(m, hdr, dir_size, &dir, why);
    if (!err)
        err = parse_directory(m, dir, dir_size, why);
    perch__free(hdr);
    perch__free(dir);
    if (err) {
        perch__msf_close(m);
        m->in = in;
    }
    return err;
}
