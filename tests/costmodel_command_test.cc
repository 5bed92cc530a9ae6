// End-to-end checks of `kvsim costmodel` through the command dispatcher.
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "config/experiment_config.h"
#include "cost_models/fitted_kernels.h"
#include "gtest/gtest.h"
#include "proto/spec.pb.h"
#include "tools/command.h"
#include "util/file.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

std::string Tmp(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

int RunCli(std::vector<std::string> args, std::string* out, std::string* err) {
  args.insert(args.begin(), "kvsim");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::ostringstream o, e;
  const int code = RunKvsim(argv.size(), argv.data(), o, e);
  *out = o.str();
  *err = e.str();
  return code;
}

TEST(CostModelCommandTest, ValidatesTheBundledH200TableAndWritesAPlot) {
  std::string out, err;
  const std::string svg = Tmp("plot.svg");
  ASSERT_EQ(RunCli({"costmodel", "validate", "cost_models/tables/h200_llama-3.1-8b.csv", "--out=" + svg}, &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("synthetic from datasheet"), std::string::npos) << out;
  EXPECT_NE(out.find("decode_attention   leave-one-out"), std::string::npos) << out;
  EXPECT_NE(out.find("held-out"), std::string::npos) << out;
  absl::StatusOr<std::string> plot = ReadFile(svg);
  ASSERT_TRUE(plot.ok());
  EXPECT_NE(plot->find("<svg"), std::string::npos);
}

// The measured H200 table (kvsim calibrate, 2026-11-30): the table model must predict its held-out
// attention, merge and copy points within the goal of the cost-model issue (median <= 5%, p95 <= 15% per
// kind). The cuBLASLt GEMM kinds miss it (README.md says why) and are not asserted.
TEST(CostModelCommandTest, MeasuredH200TableMeetsTheAccuracyGoalForAttentionKinds) {
  std::string out, err;
  ASSERT_EQ(RunCli({"costmodel", "validate", "cost_models/tables/h200_llama-3.1-8b_measured.csv"}, &out, &err), 0)
      << err;
  EXPECT_NE(out.find("GPU NVIDIA H200"), std::string::npos) << out;
  int checked = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string kind, method;
    double points = 0, median = 0, p95 = 0;
    char percent = 0;
    if (!(fields >> kind >> method >> points >> median >> percent >> p95) || method != "held-out") continue;
    if (kind != "decode_attention" && kind != "prefill_attention" && kind != "segment_merge" &&
        kind != "host_device_copy") {
      continue;
    }
    EXPECT_LE(median, 5.0) << line;
    EXPECT_LE(p95, 15.0) << line;
    ++checked;
  }
  EXPECT_EQ(checked, 4) << out;
}

TEST(CostModelCommandTest, SynthThenShowWithTheTableModel) {
  std::string out, err;
  const std::string table = Tmp("l40s.csv");
  ASSERT_EQ(RunCli({"costmodel", "synth", table, "--costmodel_device=l40s"}, &out, &err), 0) << err;
  EXPECT_NE(out.find("wrote 739 synthetic points (Llama-3.1-8B, L40S)"), std::string::npos) << out;
  const std::string config = Tmp("table.textproto");
  ASSERT_TRUE(WriteFileAtomically(config,
                                  "device_preset: \"l40s\"\ncost_model { kind: COST_MODEL_KIND_TABLE "
                                  "table_path: \"" +
                                      table + "\" }\n")
                  .ok());
  ASSERT_EQ(RunCli({"costmodel", "show", "--config=" + config}, &out, &err), 0) << err;
  EXPECT_NE(out.find("cost model: table " + table), std::string::npos) << out;
  EXPECT_NE(out.find("64 decodes, context 4K"), std::string::npos) << out;
}

TEST(CostModelCommandTest, ImportsVidurProfiles) {
  const std::string dir = Tmp("vidur");
  ASSERT_TRUE(MakeDirectories(dir).ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/all_reduce.csv",
                                  "num_workers,size,collective,time_stats.all_reduce.median\n"
                                  "2,65536,all_reduce,0.01\n4,65536,all_reduce,0.015\n")
                  .ok());
  std::string out, err;
  const std::string table = Tmp("vidur.csv");
  ASSERT_EQ(RunCli({"costmodel", "import-vidur", dir, table}, &out, &err), 0) << err;
  EXPECT_NE(out.find("wrote 2 points"), std::string::npos) << out;
  absl::StatusOr<std::string> text = ReadFile(table);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("all_reduce,fp16"), std::string::npos) << *text;
  // Several directories go into one table, which names its GPU and what it was imported from.
  const std::string second = Tmp("vidur2");
  ASSERT_TRUE(MakeDirectories(second).ok());
  ASSERT_TRUE(WriteFileAtomically(second + "/all_reduce.csv",
                                  "num_workers,size,collective,time_stats.all_reduce.median\n8,65536,all_reduce,0.03\n")
                  .ok());
  ASSERT_EQ(RunCli({"costmodel", "import-vidur", dir, second, table, "--costmodel_device=a100-80gb"}, &out, &err), 0)
      << err;
  EXPECT_NE(out.find("wrote 3 points"), std::string::npos) << out;
  text = ReadFile(table);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("# gpu_name: A100-80GB"), std::string::npos) << *text;
  EXPECT_NE(text->find("(single-node all-reduce)"), std::string::npos) << *text;
}

