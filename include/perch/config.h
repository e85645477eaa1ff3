/*
 * The service's configuration: every setting perchd reads, with its type, default and range,
 * in one table (src/core/config/config.c), so the registry loader (src/win/config.c),
 * `perchd config show|set`, the daemon and docs/service.md all agree on one list.
 *
 * A setting has a canonical text form (what `config show` prints and `config set` accepts);
 * numbers and switches are also stored as registry DWORDs. Parsing and range checks live here,
 * so they are portable and tested natively; a value outside its range is refused with one
 * English sentence naming the key, the value and the range. Defaults need no configuration at
 * all: perch_config_defaults gives a working service.
 *
 * Directory defaults keep %VARIABLE% references (%ProgramData%) unexpanded; the Windows side
 * expands them when it uses them.
 */
#ifndef PERCH_CONFIG_H
#define PERCH_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PERCH_CONFIG_PATH_MAX  1024 /* bytes of a directory setting, NUL included */
#define PERCH_CONFIG_NAMES_MAX 256  /* bytes of a list of names (PMC sources), NUL included */
#define PERCH_CONFIG_MAX_NAMES 8    /* names in one list */
#define PERCH_CONFIG_WHY_MAX   256  /* a refusal sentence fits in this many bytes */
#define PERCH_CONFIG_NAME_LEN  64   /* bytes of one name in a list, NUL included */

/* Session choice (key Session). */
enum {
    PERCH_SESSION_AUTO = 0,    /* private system logger, NT Kernel Logger if refused */
    PERCH_SESSION_PRIVATE = 1, /* private system logger only */
};

/* Event groups (key EventGroups), bit per group. */
#define PERCH_CFG_GROUP_PROCESS    0x01u
#define PERCH_CFG_GROUP_THREAD     0x02u
#define PERCH_CFG_GROUP_IMAGE      0x04u
#define PERCH_CFG_GROUP_CSWITCH    0x08u
#define PERCH_CFG_GROUP_DISPATCHER 0x10u /* ReadyThread */
#define PERCH_CFG_GROUP_PROFILE    0x20u /* SampledProfile (and PMC overflow samples) */

/* Events that carry a stack walk (key StackEvents) or LBR (key LbrEvents), bit per event. */
#define PERCH_CFG_STACK_PROFILE     0x01u /* SampledProfile */
#define PERCH_CFG_STACK_PMC         0x02u /* PmcCounterProf */
#define PERCH_CFG_STACK_CSWITCH     0x04u
#define PERCH_CFG_STACK_READYTHREAD 0x08u

typedef struct perch_config {
    char data_dir[PERCH_CONFIG_PATH_MAX];          /* DataDirectory: logs, status */
    char capture_dir[PERCH_CONFIG_PATH_MAX];       /* CaptureDirectory: captures, snapshots */
    uint32_t session;                              /* Session: PERCH_SESSION_* */
    uint32_t event_groups;                         /* EventGroups: PERCH_CFG_GROUP_* */
    uint32_t stack_events;                         /* StackEvents: PERCH_CFG_STACK_* */
    uint32_t sample_interval_us;                   /* SampleIntervalUs */
    char pmc_sources[PERCH_CONFIG_NAMES_MAX];      /* PmcSources: "" or "A,B" */
    uint32_t pmc_interval;                         /* PmcInterval: events per sample */
    char cswitch_counters[PERCH_CONFIG_NAMES_MAX]; /* CSwitchCounters */
    uint32_t lbr;                                  /* Lbr: 0 or 1 */
    uint32_t lbr_filters;                          /* LbrFilters: LBR filter flags */
    uint32_t lbr_events;                           /* LbrEvents: PERCH_CFG_STACK_* */
    uint32_t buffer_size_kb;                       /* BufferSizeKb */
    uint32_t buffer_count;                         /* BufferCount */
    uint32_t queue_mb;                             /* QueueMb */
    uint32_t stop_drain_seconds;                   /* StopDrainSeconds */
    uint32_t recorder_seconds;                     /* FlightRecorderSeconds (0: off) */
    uint32_t recorder_mb;                          /* FlightRecorderMb */
    uint32_t record_on_start;                      /* RecordOnStart: 0 or 1 */
    uint32_t rotate_size_mb;                       /* RotateSizeMb */
    uint32_t rotate_age_minutes;                   /* RotateAgeMinutes */
    uint32_t disk_cap_mb;                          /* DiskCapMb */
    uint32_t snapshot_cap_mb;                      /* SnapshotCapMb */
    uint32_t log_file_kb;                          /* LogFileKb */
    uint32_t log_files;                            /* LogFiles */
    char symbol_path[PERCH_CONFIG_PATH_MAX];       /* SymbolPath: "" (none) or a symbol path */
} perch_config;

