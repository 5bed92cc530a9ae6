// File: presets/presets.h
//
// Model, device and serving-stack presets: the text protos under presets/models, presets/devices and
// presets/stacks, compiled into the binary. A stack preset is a partial ExperimentConfig that sets up a
// deployed serving engine's cache and scheduler (vLLM v1, SGLang, LMCache offload, AsymCache); each file
// names its source and version. A name is a file stem ("llama-3.1-8b", "h200"); a value containing '/' or ending in
// ".textproto" is read as a file instead, so users add their own specs without rebuilding.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(proto::DeviceSpec h200, LoadDevicePreset("h200"));
#ifndef KVSIM_PRESETS_PRESETS_H_
#define KVSIM_PRESETS_PRESETS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/config.pb.h"
#include "proto/spec.pb.h"

namespace kvsim {

// The preset's spec or a file's. NotFound (listing the known names) for an unknown name;
// InvalidArgument with file:line for a malformed file.
absl::StatusOr<proto::ModelSpec> LoadModelPreset(absl::string_view name_or_path);
absl::StatusOr<proto::DeviceSpec> LoadDevicePreset(absl::string_view name_or_path);
absl::StatusOr<proto::ExperimentConfig> LoadStackPreset(absl::string_view name_or_path);

// Names of the compiled-in presets, sorted.
std::vector<std::string> ModelPresetNames();
std::vector<std::string> DevicePresetNames();
std::vector<std::string> StackPresetNames();

}  // namespace kvsim

#endif  // KVSIM_PRESETS_PRESETS_H_
