// File: traces/generators/workload_generator.h
//
// WorkloadGenerator: turns a proto::WorkloadSpec into a stream of requests in arrival order, seeded and
// reproducible. It is a TraceReader, so anything that replays a trace replays a generated workload.
//
// Model (proto/workload.proto has the fields):
//   - Sessions start by the arrival process (Poisson, Gamma with burstiness as CV, or replayed arrival
//     times; with a constant or time-varying rate). Each picks a class by weight.
//   - single_turn: one request of system prompt + input tokens.
//   - chat: turn k's prompt = system prompt + (user_1 + response_1) + ... + (user_{k-1} + response_{k-1})
//     + user_k, the whole conversation so far plus the new message.
//   - agent: call k's prompt = system prompt + task + (output_1 + tool result_1) + ... ; each call but the
//     last ends with a tool call, recorded in Request::tool_calls with its duration.
//   - Block hashes are prefix-chained ids (BlockChain) with the spec's block size: a shared system prompt
//     gives equal ids for its full blocks, and a turn's blocks that cover the previous turn's full blocks
//     equal that turn's ids. Partial last blocks are never shared with the next turn (block_chain.h).
//
// Timing: the generator does not know service times. A session's next request arrives at
//   arrival(k + 1) = arrival(k) + round(output_tokens(k) * decode_s_per_token * 1e9)
//                    + think time (chat) or the tool call's duration_ns (agent),
// i.e. responses are assumed to take decode_s_per_token per generated token (0 by default) and the
// think/tool time starts when the response ends.
//
// Ordering: requests of concurrent sessions are merged with a min-heap keyed by (arrival_ns, sequence
// number of insertion), so ties are broken deterministically. request_id is the 0-based index in the
// output; parent_id is the session's previous request; session_id counts chat and agent sessions from 0
// (single-turn requests have session_id -1 and turn 0); turn counts from 1.
//
// Limits: generation stops after spec.num_requests requests, or before the first request at or after
// spec.duration_s, or when the arrival process and every session have ended. Sessions are cut where the
// limit falls.
//
// Randomness: arrivals, session contents and system-prompt lengths use separate std::mt19937_64 engines
// seeded from `seed` (SeedFor), and every variate is computed by portable_random.h, so the same spec and
// seed give the same requests on every platform.
//
// Memory: one heap entry and one session state (its block ids) per open session, plus the tables of
// Zipf and resampled distributions; nothing grows with the number of requests generated.
//
// Example:
//   KVSIM_RETURN_IF_ERROR(GenerateWorkload(spec, EffectiveSeed(spec, flag_seed),
//       [&](const Request& r) { return writer->Write(r); }, open_trace));
//
// Thread-safety: a generator is used by one thread at a time.
#ifndef KVSIM_TRACES_GENERATORS_WORKLOAD_GENERATOR_H_
#define KVSIM_TRACES_GENERATORS_WORKLOAD_GENERATOR_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/workload.pb.h"
#include "traces/generators/trace_opener.h"
#include "traces/request.h"
#include "traces/trace_reader.h"

namespace kvsim {

// Block size used when spec.block_tokens is 0.
inline constexpr int32_t kDefaultGeneratedBlockTokens = 16;

class WorkloadGenerator final : public TraceReader {
 public:
  // Validates `spec` and prepares generation. Errors: InvalidArgument naming the field
  // ("classes[1].chat.think_time_s.lognormal.sigma: must be ..."), or the error of a trace the spec
  // names (opened with `open_trace`, which may be empty when the spec names none).
  static absl::StatusOr<std::unique_ptr<WorkloadGenerator>> Create(const proto::WorkloadSpec& spec, uint64_t seed,
                                                                   const TraceOpener& open_trace);
  ~WorkloadGenerator() override;

  // The next request in arrival order (see the file comment); false at the end or on error.
  bool Next(Request* request) override;
  absl::Status status() const override;
  // format "generated", path = the spec's name, block_tokens = the spec's (or the default).
  const TraceInfo& info() const override;

  // Sessions started whose last request has not been emitted: what the generator holds in memory.
  int64_t open_sessions() const;

 private:
  struct Impl;
  explicit WorkloadGenerator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Generates the whole workload into `sink`, one request at a time (streaming). Stops at the first error
// of the generator or of `sink` and returns it.
absl::Status GenerateWorkload(const proto::WorkloadSpec& spec, uint64_t seed,
                              const std::function<absl::Status(const Request&)>& sink,
                              const TraceOpener& open_trace = nullptr);

// The seed to use: `flag_seed` when non-zero (a command-line override), else spec.seed.
uint64_t EffectiveSeed(const proto::WorkloadSpec& spec, uint64_t flag_seed);

}  // namespace kvsim

#endif  // KVSIM_TRACES_GENERATORS_WORKLOAD_GENERATOR_H_
