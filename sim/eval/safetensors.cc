#include "sim/eval/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "simdjson.h"
#include "traces/attention/half.h"
#include "util/check.h"
#include "util/file.h"
#include "util/json_text.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// Bytes per element of a supported dtype, 0 otherwise.
int DTypeBytes(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  return 0;
}

// Bytes per element of any dtype safetensors defines (to check offsets of tensors we never read).
int AnyDTypeBytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  return 0;
}

uint64_t ReadLe64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

void AppendLe64(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::string ShapeString(absl::Span<const int64_t> shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

absl::StatusOr<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path, /*max_bytes=*/int64_t{1} << 40));  // model weights
  auto bad = [&](const std::string& what) { return absl::InvalidArgumentError(absl::StrCat(path, ": ", what)); };
  if (bytes.size() < 8) return bad(absl::StrCat("truncated: ", bytes.size(), " bytes, no 8-byte header length"));
  const uint64_t header_len = ReadLe64(bytes.data());
  if (header_len > bytes.size() - 8) {
    return bad(absl::StrCat("truncated: header length ", header_len, " exceeds the ", bytes.size() - 8,
                            " bytes after the length"));
  }
  SafetensorsFile file;
  file.path_ = path;
  file.data_start_ = 8 + header_len;
  const uint64_t data_size = bytes.size() - file.data_start_;
  simdjson::dom::parser parser;
  simdjson::padded_string header(bytes.data() + 8, header_len);
  simdjson::dom::element root;
  if (auto error = parser.parse(header).get(root); error != simdjson::SUCCESS) {
    return bad(absl::StrCat("header is not valid JSON: ", simdjson::error_message(error)));
  }
  simdjson::dom::object object;
  if (root.get_object().get(object) != simdjson::SUCCESS) return bad("header is not a JSON object");
  for (auto field : object) {
    const std::string name(field.key);
    if (name == "__metadata__") continue;
    auto tensor_error = [&](const std::string& what) { return bad(absl::StrCat("tensor '", name, "': ", what)); };
    simdjson::dom::object info;
    if (field.value.get_object().get(info) != simdjson::SUCCESS) return tensor_error("entry is not an object");
    SafetensorsEntry entry;
    std::string_view dtype;
    if (info["dtype"].get_string().get(dtype) != simdjson::SUCCESS) return tensor_error("missing string \"dtype\"");
    entry.dtype = std::string(dtype);
    simdjson::dom::array shape, offsets;
    if (info["shape"].get_array().get(shape) != simdjson::SUCCESS) return tensor_error("missing array \"shape\"");
    uint64_t elements = 1;
    for (simdjson::dom::element dim : shape) {
      int64_t d;
      if (dim.get_int64().get(d) != simdjson::SUCCESS || d < 0 || d > (int64_t{1} << 40)) {
        return tensor_error("shape entries must be integers in [0, 2^40]");
      }
      entry.shape.push_back(d);
      elements *= static_cast<uint64_t>(d);
      if (elements > (uint64_t{1} << 44)) return tensor_error("too many elements");
    }
    if (info["data_offsets"].get_array().get(offsets) != simdjson::SUCCESS || offsets.size() != 2) {
      return tensor_error("missing \"data_offsets\": [begin, end]");
    }
    uint64_t range[2];
    for (int i = 0; i < 2; ++i) {
      if (offsets.at(i).get_uint64().get(range[i]) != simdjson::SUCCESS) {
        return tensor_error("data_offsets must be non-negative integers");
      }
    }
    entry.begin = range[0];
    entry.end = range[1];
    if (entry.begin > entry.end) {
      return tensor_error(absl::StrCat("data_offsets [", entry.begin, ", ", entry.end, "] are reversed"));
    }
    if (entry.end > data_size) {
      return tensor_error(absl::StrCat("data_offsets [", entry.begin, ", ", entry.end, "] run past the ", data_size,
                                       " data bytes (truncated file?)"));
    }
    const int size = AnyDTypeBytes(entry.dtype);
    if (size == 0) return tensor_error(absl::StrCat("unknown dtype '", entry.dtype, "'"));
    if (entry.end - entry.begin != elements * size) {
      return tensor_error(absl::StrCat("data_offsets span ", entry.end - entry.begin, " bytes, but shape ",
                                       ShapeString(entry.shape), " of ", entry.dtype, " needs ", elements * size));
    }
    if (!file.entries_.emplace(name, std::move(entry)).second) return tensor_error("appears twice");
  }
  file.bytes_ = std::make_shared<const std::string>(std::move(bytes));
  return file;
}

absl::StatusOr<FloatTensor> SafetensorsFile::Read(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return absl::NotFoundError(absl::StrCat(path_, ": no tensor '", name, "'"));
  const SafetensorsEntry& entry = it->second;
  const int size = DTypeBytes(entry.dtype);
  if (size == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": tensor '", name, "' has dtype ", entry.dtype, "; supported: F32, F16, BF16"));
  }
  FloatTensor tensor;
  tensor.shape = entry.shape;
  const uint64_t n = (entry.end - entry.begin) / size;
  tensor.data.resize(n);
  const char* p = bytes_->data() + data_start_ + entry.begin;
  if (entry.dtype == "F32") {
    for (uint64_t i = 0; i < n; ++i) {
      uint32_t bits = 0;
      for (int b = 3; b >= 0; --b) bits = (bits << 8) | static_cast<uint8_t>(p[4 * i + b]);
      std::memcpy(&tensor.data[i], &bits, 4);
    }
  } else {
    const bool half = entry.dtype == "F16";
    for (uint64_t i = 0; i < n; ++i) {
      const uint16_t bits = static_cast<uint16_t>(static_cast<uint8_t>(p[2 * i]) |
                                                  (static_cast<uint16_t>(static_cast<uint8_t>(p[2 * i + 1])) << 8));
      tensor.data[i] = half ? HalfToFloat(bits) : BFloat16ToFloat(bits);
    }
  }
  return tensor;
}

