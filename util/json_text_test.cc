#include "util/json_text.h"

#include <cmath>
#include <limits>

#include "google/protobuf/duration.pb.h"
#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(JsonTextTest, QuotesAndEscapesByHand) {
  EXPECT_EQ(JsonQuote("snapkv"), "\"snapkv\"");
  EXPECT_EQ(JsonQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonQuote(std::string("x\ny\x01", 4)), "\"x\\ny\\u0001\"");
}

TEST(JsonTextTest, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  // Latin-1 "caf\xe9" (not UTF-8), a lone continuation byte, an overlong '/', a surrogate, and a
  // truncated 3-byte sequence become U+FFFD (EF BF BD): one per byte that cannot start a sequence, one
  // per maximal truncated subpart (Unicode's recommended practice, which nlohmann-json follows);
  // valid UTF-8 ("\u00e9", "\u20ac", U+1F600) is kept, so the result is always valid JSON.
  EXPECT_EQ(JsonQuote("caf\xe9"), "\"caf\xef\xbf\xbd\"");
  EXPECT_EQ(JsonQuote("a\x80"
                      "b"),
            "\"a\xef\xbf\xbd"
            "b\"");
  EXPECT_EQ(JsonQuote("\xc0\xaf"), "\"\xef\xbf\xbd\xef\xbf\xbd\"");
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
  EXPECT_EQ(JsonQuote("\xe2\x82"), "\"\xef\xbf\xbd\"");
  EXPECT_EQ(JsonQuote("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
}

TEST(JsonTextTest, NumbersWithSixDecimalsAndNullForNonFinite) {
  EXPECT_EQ(JsonNumber(0.5), "0.500000");
  EXPECT_EQ(JsonNumber(-2), "-2.000000");
  EXPECT_EQ(JsonNumber(std::nan("")), "null");
  EXPECT_EQ(JsonNumber(std::numeric_limits<double>::infinity()), "null");
}

TEST(JsonTextTest, ObjectsKeepKeyOrderAndNullForNonFinite) {
  Json row = Json::object();
  row["policy"] = "lru";
  row["hit_ratio"] = JsonNumberOrNull(0.5);
  row["tpot_ms"] = JsonNumberOrNull(std::nan(""));
  row["policy"] = "fifo";  // a key set twice is one key
  EXPECT_EQ(DumpJson(row), "{\n  \"policy\": \"fifo\",\n  \"hit_ratio\": 0.5,\n  \"tpot_ms\": null\n}\n");
}

TEST(JsonTextTest, ProtoInt64IsANumberNotAString) {
  google::protobuf::Duration d;
  d.set_seconds(int64_t{9007199254740993});  // 2^53 + 1: exact only as an integer
  const Json json = ProtoToJson(d);
  ASSERT_TRUE(json["seconds"].is_number_integer());
  EXPECT_EQ(json["seconds"].get<int64_t>(), int64_t{9007199254740993});
  EXPECT_EQ(json["nanos"], 0);  // default values are written
  EXPECT_EQ(json.dump(), "{\"seconds\":9007199254740993,\"nanos\":0}");
}

TEST(JsonTextTest, OneLineCompact) {
  Json row = Json::object();
  row["id"] = 7;
  row["name"] = "a\"b";
  row["xs"] = {1, 2};
  EXPECT_EQ(DumpJsonLine(row), "{\"id\":7,\"name\":\"a\\\"b\",\"xs\":[1,2]}");
}

}  // namespace
}  // namespace kvsim
