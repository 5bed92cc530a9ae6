#include "traces/trace_format.h"

#include <algorithm>

#include "util/check.h"

namespace kvsim {

Registry<TraceFormat>& TraceFormatRegistry() {
  // A function-local static, so registration order across files does not matter.
  static auto* registry = new Registry<TraceFormat>("trace format");
  return *registry;
}

bool RegisterTraceFormat(TraceFormat format) {
  KVSIM_CHECK(!format.name.empty() && format.detect && format.open) << "incomplete trace format";
  const std::string name = format.name;
  return TraceFormatRegistry().Register(name, std::move(format));
}

const TraceFormat* FindTraceFormat(absl::string_view name) { return TraceFormatRegistry().Find(name); }

std::vector<const TraceFormat*> TraceFormats() {
  std::vector<const TraceFormat*> formats;
  for (const auto& [name, format] : TraceFormatRegistry().entries()) formats.push_back(&format);
  std::stable_sort(formats.begin(), formats.end(),
                   [](const TraceFormat* a, const TraceFormat* b) { return a->detect_order < b->detect_order; });
  return formats;
}

std::string TraceFormatNames() { return TraceFormatRegistry().NameList(); }

}  // namespace kvsim
