# Warnings, sanitizers and static runtime linking for every Perch target.
add_compile_options(-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
                    -Wformat=2 -Wvla -Wno-unused-parameter)
if(PERCH_WERROR)
    add_compile_options(-Werror)
endif()

if(PERCH_SANITIZE)
    add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                        -fno-omit-frame-pointer)
    add_link_options(-fsanitize=address,undefined)
endif()

# ThreadSanitizer (preset tsan: the unit and cli tests, docs/testing.md). It cannot be
# combined with ASan in one build.
if(PERCH_TSAN)
    if(PERCH_SANITIZE)
        message(FATAL_ERROR "PERCH_TSAN and PERCH_SANITIZE exclude each other")
    endif()
    add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
    add_link_options(-fsanitize=thread)
endif()

if(WIN32)
    # Windows binaries may import only DLLs that ship with Windows: link the toolchain's
    # own runtime (libgcc, libwinpthread) statically. tests/win/test_pe_imports checks this.
    add_compile_definitions(WIN32_LEAN_AND_MEAN UNICODE _UNICODE _WIN32_WINNT=0x0A00
                            __USE_MINGW_ANSI_STDIO=1)
    add_link_options(-static -static-libgcc)
endif()

# libFuzzer needs coverage feedback from the code under test, not only from the harness:
# instrument every target (the sanitizer runtime provides the callbacks outside fuzzers).
if(PERCH_FUZZ)
    add_compile_options(-fsanitize=fuzzer-no-link)
endif()
