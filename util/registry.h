// File: util/registry.h
//
// Registry<T>: named components registered at static initialisation and looked up by name: eviction
// policies, token policies, cost models, trace formats, sub-commands and sweep axes each keep one. The
// help texts, error messages and README name lists come from Names(), never from a hand-kept list.
//
// Registration is one line at the bottom of the component's .cc (its cc_library has alwayslink = True,
// or the linker drops the unreferenced object and the component silently disappears):
//   KVSIM_REGISTER(EvictionPolicyRegistry(), "lru", [] { return std::make_unique<LruPolicy>(); });
// Domains wrap it in their own macro (KVSIM_REGISTER_EVICTION_POLICY and friends).
//
// Names are case-sensitive and unique; registering a name twice is a programming error (KVSIM_CHECK).
// Lookups of an unknown name give InvalidArgument "unknown KIND 'NAME'; known: a, b, c".
//
// Thread-safety: Register() runs before main (static initialisation); after that the registry is only
// read, and reads are thread-safe.
//
// Example:
//   Registry<CostModelFactory>& CostModelRegistry() {
//     static auto* registry = new Registry<CostModelFactory>("cost model");
//     return *registry;
//   }
//   KVSIM_ASSIGN_OR_RETURN(const CostModelFactory* factory, CostModelRegistry().Get("roofline"));
#ifndef KVSIM_UTIL_REGISTRY_H_
#define KVSIM_UTIL_REGISTRY_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "util/check.h"

namespace kvsim {

template <typename T>
class Registry {
 public:
  // `kind` names the components in messages, e.g. "eviction policy".
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Adds `value` under `name`. Returns true, so that it can initialise a static bool.
  // REQUIRES: `name` is not empty and not registered yet.
  bool Register(absl::string_view name, T value) {
    KVSIM_CHECK(!name.empty()) << "empty " << kind_ << " name";
    const bool inserted = entries_.emplace(std::string(name), std::move(value)).second;
    KVSIM_CHECK(inserted) << kind_ << " '" << name << "' registered twice";
    return true;
  }

  // The entry named `name`, or nullptr.
  const T* Find(absl::string_view name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }

  // The entry named `name`; InvalidArgument listing the known names if there is none.
  absl::StatusOr<const T*> Get(absl::string_view name) const {
    if (const T* value = Find(name)) return value;
    return absl::InvalidArgumentError(absl::StrCat("unknown ", kind_, " '", name, "'; known: ", NameList()));
  }

  // Registered names, sorted.
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    names.reserve(entries_.size());
    for (const auto& [name, value] : entries_) names.push_back(name);
    return names;
  }

  // "a, b, c": the sorted names joined for messages and help texts.
  std::string NameList() const { return absl::StrJoin(Names(), ", "); }

  // Every (name, entry), sorted by name.
  const std::map<std::string, T, std::less<>>& entries() const { return entries_; }

  const std::string& kind() const { return kind_; }

 private:
  const std::string kind_;
  std::map<std::string, T, std::less<>> entries_;
};

}  // namespace kvsim

#define KVSIM_REGISTRY_CONCAT_INNER_(a, b) a##b
#define KVSIM_REGISTRY_CONCAT_(a, b) KVSIM_REGISTRY_CONCAT_INNER_(a, b)

// Registers `value` under `name` in `registry` (an expression giving a Registry<T>&) at static
// initialisation. One line at namespace scope of the component's .cc.
#define KVSIM_REGISTER(registry, name, value)                                              \
  [[maybe_unused]] static const bool KVSIM_REGISTRY_CONCAT_(kvsim_registered_, __LINE__) = \
      (registry).Register(name, value)

#endif  // KVSIM_UTIL_REGISTRY_H_
