// File: util/text_proto.h
//
// Loading text-format protos (configs, presets) with errors that name the file, line and column.
//
// Example:
//   proto::ExperimentConfig config;
//   KVSIM_RETURN_IF_ERROR(ParseTextProtoFile("exp.textproto", &config));
//   // on a typo: INVALID_ARGUMENT "exp.textproto:3:5: Message type "kvsim.proto.Cache" has no field named
//   "blok_tokens"."
#ifndef KVSIM_UTIL_TEXT_PROTO_H_
#define KVSIM_UTIL_TEXT_PROTO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace kvsim {

// Parses `text` into `message` (cleared first). `source_name` prefixes error positions
// ("source:line:column: what"); lines and columns count from 1. The first error is returned as
// InvalidArgument with a one-line message. An enum field set to a number its enum does not define
// (`chunking: 99`, `preemption: -1`; the text format accepts any number for an open enum) is an error
// naming its position and field path; so is a string field (not bytes) that is not well-formed UTF-8,
// which proto3 requires of strings (a results file recording it would not read back).
absl::Status ParseTextProto(absl::string_view text, absl::string_view source_name, google::protobuf::Message* message);

// OK if every enum field of `message` (nested messages included) holds a value its enum defines;
// otherwise InvalidArgument "SOURCE: field PATH: N is not a value of ENUM (known: ...)". For messages
// built in code (a sweep point); ParseTextProto runs it on what it parses, with line numbers.
absl::Status CheckDefinedEnums(const google::protobuf::Message& message, absl::string_view source);

// Reads `path` and parses it as above (after a UTF-8 byte-order mark, if any). NotFound if the file is
// missing.
absl::Status ParseTextProtoFile(const std::string& path, google::protobuf::Message* message);

// Where the text proto `text` (of `prototype`'s message type) sets the field `path`, as "LINE:COLUMN"
// (from 1): field names joined by '.', an element of a repeated field as name[i], as the config checks
// name fields ("cache.lower_tiers[1].kind", "scheduler.max_num_seqs"). Empty if `text` does not set it
// (a value from a preset or a default) or does not parse, or `path` names no field of the type.
std::string FieldPositionInText(absl::string_view text, const google::protobuf::Message& prototype,
                                absl::string_view path);

// The text format of `message`, fields in declaration order (deterministic).
std::string ToTextProto(const google::protobuf::Message& message);

}  // namespace kvsim

#endif  // KVSIM_UTIL_TEXT_PROTO_H_
