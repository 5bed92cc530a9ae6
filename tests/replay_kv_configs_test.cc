// Replays with per-request KV configurations (sim/serving/request_kv.h): each request's decode reads and its
// blocks follow its own format and budget. Every expected figure is worked out here by hand from the bytes
// per KV token of Llama-3.1-8B (32 layers x 8 KV heads x 128 x 2 (K and V) x bytes per element: 131,072 at
// fp16, 32,768 at 4 bits without scales) and the scheduling rules, independently of the code.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/kv_format.h"
#include "cost_models/cost_model.h"
#include "gtest/gtest.h"
#include "sim/serving/engine.h"
#include "sim/serving/observer.h"
#include "sim/serving/request_kv.h"
#include "sim/serving/testing/test_util.h"
#include "traces/trace_reader.h"

namespace kvsim {
namespace {

// iteration = 1000 + 10 per new token + 1 per KiB of KV the pieces' contexts hold (at each piece's format).
class KvBytesCostModel final : public CostModel {
 public:
  KvBytesCostModel(const proto::ModelSpec& model, const KvFormat& replica) : model_(model), replica_(replica) {}
  std::string Describe() const override { return "kv-bytes"; }
  absl::StatusOr<int64_t> IterationTimeNs(const BatchShape& batch) const override {
    if (batch.sequences.empty()) return absl::InvalidArgumentError("empty batch");
    int64_t ns = 1000;
    for (const SequenceWork& s : batch.sequences) {
      const double bytes = KvBytesPerToken(model_, s.kv_format != nullptr ? *s.kv_format : replica_);
      ns += 10 * s.new_tokens + static_cast<int64_t>(s.context_tokens * bytes / 1024);
    }
    return ns;
  }
  int64_t TransferTimeNs(int64_t, const proto::TierConfig&) const override { return 0; }

 private:
  proto::ModelSpec model_;
  KvFormat replica_;
};

// Configurations by request id; requests not listed run at the replica's format.
class MapAssigner final : public RequestKvAssigner {
 public:
  std::map<uint64_t, RequestKv> kv;
  absl::StatusOr<RequestKv> Assign(const Request& request) const override {
    auto it = kv.find(request.request_id);
    return it == kv.end() ? RequestKv() : it->second;
  }
  const std::vector<std::string>& names() const override { return names_; }

 private:
  std::vector<std::string> names_ = {"fp16", "int4"};
};

// Every iteration's blocks in use and batch, and the run's end.
class Recorder final : public EngineObserver {
 public:
  struct Iteration {
    int64_t gpu_blocks_used = 0;
    int64_t duration_ns = 0;
    BatchShape shape;
  };
  std::vector<Iteration> iterations;
  int64_t capacity_blocks = 0;
  int64_t max_used_blocks = 0;
  int64_t preemptions = 0;
  std::map<uint64_t, RequestState> finished;
  int64_t end_used_blocks = -1;

