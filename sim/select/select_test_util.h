// File: sim/select/select_test_util.h
//
// Fixtures shared by sim/select's tests: the default experiment config and candidate set, loaded as
// `kvsim select` loads them. A load failure is a test failure (EXPECT) and returns the default message.
#ifndef KVSIM_SIM_SELECT_SELECT_TEST_UTIL_H_
#define KVSIM_SIM_SELECT_SELECT_TEST_UTIL_H_

#include "absl/status/statusor.h"
#include "config/experiment_config.h"
#include "gtest/gtest.h"
#include "proto/config.pb.h"
#include "proto/select.pb.h"
#include "sim/select/candidates.h"

namespace kvsim {

// The default config (Llama-3.1-8B on one H200) with an unset cost model read as the roofline, the one
// model that prices per-request KV formats.
inline proto::ExperimentConfig DefaultSelectConfig() {
  absl::StatusOr<proto::ExperimentConfig> config = LoadExperimentConfig("", proto::COST_MODEL_KIND_ROOFLINE);
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : proto::ExperimentConfig();
}

// The default candidate set (sim/select/default_candidates.textproto).
inline proto::SelectCandidateSet DefaultCandidateSet() {
  absl::StatusOr<proto::SelectCandidateSet> set = LoadSelectCandidates("");
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *set : proto::SelectCandidateSet();
}

}  // namespace kvsim

#endif  // KVSIM_SIM_SELECT_SELECT_TEST_UTIL_H_
