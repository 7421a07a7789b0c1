#!/usr/bin/env bash
# Installs a build into a temporary prefix and uses it as a consumer would: the CMake package
# (tests/install: find_package(voxrt) and voxrt::voxrt) and pkg-config (voxrt.pc) each build README's
# C++ example (examples/transcribe.cpp, which README must show verbatim), which then transcribes
# with the tiny test model, offline and live, and reports a bad model directory as voxrt::Error.
# Then README's own commands for a prefix of one's own are run as written (only PREFIX and the
# build directory replaced), in an environment without PKG_CONFIG_PATH or LD_LIBRARY_PATH, and the
# two programs they build must run without help.
#   scripts/test_install.sh [BUILD_DIR]        (default build/cpu; built already)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD  # the checkout: the tiny model is given by its absolute path below
build=${1:-build/cpu}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/voxrt-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "test_install: FAILED: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(ls -d "$prefix"/lib*/pkgconfig)")
for f in bin/voxrt include/voxrt/voxrt.h include/voxrt/session.h include/voxrt/error.h; do
  [ -f "$prefix/$f" ] || fail "$f not installed"
done
for f in libvoxrt.so cmake/voxrt/voxrtConfig.cmake cmake/voxrt/voxrtConfigVersion.cmake pkgconfig/voxrt.pc; do
  [ -e "$libdir/$f" ] || fail "${libdir#"$prefix"/}/$f not installed"
done
# What a consumer inherits: include/ and C++20, never src/, voxrt's own flags or its dependencies.
# The prefix is named PREFIX first: mktemp's random letters can spell a flag ("voxrt-install-O16k1c").
if grep -vh '^#' "$libdir"/cmake/voxrt/voxrtTargets*.cmake "$libdir/pkgconfig/voxrt.pc" |
    sed "s|$prefix|PREFIX|g" | grep -E -- '-march|-O[0-3s]|/src\b|nlohmann|sndfile|soxr|openblas|curl|crypto|gomp'; then
  fail "the installed package leaks the lines above into consumers"
fi

# The library is the engine alone: `voxrt pull`'s libcurl and OpenSSL stay in the command.
if readelf -d "$libdir/libvoxrt.so" | grep NEEDED | grep -E 'libcurl|libssl|libcrypto'; then
  fail "libvoxrt.so needs the libraries above, which only voxrt pull uses"
fi

# README's example is the file that is built here.
awk '/^## C\+\+ API/ {s = 1} s && /^```cpp/ {c = 1; next} c && /^```/ {exit} c' README.md > "$tmp/readme_example.cpp"
diff -u examples/transcribe.cpp "$tmp/readme_example.cpp" >&2 ||
  fail "README.md's C++ API example differs from examples/transcribe.cpp (above)"

model=tests/data/tiny/mistral
audio=tests/data/audio/jfk.wav
check_example() {  # check_example EXE: offline text, the same text live from raw floats, a clean error
  local exe=$1 offline live
  offline=$("$exe" "$model" "$audio") || fail "$exe $model $audio exited with $?"
  [ -n "${offline//[[:space:]]/}" ] || fail "$exe printed no text for $audio"
  live=$("$exe" "$model" - < "$tmp/jfk.f32") || fail "$exe $model - exited with $?"
  live=${live# }  # the live text is what the model said, with its leading space; the transcript is trimmed
  [ "$live" = "$offline" ] || fail "$exe: live text '$live' differs from the offline text '$offline'"
  local status=0
  "$exe" "$tmp/no-such-model" "$audio" > /dev/null 2> "$tmp/err" || status=$?
  [ "$status" = 1 ] && grep -q "^error: .*no-such-model" "$tmp/err" ||
    fail "$exe with a missing model: exit $status, stderr: $(cat "$tmp/err")"
}
# The live route reads raw 16 kHz mono floats: the installed voxrt decodes the file to a float WAV,
# whose samples follow the 8-byte header of its data chunk.
"$prefix/bin/voxrt" decode-audio "$audio" "$tmp/jfk.wav" 2>/dev/null
data_at=$(grep -obUa 'data' "$tmp/jfk.wav" | head -1 | cut -d: -f1)
tail -c +$((data_at + 9)) "$tmp/jfk.wav" > "$tmp/jfk.f32"

cmake -S tests/install -B "$tmp/cmake-consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -Dvoxrt_DIR="$libdir/cmake/voxrt" > "$tmp/build.log" || { cat "$tmp/build.log" >&2; fail "find_package(voxrt) failed"; }
cmake --build "$tmp/cmake-consumer" > "$tmp/build.log" || { cat "$tmp/build.log" >&2; fail "the find_package consumer did not build"; }
check_example "$tmp/cmake-consumer/transcribe"

export PKG_CONFIG_PATH=$libdir/pkgconfig
[ "$(pkg-config --variable=prefix voxrt)" = "$prefix" ] || fail "voxrt.pc's prefix is not $prefix"
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
c++ -std=c++20 examples/transcribe.cpp -o "$tmp/transcribe-pc" $(pkg-config --cflags --libs voxrt) -Wl,-rpath,"$libdir"
check_example "$tmp/transcribe-pc"
# The installed command works from any directory: bench finds its recording in PREFIX/share/voxrt
# and writes its result into the current directory.
mkdir "$tmp/elsewhere"
(cd "$tmp/elsewhere" && "$prefix/bin/voxrt" bench -q --figures decoder --passes 2 --model "$root/$model" > /dev/null) ||
  fail "the installed voxrt bench failed when run from another directory"
grep -q "\"$prefix/share/voxrt/audio/jfk.wav\"" "$tmp"/elsewhere/*.json ||
  fail "the installed voxrt bench did not use $prefix/share/voxrt/audio/jfk.wav: $(cat "$tmp"/elsewhere/*.json)"
# README's commands for a prefix of one's own, as written: the sh block after "Installed anywhere
# else" and the cmake block after it (myapp/CMakeLists.txt), with app.cpp the example.
readme_block() {  # readme_block LANGUAGE: the first such fenced block after the C++ API's prefix text
  awk -v lang="$1" '/^## C\+\+ API/ {a = 1} a && /Installed anywhere else/ {s = 1}
                    s && $0 == "```" lang {c = 1; next} c && /^```/ {exit} c' README.md
}
own=$tmp/own && mkdir -p "$own/myapp"
readme_block sh > "$own/commands.sh"
readme_block cmake > "$own/myapp/CMakeLists.txt"
grep -q '^PREFIX=' "$own/commands.sh" && [ -s "$own/myapp/CMakeLists.txt" ] ||
  fail "README.md's C++ API shows no commands for a prefix of one's own (a PREFIX= line, a cmake block)"
cp examples/transcribe.cpp "$own/app.cpp" && cp examples/transcribe.cpp "$own/myapp/app.cpp"
sed -i -e "s|^PREFIX=.*|PREFIX=$tmp/own-prefix|" -e "s|build/cpu|$root/$build|g" "$own/commands.sh"
(cd "$own" && env -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH -u CMAKE_PREFIX_PATH bash -euo pipefail commands.sh) \
  > "$tmp/own.log" 2>&1 || { cat "$own/commands.sh" "$tmp/own.log" >&2; fail "README.md's commands for a prefix of one's own failed (above)"; }
for exe in "$own/app" "$own/myapp/build/app"; do
  (unset LD_LIBRARY_PATH; check_example "$exe")
done
echo "test_install: installed $build into a temporary prefix; README's example built with find_package and" \
  "with pkg-config transcribes with it (offline and live) and catches voxrt::Error; README's commands for a" \
  "prefix of one's own build two programs that run unaided" >&2
