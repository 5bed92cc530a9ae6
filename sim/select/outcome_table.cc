#include "sim/select/outcome_table.h"

#include <cmath>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "sim/select/candidate_cost.h"
#include "sim/select/candidates.h"
#include "traces/text/csv_reader.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

constexpr const char* kFixedColumns[] = {"prompt_id", "config", "correct", "latency_ms", "peak_memory_mb"};

std::string Where(const CsvReader& csv, int column, absl::string_view name) {
  return absl::StrCat(csv.path(), ":", csv.line_number(), ":", column + 1, " (", name, ")");
}

absl::StatusOr<double> Number(const CsvReader& csv, const std::vector<absl::string_view>& fields, int column,
                              absl::string_view name) {
  const absl::string_view cell = absl::StripAsciiWhitespace(fields[column]);
  double value;
  if (!absl::SimpleAtod(cell, &value) || !std::isfinite(value)) {
    return absl::InvalidArgumentError(absl::StrCat(Where(csv, column, name), ": '", cell, "' is not a finite number"));
  }
  return value;
}

std::string Quote(absl::string_view text) {
  if (text.find_first_of(",\"\r\n") == absl::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

absl::StatusOr<OutcomeTable> ReadOutcomeTable(const std::string& path, const proto::SelectCandidateSet& set,
                                              const OutcomeReadOptions& options) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> csv, CsvReader::Open(path));
  OutcomeTable table;
  table.source = path;
  for (const proto::SelectCandidate& c : set.candidate()) table.candidates.push_back(c.name());
  const int num_candidates = table.num_candidates();

  // A repeated column name: refused by CsvReader::Open.
  // Columns: the fixed ones, then input/output tokens, then every other column as a feature.
  std::vector<int> fixed;
  for (const char* name : kFixedColumns) {
    const int column = csv->Column(name);
    const bool optional = options.costs_from_model &&
                          (absl::string_view(name) == "latency_ms" || absl::string_view(name) == "peak_memory_mb");
    if (column < 0 && !optional) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":1: missing column '", name, "' (header: ", absl::StrJoin(csv->header(), ","), ")"));
    }
    fixed.push_back(column);
  }
  std::vector<int> feature_columns;
  for (const char* name : {"input_tokens", "output_tokens"}) {
    const int column = csv->Column(name);
    if (column < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":1: missing column '", name, "' (header: ", absl::StrJoin(csv->header(), ","), ")"));
    }
    feature_columns.push_back(column);
    table.feature_names.push_back(name);
  }
  for (int i = 0; i < static_cast<int>(csv->header().size()); ++i) {
    const std::string name(absl::StripAsciiWhitespace(csv->header()[i]));
    bool known = name == "input_tokens" || name == "output_tokens";
    for (const char* f : kFixedColumns) known = known || name == f;
    if (known) continue;
    if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ":1:", i + 1, ": empty column name"));
    feature_columns.push_back(i);
    table.feature_names.push_back(name);
  }

  absl::flat_hash_map<std::string, int> prompt_index;
  std::vector<int64_t> first_line;
  std::vector<int64_t> row_line;  // per cell: the line that filled it, 0 if none
  std::vector<absl::string_view> fields;
  while (csv->Next(&fields)) {
    const std::string prompt(absl::StripAsciiWhitespace(fields[fixed[0]]));
    if (prompt.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(Where(*csv, fixed[0], "prompt_id"), ": empty prompt id"));
    }
    const absl::string_view config = absl::StripAsciiWhitespace(fields[fixed[1]]);
    const int candidate = CandidateIndex(set, config);
    if (candidate < 0) {
      return absl::InvalidArgumentError(absl::StrCat(Where(*csv, fixed[1], "config"), ": unknown configuration '",
                                                     config, "' (known: ", absl::StrJoin(table.candidates, ","), ")"));
    }
    auto [it, added] = prompt_index.try_emplace(prompt, table.num_prompts());
    if (added) {
      table.prompt_ids.push_back(prompt);
      first_line.push_back(csv->line_number());
      table.cells.resize(table.cells.size() + num_candidates);
      row_line.resize(row_line.size() + num_candidates, 0);
    }
    const int64_t cell_index = int64_t{it->second} * num_candidates + candidate;
    if (row_line[cell_index] != 0) {
      return absl::InvalidArgumentError(absl::StrCat(Where(*csv, fixed[1], "config"), ": duplicated row for prompt '",
                                                     prompt, "' and configuration '", config, "' (first at line ",
                                                     row_line[cell_index], ")"));
    }
    row_line[cell_index] = csv->line_number();
    Outcome& outcome = table.cells[cell_index];
    KVSIM_ASSIGN_OR_RETURN(double correct, Number(*csv, fields, fixed[2], "correct"));
    if (correct != 0 && correct != 1) {
      return absl::InvalidArgumentError(absl::StrCat(Where(*csv, fixed[2], "correct"), ": must be 0 or 1"));
    }
    outcome.correct = correct == 1;
    for (int k = 3; k <= 4; ++k) {
      if (fixed[k] < 0 || options.costs_from_model) continue;
      KVSIM_ASSIGN_OR_RETURN(double value, Number(*csv, fields, fixed[k], kFixedColumns[k]));
      if (value < 0) {
        return absl::InvalidArgumentError(absl::StrCat(Where(*csv, fixed[k], kFixedColumns[k]), ": must be >= 0"));
      }
      (k == 3 ? outcome.latency_ms : outcome.peak_memory_mb) = value;
    }
    outcome.features.resize(feature_columns.size());
    for (size_t f = 0; f < feature_columns.size(); ++f) {
      KVSIM_ASSIGN_OR_RETURN(outcome.features[f], Number(*csv, fields, feature_columns[f], table.feature_names[f]));
      if (f < 2 && (outcome.features[f] < 1 || outcome.features[f] != std::floor(outcome.features[f]) ||
                    outcome.features[f] > 1e9)) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(*csv, feature_columns[f], table.feature_names[f]), ": must be an integer in [1, 1e9]"));
      }
    }
  }
  KVSIM_RETURN_IF_ERROR(csv->status());
  if (table.prompt_ids.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no rows"));
  for (int p = 0; p < table.num_prompts(); ++p) {
    for (int c = 0; c < num_candidates; ++c) {
      if (row_line[int64_t{p} * num_candidates + c] == 0) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": prompt '", table.prompt_ids[p], "' (line ",
                                                       first_line[p], ") has no row for configuration '",
                                                       table.candidates[c], "'"));
      }
    }
  }
  return table;
}

