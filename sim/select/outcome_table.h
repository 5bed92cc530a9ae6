// File: sim/select/outcome_table.h
//
// OutcomeTable: what each candidate configuration did on each prompt, the input of per-prompt selection.
// On disk a CSV (RFC 4180, read with traces/text/csv_reader.h), one row per (prompt, configuration):
//
//   column           meaning
//   prompt_id        the prompt (any text); all of a prompt's rows share it
//   config           a candidate's name (proto/select.proto); every candidate of the set must appear
//                    exactly once per prompt
//   correct          1 if the answer under that configuration was correct, else 0
//   latency_ms       end-to-end latency, ms (>= 0)
//   peak_memory_mb   peak GPU memory, MiB (>= 0)
//   input_tokens     prompt length, tokens (integer >= 1)
//   output_tokens    generated tokens (integer >= 1); a feature too (known to the predictors, which a
//                    deployment would have to predict)
//   any other        a numeric prompt feature for the predictors (task type as an integer code, attention
//                    entropy, the quality path's recall at the configuration's budget, ...); it may
//                    differ between a prompt's rows (features of the prompt under that configuration)
//
// Column order is free. latency_ms and peak_memory_mb may be left out when the table's costs come from
// the cost model (OutcomeReadOptions::costs_from_model; sim/select/candidate_cost.h); present, they are
// then ignored. Refused (InvalidArgument naming "<file>:<line>:<column>" and the column's name): a missing
// required column, a duplicated column name, a configuration not in the set, a duplicated (prompt,
// configuration) row, a cell that is not a finite number (or not 0/1, or not an integer where one is
// needed); and "<file>: prompt '<id>' (line N) has no row for configuration '<name>'" for an incomplete
// prompt; an empty table.
//
// Thread-compatible value type.
#ifndef KVSIM_SIM_SELECT_OUTCOME_TABLE_H_
#define KVSIM_SIM_SELECT_OUTCOME_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"
#include "proto/select.pb.h"

namespace kvsim {

struct Outcome {
  bool correct = false;
  double latency_ms = 0;
  double peak_memory_mb = 0;
  std::vector<double> features;  // OutcomeTable::feature_names order
};

struct OutcomeTable {
  std::vector<std::string> candidates;     // the set's names, in its order
  std::vector<std::string> feature_names;  // "input_tokens", "output_tokens", then the others in file order
  std::vector<std::string> prompt_ids;     // in order of first appearance
  std::vector<Outcome> cells;              // prompt-major: cells[p * candidates.size() + c]
  std::string source;                      // file name, for reports

  int num_prompts() const { return static_cast<int>(prompt_ids.size()); }
  int num_candidates() const { return static_cast<int>(candidates.size()); }
  const Outcome& at(int prompt, int candidate) const { return cells[prompt * candidates.size() + candidate]; }
  Outcome& at(int prompt, int candidate) { return cells[prompt * candidates.size() + candidate]; }
};

struct OutcomeReadOptions {
  bool costs_from_model = false;  // latency_ms and peak_memory_mb not required (and ignored)
};

absl::StatusOr<OutcomeTable> ReadOutcomeTable(const std::string& path, const proto::SelectCandidateSet& set,
                                              const OutcomeReadOptions& options = {});

// Replaces every cell's latency_ms and peak_memory_mb with CandidateCostModel's for its input_tokens and
// output_tokens on `config` (resolved). Errors from the cost model, naming the prompt and configuration.
absl::Status FillCostsFromModel(const proto::ExperimentConfig& config, const proto::SelectCandidateSet& set,
                                OutcomeTable* table);

// The table as CSV in the format above (prompt-major rows, features after the fixed columns), numbers
// printed with up to 10 significant digits so that it reads back to the same selections.
std::string FormatOutcomeTableCsv(const OutcomeTable& table);

}  // namespace kvsim

#endif  // KVSIM_SIM_SELECT_OUTCOME_TABLE_H_