typedef enum perch_config_type {
    PERCH_CONFIG_U32 = 0, /* a number: decimal or 0x hex, within [min, max] */
    PERCH_CONFIG_MASK,    /* the same, shown in hex (bit flags) */
    PERCH_CONFIG_BOOL,    /* on/off (also 1/0, true/false, yes/no) */
    PERCH_CONFIG_PATH,    /* a directory; %VARIABLES% allowed */
    PERCH_CONFIG_ENUM,    /* one word of tokens[] */
    PERCH_CONFIG_FLAGS,   /* a comma list of tokens[] (bit i = tokens[i]), "none" or "all" */
    PERCH_CONFIG_NAMES,   /* a comma list of up to PERCH_CONFIG_MAX_NAMES identifiers */
    PERCH_CONFIG_SYMPATH, /* a symbol path (DIR;srv*DIR*URL;...), "none" when empty */
} perch_config_type;

/* One key of the table. */
typedef struct perch_config_key {
    const char *name; /* registry value name, matched case-insensitively */
    perch_config_type type;
    size_t offset;             /* of the field in perch_config */
    size_t size;               /* of the field (text fields: the buffer size) */
    uint32_t min, max;         /* U32 range; FLAGS: min is 1 when at least one is needed */
    const char *def;           /* the default, in canonical text form */
    const char *unit;          /* "microseconds", ... ("" when none) */
    const char *const *tokens; /* ENUM / FLAGS vocabulary, NULL-terminated */
    const char *help;          /* one line for `config show` and the docs */
} perch_config_key;

/* Every key, in the order `config show` prints them. */
size_t perch_config_key_count(void);
const perch_config_key *perch_config_key_at(size_t i);

/* The key called name (case-insensitive), or NULL. */
const perch_config_key *perch_config_find(const char *name);

/* Fills *c with every default. */
void perch_config_defaults(perch_config *c);

/* Parses text as a value of k and stores it in *c. On a refusal *c is unchanged, why (when
 * not NULL) receives one sentence naming the key, the value and what is allowed, and the
 * return is PERCH_EINVAL (not a value of that type) or PERCH_ERANGE (outside the range). */
int perch_config_set(perch_config *c, const perch_config_key *k, const char *text, char *why,
                     size_t why_len);

/* Like perch_config_set by key name: PERCH_ENOENT (and a sentence) for an unknown name. */
int perch_config_set_named(perch_config *c, const char *name, const char *text, char *why,
                           size_t why_len);

/* True for the keys whose field is text (PATH, NAMES, SYMPATH). */
bool perch_config_is_text(const perch_config_key *k);

/* True for the keys stored as registry DWORDs: U32, MASK and BOOL. */
bool perch_config_is_number(const perch_config_key *k);

/* Stores a number read as a DWORD for a number key (checked like text). PERCH_EINVAL for a
 * key of another type. */
int perch_config_set_number(perch_config *c, const perch_config_key *k, uint32_t value, char *why,
                            size_t why_len);

/* The value of a number key (0 for other types). */
uint32_t perch_config_number(const perch_config *c, const perch_config_key *k);

/* Writes the canonical text of k's value into buf. Returns 0 or PERCH_ERANGE when buf is too
 * small (then buf holds a truncated, NUL-terminated prefix). */
int perch_config_format(const perch_config *c, const perch_config_key *k, char *buf, size_t len);

/* Writes the range of k in words ("125 to 1000000 microseconds", "on or off", "any of
 * process, thread, ..."), as docs and refusals say it. */
void perch_config_describe_range(const perch_config_key *k, char *buf, size_t len);

/* Splits a stored NAMES value ("A,B") into at most max names copied into names[i]; returns
 * the count. */
size_t perch_config_split_names(const char *value, char (*names)[PERCH_CONFIG_NAME_LEN],
                                size_t max);

#ifdef __cplusplus
}
#endif

#endif
