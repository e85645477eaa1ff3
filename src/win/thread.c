/*
 * Windows implementation of include/perch/thread.h with the Win32 primitives only:
 * CreateThread, SRWLOCK and CONDITION_VARIABLE (never libwinpthread, which
 * win.test_pe_imports forbids). Thread names go through SetThreadDescription when kernel32
 * has it (Windows 10 1607 and later), looked up at run time so older systems still start.
 */
#include <windows.h>

#include "perch/error.h"
#include "perch/thread.h"
#include "perch/win_error.h"
#include "util/mem.h"

struct perch_thread {
    HANDLE handle;
    perch_thread_fn fn;
    void *arg;
    int result;
    WCHAR name[16];
};

struct perch_mutex {
    SRWLOCK lock;
};

struct perch_cond {
    CONDITION_VARIABLE cv;
};

typedef HRESULT(WINAPI *set_description_fn)(HANDLE, PCWSTR);

static void set_name(const WCHAR *name)
{
    HMODULE k32 = GetModuleHandleW(L"kernel32.dll");
    FARPROC p = k32 != NULL ? GetProcAddress(k32, "SetThreadDescription") : NULL;
    if (p != NULL) /* through void (*)(void): the one cast -Wcast-function-type allows */
        ((set_description_fn)(void (*)(void))p)(GetCurrentThread(), name);
}

static DWORD WINAPI trampoline(LPVOID p)
{
    struct perch_thread *t = p;
    if (t->name[0] != 0)
        set_name(t->name);
    t->result = t->fn(t->arg);
    return 0;
}

int perch_thread_start(perch_thread_fn fn, void *arg, const char *name, perch_thread **out)
{
    struct perch_thread *t;
    if (fn == NULL || out == NULL)
        return PERCH_EINVAL;
    t = perch__calloc(1, sizeof *t);
    if (t == NULL)
        return PERCH_ENOMEM;
    t->fn = fn;
    t->arg = arg;
    for (size_t i = 0; name != NULL && name[i] != '\0' && i < 15; i++)
        t->name[i] = (unsigned char)name[i] < 0x80 ? (WCHAR)name[i] : L'?';
    t->handle = CreateThread(NULL, 0, trampoline, t, 0, NULL);
    if (t->handle == NULL) {
        int err = perch_win_last_error();
        perch__free(t);
        return err;
    }
    *out = t;
    return 0;
}

int perch_thread_join(perch_thread *t, int *result)
{
    if (t == NULL)
        return PERCH_EINVAL;
    if (WaitForSingleObject(t->handle, INFINITE) != WAIT_OBJECT_0)
        return perch_win_last_error();
    CloseHandle(t->handle);
    if (result != NULL)
        *result = t->result;
    perch__free(t);
    return 0;
}

/* Not done on Windows, where the pipeline's threads were never watched on a real machine: the
 * stacking it answers was seen on a Linux VM only (include/perch/thread.h). */
perch_cpu_split *perch_thread_split_cpus(perch_thread *t)
{
    (void)t;
    return NULL;
}

void perch_cpu_split_end(perch_cpu_split *s)
{
    (void)s;
}

int perch_mutex_create(perch_mutex **out)
{
    struct perch_mutex *m;
    if (out == NULL)
        return PERCH_EINVAL;
    m = perch__alloc(sizeof *m);
    if (m == NULL)
        return PERCH_ENOMEM;
    InitializeSRWLock(&m->lock);
    *out = m;
    return 0;
}

void perch_mutex_destroy(perch_mutex *m)
{
    perch__free(m); /* an SRWLOCK needs no cleanup */
}

void perch_mutex_lock(perch_mutex *m)
{
    AcquireSRWLockExclusive(&m->lock);
}

void perch_mutex_unlock(perch_mutex *m)
{
    ReleaseSRWLockExclusive(&m->lock);
}

int perch_cond_create(perch_cond **out)
{
    struct perch_cond *c;
    if (out == NULL)
        return PERCH_EINVAL;
    c = perch__alloc(sizeof *c);
    if (c == NULL)
        return PERCH_ENOMEM;
    InitializeConditionVariable(&c->cv);
    *out = c;
    return 0;
}

void perch_cond_destroy(perch_cond *c)
{
    perch__free(c); /* a CONDITION_VARIABLE needs no cleanup */
}

int perch_cond_wait(perch_cond *c, perch_mutex *m, uint32_t timeout_ms)
{
    /* UINT32_MAX is INFINITE. */
    if (SleepConditionVariableSRW(&c->cv, &m->lock, timeout_ms, 0))
        return 0;
    return GetLastError() == ERROR_TIMEOUT ? PERCH_ETIMEDOUT : 0;
}

void perch_cond_signal(perch_cond *c)
{
    WakeConditionVariable(&c->cv);
}

void perch_cond_broadcast(perch_cond *c)
{
    WakeAllConditionVariable(&c->cv);
}

void perch_sleep_ms(uint32_t ms)
{
    Sleep(ms);
}
