// File: util/thread_cpu_time.h
//
// Thread CPU time for benchmarks that compare two computations run in the same minutes (interleaved
// repetitions, fastest of each kept): time the calling thread spent on the CPU, unaffected by other
// processes' use of the machine (though not by their use of its caches and memory).
//
// Example:
//   const double seconds = CpuSecondsOf([&] { RunOnce(); });
#ifndef KVSIM_UTIL_THREAD_CPU_TIME_H_
#define KVSIM_UTIL_THREAD_CPU_TIME_H_

#include <chrono>
#include <ctime>

namespace kvsim {

// The calling thread's CPU time so far, in seconds.
inline double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Runs `fn` once and returns the calling thread's CPU seconds spent in it.
template <typename Fn>
double CpuSecondsOf(const Fn& fn) {
  const double start = ThreadCpuSeconds();
  fn();
  return ThreadCpuSeconds() - start;
}

// Runs `fn` once and returns the wall-clock seconds it took (for work spread over several threads).
template <typename Fn>
double WallSecondsOf(const Fn& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kvsim

#endif  // KVSIM_UTIL_THREAD_CPU_TIME_H_
