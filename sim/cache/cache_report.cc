#include "sim/cache/cache_report.h"

#include "absl/strings/str_cat.h"

namespace kvsim {

proto::CacheRunStats CacheRunStatsToProto(const CacheRunResult& result) {
  const CacheStats& s = result.stats;
  proto::CacheRunStats p;
  p.set_policy(result.policy_label);
  p.set_capacity_blocks(result.spec.capacity_blocks);
  p.set_requests(s.requests);
  p.set_accesses(s.accesses);
  p.set_hits(s.hits);
  p.set_prefix_hits(s.prefix_hits);
  p.set_tokens(s.tokens);
  p.set_hit_tokens(s.hit_tokens);
  p.set_prefix_hit_tokens(s.prefix_hit_tokens);
  p.set_evictions(s.evictions);
  p.set_bypasses(s.bypasses);
  p.set_hit_ratio(s.HitRatio());
  p.set_prefix_hit_ratio(s.PrefixHitRatio());
  p.set_token_hit_ratio(s.TokenHitRatio());
  p.set_prefix_token_hit_ratio(s.PrefixTokenHitRatio());
  p.set_restore_cost(s.restore_cost);
  p.set_restore_cost_saved(s.restore_cost_saved);
  p.set_restore_cost_saved_ratio(s.RestoreCostSavedRatio());
  return p;
}

double MissRatio(double hit_ratio, bool any_access) { return any_access ? 1 - hit_ratio : 0; }

Table CacheStatsTable(const std::vector<std::string>& leading, const std::vector<std::string>& trailing) {
  std::vector<std::string> columns = leading;
  std::vector<bool> numeric(leading.size(), false);
  const std::vector<std::pair<const char*, bool>> stats = {{"policy", false},
                                                           {"capacity_blocks", true},
                                                           {"requests", true},
                                                           {"accesses", true},
                                                           {"hits", true},
                                                           {"hit_ratio", true},
                                                           {"miss_ratio", true},
                                                           {"prefix_hits", true},
                                                           {"prefix_hit_ratio", true},
                                                           {"tokens", true},
                                                           {"hit_tokens", true},
                                                           {"token_hit_ratio", true},
                                                           {"token_miss_ratio", true},
                                                           {"prefix_hit_tokens", true},
                                                           {"prefix_token_hit_ratio", true},
                                                           {"evictions", true},
                                                           {"bypasses", true},
                                                           {"restore_cost", true},
                                                           {"restore_cost_saved", true},
                                                           {"restore_cost_saved_ratio", true}};
  for (const auto& [name, is_numeric] : stats) {
    columns.push_back(name);
    numeric.push_back(is_numeric);
  }
  for (const std::string& name : trailing) {
    columns.push_back(name);
    numeric.push_back(true);
  }
  return Table(columns, numeric);
}

void AddCacheStatsRow(const proto::CacheRunStats& s, const std::vector<std::string>& leading, Table* table) {
  std::vector<std::string> row = leading;
  auto i = [](int64_t v) { return absl::StrCat(v); };
  for (std::string cell : {s.policy(),
                           i(s.capacity_blocks()),
                           i(s.requests()),
                           i(s.accesses()),
                           i(s.hits()),
                           FormatDouble(s.hit_ratio()),
                           FormatDouble(MissRatio(s.hit_ratio(), s.accesses() > 0)),
                           i(s.prefix_hits()),
                           FormatDouble(s.prefix_hit_ratio()),
                           i(s.tokens()),
                           i(s.hit_tokens()),
                           FormatDouble(s.token_hit_ratio()),
                           FormatDouble(MissRatio(s.token_hit_ratio(), s.tokens() > 0)),
                           i(s.prefix_hit_tokens()),
                           FormatDouble(s.prefix_token_hit_ratio()),
                           i(s.evictions()),
                           i(s.bypasses()),
                           i(s.restore_cost()),
                           i(s.restore_cost_saved()),
                           FormatDouble(s.restore_cost_saved_ratio())}) {
    row.push_back(std::move(cell));
  }
  row.resize(table->columns().size());  // trailing columns stay empty
  table->AddRow(std::move(row));
}

}  // namespace kvsim
