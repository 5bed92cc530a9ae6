#include "util/text_proto.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
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

// True if `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF).
bool IsValidUtf8(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    int extra = 0;
    unsigned char low = 0x80, high = 0xBF;  // bounds of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
      if (c == 0xE0) low = 0xA0;
      if (c == 0xED) high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
      if (c == 0xF0) low = 0x90;
      if (c == 0xF4) high = 0x8F;
    } else {
      return false;
    }
    if (i + extra >= text.size()) return false;  // truncated sequence
    for (int k = 1; k <= extra; ++k) {
      const unsigned char b = static_cast<unsigned char>(text[i + k]);
      if (k == 1 ? (b < low || b > high) : (b < 0x80 || b > 0xBF)) return false;
    }
    i += extra + 1;
  }
  return true;
}

// The first field (depth first, in declaration order) of `message` that holds a value its type does not
// allow, as "SOURCE:LINE:COL: field PATH: ..."; OK if there is none. Checked: enum values their enum
// defines (text format accepts any number for an open enum: `chunking: 99`) and, with `check_strings`,
// string fields (not bytes) holding well-formed UTF-8, which proto3 requires (a results file recording
// the field would not read back). `tree` holds the parsed fields' positions (null below a field whose
// positions were not recorded).
absl::Status CheckFieldValues(const google::protobuf::Message& message,
                              const google::protobuf::TextFormat::ParseInfoTree* tree, absl::string_view source,
                              const std::string& path, bool check_strings) {
  const google::protobuf::Reflection* reflection = message.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const google::protobuf::FieldDescriptor* field : fields) {
    const std::string name = path.empty() ? field->name() : absl::StrCat(path, ".", field->name());
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const std::string where = field->is_repeated() ? absl::StrCat(name, "[", i, "]") : name;
      const int index = field->is_repeated() ? i : -1;
      const auto position = [&] {
        std::string at_source(source);
        if (tree != nullptr) {
          const google::protobuf::TextFormat::ParseLocation at = tree->GetLocation(field, index);
          if (at.line >= 0) at_source = absl::StrCat(source, ":", at.line + 1, ":", at.column + 1);
        }
        return at_source;
      };
      if (check_strings && field->type() == google::protobuf::FieldDescriptor::TYPE_STRING) {
        std::string scratch;
        const std::string& value = field->is_repeated()
                                       ? reflection->GetRepeatedStringReference(message, field, i, &scratch)
                                       : reflection->GetStringReference(message, field, &scratch);
        if (!IsValidUtf8(value)) {
          return absl::InvalidArgumentError(
              absl::StrCat(position(), ": field ", where, ": not valid UTF-8 (string fields hold UTF-8 text)"));
        }
      }
      if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_ENUM) {
        const int value = field->is_repeated() ? reflection->GetRepeatedEnumValue(message, field, i)
                                               : reflection->GetEnumValue(message, field);
        if (field->enum_type()->FindValueByNumber(value) != nullptr) continue;
        std::vector<std::string> known;
        for (int v = 0; v < field->enum_type()->value_count(); ++v) {
          known.push_back(field->enum_type()->value(v)->name());
        }
        return absl::InvalidArgumentError(absl::StrCat(position(), ": field ", where, ": ", value, " is not a value of ",
                                                       field->enum_type()->name(),
                                                       " (known: ", absl::StrJoin(known, ", "), ")"));
      }
      if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
        const google::protobuf::Message& child = field->is_repeated()
                                                     ? reflection->GetRepeatedMessage(message, field, i)
                                                     : reflection->GetMessage(message, field);
        const google::protobuf::TextFormat::ParseInfoTree* child_tree =
            tree != nullptr ? tree->GetTreeForNested(field, index) : nullptr;
        KVSIM_RETURN_IF_ERROR(CheckFieldValues(child, child_tree, source, where, check_strings));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckDefinedEnums(const google::protobuf::Message& message, absl::string_view source) {
  return CheckFieldValues(message, nullptr, source, "", /*check_strings=*/false);
}

absl::Status ParseTextProto(absl::string_view text, absl::string_view source_name, google::protobuf::Message* message) {
  message->Clear();
  FirstErrorCollector errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  google::protobuf::TextFormat::ParseInfoTree tree;
  parser.WriteLocationsTo(&tree);
  const std::string input(text);
  if (!parser.ParseFromString(input, message) || errors.has_error()) {
    if (!errors.has_error()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_name, ": not a valid ", message->GetTypeName(), " text proto"));
    }
    return absl::InvalidArgumentError(errors.Describe(source_name));
  }
  return CheckFieldValues(*message, &tree, source_name, "", /*check_strings=*/true);
}

std::string FieldPositionInText(absl::string_view text, const google::protobuf::Message& prototype,
                                absl::string_view path) {
  std::unique_ptr<google::protobuf::Message> message(prototype.New());
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;  // quiet: a text that does not parse has no positions
  parser.RecordErrorsTo(&errors);
  google::protobuf::TextFormat::ParseInfoTree root;
  parser.WriteLocationsTo(&root);
  if (!parser.ParseFromString(std::string(text), message.get())) return "";
  const google::protobuf::Descriptor* type = message->GetDescriptor();
  const google::protobuf::TextFormat::ParseInfoTree* tree = &root;
  const std::vector<absl::string_view> parts = absl::StrSplit(path, '.');
  for (size_t p = 0; p < parts.size(); ++p) {
    absl::string_view name = parts[p];
    int index = -1;
    if (const size_t open = name.find('['); open != absl::string_view::npos && name.back() == ']') {
      if (!absl::SimpleAtoi(name.substr(open + 1, name.size() - open - 2), &index) || index < 0) return "";
      name = name.substr(0, open);
    }
    const google::protobuf::FieldDescriptor* field = type->FindFieldByName(std::string(name));
    if (field == nullptr || field->is_repeated() != (index >= 0)) return "";
    if (p + 1 == parts.size()) {
      const google::protobuf::TextFormat::ParseLocation at = tree->GetLocation(field, index);
      return at.line >= 0 ? absl::StrCat(at.line + 1, ":", at.column + 1) : "";
    }
    if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) return "";
    tree = tree->GetTreeForNested(field, index);
    if (tree == nullptr) return "";
    type = field->message_type();
  }
  return "";
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
