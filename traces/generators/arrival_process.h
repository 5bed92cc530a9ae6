// File: traces/generators/arrival_process.h
//
// ArrivalProcess: when sessions start. Three kinds (proto::Arrivals):
//   - Poisson: exponential gaps with mean 1 in operational time;
//   - Gamma: renewal process with Gamma gaps of mean 1 and coefficient of variation cv (burstiness);
//   - Replay: the arrival times of an existing trace, in its order, divided by `speedup`.
// Poisson and Gamma run a unit-rate process in operational time L and map each point through the rate
// schedule, t = Lambda^-1(L) (RateSchedule): a constant rate divides the gaps by the rate; a changing
// rate stretches and compresses them (exact for Poisson; for Gamma the burstiness is that of the
// operational-time gaps). The process clock starts with an arrival at 0 (L = 0), so a generated trace
// starts at 0 as every kvsim trace does, and the schedule's times are the trace's times.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<ArrivalProcess> arrivals,
//                          CreateArrivalProcess(spec.arrivals(), seed, open_trace, "arrivals"));
//   int64_t t_ns;
//   while (arrivals->Next(&t_ns)) StartSession(t_ns);
//   KVSIM_RETURN_IF_ERROR(arrivals->status());
//
// Randomness: Poisson and Gamma draw from their own engine, seeded from `seed`, so arrival times do not
// change when other parts of a spec do. Thread-safety: one thread at a time.
#ifndef KVSIM_TRACES_GENERATORS_ARRIVAL_PROCESS_H_
#define KVSIM_TRACES_GENERATORS_ARRIVAL_PROCESS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/workload.pb.h"
#include "traces/generators/trace_opener.h"

namespace kvsim {

class ArrivalProcess {
 public:
  virtual ~ArrivalProcess() = default;

  // Sets *arrival_ns to the next session start on the process clock (never before the previous one) and
  // returns true. Returns false at the end of a finite process or at the first error; status() tells
  // which.
  virtual bool Next(int64_t* arrival_ns) = 0;

  // OK, or the first error (e.g. a replayed trace's read error or decreasing time, naming the record).
  virtual absl::Status status() const = 0;

  // True if the process can end by itself (replay, or a non-periodic schedule ending at rate 0).
  virtual bool finite() const = 0;
};

// Validates `spec` (errors are InvalidArgument naming "<field>.<subfield>") and creates the process.
// `open_trace` is needed only for replay.
absl::StatusOr<std::unique_ptr<ArrivalProcess>> CreateArrivalProcess(const proto::Arrivals& spec, uint64_t seed,
                                                                     const TraceOpener& open_trace,
                                                                     const std::string& field);

}  // namespace kvsim

#endif  // KVSIM_TRACES_GENERATORS_ARRIVAL_PROCESS_H_
