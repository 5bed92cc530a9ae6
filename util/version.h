// File: util/version.h
//
// The kvsim version recorded in every results file. Bump kKvsimVersion when results change meaning.
#ifndef KVSIM_UTIL_VERSION_H_
#define KVSIM_UTIL_VERSION_H_

namespace kvsim {

inline constexpr char kKvsimVersion[] = "0.1.0";

}  // namespace kvsim

#endif  // KVSIM_UTIL_VERSION_H_
