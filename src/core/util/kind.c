/*
 * The (kernel group, opcode) -> kind table. Opcodes are from docs/events.md; Image Load is
 * expected in the IMAGE group because the sources normalize HookId 0x030A to it.
 */
#include "perch/kind.h"

struct kind_key {
    uint16_t group;
    uint8_t opcode;
    perch_kind kind;
};

static const struct kind_key kind_table[] = {
    {PERCH_GROUP_PERFINFO, 46, PERCH_KIND_SampledProfile},
    {PERCH_GROUP_PERFINFO, 47, PERCH_KIND_PmcCounterProf},
    {PERCH_GROUP_PERFINFO, 48, PERCH_KIND_PmcCounterConfig},
    {PERCH_GROUP_STACKWALK, 32, PERCH_KIND_StackWalk},
    {PERCH_GROUP_STACKWALK, 34, PERCH_KIND_StackKeyCreate},
    {PERCH_GROUP_STACKWALK, 35, PERCH_KIND_StackKeyDelete},
    {PERCH_GROUP_STACKWALK, 36, PERCH_KIND_StackKeyRundown},
    {PERCH_GROUP_STACKWALK, 37, PERCH_KIND_StackKeyKernel},
    {PERCH_GROUP_STACKWALK, 38, PERCH_KIND_StackKeyUser},
    {PERCH_GROUP_IMAGE, 10, PERCH_KIND_ImageLoad},
    {PERCH_GROUP_IMAGE, 2, PERCH_KIND_ImageUnload},
    {PERCH_GROUP_IMAGE, 3, PERCH_KIND_ImageDCStart},
    {PERCH_GROUP_IMAGE, 4, PERCH_KIND_ImageDCEnd},
    {PERCH_GROUP_PROCESS, 1, PERCH_KIND_ProcessStart},
    {PERCH_GROUP_PROCESS, 2, PERCH_KIND_ProcessEnd},
    {PERCH_GROUP_PROCESS, 3, PERCH_KIND_ProcessDCStart},
    {PERCH_GROUP_PROCESS, 4, PERCH_KIND_ProcessDCEnd},
    {PERCH_GROUP_PROCESS, 39, PERCH_KIND_ProcessDefunct},
    {PERCH_GROUP_THREAD, 1, PERCH_KIND_ThreadStart},
    {PERCH_GROUP_THREAD, 2, PERCH_KIND_ThreadEnd},
    {PERCH_GROUP_THREAD, 3, PERCH_KIND_ThreadDCStart},
    {PERCH_GROUP_THREAD, 4, PERCH_KIND_ThreadDCEnd},
    {PERCH_GROUP_THREAD, 36, PERCH_KIND_CSwitch},
    {PERCH_GROUP_THREAD, 50, PERCH_KIND_ReadyThread},
    {PERCH_GROUP_SPARE1, 32, PERCH_KIND_LastBranchRecord},
};

perch_kind perch_kind_of(uint16_t group, uint8_t opcode)
{
    if (group == PERCH_GROUP_NONE)
        return PERCH_KIND_NON_KERNEL;
    for (size_t i = 0; i < sizeof kind_table / sizeof kind_table[0]; i++)
        if (kind_table[i].group == group && kind_table[i].opcode == opcode)
            return kind_table[i].kind;
    return PERCH_KIND_OTHER_KERNEL;
}

const char *perch_kind_name(perch_kind kind)
{
    static const char *const names[PERCH_KIND_COUNT] = {
#define PERCH_KIND_NAME(name) #name,
        PERCH_KIND_MAP(PERCH_KIND_NAME)
#undef PERCH_KIND_NAME
        "other_kernel",
        "non_kernel",
    };
    if ((unsigned)kind >= PERCH_KIND_COUNT)
        return NULL;
    return names[kind];
}
