#!/usr/bin/env bash
# Builds a libFuzzer binary with clang++ under ASan and UBSan, outside Bazel's C++ toolchain.
# Usage: build_fuzzer.sh OUT LIST HARNESS [GEN_DIR]
#   OUT      the binary to write
#   LIST     a kvsim_sources listing (fuzz/sources.bzl): workspace-relative paths, one a line
#   HARNESS  the .cc defining LLVMFuzzerTestOneInput (and LLVMFuzzerInitialize)
#   GEN_DIR  where generated files of LIST live when not under the current directory (bazel-bin)
# Run from the workspace root (or a runfiles tree). Units: the kvsim sources of one directory as one
# translation unit (the large Abseil, Protobuf and simdjson headers are parsed once per directory rather
# than once per file), instrumented for coverage and the sanitizers, split in halves where a directory's
# files collide in one unit (equal names in anonymous namespaces); each generated .pb.cc on its own,
# without instrumentation (protobuf's generated code; instrumenting it would double the build); the
# harness. At most FUZZ_BUILD_JOBS (default 2) clang processes at once. FUZZ_OPT: the optimisation level
# of the instrumented units (default -O1). Exit 1 with the compiler's messages on failure.
set -u
out="$1"
list="$2"
harness="$3"
gen_dir="${4:-.}"
gen_dir="$(cd "$gen_dir" && pwd)"
jobs="${FUZZ_BUILD_JOBS:-2}"
opt="${FUZZ_OPT:--O1}"
# FUZZ_BUILD_DIR: keep the objects there and recompile only units with a file newer than their objects.
work="${FUZZ_BUILD_DIR:-$(mktemp -d "${TEST_TMPDIR:-/tmp}/fuzz_build.XXXXXX")}"
mkdir -p "$work"
rm -f "$work"/*.files "$work/units" "$work/headers"
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
includes="$(pkg-config --cflags eigen3 2>/dev/null)"  # header-only, for the token policies

find_source() {  # a listed path, here or under GEN_DIR
  if [ -f "$1" ]; then echo "$PWD/$1"; else echo "$gen_dir/$1"; fi
}

: >"$work/units"
: >"$work/headers"
while IFS= read -r f; do
  case "$f" in
    *.pb.cc) name="proto_$(basename "$f" .pb.cc)" ;;
    *.cc) name="unit_$(dirname "$f" | tr / _)" ;;
    *) find_source "$f" >>"$work/headers"; continue ;;
  esac
  [ -f "$work/$name.files" ] || echo "$name" >>"$work/units"
  find_source "$f" >>"$work/$name.files"
done <"$list"
echo "$PWD/$harness" >"$work/unit_harness.files"
echo unit_harness >>"$work/units"

# compile UNIT: UNIT.files as one translation unit; where that fails with more than one file, each half on
# its own (UNIT.a, UNIT.b, so colliding files end up apart); a single file that fails is an error: exit
# 255, which stops xargs.
compile() {
  local unit="$1" flags="-std=c++17 -g0 -I$PWD -I$gen_dir $includes -w" n
  case "$unit" in
    proto_*) flags="$flags -O0" ;;
    *) flags="$flags $opt -fsanitize=fuzzer-no-link $sanitize" ;;
  esac
  sed 's/.*/#include "&"/' "$work/$unit.files" >"$work/$unit.cc"
  clang++ $flags -c "$work/$unit.cc" -o "$work/$unit.o" 2>"$work/$unit.log" && return 0
  rm -f "$work/$unit.o"
  n="$(wc -l <"$work/$unit.files")"
  if [ "$n" -le 1 ]; then
    cat "$work/$unit.log" >>"$work/build.log"
    exit 255
  fi
  head -n $((n / 2)) "$work/$unit.files" >"$work/$unit.a.files"
  tail -n +$((n / 2 + 1)) "$work/$unit.files" >"$work/$unit.b.files"
  compile "$unit.a" && compile "$unit.b"
}
# compile_unit UNIT: compile UNIT unless (FUZZ_BUILD_DIR) it was compiled from the same files, after the
# last change of each of them and of every listed header (the stamp holds the list it was compiled from).
compile_unit() {
  local unit="$1" f stale=0
  if cmp -s "$work/$unit.files" "$work/$unit.stamp"; then
    while IFS= read -r f; do
      if [ "$f" -nt "$work/$unit.stamp" ]; then
        stale=1
        break
      fi
    done < <(cat "$work/$unit.files" "$work/headers")
    [ "$stale" = 1 ] || return 0
  fi
  rm -f "$work/$unit.o" "$work/$unit".*.o "$work/$unit.stamp"
  compile "$unit" && cp "$work/$unit.files" "$work/$unit.stamp"
}
export -f compile compile_unit
export work gen_dir opt sanitize includes
if ! xargs -P "$jobs" -n 1 bash -c 'compile_unit "$0"' <"$work/units"; then
  head -c 20000 "$work/build.log"
  echo "FAIL: a fuzzer unit does not compile"
  exit 1
fi
libs="$(pkg-config --libs absl_status absl_statusor absl_strings absl_str_format absl_flat_hash_map \
        absl_flat_hash_set absl_hash absl_synchronization absl_time absl_random_random absl_cord protobuf \
        simdjson libzstd libcrypto)"
if ! clang++ -fsanitize=fuzzer $sanitize "$work"/*.o $libs -lpthread -o "$out" 2>"$work/link.log"; then
  head -c 20000 "$work/link.log"
  echo "FAIL: the fuzzer does not link"
  exit 1
fi
[ -n "${FUZZ_BUILD_DIR:-}" ] || rm -rf "$work"