absl::StatusOr<TensorStore> TensorStore::OpenFolder(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return absl::NotFoundError(absl::StrCat(dir, ": not a directory"));
  TensorStore store;
  store.dir_ = dir;
  std::vector<std::string> files;
  const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
  if (fs::exists(index_path, ec)) {
    KVSIM_ASSIGN_OR_RETURN(std::string text, ReadFile(index_path));
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    simdjson::dom::object map;
    if (parser.parse(simdjson::padded_string(text)).get(root) != simdjson::SUCCESS ||
        root["weight_map"].get_object().get(map) != simdjson::SUCCESS) {
      return absl::InvalidArgumentError(
          absl::StrCat(index_path, ": expected a JSON object with a \"weight_map\" object"));
    }
    std::map<std::string, std::string> wanted;  // tensor -> file
    for (auto field : map) {
      std::string_view file;
      if (field.value.get_string().get(file) != simdjson::SUCCESS) {
        return absl::InvalidArgumentError(
            absl::StrCat(index_path, ": weight_map['", std::string(field.key), "'] is not a file name"));
      }
      wanted[std::string(field.key)] = std::string(file);
      if (std::find(files.begin(), files.end(), file) == files.end()) files.emplace_back(file);
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      KVSIM_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::Open((fs::path(dir) / f).string()));
      store.files_.push_back(std::move(file));
    }
    for (const auto& [name, f] : wanted) {
      const size_t i = std::find(files.begin(), files.end(), f) - files.begin();
      if (!store.files_[i].Has(name)) {
        return absl::InvalidArgumentError(
            absl::StrCat(index_path, ": tensor '", name, "' is mapped to ", f, ", which does not hold it"));
      }
      store.where_[name] = i;
    }
    return store;
  }
  for (const auto& item : fs::directory_iterator(dir, ec)) {
    if (item.path().extension() == ".safetensors") files.push_back(item.path().filename().string());
  }
  if (ec) return absl::InvalidArgumentError(absl::StrCat(dir, ": cannot list: ", ec.message()));
  std::sort(files.begin(), files.end());
  if (files.empty()) return absl::NotFoundError(absl::StrCat(dir, ": no *.safetensors file"));
  for (const std::string& f : files) {
    KVSIM_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::Open((fs::path(dir) / f).string()));
    for (const auto& [name, entry] : file.entries()) {
      if (store.where_.count(name)) {
        return absl::InvalidArgumentError(absl::StrCat(dir, ": tensor '", name, "' is in both ",
                                                       store.files_[store.where_[name]].path(), " and ", file.path()));
      }
      store.where_[name] = store.files_.size();
    }
    store.files_.push_back(std::move(file));
  }
  return store;
}

std::string TensorStore::FileOf(const std::string& name) const {
  auto it = where_.find(name);
  return it == where_.end() ? "" : files_[it->second].path();
}

std::vector<std::string> TensorStore::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, i] : where_) names.push_back(name);
  return names;
}

absl::StatusOr<FloatTensor> TensorStore::Read(const std::string& name, absl::Span<const int64_t> shape) const {
  auto it = where_.find(name);
  if (it == where_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir_, ": tensor '", name, "' not found (expected shape ", ShapeString(shape), ")"));
  }
  const SafetensorsFile& file = files_[it->second];
  const SafetensorsEntry& entry = file.entries().at(name);
  if (!std::equal(entry.shape.begin(), entry.shape.end(), shape.begin(), shape.end())) {
    return absl::InvalidArgumentError(absl::StrCat(file.path(), ": tensor '", name, "' has shape ",
                                                   ShapeString(entry.shape), ", expected ", ShapeString(shape)));
  }
  return file.Read(name);
}

std::string EncodeSafetensors(const std::map<std::string, FloatTensor>& tensors, const std::string& dtype) {
  const int size = DTypeBytes(dtype);
  KVSIM_CHECK(size > 0);
  Json header_json = Json::object();  // tensors in name order, as the reference writer sorts them
  std::string data;
  for (const auto& [name, t] : tensors) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    KVSIM_CHECK(static_cast<int64_t>(t.data.size()) == n);
    const uint64_t begin = data.size();
    for (float x : t.data) {
      if (size == 4) {
        uint32_t bits;
        std::memcpy(&bits, &x, 4);
        for (int b = 0; b < 4; ++b) data.push_back(static_cast<char>((bits >> (8 * b)) & 0xff));
      } else {
        const uint16_t bits = dtype == "F16" ? FloatToHalf(x) : FloatToBFloat16(x);
        data.push_back(static_cast<char>(bits & 0xff));
        data.push_back(static_cast<char>(bits >> 8));
      }
    }
    Json& entry = header_json[name];
    entry["dtype"] = dtype;
    entry["shape"] = t.shape;
    entry["data_offsets"] = {begin, static_cast<uint64_t>(data.size())};
  }
  std::string header = DumpJsonLine(header_json);
  while (header.size() % 8 != 0) header += " ";  // aligned data, as the reference writer pads
  std::string out;
  AppendLe64(header.size(), &out);
  return out + header + data;
}

}  // namespace kvsim
