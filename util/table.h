// File: util/table.h
//
// Table: rows of named columns (each name once), rendered as CSV (RFC 4180 quoting), a JSON array of
// objects (util/json_text.h; numeric columns as numbers, an empty numeric cell as null) or an aligned text
// table. Deterministic: same table, same bytes.
//
// Example:
//   Table t({"policy", "hit_ratio"}, {false, true});
//   t.AddRow({"lru", "0.5"});
//   std::string csv = t.ToCsv();   // "policy,hit_ratio\nlru,0.5\n"
//
// Thread-safety: a value type.
#ifndef KVSIM_UTIL_TABLE_H_
#define KVSIM_UTIL_TABLE_H_

#include <string>
#include <vector>

#include "util/json_text.h"

namespace kvsim {

class Table {
 public:
  Table() = default;
  // REQUIRES: columns.size() == numeric.size(); no column name twice.
  Table(std::vector<std::string> columns, std::vector<bool> numeric);

  // REQUIRES: row.size() == columns().size().
  void AddRow(std::vector<std::string> row);

  const std::vector<std::string>& columns() const { return columns_; }
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }

  std::string ToCsv() const;
  std::string ToJson() const;  // [{"col": value, ...}, ...]\n
  Json ToJsonValue() const;    // the same array, to embed in a larger document
  // Columns padded to their widest cell. With significant_digits > 0, numeric cells that are not integers
  // are rounded for reading (RoundForReading); CSV and JSON keep every digit.
  std::string ToText(int significant_digits = 0) const;

 private:
  std::vector<std::string> columns_;
  std::vector<bool> numeric_;
  std::vector<std::vector<std::string>> rows_;
};

// Shortest decimal form that reads back to the same double ("%.17g" trimmed), "0" for 0.
std::string FormatDouble(double value);

// A number cell rounded to `significant_digits` (>= 1) significant digits for a console table:
// "0.3784512345" -> "0.3785" at 4, "1.5e-05" stays, integers ("12345") and non-numbers are returned as
// they are, and a value of 10^digits or more is written without a fraction ("12345.6" -> "12346").
std::string RoundForReading(const std::string& cell, int significant_digits);

}  // namespace kvsim

#endif  // KVSIM_UTIL_TABLE_H_
