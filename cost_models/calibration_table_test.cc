#include "cost_models/calibration_table.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "util/file.h"

namespace kvsim {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

constexpr char kCsv[] =
    "# gpu_name: NVIDIA H200\n"
    "# cuda_version: 13.0\n"
    "# synthetic_from_datasheet: false\n"
    "# a free comment line\n"
    "kind,dtype,batch,context_tokens,num_heads,num_kv_heads,head_dim,median_ns,p10_ns,p90_ns,repetitions\n"
    "decode_attention,bf16,8,4096,32,8,128,51234.5,50000,52000,30\n"
    "\n"
    "DECODE_ATTENTION,INT4,8,4096,32,8,128,20000,,,30\n";

TEST(CalibrationTableTest, ParsesHeaderRowsAndDefaults) {
  absl::StatusOr<proto::CalibrationTable> table = ParseCalibrationCsv(kCsv, "t.csv");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->header().gpu_name(), "NVIDIA H200");
  EXPECT_EQ(table->header().cuda_version(), "13.0");
  EXPECT_FALSE(table->header().synthetic_from_datasheet());
  ASSERT_EQ(table->points_size(), 2);
  const proto::CalibrationPoint& p = table->points(0);
  EXPECT_EQ(p.kind(), proto::KERNEL_KIND_DECODE_ATTENTION);
  EXPECT_EQ(p.shape().batch(), 8);
  EXPECT_EQ(p.shape().context_tokens(), 4096);
  EXPECT_EQ(p.shape().query_tokens(), 1);  // decode default
  EXPECT_EQ(p.shape().num_segments(), 1);  // default
  EXPECT_DOUBLE_EQ(p.median_ns(), 51234.5);
  EXPECT_EQ(p.repetitions(), 30);
  EXPECT_EQ(table->points(1).dtype(), "int4");
  EXPECT_EQ(table->points(1).p10_ns(), 0);  // empty cell = unknown
}

TEST(CalibrationTableTest, CsvAndTextProtoRoundTrip) {
  absl::StatusOr<proto::CalibrationTable> table = ParseCalibrationCsv(kCsv, "t.csv");
  ASSERT_TRUE(table.ok());
  for (const std::string name : {"round.csv", "round.textproto"}) {
    const std::string path = TempPath(name);
    ASSERT_TRUE(WriteCalibrationTable(path, *table).ok());
    absl::StatusOr<proto::CalibrationTable> again = ReadCalibrationTable(path);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->SerializeAsString(), table->SerializeAsString()) << name;
  }
}

TEST(CalibrationTableTest, ErrorsNameFileLineAndColumn) {
  struct Case {
    std::string text, expected;
  };
  const std::string columns = "kind,batch,context_tokens,num_heads,num_kv_heads,head_dim,median_ns\n";
  for (const Case& c : {
           Case{columns + "decode_attention,8,4096,32,8,128,abc\n", "x.csv:2: column median_ns: expected a number"},
           Case{columns + "decode_attention,8.5,4096,32,8,128,10\n", "x.csv:2: column batch: expected an integer"},
           Case{columns + "\nwarp_shuffle,8,4096,32,8,128,10\n", "x.csv:3: column kind: unknown kernel kind"},
           Case{columns + "decode_attention,8,4096,32,8\n", "x.csv:2: expected 7 comma-separated cells, got 5"},
           Case{columns + "decode_attention,8,4096,32,8,0,10\n", "x.csv:2: decode_attention point: needs"},
           Case{columns + "decode_attention,8,4096,32,8,128,-1\n", "x.csv:2: decode_attention point: median_ns"},
           // Subnormal: 1e-9 times it is zero in seconds.
           Case{columns + "decode_attention,8,4096,32,8,128,1e-320\n",
                "x.csv:2: decode_attention point: median_ns must be a time in [0.001, 3.6e12] ns"},
           Case{"kind,batch,context_tokens,num_heads,num_kv_heads,head_dim,median_ns,p10_ns\n"
                "decode_attention,8,4096,32,8,128,10,12\n",
                "x.csv:2: decode_attention point: p10_ns <= median_ns <= p90_ns expected (0 = unknown), got 12, 10, 0"},
           Case{
               "kind,batch,context_tokens,num_heads,num_kv_heads,head_dim,median_ns,p10_ns,p90_ns\n"
               "decode_attention,8,4096,32,8,128,10,9,9.5\n",
               "x.csv:2: decode_attention point: p10_ns <= median_ns <= p90_ns expected (0 = unknown), got 9, 10, 9.5"},
           Case{"kind,median_ns,median_ns\n", "x.csv:1: column 'median_ns' appears twice"},
           Case{columns + "decode_attention,8,4096,4294967424,8,128,10\n",
                "x.csv:2: column num_heads: expected an integer of at most 2147483647, got '4294967424'"},
           Case{"kind,median_ns,speed\n", "x.csv:1: unknown column 'speed'"},
           Case{"kind,batch\n", "x.csv:1: the column row must name at least kind and median_ns"},
           Case{"# gpu_name: x\n", "x.csv: no column row"},
       }) {
    absl::StatusOr<proto::CalibrationTable> table = ParseCalibrationCsv(c.text, "x.csv");
    ASSERT_FALSE(table.ok()) << c.expected;
    EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(table.status().message().find(c.expected), absl::string_view::npos)
        << table.status().message() << "\nexpected: " << c.expected;
  }
}

// What kvsim calibrate's points get before they are written: a GEMM point built without a segment count
// gets the default (1) and passes; a point with a bad median is named by source and index.
TEST(CalibrationTableTest, NormalisingFillsDefaultsAndNamesTheBadPoint) {
  proto::CalibrationTable table;
  proto::CalibrationPoint* gemm = table.add_points();
  gemm->set_kind(proto::KERNEL_KIND_MLP_GEMM);
  gemm->mutable_shape()->set_query_tokens(128);
  gemm->mutable_shape()->set_in_features(4096);
  gemm->mutable_shape()->set_out_features(14336);
  gemm->set_median_ns(45000);
  ASSERT_TRUE(NormaliseCalibrationPoints("run", &table).ok());
  EXPECT_EQ(table.points(0).shape().num_segments(), 1);
  EXPECT_EQ(table.points(0).shape().batch(), 1);
  EXPECT_EQ(table.points(0).dtype(), "bf16");
  proto::CalibrationPoint* copy = table.add_points();
  copy->set_kind(proto::KERNEL_KIND_HOST_DEVICE_COPY);
  copy->mutable_shape()->set_bytes(65536);
  copy->set_median_ns(0);  // a median must be > 0
  const absl::Status status = NormaliseCalibrationPoints("run", &table);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("run: points[1]: host_device_copy point: median_ns"), absl::string_view::npos)
      << status.message();
}

TEST(CalibrationTableTest, MissingFileIsAnError) {
  absl::StatusOr<proto::CalibrationTable> table = ReadCalibrationTable(TempPath("absent.csv"));
  EXPECT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find("absent.csv"), absl::string_view::npos);
  const std::string header_only = TempPath("header_only.csv");
  ASSERT_TRUE(WriteFileAtomically(header_only, "# gpu_name: x\nkind,median_ns\n").ok());
  table = ReadCalibrationTable(header_only);
  EXPECT_NE(table.status().message().find("header_only.csv: the calibration table has no points"),
            absl::string_view::npos)
      << table.status();
}

}  // namespace
}  // namespace kvsim
