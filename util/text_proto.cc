#include "util/text_proto.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "util/file.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// Keeps the first error with its position; protobuf reports 0-based lines and columns.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (!has_error_) {
      has_error_ = true;
      line_ = line + 1;
      column_ = column + 1;
      message_ = message;
    }
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}

  bool has_error() const { return has_error_; }
  std::string Describe(absl::string_view source) const {
    // Keep the error on one line whatever protobuf put in the message.
    return absl::StrCat(source, ":", line_, ":", column_, ": ", absl::StrReplaceAll(message_, {{"\n", " "}}));
  }

 private:
  bool has_error_ = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

}  // namespace

absl::Status ParseTextProto(absl::string_view text, absl::string_view source_name, google::protobuf::Message* message) {
  message->Clear();
  FirstErrorCollector errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  const std::string input(text);
  if (!parser.ParseFromString(input, message) || errors.has_error()) {
    if (!errors.has_error()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_name, ": not a valid ", message->GetTypeName(), " text proto"));
    }
    return absl::InvalidArgumentError(errors.Describe(source_name));
  }
  return absl::OkStatus();
}

absl::Status ParseTextProtoFile(const std::string& path, google::protobuf::Message* message) {
  KVSIM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  absl::string_view view = text;
  ConsumeUtf8ByteOrderMark(&view);
  return ParseTextProto(view, path, message);
}

std::string ToTextProto(const google::protobuf::Message& message) {
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  printer.PrintToString(message, &text);
  return text;
}

}  // namespace kvsim
