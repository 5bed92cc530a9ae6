#!/usr/bin/env bash
# Prints a libFuzzer dictionary for text protos of the messages in PROTO files (experiment configs,
# workload specs, calibration tables): every field name as "name: " and "name {", every enum value, the
# text format's syntax and numbers at the edges of what the checks accept. Made from the schemas each run,
# so it follows them. Usage: textproto_dict.sh proto/config.proto proto/spec.proto ...
set -eu
echo "# text-proto dictionary made by fuzz/textproto_dict.sh from: $*"
sed -nE 's/^ *(repeated |optional )?[A-Za-z0-9_.]+ +([a-z][a-z0-9_]*) *= *[0-9]+.*/\2/p' "$@" | sort -u |
  while read -r field; do
    echo "field_$field=\"$field: \""
    echo "message_$field=\"$field {\""
  done
sed -nE 's/^ *([A-Z][A-Z0-9_]+) *= *-?[0-9]+;.*/\1/p' "$@" | sort -u | while read -r value; do
  echo "enum_$value=\"$value\""
done
cat <<'DICT'
open="{"
close="}"
colon=":"
list_open="["
list_close="]"
string="\"\""
comment="# "
newline="\x0a"
true="true"
false="false"
nan="nan"
inf="inf"
minus_inf="-inf"
hex="0x7fffffff"
exponent="1e308"
tiny="1e-320"
int32_max="2147483647"
int32_over="2147483648"
int63_max="9223372036854775807"
uint64_over="18446744073709551616"
negative="-1"
zero="0"
fraction="0.5"
bad_utf8="\xc3\x28"
DICT
