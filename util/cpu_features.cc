#include "util/cpu_features.h"

#include <cstdlib>
#include <cstring>

namespace kvsim {
namespace {

// True if the environment sets `variable` to "1".
bool SwitchedOff(const char* variable) {
  const char* value = std::getenv(variable);
  return value != nullptr && std::strcmp(value, "1") == 0;
}

}  // namespace

bool CpuHasAvx2Fma() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

bool CpuHasAvx512() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

bool UseAvx2Fma() {
  static const bool use = CpuHasAvx2Fma() && !SwitchedOff("KVSIM_NO_AVX2");
  return use;
}

bool UseAvx512() {
  static const bool use = UseAvx2Fma() && CpuHasAvx512() && !SwitchedOff("KVSIM_NO_AVX512");
  return use;
}

}  // namespace kvsim
