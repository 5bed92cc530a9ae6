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
  std::string ToText() const;  // columns padded to their widest cell

 private:
  std::vector<std::string> columns_;
  std::vector<bool> numeric_;
  std::vector<std::vector<std::string>> rows_;
};

// Shortest decimal form that reads back to the same double ("%.17g" trimmed), "0" for 0.
std::string FormatDouble(double value);

}  // namespace kvsim

#endif  // KVSIM_UTIL_TABLE_H_
