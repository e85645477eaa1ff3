/*
 * The static part of the synthetic scenario: which kernel and user modules exist (paths,
 * sizes, fixed bases, PDB names), how each kind of thread behaves (priority, run and wait
 * times, how often it enters the kernel, instructions per cycle), and which processes run.
 * Invented but plausible values for a Windows 10 22H2 (build 19045) x64 machine.
 */
#include "synth_internal.h"

#define SYS32 "\\Device\\HarddiskVolume3\\Windows\\System32\\"
#define DRV   "\\SystemRoot\\System32\\drivers\\"

const struct synth_module perch__synth_kmods[] = {
    {"ntoskrnl.exe", "\\SystemRoot\\system32\\ntoskrnl.exe", "ntkrnlmp.pdb", 0xFFFFF80071200000ull,
     0x1046000, 0x5F3B2C11},
    {"hal.dll", "\\SystemRoot\\system32\\hal.dll", "hal.pdb", 0xFFFFF80070E00000ull, 0x6F000,
     0x1E0B4A2D},
    {"intelppm.sys", DRV "intelppm.sys", "intelppm.pdb", 0xFFFFF80075A00000ull, 0x48000,
     0x7A1C33E0},
    {"Ntfs.sys", DRV "Ntfs.sys", "ntfs.pdb", 0xFFFFF80074800000ull, 0x2FF000, 0x3D8E5F41},
    {"tcpip.sys", DRV "tcpip.sys", "tcpip.pdb", 0xFFFFF80074E00000ull, 0x2D6000, 0x4C2A9B77},
    {"dxgkrnl.sys", DRV "dxgkrnl.sys", "dxgkrnl.pdb", 0xFFFFF80076200000ull, 0x3E0000, 0x6B7D0A58},
    {"win32kbase.sys", "\\SystemRoot\\System32\\win32kbase.sys", "win32kbase.pdb",
     0xFFFF9E2C41E00000ull, 0x2A0000, 0x2F6E1C93},
};
const unsigned perch__synth_kmod_count = sizeof perch__synth_kmods / sizeof perch__synth_kmods[0];

/* User modules; index order is used by the process templates below. */
enum {
    M_NTDLL,
    M_KERNEL32,
    M_KERNELBASE,
    M_UCRT,
    M_USER32,
    M_D3D11,
    M_DXGI,
    M_COMBASE,
    M_RPCRT4,
    M_DEMO,
    M_COMPILER,
    M_SVCHOST,
    M_EXPLORER
};

const struct synth_module perch__synth_umods[] = {
    {"ntdll.dll", SYS32 "ntdll.dll", "ntdll.pdb", 0x00007FFB9A3B0000ull, 0x1F8000, 0x8E2B5D0F},
    {"kernel32.dll", SYS32 "kernel32.dll", "kernel32.pdb", 0x00007FFB98E50000ull, 0xBD000,
     0x2C4F6A18},
    {"KernelBase.dll", SYS32 "KernelBase.dll", "kernelbase.pdb", 0x00007FFB97D90000ull, 0x2F7000,
     0x5A9D3E21},
    {"ucrtbase.dll", SYS32 "ucrtbase.dll", "ucrtbase.pdb", 0x00007FFB97AB0000ull, 0x100000,
     0x1B7C8F02},
    {"user32.dll", SYS32 "user32.dll", "user32.pdb", 0x00007FFB996F0000ull, 0x1A0000, 0x6E3A0C45},
    {"d3d11.dll", SYS32 "d3d11.dll", "d3d11.pdb", 0x00007FFB92B80000ull, 0x264000, 0x0F5E7B36},
    {"dxgi.dll", SYS32 "dxgi.dll", "dxgi.pdb", 0x00007FFB94F00000ull, 0xF3000, 0x4AD12E6C},
    {"combase.dll", SYS32 "combase.dll", "combase.pdb", 0x00007FFB98A00000ull, 0x354000,
     0x3B90F7A4},
    {"rpcrt4.dll", SYS32 "rpcrt4.dll", "rpcrt4.pdb", 0x00007FFB99E10000ull, 0x125000, 0x71C4D2B9},
    {"demo.exe", "\\Device\\HarddiskVolume3\\Games\\Demo\\demo.exe",
     "D:\\build\\demo\\x64\\Release\\demo.pdb", 0, 0x4A2000, 0x65A1F3C0},
    {"compiler.exe", "\\Device\\HarddiskVolume3\\Tools\\Compiler\\bin\\compiler.exe",
     "C:\\src\\compiler\\out\\x64\\compiler.pdb", 0, 0x2C0000, 0x65B0E1D2},
    {"svchost.exe", SYS32 "svchost.exe", "svchost.pdb", 0, 0x12000, 0x9C1D4B6E},
    {"explorer.exe", "\\Device\\HarddiskVolume3\\Windows\\explorer.exe", "explorer.pdb", 0,
     0x4D0000, 0x8F6A2C31},
};

