#pragma once

// Run-time choice of instruction set for the hot loops of voxrt's own CPU code.
//
// voxrt is compiled for its architecture's baseline (CMakeLists.txt, VOXRT_MARCH: plain x86-64 on
// x86-64), so that one binary and one libvoxrt.so run on every CPU of the architecture; a build for
// AVX2 dies of SIGILL on a CPU without it. Most of the arithmetic is OpenBLAS's, which picks its own
// kernels at run time. The loops that are voxrt's own and gain from wider vectors (attention's dot
// products and softmax, the norms, the elementwise ops: runtime/cpu/cpu_backend.cpp; the log-mel
// DFT: audio/log_mel.cpp) are marked VOXRT_CPU_DISPATCH: GCC then compiles each one three times,
// for x86-64-v4 (AVX-512), x86-64-v3 (AVX2 and FMA) and the baseline, and the dynamic loader binds
// the call to the best one this CPU runs (an ifunc resolved once from cpuid), so a call costs what a
// call through the PLT costs.
// A marked function should hold a whole loop, not be called once an element: a clone is never
// inlined into its caller. Give it internal linkage (an anonymous namespace or static): GCC 12
// exports the resolver of an external one from libvoxrt.so whatever its visibility.
//
// Only on x86-64 with GCC (clang spells the clones' names differently); elsewhere the mark is empty
// and the loops are compiled for the baseline (on arm64 that includes NEON). Not under
// ThreadSanitizer either: the loader runs the clones' resolver before TSan's runtime is set up and
// the instrumented resolver crashes the program before main (GCC 12; the tsan preset).
//
// Numbers: the v3 and v4 clones contract a * b + c into fused multiply-adds, so their results may
// differ from the baseline clone's in the last bits, as those of a build for another CPU would. One
// process always runs the same clone.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define VOXRT_CPU_DISPATCH __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define VOXRT_CPU_DISPATCH
#endif
