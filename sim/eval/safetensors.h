// File: sim/eval/safetensors.h
//
// Reader (and a small writer, for tests and generated models) of the Hugging Face safetensors format: an
// 8-byte little-endian header length N, N bytes of JSON mapping each tensor name to {"dtype", "shape",
// "data_offsets": [begin, end]} (offsets relative to the first byte after the header; an optional
// "__metadata__" entry is ignored), then the raw little-endian tensor bytes. F32, F16 and BF16 tensors
// are converted to float32 (traces/attention/half.h); any other dtype is refused when the tensor is read.
//
// SafetensorsFile::Open reads the whole file and checks the header: valid JSON, every entry's dtype
// string, shape and offsets present, offsets ordered and inside the data area, size = elements x dtype
// size. Errors are InvalidArgument (NotFound for a missing file) naming the file and the tensor.
//
// TensorStore: every tensor of a model folder, from `model.safetensors`, or from the shards named by
// `model.safetensors.index.json` ({"weight_map": {name: file}}), or from every *.safetensors file of the
// folder when neither exists. A name found in two files is refused.
//
// Thread-compatible (const methods may run concurrently).
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(TensorStore store, TensorStore::OpenFolder("/models/tiny"));
//   KVSIM_ASSIGN_OR_RETURN(FloatTensor w, store.Read("model.norm.weight", {hidden}));
#ifndef KVSIM_SIM_EVAL_SAFETENSORS_H_
#define KVSIM_SIM_EVAL_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace kvsim {

// A dense row-major float32 tensor.
struct FloatTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;  // product(shape) values
};

// One tensor entry of a safetensors header.
struct SafetensorsEntry {
  std::string dtype;  // as written, e.g. "F32", "BF16"
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data area
};

class SafetensorsFile {
 public:
  // Reads and checks `path` (see the file comment).
  static absl::StatusOr<SafetensorsFile> Open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  bool Has(const std::string& name) const { return entries_.count(name) > 0; }

  // The tensor as float32. NotFound naming the file when absent; InvalidArgument for an unsupported dtype.
  absl::StatusOr<FloatTensor> Read(const std::string& name) const;

 private:
  std::string path_;
  std::map<std::string, SafetensorsEntry> entries_;
  std::shared_ptr<const std::string> bytes_;  // the whole file
  uint64_t data_start_ = 0;
};

class TensorStore {
 public:
  // See the file comment. NotFound when the folder has no safetensors file.
  static absl::StatusOr<TensorStore> OpenFolder(const std::string& dir);

  bool Has(const std::string& name) const { return where_.count(name) > 0; }
  // The file holding `name` ("" when absent).
  std::string FileOf(const std::string& name) const;
  // Every tensor name, sorted.
  std::vector<std::string> Names() const;

  // The tensor, which must have exactly `shape`. Errors name the folder/file and tensor: missing ("not
  // found in DIR"), wrong shape ("has shape [a, b], expected [c, d]"), unsupported dtype.
  absl::StatusOr<FloatTensor> Read(const std::string& name, absl::Span<const int64_t> shape) const;

 private:
  std::string dir_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, size_t> where_;  // name -> index into files_
};

// The safetensors bytes of `tensors` (name -> tensor), stored as `dtype` ("F32", "F16" or "BF16"; 16-bit
// types round to nearest even). For tests and generated models. REQUIRES: each data size matches its shape.
std::string EncodeSafetensors(const std::map<std::string, FloatTensor>& tensors, const std::string& dtype);

// "[a, b, c]".
std::string ShapeString(absl::Span<const int64_t> shape);

}  // namespace kvsim

#endif  // KVSIM_SIM_EVAL_SAFETENSORS_H_
