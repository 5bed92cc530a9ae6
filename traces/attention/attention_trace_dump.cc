// attention_trace_dump TRACE: prints the header and, per sample, its sizes and the sum of every tensor,
// one "key value" per line, so a test can compare them with the writer's own figures.
#include <cmath>
#include <iostream>

#include "absl/strings/str_format.h"
#include "traces/attention/attention_trace_io.h"

namespace {

double Sum(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: attention_trace_dump TRACE\n";
    return 2;
  }
  auto reader = kvsim::AttentionTraceReader::Open(argv[1]);
  if (!reader.ok()) {
    std::cerr << reader.status() << "\n";
    return 2;
  }
  const kvsim::AttentionTraceHeader& h = (*reader)->header();
  std::cout << absl::StrFormat("model %s\nlayers %d\nquery_heads %d\nkv_heads %d\nhead_dim %d\n", h.model, h.num_layers,
                               h.num_query_heads, h.num_kv_heads, h.head_dim);
  std::cout << absl::StrFormat("dtype %d\nrope_base %g\nkept_heads %d\nsamples %d\n", static_cast<int>(h.dtype),
                               h.rope.base, h.num_kept_heads(), (*reader)->num_samples());
  for (int64_t s = 0; s < (*reader)->num_samples(); ++s) {
    auto sample = (*reader)->ReadSample(s);
    if (!sample.ok()) {
      std::cerr << sample.status() << "\n";
      return 2;
    }
    std::cout << absl::StrFormat("sample %d prompt_len %d decode_steps %d query_start %d tokens %d\n", s,
                                 sample->prompt_len, sample->num_decode_steps, sample->query_start,
                                 sample->token_ids.size());
    for (const auto& head : sample->heads) {
      std::cout << absl::StrFormat("head %d %d keys %.6e values %.6e queries %.6e column_sums %.6e\n", head.layer,
                                   head.kv_head, Sum(head.keys), Sum(head.values), Sum(head.queries),
                                   Sum(head.column_sums));
    }
  }
  return 0;
}
