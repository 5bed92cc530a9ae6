#include "traces/trace_format.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_join.h"
#include "util/check.h"

namespace kvsim {
namespace {

// Keyed by name; a function-local static so registration order across files does not matter.
std::map<std::string, TraceFormat, std::less<>>& Registry() {
  static auto* registry = new std::map<std::string, TraceFormat, std::less<>>();
  return *registry;
}

}  // namespace

bool RegisterTraceFormat(TraceFormat format) {
  KVSIM_CHECK(!format.name.empty() && format.detect && format.open) << "incomplete trace format";
  const std::string name = format.name;
  const bool inserted = Registry().emplace(name, std::move(format)).second;
  KVSIM_CHECK(inserted) << "trace format registered twice: " << name;
  return true;
}

const TraceFormat* FindTraceFormat(absl::string_view name) {
  auto it = Registry().find(name);
  return it == Registry().end() ? nullptr : &it->second;
}

std::vector<const TraceFormat*> TraceFormats() {
  std::vector<const TraceFormat*> formats;
  for (const auto& [name, format] : Registry()) formats.push_back(&format);
  std::stable_sort(formats.begin(), formats.end(), [](const TraceFormat* a, const TraceFormat* b) {
    return a->detect_order < b->detect_order;
  });
  return formats;
}

std::string TraceFormatNames() {
  std::vector<std::string> names;
  for (const auto& [name, format] : Registry()) names.push_back(name);
  return absl::StrJoin(names, ", ");
}

}  // namespace kvsim
