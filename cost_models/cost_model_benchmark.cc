// Speed of the cost models on the simulator's hot paths: one iteration's time for typical batches,
// and the recompute time the block manager asks for on every restore decision.
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "config/experiment_config.h"
#include "cost_models/calibration_table.h"
#include "cost_models/cost_model.h"
#include "cost_models/synthetic_table.h"
#include "cost_models/table_model.h"
#include "util/check.h"

namespace kvsim {
namespace {

// Model 0: roofline, 1: table, 2: fitted.
const char* kModelNames[] = {"roofline", "table", "fitted"};

std::unique_ptr<CostModel> MakeModel(int64_t which) {
  proto::ExperimentConfig raw;
  // Named explicitly: the default (kind unset) is the fitted model on the default GPU, the H200.
  raw.mutable_cost_model()->set_kind(which == 2 ? proto::COST_MODEL_KIND_FITTED : proto::COST_MODEL_KIND_ROOFLINE);
  proto::ExperimentConfig config = *ResolveExperimentConfig(raw, "benchmark");
  if (which != 1) return std::move(*CreateCostModel(config));
  absl::StatusOr<proto::CalibrationTable> t = SynthesizeTable(config, SynthOptions());
  KVSIM_CHECK(t.ok());
  return std::move(*TableCostModel::FromTable(config, *t, "synthetic"));
}

BatchShape Decodes(int n) {
  BatchShape batch;
  for (int i = 0; i < n; ++i) {
    SequenceWork s;
    s.context_tokens = 1000 + 37 * i;
    s.new_tokens = 1;
    batch.sequences.push_back(s);
  }
  return batch;
}

void BM_Iteration(benchmark::State& state) {
  const auto model = MakeModel(state.range(0));
  BatchShape batch = Decodes(state.range(1));
  SequenceWork chunk;
  chunk.context_tokens = 2048;
  chunk.new_tokens = 512;
  batch.sequences.push_back(chunk);
  for (auto _ : state) benchmark::DoNotOptimize(*model->IterationTimeNs(batch));
  state.SetLabel(kModelNames[state.range(0)]);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Iteration)->ArgsProduct({{0, 1, 2}, {1, 32, 256}});

// A decode run's iterations (every context one token longer each time), priced whole (arg 2 = 0: the
// baseline, what stepping one iteration at a time costs) or by the model's DecodeRunPricer (1); the batch's
// contexts are lengthened in both, as the scheduler does.
void BM_DecodeRun(benchmark::State& state) {
  const auto model = MakeModel(state.range(0));
  const bool pricer = state.range(2) != 0;
  BatchShape batch = Decodes(state.range(1));
  std::unique_ptr<DecodeRunPricer> run = model->StartDecodeRun(batch);
  int64_t step = 0;
  for (auto _ : state) {
    ++step;
    for (SequenceWork& s : batch.sequences) ++s.context_tokens;
    benchmark::DoNotOptimize(pricer ? *run->IterationTimeNs(step, batch) : *model->IterationTimeNs(batch));
  }
  state.SetLabel(std::string(kModelNames[state.range(0)]) + (pricer ? " run pricer" : " whole batch"));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeRun)->ArgsProduct({{0, 2}, {4, 32, 256}, {0, 1}});

void BM_Recompute(benchmark::State& state) {
  const auto model = MakeModel(state.range(0));
  int64_t position = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(*model->RecomputeTimeNs(position, 16));
    position = (position + 16) % 100000;
  }
  state.SetLabel(kModelNames[state.range(0)]);
}
BENCHMARK(BM_Recompute)->Arg(0)->Arg(1)->Arg(2);

}  // namespace
}  // namespace kvsim
