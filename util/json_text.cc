#include "util/json_text.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "google/protobuf/descriptor.h"

namespace kvsim {
namespace {

using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

Json FieldValue(const Message& message, const FieldDescriptor* field, int index) {
  const Reflection* r = message.GetReflection();
  const bool repeated = field->is_repeated();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return repeated ? r->GetRepeatedInt32(message, field, index) : r->GetInt32(message, field);
    case FieldDescriptor::CPPTYPE_INT64:
      return repeated ? r->GetRepeatedInt64(message, field, index) : r->GetInt64(message, field);
    case FieldDescriptor::CPPTYPE_UINT32:
      return repeated ? r->GetRepeatedUInt32(message, field, index) : r->GetUInt32(message, field);
    case FieldDescriptor::CPPTYPE_UINT64:
      return repeated ? r->GetRepeatedUInt64(message, field, index) : r->GetUInt64(message, field);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return JsonNumberOrNull(repeated ? r->GetRepeatedDouble(message, field, index) : r->GetDouble(message, field));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return JsonNumberOrNull(repeated ? r->GetRepeatedFloat(message, field, index) : r->GetFloat(message, field));
    case FieldDescriptor::CPPTYPE_BOOL:
      return repeated ? r->GetRepeatedBool(message, field, index) : r->GetBool(message, field);
    case FieldDescriptor::CPPTYPE_ENUM:
      return (repeated ? r->GetRepeatedEnum(message, field, index) : r->GetEnum(message, field))->name();
    case FieldDescriptor::CPPTYPE_STRING:
      return repeated ? r->GetRepeatedString(message, field, index) : r->GetString(message, field);
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return ProtoToJson(repeated ? r->GetRepeatedMessage(message, field, index) : r->GetMessage(message, field));
  }
  return nullptr;
}

}  // namespace

std::string DumpJson(const Json& json) {
  return json.dump(2, ' ', /*ensure_ascii=*/false, nlohmann::detail::error_handler_t::replace) + "\n";
}

std::string DumpJsonLine(const Json& json) {
  return json.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::detail::error_handler_t::replace);
}

Json JsonNumberOrNull(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }

Json ProtoToJson(const Message& message) {
  Json out = Json::object();
  const Reflection* r = message.GetReflection();
  const auto* descriptor = message.GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    if (field->is_repeated()) {
      Json array = Json::array();
      for (int j = 0; j < r->FieldSize(message, field); ++j) array.push_back(FieldValue(message, field, j));
      out[field->name()] = std::move(array);
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (r->HasField(message, field)) out[field->name()] = FieldValue(message, field, 0);
    } else if (field->has_presence() && !r->HasField(message, field)) {
      out[field->name()] = nullptr;
    } else {
      out[field->name()] = FieldValue(message, field, 0);
    }
  }
  return out;
}

std::string JsonQuote(absl::string_view s) {
  return Json(std::string(s)).dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
}

std::string JsonNumber(double x) { return std::isfinite(x) ? absl::StrFormat("%.6f", x) : "null"; }

}  // namespace kvsim