absl::Status FillCostsFromModel(const proto::ExperimentConfig& config, const proto::SelectCandidateSet& set,
                                OutcomeTable* table) {
  for (int c = 0; c < table->num_candidates(); ++c) {
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CandidateCostModel> model,
                           CandidateCostModel::Create(config, set.candidate(c)));
    for (int p = 0; p < table->num_prompts(); ++p) {
      Outcome& outcome = table->at(p, c);
      absl::StatusOr<CandidateCost> cost =
          model->Cost(static_cast<int64_t>(outcome.features[0]), static_cast<int64_t>(outcome.features[1]));
      if (!cost.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(table->source, ": prompt '", table->prompt_ids[p],
                                                       "', configuration '", table->candidates[c],
                                                       "': ", cost.status().message()));
      }
      outcome.latency_ms = cost->latency_ms;
      outcome.peak_memory_mb = cost->peak_memory_mb;
    }
  }
  return absl::OkStatus();
}

std::string FormatOutcomeTableCsv(const OutcomeTable& table) {
  std::string out = "prompt_id,config,correct,latency_ms,peak_memory_mb";
  for (const std::string& name : table.feature_names) absl::StrAppend(&out, ",", Quote(name));
  out += "\n";
  for (int p = 0; p < table.num_prompts(); ++p) {
    for (int c = 0; c < table.num_candidates(); ++c) {
      const Outcome& o = table.at(p, c);
      absl::StrAppend(&out, Quote(table.prompt_ids[p]), ",", Quote(table.candidates[c]), ",", o.correct ? 1 : 0, ",",
                      absl::StrFormat("%.10g,%.10g", o.latency_ms, o.peak_memory_mb));
      for (double f : o.features) absl::StrAppend(&out, absl::StrFormat(",%.10g", f));
      out += "\n";
    }
  }
  return out;
}

}  // namespace kvsim
