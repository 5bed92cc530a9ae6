#include "cost_models/vidur_import.h"

#include <cstdlib>
#include <string>
#include <vector>

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
  EXPECT_EQ(prefill.shape().num_heads(), 16);    // 32 / TP 2
  EXPECT_EQ(prefill.shape().num_kv_heads(), 4);  // 8 / TP 2
  // The third row has no prefill time: reported, not dropped silently.
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0], "attention.csv:4: no time_stats.attn_prefill.median");
  // Every column the import does not read, in file order (not only the time medians).
  const std::vector<std::string> unused = {"attention.csv: max_model_len", "attention.csv: attention_backend",
                                           "attention.csv: time_stats.attn_decode.min",
                                           "attention.csv: time_stats.attn_kv_cache_save.median"};
  EXPECT_EQ(report.unused, unused);
  EXPECT_EQ(report.rows, 3);
  ASSERT_EQ(report.used_rows.size(), 1u);
  EXPECT_NE(report.used_rows[0].find("attention.csv: 2 of 3 rows used"), std::string::npos) << report.used_rows[0];
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
  const std::vector<std::string> unused = {"mlp.csv: time_stats.mlp_act.median", "mlp.csv: vocab_size"};
  EXPECT_EQ(report.unused, unused);
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

// Vidur's DGX profiles hold single-node (devices_per_node == num_workers) and cross-node rows of the same GPU
// count: different kernels (NVLink vs network), so one table must not mix them.
constexpr char kScopes[] =
    ",time_stats.all_reduce.median,rank,num_workers,size,collective,devices_per_node,max_devices_per_node\n"
    "0,0.030,0,2,2048,all_reduce,2,8\n"   // single node
    "1,0.043,0,2,2048,all_reduce,1,8\n"   // two nodes of one GPU each
    "2,0.050,0,8,2048,all_reduce,8,8\n"   // single node
    "3,0.120,0,8,2048,all_reduce,4,8\n";  // two nodes of four

TEST(VidurImportTest, AllReduceKeepsSingleAndCrossNodeRowsApart) {
  proto::CalibrationTable table;
  VidurImportReport report;
  ASSERT_TRUE(ImportVidurAllReduceCsv(kScopes, "ar.csv", &table, &report).ok());
  ASSERT_EQ(table.points_size(), 2);
  EXPECT_EQ(table.points(0).shape().num_gpus(), 2);
  EXPECT_DOUBLE_EQ(table.points(0).median_ns(), 30000);
  EXPECT_EQ(table.points(1).shape().num_gpus(), 8);
  EXPECT_DOUBLE_EQ(table.points(1).median_ns(), 50000);
  ASSERT_EQ(report.used_rows.size(), 1u);
  EXPECT_NE(report.used_rows[0].find("ar.csv: 2 of 4 rows used (single-node rows"), std::string::npos)
      << report.used_rows[0];
  const std::vector<std::string> unused = {"ar.csv: (unnamed index column)", "ar.csv: rank",
                                           "ar.csv: max_devices_per_node"};
  EXPECT_EQ(report.unused, unused);

  proto::CalibrationTable cross;
  VidurImportReport cross_report;
  VidurImportOptions options;
  options.all_reduce_scope = AllReduceScope::kCrossNode;
  ASSERT_TRUE(ImportVidurAllReduceCsv(kScopes, "ar.csv", &cross, &cross_report, options).ok());
  ASSERT_EQ(cross.points_size(), 2);
  EXPECT_DOUBLE_EQ(cross.points(0).median_ns(), 43000);
  EXPECT_DOUBLE_EQ(cross.points(1).median_ns(), 120000);
}

TEST(VidurImportTest, PrefillRowsAreAChunkAfterACachedPrefix) {
  // A 64-token chunk after 512 cached tokens, and a decode row with a chunk (refused).
  const std::string header =
      "time_stats.attn_prefill.median,time_stats.attn_decode.median,n_embd,n_q_head,n_kv_head,block_size,"
      "num_tensor_parallel_workers,max_model_len,batch_size,prefill_chunk_size,kv_cache_size,is_prefill\n";
  proto::CalibrationTable table;
  VidurImportReport report;
  ASSERT_TRUE(
      ImportVidurAttentionCsv(header + "0.045,,4096,32,8,16,1,16384,1,64,512,True\n", "a.csv", &table, &report).ok());
  ASSERT_EQ(table.points_size(), 1);
  EXPECT_EQ(table.points(0).shape().query_tokens(), 64);
  EXPECT_EQ(table.points(0).shape().context_tokens(), 512);
  absl::Status decode =
      ImportVidurAttentionCsv(header + ",0.02,4096,32,8,16,1,16384,4,64,512,False\n", "a.csv", &table, &report);
  EXPECT_NE(decode.message().find("a.csv:2: column prefill_chunk_size: a decode row must have 0, got 64"),
            absl::string_view::npos)
      << decode;
  absl::Status no_chunk =
      ImportVidurAttentionCsv(header + "0.02,,4096,32,8,16,1,16384,1,0,512,True\n", "a.csv", &table, &report);
  EXPECT_NE(no_chunk.message().find("a.csv:2: column prefill_chunk_size: a prefill row needs a chunk"),
            absl::string_view::npos)
      << no_chunk;
}

TEST(VidurImportTest, NegativeTimesAreRefusedNamingLineAndColumn) {
  proto::CalibrationTable table;
  VidurImportReport report;
  std::string bad = kMlp;
  bad.replace(bad.find("0.06,"), 5, "-0.06,");
  absl::Status negative = ImportVidurMlpCsv(bad, "mlp.csv", &table, &report);
  EXPECT_NE(negative.message().find("mlp.csv:2: column time_stats.mlp_up_proj.median: expected a time >= 0 ms"),
            absl::string_view::npos)
      << negative;
  std::string word = kMlp;
  word.replace(word.find("0.06,"), 5, "fast,");
  absl::Status text = ImportVidurMlpCsv(word, "mlp.csv", &table, &report);
  EXPECT_NE(text.message().find("mlp.csv:2: column time_stats.mlp_up_proj.median: expected a number, got 'fast'"),
            absl::string_view::npos)
      << text;
  std::string ar = kScopes;
  ar.replace(ar.find("0.050"), 5, "-0.05");
  absl::Status ar_negative = ImportVidurAllReduceCsv(ar, "ar.csv", &table, &report);
  EXPECT_NE(ar_negative.message().find("ar.csv:4: column time_stats.all_reduce.median: expected a time >= 0"),
            absl::string_view::npos)
      << ar_negative;
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
  EXPECT_NE(bool_error.message().find("a.csv:2: column is_prefill: expected True or False"), absl::string_view::npos)
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
  EXPECT_NE(
      ImportVidurAttentionCsv(bad, "a.csv", &table, &report).message().find("column block_size: expected a count"),
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
  ASSERT_TRUE(
      WriteFileAtomically(headers + "/mlp.csv", std::string(kMlp).substr(0, std::string(kMlp).find('\n') + 1)).ok());
  absl::Status none = ImportVidurProfiles(headers, &report).status();
  EXPECT_EQ(none.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none.message().find("the profiles hold no usable rows"), absl::string_view::npos) << none;
}

}  // namespace
}  // namespace kvsim
