// File: util/cpu_features.h
//
// Runtime choice between portable code and the AVX2+FMA kernels of util/avx2_gemm.h. The binaries are
// built for baseline x86-64 (SSE2); kernels for wider SIMD are compiled per function and used only when
// the CPU has them. The decision is taken once per process (first call) and never changes afterwards, so a
// run is deterministic; results of the two paths may differ in the last bits (FMA, summation order).
//
// Setting the environment variable KVSIM_NO_AVX2=1 before the first call forces the portable path;
// KVSIM_NO_AVX512=1 keeps the AVX2 kernels where AVX-512 ones exist (their results are the same bits, so
// it changes only the speed).
//
// Thread-safe (the decision is a function-local static).
//
// Example:
//   if (UseAvx2Fma()) Avx2GemmABt(...); else c.noalias() = a * b.transpose();
#ifndef KVSIM_UTIL_CPU_FEATURES_H_
#define KVSIM_UTIL_CPU_FEATURES_H_

namespace kvsim {

// True if the CPU executes AVX2 and FMA instructions (whatever the environment says).
bool CpuHasAvx2Fma();

// True if the AVX2+FMA kernels are used: CpuHasAvx2Fma() and KVSIM_NO_AVX2 is not "1".
bool UseAvx2Fma();

// True if the CPU executes AVX-512F instructions (whatever the environment says).
bool CpuHasAvx512();

// True if the AVX-512 variants of the AVX2 kernels are used: UseAvx2Fma(), CpuHasAvx512() and
// KVSIM_NO_AVX512 is not "1".
bool UseAvx512();

}  // namespace kvsim

#endif  // KVSIM_UTIL_CPU_FEATURES_H_
