#include "util/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/check.h"
#include "util/json_text.h"

namespace kvsim {
namespace {

std::string CsvCell(const std::string& cell) {
  if (cell.find_first_of(",\"\n\r") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// A numeric cell as a JSON number: integers exactly, other numbers as doubles, empty (a value that does
// not exist) and non-finite values as null; a cell that is not a number stays a string.
Json NumericCell(const std::string& cell) {
  if (cell.empty()) return nullptr;
  int64_t i;
  if (absl::SimpleAtoi(cell, &i)) return i;
  double d;
  if (absl::SimpleAtod(cell, &d)) return JsonNumberOrNull(d);
  return cell;
}

}  // namespace

std::string FormatDouble(double value) {
  for (int precision = 6; precision <= 17; ++precision) {
    std::string s = absl::StrFormat("%.*g", precision, value);
    if (std::strtod(s.c_str(), nullptr) == value) return s;
  }
  return absl::StrFormat("%.17g", value);
}

std::string RoundForReading(const std::string& cell, int significant_digits) {
  int64_t i;
  double d;
  if (cell.empty() || absl::SimpleAtoi(cell, &i) || !absl::SimpleAtod(cell, &d) || !std::isfinite(d)) return cell;
  if (std::fabs(d) >= std::pow(10.0, significant_digits)) return absl::StrFormat("%.0f", d);
  return absl::StrFormat("%.*g", significant_digits, d);
}

Table::Table(std::vector<std::string> columns, std::vector<bool> numeric)
    : columns_(std::move(columns)), numeric_(std::move(numeric)) {
  KVSIM_CHECK(columns_.size() == numeric_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    for (size_t d = 0; d < c; ++d) KVSIM_CHECK(columns_[c] != columns_[d]) << "column '" << columns_[c] << "' twice";
  }
}

void Table::AddRow(std::vector<std::string> row) {
  KVSIM_CHECK(row.size() == columns_.size()) << row.size() << " cells for " << columns_.size() << " columns";
  rows_.push_back(std::move(row));
}

std::string Table::ToCsv() const {
  std::string out;
  for (size_t c = 0; c < columns_.size(); ++c) absl::StrAppend(&out, c ? "," : "", CsvCell(columns_[c]));
  out += "\n";
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) absl::StrAppend(&out, c ? "," : "", CsvCell(row[c]));
    out += "\n";
  }
  return out;
}

std::string Table::ToJson() const { return DumpJson(ToJsonValue()); }

Json Table::ToJsonValue() const {
  Json out = Json::array();
  for (const auto& row : rows_) {
    Json object = Json::object();
    for (size_t c = 0; c < columns_.size(); ++c) object[columns_[c]] = numeric_[c] ? NumericCell(row[c]) : Json(row[c]);
    out.push_back(std::move(object));
  }
  return out;
}

std::string Table::ToText(int significant_digits) const {
  std::vector<std::vector<std::string>> rows = rows_;
  if (significant_digits > 0) {
    for (auto& row : rows) {
      for (size_t c = 0; c < row.size(); ++c) {
        if (numeric_[c]) row[c] = RoundForReading(row[c], significant_digits);
      }
    }
  }
  std::vector<size_t> width(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    width[c] = columns_[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      absl::StrAppend(&out, c ? "  " : "", numeric_[c] ? pad + cells[c] : cells[c] + pad);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(columns_);
  for (const auto& row : rows) out += line(row);
  return out;
}

}  // namespace kvsim