TEST(CostModelCommandTest, FitsAllReduceCurvesAndWritesThePresetBlock) {
  // 2 GPUs, single node (enough sizes for the 8-parameter curve): t = 20 us + B / 100 GB/s exactly (2 (g - 1) / g = 1),
  // plus cross-node rows (devices_per_node 1) ten times slower that the fit must not see.
  const std::string dir = Tmp("fit_vidur");
  ASSERT_TRUE(MakeDirectories(dir).ok());
  std::string csv = "num_workers,size,collective,devices_per_node,time_stats.all_reduce.median\n";
  for (int64_t bytes = 4096; bytes <= (int64_t{1} << 26); bytes = bytes * 6 / 5) {  // 54 sizes
    const double ms = (20e-6 + bytes / 100e9) * 1e3;
    absl::StrAppend(&csv, "2,", bytes, ",all_reduce,2,", absl::StrFormat("%.9f", ms), "\n");
    absl::StrAppend(&csv, "2,", bytes, ",all_reduce,1,", absl::StrFormat("%.9f", 10 * ms), "\n");
  }
  ASSERT_TRUE(WriteFileAtomically(dir + "/all_reduce.csv", csv).ok());
  std::string out, err;
  const std::string fitted = Tmp("fitted.textproto");
  ASSERT_EQ(RunCli({"costmodel", "fit", dir, "--costmodel_device=a100-80gb", "--out=" + fitted}, &out, &err), 0) << err;
  EXPECT_NE(out.find("all_reduce/2"), std::string::npos) << out;
  // No GEMM rows: the preset's previous GEMM parameters are kept, and the report says so.
  EXPECT_NE(out.find("too few rows (0 training < 20): previous parameters kept"), std::string::npos) << out;
  proto::DeviceSpec device;
  ASSERT_TRUE(ParseTextProtoFile(fitted, &device).ok());
  ASSERT_EQ(device.fitted().all_reduce_size(), 3);  // 2 fitted here; 4 and 8 kept from the preset
  const proto::AllReduceFit& two = device.fitted().all_reduce(0);
  EXPECT_EQ(two.num_gpus(), 2);
  // The fitted curve reproduces the generating one (20 us + B / 100 GB/s), not the cross-node rows.
  for (double bytes : {4096.0, 1048576.0, 67108864.0}) {
    const double want = 20e-6 + bytes / 100e9;
    EXPECT_NEAR(FittedAllReduceSeconds(two, bytes, 2), want, want * 1e-3) << bytes;
  }
  EXPECT_TRUE(device.fitted().gemm().quality().fitted() == false);
  EXPECT_GT(device.fitted().gemm().compute_efficiency(), 0);
  // A bad cell is refused with its file, line and column.
  ASSERT_TRUE(WriteFileAtomically(dir + "/all_reduce.csv",
                                  "num_workers,size,collective,time_stats.all_reduce.median\n"
                                  "2,4096,all_reduce,-1\n")
                  .ok());
  EXPECT_EQ(RunCli({"costmodel", "fit", dir, "--costmodel_device=a100-80gb"}, &out, &err), 2);
  EXPECT_NE(err.find("all_reduce.csv:2: column time_stats.all_reduce.median: expected a time >= 0 ms"),
            std::string::npos)
      << err;
}

