// The serving-stack presets (presets/stacks/) reproduce the behaviour their sources document, on
// hand-built traces with hand-computed expectations (fake costs: sim/serving/testing/fake_cost_model.h).
#include <cstdint>
#include <string>
#include <vector>

#include "config/experiment_config.h"
#include "gtest/gtest.h"
#include "presets/presets.h"
#include "sim/serving/engine.h"
#include "sim/serving/observer.h"
#include "sim/serving/replay.h"
#include "sim/serving/testing/fake_cost_model.h"
#include "sim/serving/testing/test_util.h"
#include "traces/trace_reader.h"

namespace kvsim {
namespace {

// iteration = 1000 + 10 per new token + 1 per context token; transfers 1 ns per byte, no latency.
constexpr FakeCosts kCosts{.fixed_ns = 1000, .ns_per_new_token = 10, .ns_per_context_token = 1, .ns_per_byte = 1};
constexpr int64_t kSecond = 1'000'000'000;
// Llama-3.1-8B bf16 (the default model): 2 x 32 layers x 8 KV heads x 128 x 2 bytes per token.
constexpr int64_t kBlockBytes = 16 * 2 * 32 * 8 * 128 * 2;

proto::ExperimentConfig Stack(const std::string& name, int64_t gpu_blocks) {
  proto::ExperimentConfig config;
  config.set_stack_preset(name);
  if (gpu_blocks > 0) config.mutable_cache()->set_gpu_capacity_blocks(gpu_blocks);
  absl::StatusOr<proto::ExperimentConfig> resolved = ResolveExperimentConfig(config, "test");
  EXPECT_TRUE(resolved.ok()) << name << ": " << resolved.status();
  return resolved.ok() ? *resolved : proto::ExperimentConfig();
}

proto::Results Replay(const proto::ExperimentConfig& config, std::vector<Request> requests) {
  FakeCostModel cost(kCosts);
  VectorTraceReader reader(std::move(requests), TraceInfo{"test", "vector", 16});
  ReplayOptions options;
  options.timeline = false;
  auto output = RunReplay(config, cost, &reader, options);
  EXPECT_TRUE(output.ok()) << output.status();
  return output.ok() ? output->results : proto::Results();
}

class PrefillLog : public EngineObserver {
 public:
  void OnIteration(const IterationRecord& record) override { prefill_tokens.push_back(record.prefill_tokens); }
  std::vector<int64_t> prefill_tokens;
};

std::vector<int64_t> PrefillTokensPerIteration(const proto::ExperimentConfig& config, std::vector<Request> requests) {
  FakeCostModel cost(kCosts);
  VectorTraceReader reader(std::move(requests), TraceInfo{"test", "vector", 0});
  auto engine = Engine::Create(config, &cost, 0);
  EXPECT_TRUE(engine.ok()) << engine.status();
  PrefillLog log;
  (*engine)->AddObserver(&log);
  const absl::Status run = (*engine)->Run(&reader);
  EXPECT_TRUE(run.ok()) << run;
  return log.prefill_tokens;
}

TEST(StackPresetsTest, EveryStackResolvesAndUserFieldsOverrideIt) {
  EXPECT_EQ(StackPresetNames(), (std::vector<std::string>{"asymcache", "lmcache-cpu", "sglang", "vllm-v1"}));
  for (const std::string& name : StackPresetNames()) Stack(name, 0);
  proto::ExperimentConfig config;
  config.set_stack_preset("vllm-v1");
  config.mutable_scheduler()->set_max_num_batched_tokens(2048);  // vLLM's A100 default
  config.mutable_scheduler()->set_chunk_tokens(2048);
  config.mutable_eviction()->set_name("asym");
  absl::StatusOr<proto::ExperimentConfig> resolved = ResolveExperimentConfig(config, "test");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->scheduler().max_num_batched_tokens(), 2048);
  EXPECT_EQ(resolved->scheduler().max_num_seqs(), 1024);  // the preset's
  EXPECT_EQ(resolved->eviction().name(), "asym");
  EXPECT_EQ(resolved->cache().reuse_mode(), proto::REUSE_MODE_PREFIX);
  config.set_stack_preset("vllm-v2");
  EXPECT_EQ(ResolveExperimentConfig(config, "test").status().code(), absl::StatusCode::kNotFound);
}

TEST(StackPresetsTest, VllmHitsOnlyLeadingBlocks) {
  // A: blocks 1, 2, 3. B (after A finished): 1, 7, 3. vLLM's prefix cache reuses block 1 only (block 3 is
  // resident but follows a miss); the AsymCache stack's segment reuse takes 1 and 3.
  const std::vector<Request> trace = {MakeRequest(1, 0, 48, 1, {1, 2, 3}), MakeRequest(2, kSecond, 48, 1, {1, 7, 3})};
  const proto::RequestResult vllm = ResultOf(Replay(Stack("vllm-v1", 100), trace), 2);
  EXPECT_EQ(vllm.reused_tokens(), 16);
  EXPECT_EQ(vllm.recomputed_tokens(), 32);
  // 32 tokens at context 16: 1000 + 320 + 16.
  EXPECT_EQ(vllm.ttft_ns(), 1336);
  const proto::RequestResult asym = ResultOf(Replay(Stack("asymcache", 100), trace), 2);
  EXPECT_EQ(asym.reused_tokens(), 32);
  EXPECT_EQ(asym.recomputed_tokens(), 16);
}

TEST(StackPresetsTest, VllmChunkIsTheWholeSharedBudget) {
  const proto::ExperimentConfig vllm = Stack("vllm-v1", 5000);
  // One 20000-token prompt: 8192 + 8192 + 3616 (one prompt may take the whole budget).
  EXPECT_EQ(PrefillTokensPerIteration(vllm, {MakeRequest(1, 0, 20000, 1)}), (std::vector<int64_t>{8192, 8192, 3616}));
  // Two 6000-token prompts together: the first takes 6000, the second the 2192 left, then its 3808.
  EXPECT_EQ(PrefillTokensPerIteration(vllm, {MakeRequest(1, 0, 6000, 1), MakeRequest(2, 0, 6000, 1)}),
            (std::vector<int64_t>{8192, 3808}));
}

// A: 1, 2, 3; B: 1, 4; then C (three or four fresh blocks) on a GPU of 5 blocks; then a probe D.
std::vector<Request> LeafTrace(int64_t c_blocks, std::vector<uint64_t> probe) {
  std::vector<uint64_t> c_hashes;
  for (int64_t i = 0; i < c_blocks; ++i) c_hashes.push_back(100 + i);
  const int64_t probe_tokens = 16 * static_cast<int64_t>(probe.size());
  return {MakeRequest(1, 0, 48, 1, {1, 2, 3}), MakeRequest(2, kSecond, 32, 1, {1, 4}),
          MakeRequest(3, 2 * kSecond, 16 * c_blocks, 1, c_hashes), MakeRequest(4, 3 * kSecond, probe_tokens, 1, probe)};
}

TEST(StackPresetsTest, SglangEvictsLeavesLeastRecentlyUsedFirst) {
  const proto::ExperimentConfig sglang = Stack("sglang", 5);
  EXPECT_TRUE(sglang.eviction().leaf_first());
  // After A and B the tree is 1 -> {2 -> 3, 4}; last uses (oldest first): 3, 2, 4, 1 (a request releases
  // its last block first). C with 3 blocks evicts 2: the oldest leaf 3, then of the leaves {2, 4} the
  // older, 2. Block 4 and its parent 1 stay: D = (1, 4) reuses both, D = (1, 2) only block 1.
  EXPECT_EQ(ResultOf(Replay(sglang, LeafTrace(3, {1, 4})), 4).reused_tokens(), 32);
  EXPECT_EQ(ResultOf(Replay(sglang, LeafTrace(3, {1, 2})), 4).reused_tokens(), 16);
  // C with 4 blocks evicts 3, 2, then the leaf 4; block 1, a parent until then, is kept.
  EXPECT_EQ(ResultOf(Replay(sglang, LeafTrace(4, {1, 4})), 4).reused_tokens(), 16);
}

TEST(StackPresetsTest, LmcacheReloadsAnEvictedBlockFromHost) {
  const proto::ExperimentConfig lmcache = Stack("lmcache-cpu", 4);
  ASSERT_EQ(lmcache.cache().lower_tiers_size(), 1);
  EXPECT_EQ(lmcache.cache().lower_tiers(0).capacity_bytes(), 5'000'000'000);
  // A: blocks 1, 2. B: three fresh blocks (49 tokens with its output fit the 4-block GPU); admitting it
  // evicts A's least recent block, 2 (a request releases its last block first), to the host. C: 1, 2
  // again: block 1 is hit on the GPU, block 2 is on the host only and is reloaded (never recomputed), and
  // B's least recent block, 7, is demoted to make room. C's iteration: the last prompt token is computed
  // (1000 + 10 + 31 context) plus that iteration's transfers, one block in and one out at 1 ns per byte.
  const std::vector<Request> trace = {MakeRequest(1, 0, 32, 1, {1, 2}), MakeRequest(2, kSecond, 48, 1, {5, 6, 7}),
                                      MakeRequest(3, 2 * kSecond, 32, 1, {1, 2})};
  const proto::Results results = Replay(lmcache, trace);
  const proto::RequestResult& c = ResultOf(results, 3);
  EXPECT_EQ(c.reloaded_tokens(), 16);
  EXPECT_EQ(c.recomputed_tokens(), 1);  // the last prompt token only
  EXPECT_EQ(c.ttft_ns(), 1041 + 2 * kBlockBytes);
  EXPECT_EQ(results.summary().tiers(1).reloaded_blocks(), 1);
  // The same trace without the host tier recomputes block 2 at context 16: 1000 + 160 + 16.
  EXPECT_EQ(ResultOf(Replay(Stack("vllm-v1", 4), trace), 3).ttft_ns(), 1176);
}

}  // namespace
}  // namespace kvsim
