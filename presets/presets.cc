#include "presets/presets.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

struct Preset {
  const char* kind;  // "models", "devices" or "stacks"
  const char* name;  // file stem
  const char* path;  // source path in the repository, for error messages
  const char* text;
};

const Preset kPresets[] = {
#include "presets/presets_data.inc"
};

std::vector<std::string> Names(absl::string_view kind) {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) {
    if (p.kind == kind) names.push_back(p.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool IsPath(absl::string_view name) { return absl::StrContains(name, '/') || absl::EndsWith(name, ".textproto"); }

template <typename Spec>
absl::StatusOr<Spec> Load(absl::string_view kind, absl::string_view name) {
  Spec spec;
  if (IsPath(name)) {
    absl::Status status = ParseTextProtoFile(std::string(name), &spec);
    if (!status.ok()) return status;
    return spec;
  }
  for (const Preset& p : kPresets) {
    if (p.kind == kind && p.name == name) {
      absl::Status status = ParseTextProto(p.text, p.path, &spec);
      if (!status.ok()) return status;
      return spec;
    }
  }
  const char* noun = kind == "models" ? "model" : kind == "devices" ? "device" : "stack";
  return absl::NotFoundError(absl::StrCat("unknown ", noun, " preset '", name, "'; known: ",
                                          absl::StrJoin(Names(kind), ", "), " (or give a path to a .textproto file)"));
}

}  // namespace

absl::StatusOr<proto::ModelSpec> LoadModelPreset(absl::string_view name_or_path) {
  return Load<proto::ModelSpec>("models", name_or_path);
}

absl::StatusOr<proto::DeviceSpec> LoadDevicePreset(absl::string_view name_or_path) {
  return Load<proto::DeviceSpec>("devices", name_or_path);
}

absl::StatusOr<proto::ExperimentConfig> LoadStackPreset(absl::string_view name_or_path) {
  return Load<proto::ExperimentConfig>("stacks", name_or_path);
}

std::vector<std::string> ModelPresetNames() { return Names("models"); }
std::vector<std::string> DevicePresetNames() { return Names("devices"); }
std::vector<std::string> StackPresetNames() { return Names("stacks"); }

}  // namespace kvsim
