// File: util/heap_tuning.h
//
// TuneHeapForBatchRun(): sets up glibc's allocator for a short-lived process that builds up a few hundred
// megabytes at most and exits (a replay, a sweep point): the heap grows in large steps and is never
// trimmed, big blocks come from the heap instead of fresh mmap()s, and the heap's first `huge_bytes`
// are eligible for transparent huge pages (util/huge_pages.h). On virtual machines, where each page
// fault is expensive, this takes a replay of the bundled Mooncake trace from about 2,600 page faults to
// a few hundred.
//
// Only the allocator's policy changes, never what the program computes. Call it once, first thing in
// main(), before threads exist. Returns whether the huge-page advice was accepted (false where the
// allocator is not glibc's or the kernel has no transparent huge pages; the rest still applies).
//
// Example:
//   int main(int argc, char** argv) {
//     kvsim::TuneHeapForBatchRun();
//     ...
//   }
#ifndef KVSIM_UTIL_HEAP_TUNING_H_
#define KVSIM_UTIL_HEAP_TUNING_H_

#include <cstdint>

namespace kvsim {

bool TuneHeapForBatchRun(int64_t huge_bytes = int64_t{64} << 20);

}  // namespace kvsim

#endif  // KVSIM_UTIL_HEAP_TUNING_H_