// The number after `prefix` in `text`, or -1.
int64_t NumberAfter(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return -1;
  return std::strtoll(text.c_str() + at + prefix.size(), nullptr, 10);
}

// `kvsim config` and `kvsim costmodel memory` report the same GPU KV capacity in tokens, at bf16 and with
// 4-bit KV (whose scales count: 34,816 bytes per token for Llama-3.1-8B instead of 131,072).
TEST(CostModelCommandTest, ConfigAndMemoryAgreeOnTheKvTokensThatFit) {
  const std::string int4 = Tmp("int4.textproto");
  ASSERT_TRUE(WriteFileAtomically(int4, "cost_model { kv_quant_bits: 4 }\n").ok());
  int64_t bf16_tokens = 0;
  for (const std::string& config : {std::string(), int4}) {
    SCOPED_TRACE(config);
    std::string out, err;
    // Flags keep their values between the commands of one process: --config is always given.
    const std::vector<std::string> flags = {"--config=" + config};
    std::vector<std::string> args = {"config", "--block_tokens=0"};
    args.insert(args.end(), flags.begin(), flags.end());
    ASSERT_EQ(RunCli(args, &out, &err), 0) << err;
    const int64_t config_tokens = NumberAfter(out, "# gpu_capacity_tokens: ");
    const int64_t bytes_per_token = NumberAfter(out, "# kv_bytes_per_token: ");
    args = {"costmodel", "memory", "--costmodel_device=", "--costmodel_model=", "--kv_tokens=0"};
    args.insert(args.end(), flags.begin(), flags.end());
    ASSERT_EQ(RunCli(args, &out, &err), 0) << err;
    const size_t at = out.find(" KV tokens per GPU");
    ASSERT_NE(at, std::string::npos) << out;
    const size_t start = out.rfind(", ", at);
    const int64_t memory_tokens = std::strtoll(out.c_str() + start + 2, nullptr, 10);
    EXPECT_GT(config_tokens, 0);
    EXPECT_EQ(memory_tokens, config_tokens) << out;
    if (config.empty()) {
      EXPECT_EQ(bytes_per_token, 131072);
      bf16_tokens = config_tokens;
    } else {
      EXPECT_EQ(bytes_per_token, 34816);
      // The same free bytes hold 131072 / 34816 = 3.76x the tokens (to within a block of 16 tokens).
      EXPECT_NEAR(static_cast<double>(config_tokens) / bf16_tokens, 131072.0 / 34816, 1e-3);
    }
  }
}

