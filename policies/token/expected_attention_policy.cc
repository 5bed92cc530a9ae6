#include "policies/token/expected_attention_policy.h"

#include <cmath>
#include <limits>

#include "policies/token/rope.h"
#include "policies/token/token_policy_util.h"
#include "util/float_gemm.h"

namespace kvsim {
std::vector<double> ExpectedAttentionPolicy::ScorePrompt(absl::Span<const HeadContext> heads, int h) {
  const HeadContext& head = heads[h];
  const int64_t n = head.prompt_len;
  const int d = head.head_dim;
  const int half = d / 2;
  std::vector<double> scores(n, 0.0);
  const int64_t first = std::max<int64_t>(head.query_start, kSinks);
  // Mean rotation over the next positions: per frequency c, a 2x2 block [[C, -S], [S, C]].
  std::vector<double> mean_cos(half, 0.0), mean_sin(half, 0.0);
  for (int c = 0; c < half; ++c) {
    for (int64_t k = 1; k <= kFuturePositions; ++k) {
      const double angle = RopeScaledPosition(head.rope, n - 1 + k) * RopeTheta(head.rope, c, d);
      mean_cos[c] += std::cos(angle) / kFuturePositions;
      mean_sin[c] += std::sin(angle) / kFuturePositions;
    }
  }
  Eigen::MatrixXd rotation = Eigen::MatrixXd::Zero(d, d);
  for (int c = 0; c < half; ++c) {
    rotation(c, c) = mean_cos[c];
    rotation(c, c + half) = -mean_sin[c];
    rotation(c + half, c) = mean_sin[c];
    rotation(c + half, c + half) = mean_cos[c];
  }
  Eigen::Map<const RowMatrixXf> keys(head.keys, n, d);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  if (first < n) {
    const int g = head.group_size;
    const int64_t m = n - first;
    // Each member's pre-RoPE prompt queries (rows first..n-1): their mean and centred rows.
    std::vector<Eigen::VectorXd> mu(g);
    std::vector<Eigen::MatrixXd> centred(g);
    for (int j = 0; j < g; ++j) {
      Eigen::MatrixXd q(m, d);
      std::vector<float> row(d);
      for (int64_t t = first; t < n; ++t) {
        std::copy(head.query(j, t), head.query(j, t) + d, row.begin());
        ApplyRope(head.rope, t, /*inverse=*/true, row.data(), d);
        for (int c = 0; c < d; ++c) q(t - first, c) = row[c];
      }
      mu[j] = q.colwise().mean().transpose();
      centred[j] = q.rowwise() - mu[j].transpose();
    }
    // The statistics are double; the products with the keys run as float GEMMs. linear(i, j) = k_i.R mu_j
    // and quad(i, j) = k_i^T R S_j R^T k_i for every prompt key i and member j.
    Eigen::MatrixXf linear(n, g), quad = Eigen::MatrixXf::Zero(n, g);
    if (m > 1 && m < d) {
      // Few queries: S = C^T C / (m - 1) with C the centred queries, so k^T R S R^T k = ||L k||^2 with
      // L = C R^T / sqrt(m - 1), an m x d matrix: n x m x d products instead of n x d x d. One GEMM for
      // the group (the keys packed once): factors [L_1; ...; L_g; (R mu_1)^T; ...; (R mu_g)^T].
      RowMatrixXf factors(g * m + g, d);
      for (int j = 0; j < g; ++j) {
        factors.middleRows(j * m, m) =
            (centred[j] * rotation.transpose() / std::sqrt(static_cast<double>(m - 1))).cast<float>();
        factors.row(g * m + j) = (rotation * mu[j]).cast<float>().transpose();
      }
      // In chunks of keys whose products stay in the L2 cache until they are reduced (the products of a
      // whole 32K-token prompt are 34 MB). Each product, and each row's reduction, is computed the same
      // way in any chunk.
      const int64_t chunk = std::min<int64_t>(n, kKeysPerChunk);
      scratch_.resize(chunk, factors.rows());  // reused from head to head
      for (int64_t first = 0; first < n; first += chunk) {
        const int64_t rows = std::min(chunk, n - first);
        GemmABt(keys.row(first).data(), d, factors.data(), d, rows, factors.rows(), d, scratch_.data(), factors.rows());
        for (int j = 0; j < g; ++j) {
          quad.col(j).segment(first, rows) = scratch_.topRows(rows).middleCols(j * m, m).rowwise().squaredNorm();
          linear.col(j).segment(first, rows) = scratch_.col(g * m + j).head(rows);
        }
      }
    } else {
      for (int j = 0; j < g; ++j) {
        linear.col(j) = keys * (rotation * mu[j]).cast<float>();
        if (m < 2) continue;
        const Eigen::MatrixXd cov = centred[j].transpose() * centred[j] / (m - 1);
        const RowMatrixXf rsr = (rotation * cov * rotation.transpose()).cast<float>();
        scratch_.resize(n, d);
        GemmAB(keys.data(), d, rsr.data(), d, n, d, d, scratch_.data(), d);
        quad.col(j) = (scratch_.array() * keys.array()).rowwise().sum();
      }
    }
    for (int j = 0; j < g; ++j) {
      Eigen::VectorXd z = linear.col(j).cast<double>() * scale + quad.col(j).cast<double>() / (2.0 * d);
      const double max_z = z.maxCoeff();
      z = (z.array() - max_z).exp();
      z /= z.sum();
      for (int64_t i = 0; i < n; ++i) scores[i] += z(i) / g;
    }
  }
  // ||v_i|| in double (vectorised over each row).
  const Eigen::VectorXd norms = Eigen::Map<const RowMatrixXf>(head.values, n, d).cast<double>().rowwise().norm();
  for (int64_t i = 0; i < n; ++i) scores[i] = (scores[i] + kEpsilon) * norms(i);
  for (int64_t i = 0; i < std::min(kSinks, n); ++i) scores[i] = std::numeric_limits<double>::infinity();
  return scores;
}

KVSIM_REGISTER_TOKEN_POLICY("expected_attention", ExpectedAttentionPolicy);

}  // namespace kvsim
