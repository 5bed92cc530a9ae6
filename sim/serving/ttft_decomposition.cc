#include "sim/serving/ttft_decomposition.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "util/mix64.h"

namespace kvsim {

TtftParts Difference(const TtftParts& a, const TtftParts& b) {
  TtftParts d;
  d.queueing_ms = a.queueing_ms - b.queueing_ms;
  d.reload_ms = a.reload_ms - b.reload_ms;
  d.prefill_linear_ms = a.prefill_linear_ms - b.prefill_linear_ms;
  d.prefill_attention_ms = a.prefill_attention_ms - b.prefill_attention_ms;
  d.co_batched_ms = a.co_batched_ms - b.co_batched_ms;
  d.chunk_wait_ms = a.chunk_wait_ms - b.chunk_wait_ms;
  d.ttft_ms = a.ttft_ms - b.ttft_ms;
  d.reused_tokens = a.reused_tokens - b.reused_tokens;
  d.recomputed_tokens = a.recomputed_tokens - b.recomputed_tokens;
  d.requests = a.requests;
  return d;
}

proto::TtftBreakdown ToProto(const TtftParts& parts) {
  proto::TtftBreakdown b;
  b.set_queueing_ms(parts.queueing_ms);
  b.set_reload_ms(parts.reload_ms);
  b.set_prefill_linear_ms(parts.prefill_linear_ms);
  b.set_prefill_attention_ms(parts.prefill_attention_ms);
  b.set_co_batched_ms(parts.co_batched_ms);
  b.set_chunk_wait_ms(parts.chunk_wait_ms);
  b.set_ttft_ms(parts.ttft_ms);
  b.set_reused_tokens(parts.reused_tokens);
  b.set_recomputed_tokens(parts.recomputed_tokens);
  b.set_requests(parts.requests);
  return b;
}

TtftParts FromProto(const proto::TtftBreakdown& b) {
  TtftParts parts;
  parts.queueing_ms = b.queueing_ms();
  parts.reload_ms = b.reload_ms();
  parts.prefill_linear_ms = b.prefill_linear_ms();
  parts.prefill_attention_ms = b.prefill_attention_ms();
  parts.co_batched_ms = b.co_batched_ms();
  parts.chunk_wait_ms = b.chunk_wait_ms();
  parts.ttft_ms = b.ttft_ms();
  parts.reused_tokens = b.reused_tokens();
  parts.recomputed_tokens = b.recomputed_tokens();
  parts.requests = b.requests();
  return parts;
}

std::string FormatGainDecomposition(const TtftParts& a, const TtftParts& b) {
  const TtftParts d = Difference(a, b);
  std::string out = absl::StrFormat("%-20s %12s %12s %12s\n", "mean per request", "a", "b", "a - b");
  auto line = [&](const char* name, double x, double y, double z) {
    absl::StrAppendFormat(&out, "%-20s %12.3f %12.3f %12.3f\n", name, x, y, z);
  };
  line("queueing_ms", a.queueing_ms, b.queueing_ms, d.queueing_ms);
  line("reload_ms", a.reload_ms, b.reload_ms, d.reload_ms);
  line("prefill_linear_ms", a.prefill_linear_ms, b.prefill_linear_ms, d.prefill_linear_ms);
  line("prefill_attention_ms", a.prefill_attention_ms, b.prefill_attention_ms, d.prefill_attention_ms);
  line("co_batched_ms", a.co_batched_ms, b.co_batched_ms, d.co_batched_ms);
  line("chunk_wait_ms", a.chunk_wait_ms, b.chunk_wait_ms, d.chunk_wait_ms);
  line("ttft_ms", a.ttft_ms, b.ttft_ms, d.ttft_ms);
  line("reused_tokens", a.reused_tokens, b.reused_tokens, d.reused_tokens);
  line("recomputed_tokens", a.recomputed_tokens, b.recomputed_tokens, d.recomputed_tokens);
  return out;
}

double TtftDecomposition::AttentionFraction(int64_t context, int64_t tokens) {
  if (memo_.empty()) memo_.resize(kMemoEntries);
  MemoEntry& entry =
      memo_[Mix64(static_cast<uint64_t>(context) * 0x9E3779B97F4A7C15u ^ static_cast<uint64_t>(tokens)) % kMemoEntries];
  if (entry.context == context && entry.tokens == tokens) return entry.fraction;
  double fraction = 0;
  alone_.sequences.assign(1, SequenceWork{context, tokens, 1});
  absl::StatusOr<CostBreakdown> breakdown = cost_model_->EstimateBreakdown(alone_);  // priced, not run
  if (breakdown.ok() && breakdown->total_ns > 0) {
    fraction = static_cast<double>(breakdown->attention_ns) / static_cast<double>(breakdown->total_ns);
  }
  entry = MemoEntry{context, tokens, fraction};
  return fraction;
}

void TtftDecomposition::OnIteration(const IterationRecord& record) {
  if (record.plan == nullptr || record.pool == nullptr) return;
  const IterationPlan& plan = *record.plan;
  const int64_t batch_tokens = plan.prefill_tokens + plan.decode_tokens;
  if (batch_tokens <= 0 || plan.prefill_tokens == 0) return;  // only prefill pieces count
  // Overlapped transfers: duration = max(compute, transfer); else compute + transfer.
  const double compute_ns = static_cast<double>(std::min(record.duration_ns, plan.compute_ns));
  const double transfer_ns = static_cast<double>(record.duration_ns) - compute_ns;
  for (const ScheduledPiece& piece : plan.pieces) {
    if (!piece.prefill) continue;
    const RequestState& state = record.pool->at(piece.slot);
    if (state.first_token_ns >= 0) continue;  // recomputing after a preemption: TTFT already counted
    Parts& parts = open_[state.request.request_id];
    const double own_ns = compute_ns * static_cast<double>(piece.tokens) / static_cast<double>(batch_tokens);
    const double attention_fraction = AttentionFraction(state.frontier_tokens(), piece.tokens);
    parts.reload_ns += transfer_ns;
    parts.attention_ns += own_ns * attention_fraction;
    parts.linear_ns += own_ns * (1 - attention_fraction);
    parts.co_batched_ns += compute_ns - own_ns;
  }
}

void TtftDecomposition::OnRequestFinished(SimTime now_ns, const RequestState& state) {
  auto it = open_.find(state.request.request_id);
  Parts parts;
  if (it != open_.end()) {
    parts = it->second;
    open_.erase(it);
  }
  if (state.rejected || state.first_token_ns < 0) return;
  const double ttft_ns = static_cast<double>(state.first_token_ns - state.arrival_ns);
  const double queueing_ns = static_cast<double>(state.first_scheduled_ns - state.arrival_ns);
  sum_.queueing_ms += queueing_ns;
  sum_.reload_ms += parts.reload_ns;
  sum_.prefill_linear_ms += parts.linear_ns;
  sum_.prefill_attention_ms += parts.attention_ns;
  sum_.co_batched_ms += parts.co_batched_ns;
  sum_.chunk_wait_ms +=
      ttft_ns - queueing_ns - parts.reload_ns - parts.linear_ns - parts.attention_ns - parts.co_batched_ns;
  sum_.ttft_ms += ttft_ns;
  sum_.reused_tokens += static_cast<double>(state.reused_tokens);
  sum_.recomputed_tokens += static_cast<double>(state.recomputed_tokens);
  ++sum_.requests;
}

TtftParts TtftDecomposition::MeanParts() const {
  TtftParts mean = sum_;
  if (sum_.requests == 0) return mean;
  const double n = static_cast<double>(sum_.requests);
  for (double* ms : {&mean.queueing_ms, &mean.reload_ms, &mean.prefill_linear_ms, &mean.prefill_attention_ms,
                     &mean.co_batched_ms, &mean.chunk_wait_ms, &mean.ttft_ms}) {
    *ms /= n * 1e6;
  }
  mean.reused_tokens /= n;
  mean.recomputed_tokens /= n;
  return mean;
}

}  // namespace kvsim
