# Cross toolchain: Windows x86-64 with Debian's mingw-w64 (POSIX thread model not needed).
# Every program ctest starts (test programs, perch and perchd for the CLI tests, fuzz replays,
# benchmark smokes) runs under Wine through tools/wine-test-run.sh, which starts once more a
# program Wine failed to start (see the script).
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(PERCH_MINGW_PREFIX x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${PERCH_MINGW_PREFIX}-gcc)
set(CMAKE_RC_COMPILER ${PERCH_MINGW_PREFIX}-windres)
set(CMAKE_FIND_ROOT_PATH /usr/${PERCH_MINGW_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR ${CMAKE_CURRENT_LIST_DIR}/../tools/wine-test-run.sh)
