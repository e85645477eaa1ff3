/*
 * A replay driver for fuzz targets when libFuzzer is not available (gcc, mingw).
 *
 * For each file given (or each file in each directory given) it runs the target on the file,
 * on every prefix cut at a spread of lengths, and on a bounded number of deterministic
 * byte-flip mutations. It proves the target survives its seeds and their near neighbours; the
 * coverage-guided search itself runs in the clang build.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_SEED_BYTES = 64 << 20, CUTS = 64, FLIPS = 256 };

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void run_one(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return;
    memcpy(copy, data, size);
    LLVMFuzzerTestOneInput(copy, size);
    free(copy);
}

static void replay(const uint8_t *data, size_t size)
{
    run_one(data, size);
    for (size_t i = 1; i < CUTS && size > 1; i++)
        run_one(data, size * i / CUTS);
    if (!size)
        return;
    uint8_t *m = malloc(size);
    if (!m)
        return;
    for (int i = 0; i < FLIPS; i++) {
        memcpy(m, data, size);
        for (int k = 0; k < 4; k++)
            m[next_random() % size] ^= (uint8_t)(1u << (next_random() % 8));
        run_one(m, size);
    }
    free(m);
}

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || stat(path, &st) != 0 || st.st_size > MAX_SEED_BYTES) {
        if (f)
            fclose(f);
        return 0;
    }
    uint8_t *buf = malloc((size_t)st.st_size + 1);
    size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (buf)
        replay(buf, n);
    free(buf);
    printf("replayed %s (%zu bytes)\n", path, n);
    return 1;
}

static int replay_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return replay_file(path);
    DIR *d = opendir(path);
    struct dirent *e;
    int count = 0;
    char child[4096];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        count += replay_file(child);
    }
    if (d)
        closedir(d);
    return count;
}

int main(int argc, char **argv)
{
    int count = 0;
    for (int i = 1; i < argc; i++)
        count += replay_path(argv[i]);
    if (count == 0 && getenv("CI")) {
        fprintf(stderr, "no seed files found and CI is set\n");
        return 1;
    }
    printf("%d seed file(s) replayed\n", count);
    return 0;
}
