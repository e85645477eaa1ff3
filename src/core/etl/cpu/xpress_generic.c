/*
 * XPRESS fast loop for processors without one of their own in this build (CMake picks this
 * file on every target but x86-64): never available, and the portable loop if called anyway.
 */
#include "etl/xpress_loop.h"

bool perch__xpress_simd_ok(void)
{
    return false;
}

int perch__xpress_fast_simd(struct xpress_state *s)
{
    return perch__xpress_fast_portable(s);
}
