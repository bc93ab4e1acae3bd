#!/usr/bin/env bash
# libtunert as a package: `cmake --install` puts the header, libtunert.so and libtunert.a,
# tunertConfig.cmake and tunert.pc in a prefix; a consumer builds against it with pkg-config
# (shared and static, next to the system's own SQLite) and with find_package(tunert), and
# opens a bundle. Only tunert_* symbols are visible; nothing but libc, libpthread, libdl, libm
# is needed at run time (libcuda is dlopen'd).
. "$(dirname "$0")/lib.sh"
BUILD="${BUILD:?set BUILD to the build directory}"
cmake --install "$BUILD" --prefix "$WORK/prefix" >install.txt 2>&1
check "cmake --install exits 0" test $? -eq 0
P="$WORK/prefix"
LIBDIR=$(dirname "$(find "$P" -name libtunert.a | head -1)")
check "header installed" test -f "$P/include/tunert.h"
check "static library installed" test -f "$LIBDIR/libtunert.a"
check "shared library installed" test -f "$LIBDIR/libtunert.so.0"
check "CMake package installed" test -f "$LIBDIR/cmake/tunert/tunertConfig.cmake"
check "pkg-config file installed" test -f "$LIBDIR/pkgconfig/tunert.pc"
nm -D --defined-only "$LIBDIR/libtunert.so.0" | awk '{print $3}' | grep -v '^tunert_' >extra_so.txt
check "libtunert.so exports only tunert_* ($(wc -l <extra_so.txt) others)" test ! -s extra_so.txt
nm -g --defined-only "$LIBDIR/libtunert.a" 2>/dev/null | awk 'NF==3 {print $3}' | grep -v '^tunert_' >extra_a.txt
check "libtunert.a defines only tunert_* globally ($(wc -l <extra_a.txt) others)" test ! -s extra_a.txt
ldd "$LIBDIR/libtunert.so.0" >ldd.txt 2>&1
check "libtunert.so needs no SQLite, Lua, NVRTC or libcuda" lacks ldd.txt "sqlite\|lua\|nvrtc\|libcuda"

# a bundle to open
(cd "$WORK" && "$TUNE" bundle --recipe copy --db "$SRC/data/recorded/copy.db" --arch sm_90a -o c.bundle --allow-source-change --quiet) >bundle.txt 2>&1
check "bundle made" test -f c.bundle
cat >consumer.c <<'C'
#include <stdio.h>
#include <sqlite3.h>
#include "tunert.h"
int main(int argc, char **argv) {
  tunert_options o;
  tunert_options_init(&o);
  o.arch = "sm_90a";
  tunert_ctx *ctx;
  tunert_err e;
  if (tunert_open(argv[1], &o, &ctx, &e)) { printf("error: %s\n", e.msg); return 1; }
  int64_t n = 16777216;
  const tunert_selection *s;
  if (tunert_select(ctx, "copy", &n, 1, &s, &e)) { printf("error: %s\n", e.msg); return 1; }
  tunert_selection_info si = {.struct_size = sizeof si};
  tunert_selection_info_get(s, &si);
  printf("families %d, copy 64MiB -> %s (%s)\n", tunert_family_count(ctx), si.variant, si.binary);
#ifdef WITH_SQLITE
  printf("and the program's own SQLite: %s\n", sqlite3_libversion());
#endif
  tunert_close(ctx);
  return 0;
}
C
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig"
cc consumer.c $(pkg-config --cflags --libs tunert) -o c_shared >cc1.txt 2>&1
check "builds with pkg-config (shared)" test $? -eq 0
LD_LIBRARY_PATH="$LIBDIR" ./c_shared c.bundle >run1.txt 2>&1
vec=$(sql "$SRC/data/recorded/copy.db" "select json_extract(c.params_json, '$.VEC_BYTES') || '|' || printf('%.2f us', r.median_ns / 1000.0) from results r join configs c on c.id = r.config_id join problems p on p.id = r.problem_id where p.name = '64MiB' and r.status = 'ok' order by r.median_ns, r.id limit 1")
vec=${vec%|*}   # the recording's best for 64MiB
check "runs against libtunert.so" contains run1.txt "copy 64MiB -> {\"VEC_BYTES\":$vec,"
cc consumer.c -DWITH_SQLITE $(pkg-config --cflags tunert) "$LIBDIR/libtunert.a" $(pkg-config --static --libs-only-l tunert | sed 's/-ltunert//') -lsqlite3 -o c_static >cc2.txt 2>&1
check "builds with libtunert.a next to the system SQLite (no clash)" test $? -eq 0
./c_static c.bundle >run2.txt 2>&1
check "runs statically linked" contains run2.txt "copy 64MiB -> {\"VEC_BYTES\":$vec,"
check "with the program's own SQLite beside it" contains run2.txt "own SQLite: 3."
mkdir -p cm && cp consumer.c cm/ && cat >cm/CMakeLists.txt <<'CM'
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(tunert 0.1 REQUIRED)
add_executable(c_cmake consumer.c)
target_link_libraries(c_cmake PRIVATE tunert::tunert)
add_executable(c_cmake_static consumer.c)
target_link_libraries(c_cmake_static PRIVATE tunert::tunert_static)
CM
cmake -S cm -B cm/build -DCMAKE_PREFIX_PATH="$P" >cm1.txt 2>&1 && cmake --build cm/build >cm2.txt 2>&1
check "builds with find_package(tunert)" test $? -eq 0
LD_LIBRARY_PATH="$LIBDIR" cm/build/c_cmake c.bundle >run3.txt 2>&1
check "find_package shared consumer runs" contains run3.txt "families 1"
cm/build/c_cmake_static c.bundle >run4.txt 2>&1
check "find_package static consumer runs" contains run4.txt "families 1"
finish
