#include "sim/train/adam.h"

#include <cmath>

#include "util/check.h"

namespace kvsim {

AdamW::AdamW(std::vector<std::pair<float*, int64_t>> params, const AdamOptions& options)
    : params_(std::move(params)), options_(options) {
  for (const auto& [data, size] : params_) {
    m_.emplace_back(size, 0.0);
    v_.emplace_back(size, 0.0);
  }
}

double AdamW::LearningRate(int64_t t, int64_t total_steps) const {
  const double kPi = 3.14159265358979323846;
  const double progress = total_steps > 1 ? static_cast<double>(t) / (total_steps - 1) : 0.0;
  return options_.final_learning_rate +
         0.5 * (options_.learning_rate - options_.final_learning_rate) * (1.0 + std::cos(kPi * progress));
}

void AdamW::Step(const std::vector<const float*>& grads, int64_t t, int64_t total_steps) {
  KVSIM_CHECK(grads.size() == params_.size());
  ++steps_;
  const double lr = LearningRate(t, total_steps);
  const double c1 = 1.0 - std::pow(options_.beta1, static_cast<double>(steps_));
  const double c2 = 1.0 - std::pow(options_.beta2, static_cast<double>(steps_));
  for (size_t p = 0; p < params_.size(); ++p) {
    float* w = params_[p].first;
    const float* g = grads[p];
    std::vector<double>& m = m_[p];
    std::vector<double>& v = v_[p];
    for (int64_t i = 0; i < params_[p].second; ++i) {
      m[i] = options_.beta1 * m[i] + (1 - options_.beta1) * g[i];
      v[i] = options_.beta2 * v[i] + (1 - options_.beta2) * g[i] * g[i];
      const double update = (m[i] / c1) / (std::sqrt(v[i] / c2) + options_.epsilon);
      w[i] = static_cast<float>(w[i] - lr * options_.weight_decay * w[i] + lr * update);
    }
  }
}

}  // namespace kvsim