_Static_assert(M_DEMO == SYNTH_UMOD_GAME_EXE, "the game's executable is the image's stand-in");
_Static_assert(sizeof perch__synth_umods / sizeof perch__synth_umods[0] == SYNTH_UMOD_COUNT,
               "SYNTH_UMOD_COUNT");
_Static_assert(sizeof perch__synth_kmods / sizeof perch__synth_kmods[0] <= SYNTH_FN_MODS,
               "SYNTH_FN_MODS");

/* name, prio, wait reason, syscall %, kernel only, IPC x100, run mean, wait mean (100 ns) */
const struct synth_role perch__synth_roles[ROLE_COUNT] = {
    [ROLE_IDLE] = {"", 0, 0, 0, 1, 0, 0, 0},
    [ROLE_SYSTEM] = {"", 13, 15 /* WrQueue */, 0, 1, 70, 600, 80000},
    [ROLE_SVC] = {"", 8, 6 /* UserRequest */, 30, 0, 60, 1200, 150000},
    [ROLE_SHELL] = {"", 9, 13 /* WrUserRequest */, 25, 0, 80, 3000, 250000},
    [ROLE_GAME_MAIN] = {"MainThread", 10, 6, 10, 0, 150, 20000, 30000},
    [ROLE_GAME_RENDER] = {"RenderThread", 14, 0 /* Executive */, 35, 0, 120, 15000, 20000},
    [ROLE_GAME_WORKER] = {"Worker", 9, 15, 5, 0, 190, 40000, 15000},
    [ROLE_CC_MAIN] = {"", 8, 0, 15, 0, 90, 80000, 10000},
    [ROLE_CC_WORKER] = {"", 8, 15, 8, 0, 100, 100000, 5000},
};

const struct synth_proc_tpl perch__synth_tpls[TPL_COUNT] = {
    [TPL_IDLE] = {"Idle", "", 0, 0xFFFFFFFFu, -1, 0, {0}, 0, {{0, 0}}},
    [TPL_SYSTEM] = {"System", "", 4, 0, -1, 0, {0}, 1, {{ROLE_SYSTEM, 6}}},
    [TPL_SVCHOST] = {"svchost.exe",
                     "C:\\Windows\\system32\\svchost.exe -k netsvcs -p",
                     1148,
                     0,
                     M_SVCHOST,
                     6,
                     {M_SVCHOST, M_NTDLL, M_KERNEL32, M_KERNELBASE, M_RPCRT4, M_COMBASE},
                     1,
                     {{ROLE_SVC, 4}}},
    [TPL_EXPLORER] = {"explorer.exe",
                      "C:\\Windows\\Explorer.EXE",
                      5012,
                      1,
                      M_EXPLORER,
                      6,
                      {M_EXPLORER, M_NTDLL, M_KERNEL32, M_KERNELBASE, M_USER32, M_COMBASE},
                      1,
                      {{ROLE_SHELL, 3}}},
    [TPL_GAME] = {"demo.exe",
                  "\"D:\\Games\\Demo\\demo.exe\" -fullscreen",
                  7340,
                  1,
                  M_DEMO,
                  8,
                  {M_DEMO, M_NTDLL, M_KERNEL32, M_KERNELBASE, M_UCRT, M_USER32, M_D3D11, M_DXGI},
                  3,
                  {{ROLE_GAME_MAIN, 1}, {ROLE_GAME_RENDER, 1}, {ROLE_GAME_WORKER, 6}}},
    [TPL_COMPILER] = {"compiler.exe",
                      "compiler.exe /O2 /c src\\renderer.cpp",
                      0,
                      1,
                      M_COMPILER,
                      5,
                      {M_COMPILER, M_NTDLL, M_KERNEL32, M_KERNELBASE, M_UCRT},
                      2,
                      {{ROLE_CC_MAIN, 1}, {ROLE_CC_WORKER, 3}}},
};

/* KernelTraceControl ImageID provider: b3e675d7-2554-4f18-830b-2762732560de */
const perch_guid perch__synth_rsds_guid = {
    0xb3e675d7, 0x2554, 0x4f18, {0x83, 0x0b, 0x27, 0x62, 0x73, 0x25, 0x60, 0xde}};
