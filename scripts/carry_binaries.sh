#!/usr/bin/env bash
# Packs a build's executables with every shared library they load, the C library and its loader
# included, into .carry/ (git-ignored), so they run unchanged on the GPU machine, which has none of
# the Debian packages. CUDA's own libraries (runtime, cuBLAS, driver) are left out: the GPU machine
# has them, matched to its driver. The folder is packed into .carry.tar.xz (the device call carries
# that one file and unpacks it with `tar xJf .carry.tar.xz`), then:  .carry/run voxrt_tests [args]
#   scripts/carry_binaries.sh [BUILD_DIR]      (default build/cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/cpu}
rm -rf .carry && mkdir -p .carry/bin .carry/lib
exes=("$build/voxrt" "$build/voxrt_tests" "$build/voxrt_long_flac")
[ -x "$build/voxrt_kernel" ] && exes+=("$build/voxrt_kernel")  # a CUDA build's (scripts/gpu_kernels.sh)
for exe in "${exes[@]}"; do
  cp "$exe" .carry/bin/
  ldd "$exe" | awk '/=> \//{print $3} /^[ \t]*\/lib/{print $1}' | grep -v -E 'libcuda|libcudart|libcublas|libnvidia' |
    while read -r lib; do cp -L "$lib" .carry/lib/; done
done
cat > .carry/run <<'RUN'
#!/usr/bin/env bash
# Runs a carried executable with the carried libraries and loader, plus the machine's CUDA
# libraries where it has them.
here="$(cd "$(dirname "$0")" && pwd)"
exe="$1"; shift
path="$here/lib"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu; do
  [ -d "$d" ] && path="$path:$d"
done
for d in $(python3 -c 'import nvidia, os; b=os.path.dirname(nvidia.__path__[0]); print(" ".join(os.path.join(b, "nvidia", x, "lib") for x in ("cublas", "cuda_runtime")))' 2>/dev/null); do
  [ -d "$d" ] && path="$path:$d"
done
exec "$here/lib/ld-linux-x86-64.so.2" --library-path "$path" "$here/bin/$exe" "$@"
RUN
chmod +x .carry/run
strip .carry/bin/*
tar cf - .carry | xz -T0 -9e > .carry.tar.xz
du -sh .carry .carry.tar.xz
