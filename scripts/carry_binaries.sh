#!/usr/bin/env bash
# Packs the CPU build's executables with every shared library they load, the C library and its
# loader included, into .carry/ (git-ignored), so they run unchanged on the GPU machine, which has
# none of the Debian packages. The folder is packed into .carry.tar.xz (the device call carries that
# one file and unpacks it with `tar xJf .carry.tar.xz`), then:  .carry/run voxrt_tests [args]
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .carry && mkdir -p .carry/bin .carry/lib
for exe in build/cpu/voxrt build/cpu/voxrt_tests; do
  cp "$exe" .carry/bin/
  ldd "$exe" | awk '/=> \//{print $3} /^[ \t]*\/lib/{print $1}' | while read -r lib; do
    cp -L "$lib" .carry/lib/
  done
done
cat > .carry/run <<'RUN'
#!/usr/bin/env bash
# Runs a carried executable with the carried libraries and loader.
here="$(cd "$(dirname "$0")" && pwd)"
exe="$1"; shift
exec "$here/lib/ld-linux-x86-64.so.2" --library-path "$here/lib" "$here/bin/$exe" "$@"
RUN
chmod +x .carry/run
strip .carry/bin/*
tar cf - .carry | xz -T0 -6 > .carry.tar.xz
du -sh .carry .carry.tar.xz