// `fit --prefill_attention_from` / `--decode_attention_from`: the H200 table with the A100 preset's curves
// carried over, as tools/fit_presets.sh fits the H200; a device with no fitted curve, or none at all, is
// refused naming it. (Flags keep their values between calls in one process: each call sets both.)
TEST(CostModelCommandTest, FitCarriesAttentionCurvesOverFromAnotherDevice) {
  std::string out, err;
  const std::string fitted = Tmp("carried.textproto");
  ASSERT_EQ(RunCli({"costmodel", "fit", "cost_models/tables/h200_llama-3.1-8b_measured.csv", "--costmodel_device=h200",
                    "--prefill_attention_from=a100-80gb", "--decode_attention_from=a100-80gb", "--out=" + fitted},
                   &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("carried over from A100-80GB's fit"), std::string::npos) << out;
  EXPECT_NE(out.find("error against this GPU's rows for comparison only"), std::string::npos) << out;
  proto::DeviceSpec device;
  ASSERT_TRUE(ParseTextProtoFile(fitted, &device).ok());
  absl::StatusOr<proto::ExperimentConfig> a100 = [] {
    proto::ExperimentConfig c;
    c.set_device_preset("a100-80gb");
    return ResolveExperimentConfig(c, "test");
  }();
  ASSERT_TRUE(a100.ok());
  const proto::FittedCostParams& from = a100->device().fitted();
  EXPECT_FALSE(device.fitted().prefill_attention().quality().fitted());
  EXPECT_EQ(device.fitted().prefill_attention().compute_efficiency(), from.prefill_attention().compute_efficiency());
  // One thread block's pass: x (312 / 108) / (989.5 / 132) by the presets' bf16 peak per SM.
  EXPECT_NEAR(device.fitted().prefill_attention().serial_ns_per_token(),
              from.prefill_attention().serial_ns_per_token() * (312.0 / 108) / (989.5 / 132), 1e-9);
  EXPECT_FALSE(device.fitted().decode_attention().quality().fitted());
  EXPECT_EQ(device.fitted().decode_attention().launch_ns(), from.decode_attention().launch_ns());
  EXPECT_TRUE(device.fitted().gemm().quality().fitted());  // the other kinds are fitted as before

  EXPECT_EQ(RunCli({"costmodel", "fit", "cost_models/tables/h200_llama-3.1-8b_measured.csv", "--costmodel_device=h200",
                    "--prefill_attention_from=l40s", "--decode_attention_from="},
                   &out, &err),
            2);
  EXPECT_NE(err.find("device 'L40S' has no fitted prefill-attention curve to carry over"), std::string::npos) << err;
  EXPECT_EQ(RunCli({"costmodel", "fit", "cost_models/tables/h200_llama-3.1-8b_measured.csv", "--costmodel_device=h200",
                    "--prefill_attention_from=", "--decode_attention_from=nope"},
                   &out, &err),
            2);
  EXPECT_NE(err.find("--decode_attention_from=nope"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown device preset 'nope'"), std::string::npos) << err;
  RunCli({"costmodel", "show", "--prefill_attention_from=", "--decode_attention_from="}, &out, &err);
}

TEST(CostModelCommandTest, BadInputsAreUsageErrors) {
  std::string out, err;
  EXPECT_EQ(RunCli({"costmodel"}, &out, &err), 2);
  EXPECT_EQ(RunCli({"costmodel", "frobnicate"}, &out, &err), 2);
  EXPECT_NE(err.find("unknown verb 'frobnicate'"), std::string::npos) << err;
  EXPECT_EQ(RunCli({"costmodel", "validate", Tmp("missing.csv")}, &out, &err), 2);
  EXPECT_NE(err.find("missing.csv"), std::string::npos) << err;
  EXPECT_EQ(RunCli({"costmodel", "memory"}, &out, &err), 0) << err;
  EXPECT_NE(out.find("weights"), std::string::npos);
  EXPECT_EQ(out.find("does not fit"), std::string::npos) << out;
  // A what-if beyond the memory is shown, and says it does not fit; a size past any GPU is refused.
  EXPECT_EQ(RunCli({"costmodel", "memory", "--kv_tokens=100000000"}, &out, &err), 0) << err;
  EXPECT_NE(out.find("does not fit"), std::string::npos) << out;
  EXPECT_EQ(RunCli({"costmodel", "memory", "--kv_tokens=9223372036854775807"}, &out, &err), 2);
  EXPECT_NE(err.find("--kv_tokens must be in [0, 2^40]"), std::string::npos) << err;
  // The former name still reaches the flag.
  EXPECT_EQ(RunCli({"costmodel", "memory", "--costmodel_kv_tokens=9223372036854775807"}, &out, &err), 2);
  EXPECT_NE(err.find("--kv_tokens must be in [0, 2^40]"), std::string::npos) << err;
  EXPECT_EQ(RunCli({"costmodel", "memory", "--kv_tokens=0"}, &out, &err), 0) << err;
  // A bad flag is refused before the report is printed.
  EXPECT_EQ(RunCli({"costmodel", "validate", "cost_models/tables/h200_llama-3.1-8b.csv", "--worst=-1"}, &out, &err), 2);
  EXPECT_TRUE(out.empty()) << out;
  EXPECT_EQ(RunCli({"costmodel", "validate", "cost_models/tables/h200_llama-3.1-8b.csv", "--worst=0"}, &out, &err), 0)
      << err;
  EXPECT_EQ(RunCli({"costmodel", "synth", Tmp("inf.csv"), "--launch_ns=inf"}, &out, &err), 2);
  EXPECT_NE(err.find("--launch_ns must be in [0, 1e9]"), std::string::npos) << err;
}

}  // namespace
}  // namespace kvsim
