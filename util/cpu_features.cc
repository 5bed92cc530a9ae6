#include "util/cpu_features.h"

#include <cstdlib>
#include <cstring>

namespace kvsim {

bool CpuHasAvx2Fma() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

bool UseAvx2Fma() {
  static const bool use = [] {
    const char* off = std::getenv("KVSIM_NO_AVX2");
    return CpuHasAvx2Fma() && !(off != nullptr && std::strcmp(off, "1") == 0);
  }();
  return use;
}

bool CpuHasAvx512() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

bool UseAvx512() {
  static const bool use = [] {
    const char* off = std::getenv("KVSIM_NO_AVX512");
    return UseAvx2Fma() && CpuHasAvx512() && !(off != nullptr && std::strcmp(off, "1") == 0);
  }();
  return use;
}

}  // namespace kvsim
