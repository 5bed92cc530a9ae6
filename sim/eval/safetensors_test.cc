#include "sim/eval/safetensors.h"

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "util/file.h"

namespace kvsim {
namespace {

std::string TempDir(const std::string& name) {
  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A file written by hand (not by EncodeSafetensors): header length, JSON, little-endian payload.
std::string HandFile(const std::string& json, const std::string& data) {
  std::string out;
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + json + data;
}

std::string Write(const std::string& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir + "/" + name;
  EXPECT_TRUE(WriteFileAtomically(path, bytes).ok());
  return path;
}

TEST(SafetensorsTest, ReadsHandWrittenF32F16Bf16) {
  const std::string dir = TempDir("hand");
  // F32 [1.0, -2.0] = 00 00 80 3f, 00 00 00 c0; F16 [0.5] = 00 38; BF16 [3.0] = 40 40.
  const std::string data =
      std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8) + std::string("\x00\x38", 2) + std::string("\x40\x40", 2);
  const std::string json =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F16","shape":[1,1],)"
      R"("data_offsets":[8,10]},"c":{"dtype":"BF16","shape":[1],"data_offsets":[10,12]},"__metadata__":{"x":"y"}})";
  const std::string path = Write(dir, "m.safetensors", HandFile(json, data));
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->entries().size(), 3u);
  auto a = file->Read("a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->data, (std::vector<float>{1.0f, -2.0f}));
  auto b = file->Read("b");
  EXPECT_EQ(b->data, std::vector<float>{0.5f});
  EXPECT_EQ(b->shape, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(file->Read("c")->data, std::vector<float>{3.0f});
  EXPECT_EQ(file->Read("d").status().code(), absl::StatusCode::kNotFound);
}

TEST(SafetensorsTest, EncodeRoundTrips) {
  const std::string dir = TempDir("round");
  std::map<std::string, FloatTensor> tensors = {{"x", {{2, 3}, {1, 2, 3, 4, 5, 6.5f}}}, {"y", {{1}, {-0.25f}}}};
  for (const char* dtype : {"F32", "F16", "BF16"}) {
    const std::string path = Write(dir, absl::StrCat(dtype, ".safetensors"), EncodeSafetensors(tensors, dtype));
    auto file = SafetensorsFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_EQ(file->entries().at("x").dtype, dtype);
    EXPECT_EQ(file->Read("x")->data, tensors["x"].data) << dtype;  // exact in every dtype
    EXPECT_EQ(file->Read("y")->data, tensors["y"].data) << dtype;
  }
}

TEST(SafetensorsTest, RefusesBadFiles) {
  const std::string dir = TempDir("bad");
  auto message = [&](const std::string& name, const std::string& bytes) {
    return std::string(SafetensorsFile::Open(Write(dir, name, bytes)).status().message());
  };
  EXPECT_NE(message("short", "abc").find("short: truncated: 3 bytes"), std::string::npos);
  EXPECT_NE(message("long_header", HandFile("{}", "").substr(0, 9)).find("header length 2 exceeds"), std::string::npos);
  EXPECT_NE(message("json", HandFile("{nope", "")).find("not valid JSON"), std::string::npos);
  EXPECT_NE(message("range", HandFile(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234"))
                .find("tensor 'w': data_offsets [0, 8] run past the 4 data bytes (truncated file?)"),
            std::string::npos);
  EXPECT_NE(message("size", HandFile(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "12345678"))
                .find("tensor 'w': data_offsets span 8 bytes, but shape [3] of F32 needs 12"),
            std::string::npos);
  EXPECT_NE(
      message("rev", HandFile(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", "1234")).find("reversed"),
      std::string::npos);
  EXPECT_NE(message("dtype", HandFile(R"({"w":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", "1"))
                .find("unknown dtype 'Q4'"),
            std::string::npos);
  EXPECT_NE(message("shape", HandFile(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", "1234")).find("\"shape\""),
            std::string::npos);
  // A known but unsupported dtype opens, and is refused when read.
  auto file = SafetensorsFile::Open(
      Write(dir, "i64", HandFile(R"({"w":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", "12345678")));
  ASSERT_TRUE(file.ok());
  EXPECT_NE(file->Read("w").status().message().find("tensor 'w' has dtype I64; supported: F32, F16, BF16"),
            std::string::npos);
  EXPECT_EQ(SafetensorsFile::Open(dir + "/missing").status().code(), absl::StatusCode::kNotFound);
}

TEST(SafetensorsTest, FolderShardsAndShapes) {
  const std::string dir = TempDir("shards");
  Write(dir, "a.safetensors", EncodeSafetensors({{"x", {{2}, {1, 2}}}}, "F32"));
  Write(dir, "b.safetensors", EncodeSafetensors({{"y", {{1}, {3}}}}, "BF16"));
  Write(dir, "model.safetensors.index.json",
        R"({"metadata": {}, "weight_map": {"x": "a.safetensors", "y": "b.safetensors"}})");
  auto store = TensorStore::OpenFolder(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(store->Names(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(store->Read("y", {1})->data, std::vector<float>{3});
  EXPECT_NE(store->Read("x", {3}).status().message().find("a.safetensors: tensor 'x' has shape [2], expected [3]"),
            std::string::npos);
  EXPECT_NE(store->Read("z", {1}).status().message().find("tensor 'z' not found"), std::string::npos);
  // An index naming a file that lacks the tensor.
  Write(dir, "model.safetensors.index.json", R"({"weight_map": {"x": "b.safetensors"}})");
  EXPECT_NE(TensorStore::OpenFolder(dir).status().message().find("tensor 'x' is mapped to b.safetensors"),
            std::string::npos);
  // No index: every file; a name in two files is refused.
  std::filesystem::remove(dir + "/model.safetensors.index.json");
  EXPECT_TRUE(TensorStore::OpenFolder(dir).ok());
  Write(dir, "c.safetensors", EncodeSafetensors({{"x", {{2}, {1, 2}}}}, "F32"));
  EXPECT_NE(TensorStore::OpenFolder(dir).status().message().find("tensor 'x' is in both"), std::string::npos);
  EXPECT_EQ(TensorStore::OpenFolder(TempDir("empty")).status().code(), absl::StatusCode::kNotFound);
}

// The header as the reference writer lays it out: compact JSON, tensors by name, padded with spaces to 8.
TEST(SafetensorsTest, EncodedHeaderByHand) {
  const std::map<std::string, FloatTensor> tensors = {{"w\"q", {{2}, {1, 2}}}, {"b", {{1, 1}, {3}}}};
  const std::string bytes = EncodeSafetensors(tensors, "F32");
  const std::string header =
      "{\"b\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[0,4]},"
      "\"w\\\"q\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}";
  const std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  ASSERT_EQ(bytes.size(), 8 + padded.size() + 12);
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  EXPECT_EQ(length, padded.size());
  EXPECT_EQ(bytes.substr(8, padded.size()), padded);
}

}  // namespace
}  // namespace kvsim
