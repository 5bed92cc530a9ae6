#include "sim/serving/router.h"

#include "util/check.h"

namespace kvsim {

Router::Router(const proto::ClusterConfig& config, std::vector<const Scheduler*> replicas,
               const GpuBlockDirectory* directory)
    : kind_(config.router()), load_cap_(config.load_cap()), replicas_(std::move(replicas)), directory_(directory) {
  KVSIM_CHECK(!replicas_.empty());
  KVSIM_CHECK(directory_ == nullptr || directory_->num_replicas() == static_cast<int32_t>(replicas_.size()));
}

int32_t Router::Route(const Request& request) {
  const int32_t n = static_cast<int32_t>(replicas_.size());
  if (n == 1) return 0;
  if (kind_ == proto::ROUTER_KIND_LEAST_TOKENS || kind_ == proto::ROUTER_KIND_CACHE_AWARE) {
    int64_t min_load = replicas_[0]->outstanding_tokens();
    for (int32_t r = 1; r < n; ++r) min_load = std::min(min_load, replicas_[r]->outstanding_tokens());
    if (kind_ == proto::ROUTER_KIND_CACHE_AWARE && directory_ != nullptr) {
      uint64_t candidates = 0;
      for (int32_t r = 0; r < n; ++r) {
        if (!(replicas_[r]->outstanding_tokens() > load_cap_ * static_cast<double>(min_load))) {
          candidates |= uint64_t{1} << r;
        }
      }
      // Among the candidates with the longest prefix: the fewest outstanding tokens, then the lowest index.
      const uint64_t leaders = directory_->LongestPrefixReplicas(request, candidates);
      int32_t best = -1;
      for (int32_t r = 0; r < n; ++r) {
        if ((leaders >> r & 1) == 0) continue;
        if (best < 0 || replicas_[r]->outstanding_tokens() < replicas_[best]->outstanding_tokens()) best = r;
      }
      return best;  // the least loaded replica is always a candidate
    }
    int32_t best = -1;
    int64_t best_prefix = -1;
    int64_t best_load = 0;
    for (int32_t r = 0; r < n; ++r) {
      const int64_t load = replicas_[r]->outstanding_tokens();
      int64_t prefix = 0;
      if (kind_ == proto::ROUTER_KIND_CACHE_AWARE) {
        if (load > load_cap_ * static_cast<double>(min_load)) continue;
        prefix = replicas_[r]->blocks()->GpuPrefixBlocks(request);
      }
      if (best < 0 || prefix > best_prefix || (prefix == best_prefix && load < best_load)) {
        best = r;
        best_prefix = prefix;
        best_load = load;
      }
    }
    return best;  // the least loaded replica always qualifies
  }
  const int32_t replica = next_;
  next_ = (next_ + 1) % n;
  return replica;
}

}  // namespace kvsim
