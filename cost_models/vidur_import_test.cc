#include "cost_models/vidur_import.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "util/file.h"

namespace kvsim {
namespace {

// Rows in the layout Vidur's profilers write (pandas json_normalize of their stats dicts), ms times.
constexpr char kAttention[] =
    "n_embd,n_q_head,n_kv_head,block_size,num_tensor_parallel_workers,max_model_len,batch_size,"
    "prefill_chunk_size,kv_cache_size,is_prefill,attention_backend,time_stats.attn_decode.min,"
    "time_stats.attn_decode.median,time_stats.attn_prefill.median,time_stats.attn_kv_cache_save.median\n"
    "4096,32,8,16,1,4096,4,0,1024,False,AttentionBackend.FLASHINFER,0.04,0.05,,0.001\n"
    "4096,32,8,16,2,4096,1,512,2048,True,AttentionBackend.FLASHINFER,,,0.25,0.002\n"
    "4096,32,8,16,1,4096,1,256,0,True,AttentionBackend.FLASHINFER,,,,0.002\n";

constexpr char kMlp[] =
    "time_stats.attn_pre_proj.median,time_stats.attn_post_proj.median,time_stats.mlp_up_proj.median,"
    "time_stats.mlp_down_proj.median,time_stats.mlp_act.median,n_head,n_kv_head,n_embd,n_expanded_embd,"
    "vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers\n"
    "0.02,0.015,0.06,0.03,0.004,32,8,4096,14336,128256,True,128,2\n";

constexpr char kAllReduce[] =
    "rank,num_workers,size,collective,devices_per_node,max_devices_per_node,time_stats.all_reduce.median\n"
    "0,4,1048576,all_reduce,4,8,0.012\n"
    "0,2,1048576,send_recv,2,8,0.02\n";

TEST(VidurImportTest, AttentionRowsBecomeDecodeAndPrefillPoints) {
  proto::CalibrationTable table;
  VidurImportReport report;
  ASSERT_TRUE(ImportVidurAttentionCsv(kAttention, "attention.csv", &table, &report).ok());
  ASSERT_EQ(table.points_size(), 2);
  const proto::CalibrationPoint& decode = table.points(0);
  EXPECT_EQ(decode.kind(), proto::KERNEL_KIND_DECODE_ATTENTION);
  EXPECT_DOUBLE_EQ(decode.median_ns(), 50000);  // 0.05 ms
  EXPECT_EQ(decode.dtype(), "fp16");
  EXPECT_EQ(decode.shape().batch(), 4);
  EXPECT_EQ(decode.shape().context_tokens(), 1024);
  EXPECT_EQ(decode.shape().head_dim(), 128);  // 4096 / 32
  EXPECT_EQ(decode.shape().num_heads(), 32);
  EXPECT_EQ(decode.shape().page_size(), 16);
  const proto::CalibrationPoint& prefill = table.points(1);
  EXPECT_EQ(prefill.kind(), proto::KERNEL_KIND_PREFILL_ATTENTION);
  EXPECT_EQ(prefill.shape().query_tokens(), 512);
  EXPECT_EQ(prefill.shape().context_tokens(), 2048);
  EXPECT_EQ(prefill.shape().num_heads(), 16);   // 32 / TP 2
  EXPECT_EQ(prefill.shape().num_kv_heads(), 4);  // 8 / TP 2
  // The third row has no prefill time: reported, not dropped silently.
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0], "attention.csv:4: no time_stats.attn_prefill.median");
  ASSERT_EQ(report.unused.size(), 1u);
  EXPECT_EQ(report.unused[0], "attention.csv: time_stats.attn_kv_cache_save.median");
  EXPECT_EQ(report.rows, 3);
}

TEST(VidurImportTest, MlpRowsBecomeFourGemmsWithPerGpuShapes) {
  proto::CalibrationTable table;
  VidurImportReport report;
  ASSERT_TRUE(ImportVidurMlpCsv(kMlp, "mlp.csv", &table, &report).ok());
  ASSERT_EQ(table.points_size(), 4);
  // TP 2, head_dim 128: QKV 4096 -> (16 + 2 x 4) x 128 = 3072; O 2048 -> 4096; gate+up 4096 ->
  // 2 x 14336 / 2 = 14336; down 7168 -> 4096.
  const int64_t expected[4][2] = {{4096, 3072}, {2048, 4096}, {4096, 14336}, {7168, 4096}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(table.points(i).shape().in_features(), expected[i][0]) << i;
    EXPECT_EQ(table.points(i).shape().out_features(), expected[i][1]) << i;
    EXPECT_EQ(table.points(i).shape().query_tokens(), 128);
  }
  EXPECT_EQ(table.points(2).kind(), proto::KERNEL_KIND_MLP_GEMM);
  EXPECT_DOUBLE_EQ(table.points(2).median_ns(), 60000);
  ASSERT_EQ(report.unused.size(), 1u);
  EXPECT_EQ(report.unused[0], "mlp.csv: time_stats.mlp_act.median");
}

