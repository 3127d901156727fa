#include "pkg/base/annotate.h"

#include "gtest/gtest.h"

namespace lustre_csi::base {
namespace {

TEST(AnnotateTest, KeepsCodeAndPayloads) {
  absl::Status s = absl::NotFoundError("no such file");
  s.SetPayload("errno", absl::Cord("2"));
  absl::Status a = Annotate(s, "open /x");
  EXPECT_EQ(a.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(a.message(), "open /x: no such file");
  ASSERT_TRUE(a.GetPayload("errno").has_value());
  EXPECT_EQ(std::string(*a.GetPayload("errno")), "2");
  EXPECT_EQ(Annotate(s, ""), s);
  EXPECT_TRUE(Annotate(absl::OkStatus(), "x").ok());
  absl::Status w = WithMessage(s, "other words");
  EXPECT_EQ(w.message(), "other words");
  EXPECT_EQ(w.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(w.GetPayload("errno").has_value());
}

}  // namespace
}  // namespace lustre_csi::base
