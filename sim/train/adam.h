// File: sim/train/adam.h
//
// AdamW (Loshchilov and Hutter 2019: Adam with decoupled weight decay) over a fixed set of float tensors,
// for gradient ascent (the trainer maximises a reward), with the cosine learning-rate schedule KVP uses
// (lr_t = final + (peak - final) (1 + cos(pi t / T)) / 2). Deterministic; one instance per agent
// (thread-compatible).
//
// Example:
//   AdamW adam({{w.data(), w.size()}, {b.data(), b.size()}}, {.learning_rate = 1e-3});
//   adam.Step({gw.data(), gb.data()}, /*step=*/t, /*total_steps=*/T);   // w += ...
#ifndef KVSIM_SIM_TRAIN_ADAM_H_
#define KVSIM_SIM_TRAIN_ADAM_H_

#include <cstdint>
#include <utility>
#include <vector>

namespace kvsim {

struct AdamOptions {
  double learning_rate = 5e-5;        // peak
  double final_learning_rate = 1e-6;  // end of the cosine schedule
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  double weight_decay = 0.01;  // decoupled: p -= lr * weight_decay * p
};

class AdamW {
 public:
  // The tensors (pointer, size) it updates; they must outlive the optimiser.
  AdamW(std::vector<std::pair<float*, int64_t>> params, const AdamOptions& options);

  // The learning rate at step t of T (cosine from peak to final). REQUIRES: 0 <= t < T.
  double LearningRate(int64_t t, int64_t total_steps) const;

  // One ascent step: each tensor moves along its gradient grads[i] (same size as params[i]).
  void Step(const std::vector<const float*>& grads, int64_t t, int64_t total_steps);

 private:
  std::vector<std::pair<float*, int64_t>> params_;
  AdamOptions options_;
  std::vector<std::vector<double>> m_, v_;
  int64_t steps_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_TRAIN_ADAM_H_
