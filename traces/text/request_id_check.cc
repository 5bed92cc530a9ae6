#include "traces/text/request_id_check.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace kvsim {

void RequestIdCheck::Add(int64_t line, uint64_t request_id, int64_t parent_id) {
  const uint64_t line_kind = static_cast<uint64_t>(line) * 2;
  entries_.Add(Entry{request_id, line_kind});
  if (parent_id >= 0) entries_.Add(Entry{static_cast<uint64_t>(parent_id), line_kind + 1});
}

absl::Status RequestIdCheck::Finish(const std::string& path, absl::string_view field) {
  // Each id's entries arrive together, in line order.
  bool have_id = false, defined = false;
  uint64_t id = 0;
  uint64_t repeat_line = std::numeric_limits<uint64_t>::max(), repeat_id = 0;
  orphans_ = 0;
  const absl::Status visited = entries_.Visit([&](const Entry& entry) {
    if (!have_id || entry.id != id) {
      have_id = true;
      id = entry.id;
      defined = false;
    }
    const uint64_t line = entry.line_kind / 2;
    if (entry.line_kind % 2 == 1) {
      if (!defined) ++orphans_;
    } else if (!defined) {
      defined = true;
    } else if (line < repeat_line) {  // the id's second definition; later ones come after it
      repeat_line = line;
      repeat_id = id;
    }
  });
  if (!visited.ok()) return absl::InternalError(absl::StrCat(path, ": request ids: ", visited.message()));
  if (repeat_line != std::numeric_limits<uint64_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", repeat_line,
                                                   ": ", field, ": expected an id not used before, got ",
                                                   repeat_id, " again"));
  }
  return absl::OkStatus();
}

}  // namespace kvsim
