// Framework controls (model/framework.hpp): the table is whole (names unique and prefixed by their
// target, keywords unique per target, a switch's bare value readable), every row reads from
// --framework and writes back the same, the hook's environment value is what the hook parses,
// and bad items are refused with the reason.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "model/framework.hpp"
#include "model/limits.hpp"

namespace {

using namespace cco::model;

std::string error_of(const std::string& spec) {
  try {
    parse_framework(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Framework, TableIsWhole) {
  std::set<std::string> names, keywords;
  for (const auto& r : kFrameworkControls) {
    EXPECT_TRUE(names.insert(r.name).second) << r.name;
    EXPECT_TRUE(keywords.insert(std::string(target_name(r.target)) + ":" + r.keyword).second) << r.name;
    EXPECT_EQ(std::string(r.name).rfind(std::string(target_name(r.target)) + ".", 0), 0u) << r.name;
    EXPECT_GT(std::string(r.what).size(), 10u) << r.name;
    if (r.kind == FrameworkValue::Number) {
      EXPECT_GT(std::string(r.unit).size(), 0u) << r.name;
    }
    // Every row reads with a value and writes back as read.
    const std::string v = r.kind == FrameworkValue::Switch ? "off" : "12.5";
    const auto s = parse_framework(std::string(r.name) + "=" + v);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(framework_text(s), std::string(r.name) + "=" + v);
    EXPECT_EQ(parse_framework(framework_text(s)), s);
  }
}

TEST(Framework, ReadsValuesAndWritesTheHooksValue) {
  const auto s = parse_framework("DDP.Bucket_View,ddp.bucket_mb=100,fsdp.reshard=OFF");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].value, "True");
  EXPECT_EQ(s[1].value, "100");
  EXPECT_EQ(s[2].value, "False");
  EXPECT_EQ(framework_text(s), "ddp.bucket_view=on,ddp.bucket_mb=100,fsdp.reshard=off");
  EXPECT_EQ(framework_env(s),
            "ddp.bucket_view:ddp:gradient_as_bucket_view:True;ddp.bucket_mb:ddp:bucket_cap_mb:100;"
            "fsdp.reshard:fsdp:reshard_after_forward:False");
  for (const char* on : {"on", "true", "1", "ON"})
    EXPECT_EQ(parse_framework(std::string("ddp.bucket_view=") + on)[0].value, "True") << on;
  for (const char* off : {"off", "false", "0"})
    EXPECT_EQ(parse_framework(std::string("ddp.bucket_view=") + off)[0].value, "False") << off;
  // Only the bucket size may change answers, and it says how.
  const auto r = framework_rounding(s);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("ddp.bucket_mb: "), std::string::npos);
  EXPECT_TRUE(framework_rounding(parse_framework("ddp.bucket_view,fsdp.reshard=off")).empty());
}

TEST(Framework, RefusesBadItems) {
  EXPECT_NE(error_of("ddp.bucket").find("unknown control (known: ddp.bucket_view, ddp.bucket_mb, "
                                        "fsdp.reshard)"),
            std::string::npos);
  EXPECT_NE(error_of("ddp.bucket_view,ddp.bucket_view=off").find("named twice"), std::string::npos);
  EXPECT_NE(error_of("ddp.bucket_mb").find("needs a value"), std::string::npos);
  EXPECT_NE(error_of("fsdp.reshard").find("needs a value (fsdp.reshard=on or =off)"), std::string::npos);
  EXPECT_NE(error_of("ddp.bucket_view=maybe").find("'maybe' is not on or off"), std::string::npos);
  EXPECT_NE(error_of("ddp.bucket_view,").find("an empty item"), std::string::npos);
  EXPECT_NE(error_of(",ddp.bucket_view").find("an empty item"), std::string::npos);
  for (const char* bad : {"0", "0.0", "-1", "1e3", ".5", "5.", "1.2.3", "inf", "nan", "", "1000001", "12 "})
    EXPECT_NE(error_of(std::string("ddp.bucket_mb=") + bad).find("is not a size in MiB"),
              std::string::npos)
        << bad;
  EXPECT_EQ(error_of("ddp.bucket_mb=1000000"), "");
  EXPECT_EQ(error_of("ddp.bucket_mb=0.5"), "");
}

}  // namespace