TEST(VidurImportTest, AllReduceRowsAndOtherCollectivesReported) {
  proto::CalibrationTable table;
  VidurImportReport report;
  ASSERT_TRUE(ImportVidurAllReduceCsv(kAllReduce, "all_reduce.csv", &table, &report).ok());
  ASSERT_EQ(table.points_size(), 1);
  EXPECT_EQ(table.points(0).shape().bytes(), 1048576);
  EXPECT_EQ(table.points(0).shape().num_gpus(), 4);
  EXPECT_DOUBLE_EQ(table.points(0).median_ns(), 12000);
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_NE(report.skipped[0].find("all_reduce.csv:3: collective 'send_recv'"), std::string::npos);
}

TEST(VidurImportTest, ErrorsNameFileLineAndColumn) {
  proto::CalibrationTable table;
  VidurImportReport report;
  absl::Status missing = ImportVidurAttentionCsv("n_embd,n_q_head\n1,2\n", "a.csv", &table, &report);
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("a.csv:1: missing column 'n_kv_head'"), absl::string_view::npos) << missing;
  std::string bad = kAttention;
  bad.replace(bad.find("False"), 5, "Maybe");
  absl::Status bool_error = ImportVidurAttentionCsv(bad, "a.csv", &table, &report);
  EXPECT_NE(bool_error.message().find("a.csv:2: column is_prefill: expected True or False"),
            absl::string_view::npos)
      << bool_error;
  // Shapes no model has are refused, not bent into one.
  bad = kAttention;
  bad.replace(bad.find("4096,32,8,16,1,4096,4"), 21, "4096,32,0,16,1,4096,4");
  absl::Status heads = ImportVidurAttentionCsv(bad, "a.csv", &table, &report);
  EXPECT_NE(heads.message().find("a.csv:2: n_kv_head must divide n_q_head (32), got 0"), absl::string_view::npos)
      << heads;
  bad = kAttention;
  bad.replace(bad.find("4096,32,8,16,1,4096,4"), 21, "4096,32,8,16,1,4096,0");
  EXPECT_NE(ImportVidurAttentionCsv(bad, "a.csv", &table, &report).message().find("batch_size be >= 1, got 0"),
            absl::string_view::npos);
  bad = kAttention;
  bad.replace(bad.find("4096,32,8,16,1,4096,4"), 21, "4096,32,8,1e30,1,4096,4");
  EXPECT_NE(ImportVidurAttentionCsv(bad, "a.csv", &table, &report).message().find("column block_size: expected a count"),
            absl::string_view::npos);
  absl::Status twice = ImportVidurAttentionCsv("n_embd,n_embd\n", "a.csv", &table, &report);
  EXPECT_NE(twice.message().find("a.csv:1: column 'n_embd' appears twice"), absl::string_view::npos) << twice;
}

TEST(VidurImportTest, DirectoryImportReadsTheFilesPresent) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/vidur";
  ASSERT_TRUE(MakeDirectories(dir).ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/attention.csv", kAttention).ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/mlp.csv", kMlp).ok());
  VidurImportReport report;
  absl::StatusOr<proto::CalibrationTable> table = ImportVidurProfiles(dir, &report);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->points_size(), 6);
  EXPECT_EQ(report.files.size(), 2u);
  EXPECT_FALSE(table->header().synthetic_from_datasheet());
  const std::string empty = dir + "/empty";
  ASSERT_TRUE(MakeDirectories(empty).ok());
  EXPECT_EQ(ImportVidurProfiles(empty, &report).status().code(), absl::StatusCode::kNotFound);
  // Header rows only: nothing to write.
  const std::string headers = dir + "/headers";
  ASSERT_TRUE(MakeDirectories(headers).ok());
  ASSERT_TRUE(WriteFileAtomically(headers + "/mlp.csv", std::string(kMlp).substr(0, std::string(kMlp).find('\n') + 1)).ok());
  absl::Status none = ImportVidurProfiles(headers, &report).status();
  EXPECT_EQ(none.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none.message().find("the profiles hold no usable rows"), absl::string_view::npos) << none;
}

}  // namespace
}  // namespace kvsim