  void OnIteration(const IterationRecord& record) override {
    iterations.push_back({record.gpu_blocks_used, record.duration_ns, record.plan->shape});
    capacity_blocks = record.gpu_capacity_blocks;
    max_used_blocks = std::max(max_used_blocks, record.gpu_blocks_used);
  }
  void OnPreemption(SimTime, const RequestState&) override { ++preemptions; }
  void OnRequestFinished(SimTime, const RequestState& state) override {
    finished[state.request.request_id] = state;
  }
  void OnRunEnd(SimTime, const std::vector<const BlockManager*>& replicas) override {
    end_used_blocks = replicas[0]->gpu_used_blocks();
  }
};

KvFormat Int4() {
  KvFormat kv;
  kv.bits = 4;
  kv.is_integer = true;  // no scale groups: 0.5 bytes per element
  return kv;
}

struct Run {
  Recorder recorder;
  absl::Status status;
};

std::unique_ptr<Run> Replay(int64_t capacity_blocks, std::vector<Request> requests, const MapAssigner& assigner,
                            int32_t trace_block_tokens = 0) {
  auto run = std::make_unique<Run>();
  const proto::ExperimentConfig config = TestConfig(capacity_blocks);
  KvFormat replica;  // bf16/fp16: 2 bytes per element
  KvBytesCostModel cost(config.model(), replica);
  auto engine = Engine::Create(config, &cost, trace_block_tokens);
  if (!engine.ok()) {
    run->status = engine.status();
    return run;
  }
  EXPECT_EQ((*engine)->block_tokens(), 16);
  run->status = (*engine)->SetRequestKv(&assigner);
  if (!run->status.ok()) return run;
  (*engine)->AddObserver(&run->recorder);
  VectorTraceReader reader(std::move(requests), TraceInfo{"test", "vector", trace_block_tokens});
  run->status = (*engine)->Run(&reader);
  return run;
}

TEST(ReplayKvConfigsTest, TheModelsBytesPerToken) {
  const proto::ExperimentConfig config = TestConfig(100);
  EXPECT_DOUBLE_EQ(KvBytesPerToken(config.model(), KvFormat()), 131072);
  EXPECT_DOUBLE_EQ(KvBytesPerToken(config.model(), Int4()), 32768);
}

TEST(ReplayKvConfigsTest, EachDecodeIsChargedItsOwnFormatsBytes) {
  const KvFormat int4 = Int4();
  MapAssigner assigner;
  assigner.kv[2] = RequestKv{.config = 1, .format = &int4, .block_factor = 4, .hash_salt = 5};
  auto run = Replay(100, {MakeRequest(1, 0, 40, 3), MakeRequest(2, 0, 40, 3)}, assigner);
  ASSERT_TRUE(run->status.ok()) << run->status;
  const auto& it = run->recorder.iterations;
  ASSERT_EQ(it.size(), 3u);
  // Both prefills (context 0): 1000 + 10 x 80 = 1800.
  EXPECT_EQ(it[0].duration_ns, 1800);
  // Decodes at context 40: fp16 reads 40 x 131072 B = 5120 KiB, 4-bit 40 x 32768 B = 1280 KiB:
  // 1000 + 20 + 5120 + 1280 = 7420. At context 41: 1000 + 20 + 5248 + 1312 = 7580.
  EXPECT_EQ(it[1].duration_ns, 7420);
  EXPECT_EQ(it[2].duration_ns, 7580);
  ASSERT_EQ(it[1].shape.sequences.size(), 2u);
  EXPECT_EQ(it[1].shape.sequences[0].kv_format, nullptr);
  EXPECT_EQ(it[1].shape.sequences[1].kv_format, &int4);
  EXPECT_EQ(run->recorder.finished[1].finish_ns, 1800 + 7420 + 7580);
  EXPECT_EQ(run->recorder.finished[2].finish_ns, 1800 + 7420 + 7580);
  // Blocks: fp16 40 tokens in 16-token blocks = 3, 4-bit in 64-token blocks = 1. Each decode's token
  // then needs one generated-token block: 3 + 1 + 1 + 1 = 6.
  EXPECT_EQ(it[0].gpu_blocks_used, 4);
  EXPECT_EQ(it[1].gpu_blocks_used, 6);
  EXPECT_EQ(it[2].gpu_blocks_used, 6);
  EXPECT_EQ(run->recorder.end_used_blocks, 0);
}

TEST(ReplayKvConfigsTest, AnEvictionBudgetCutsTheResidentBlocksAfterPrefill) {
  const KvFormat int4 = Int4();
  for (const bool quantised : {false, true}) {
    SCOPED_TRACE(quantised ? "4-bit" : "fp16");
    MapAssigner assigner;
    RequestKv h2o{.config = 0, .prompt_keep_tokens = 40, .hold_cap_tokens = 40};
    if (quantised) {
      h2o.format = &int4;
      h2o.block_factor = 4;
      h2o.hash_salt = 5;
    }
    assigner.kv[1] = h2o;
    auto run = Replay(100, {MakeRequest(1, 0, 100, 4)}, assigner);
    ASSERT_TRUE(run->status.ok()) << run->status;
    const auto& it = run->recorder.iterations;
    ASSERT_EQ(it.size(), 4u);
    const int64_t block_tokens = quantised ? 64 : 16;
    // Prefill: the whole prompt's blocks, ceil(100 / 16) = 7 or ceil(100 / 64) = 2; 1000 + 1000.
    EXPECT_EQ(it[0].gpu_blocks_used, (100 + block_tokens - 1) / block_tokens);
    EXPECT_EQ(it[0].duration_ns, 2000);
    // Then ceil(40 / 16) = 3 or ceil(40 / 64) = 1 blocks, and every decode reads the 40 kept tokens:
    // 1000 + 10 + 40 x 128 = 6130 (fp16) or 1000 + 10 + 40 x 32 = 2290 (4-bit).
    for (int i = 1; i < 4; ++i) {
      EXPECT_EQ(it[i].gpu_blocks_used, quantised ? 1 : 3) << i;
      EXPECT_EQ(it[i].shape.sequences[0].context_tokens, 40) << i;
      EXPECT_EQ(it[i].duration_ns, quantised ? 2290 : 6130) << i;
    }
    EXPECT_EQ(run->recorder.end_used_blocks, 0);
  }
}

TEST(ReplayKvConfigsTest, CachedBlocksAreSharedOnlyWithinAFormat) {
  const KvFormat int4 = Int4();
  MapAssigner assigner;
  const RequestKv four_bit{.config = 1, .format = &int4, .block_factor = 4, .hash_salt = 5};
  assigner.kv[2] = assigner.kv[4] = four_bit;
  assigner.kv[5] = RequestKv{.config = 0, .prompt_keep_tokens = 32, .hold_cap_tokens = 32};
  // The same 64-token prompt (blocks 1..4) five times, each after the previous finished: fp16, 4-bit,
  // fp16, 4-bit, budgeted fp16.
  std::vector<Request> requests;
  for (uint64_t id = 1; id <= 5; ++id) requests.push_back(MakeRequest(id, id * 1000000, 64, 2, {1, 2, 3, 4}));
  auto run = Replay(100, std::move(requests), assigner, 16);
  ASSERT_TRUE(run->status.ok()) << run->status;
  auto& done = run->recorder.finished;
  EXPECT_EQ(done[1].reused_tokens, 0);
  EXPECT_EQ(done[2].reused_tokens, 0);   // cached at fp16 only
  EXPECT_EQ(done[3].reused_tokens, 64);  // request 1's four blocks
  EXPECT_EQ(done[4].reused_tokens, 64);  // request 2's one 64-token block
  EXPECT_EQ(done[4].reused_blocks, 1);
  EXPECT_EQ(done[5].reused_tokens, 0);   // a budgeted request shares nothing
  // Left cached: the fp16 prompt's 4 blocks and the 4-bit prompt's 1.
  EXPECT_EQ(run->recorder.end_used_blocks, 5);
}

TEST(ReplayKvConfigsTest, MixedFormatsUnderPressureConserveBlocks) {
  const KvFormat int4 = Int4();
  MapAssigner assigner;
  std::vector<Request> requests;
  for (uint64_t id = 1; id <= 9; ++id) {
    requests.push_back(MakeRequest(id, id * 10, 64, 100));
    if (id % 3 == 2) assigner.kv[id] = RequestKv{.config = 1, .format = &int4, .block_factor = 4, .hash_salt = 5};
    if (id % 3 == 0) assigner.kv[id] = RequestKv{.config = 0, .prompt_keep_tokens = 32, .hold_cap_tokens = 32};
  }
  // Peak blocks alone: fp16 4 + ceil(100 / 16) = 11, 4-bit 1 + ceil(100 / 64) = 3, budgeted 4 at prefill
  // and 2 after: three of each need 3 x (11 + 3 + 4) = 54 > 14, so the run preempts.
  auto run = Replay(14, std::move(requests), assigner);
  ASSERT_TRUE(run->status.ok()) << run->status;  // the engine's end check: no block held by anyone
  EXPECT_GT(run->recorder.preemptions, 0);
  EXPECT_EQ(run->recorder.capacity_blocks, 14);
  EXPECT_LE(run->recorder.max_used_blocks, 14);
  ASSERT_EQ(run->recorder.finished.size(), 9u);
  for (const auto& [id, state] : run->recorder.finished) {
    EXPECT_FALSE(state.rejected) << id;
    EXPECT_EQ(state.generated_tokens, 100) << id;
  }
  EXPECT_EQ(run->recorder.end_used_blocks, 0);  // no prompt was hashed by the trace: nothing stays cached
}

TEST(ReplayKvConfigsTest, SwapPreemptionIsRefused) {
  proto::ExperimentConfig overrides;
  overrides.mutable_scheduler()->set_preemption(proto::PREEMPTION_MODE_SWAP);
  proto::TierConfig* host = overrides.mutable_cache()->add_lower_tiers();
  host->set_kind(proto::TIER_KIND_HOST);
  host->set_capacity_bytes(int64_t{1} << 30);
  const proto::ExperimentConfig config = TestConfig(100, overrides);
  KvBytesCostModel cost(config.model(), KvFormat());
  auto engine = Engine::Create(config, &cost, 0);
  ASSERT_TRUE(engine.ok()) << engine.status();
  MapAssigner assigner;
  const absl::Status status = (*engine)->SetRequestKv(&assigner);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("PREEMPTION_MODE_RECOMPUTE"), std::string::npos) << status;
}

}  // namespace
}  // namespace kvsim
