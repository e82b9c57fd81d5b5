// GemmTable (workloads/kernels/gemm_table.hpp): CSV reading, its errors, the lookup.
#include "workloads/kernels/gemm_table.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/common/input_error.hpp"

namespace stepsim::workloads::kernels {
namespace {

// A 2x2x2 grid, batch 1, bf16: t(m, n, k) = 10 us * (m/256) * (n/256) * (k/256)^0.5 ... written
// out, so that log-linear interpolation has closed forms.
constexpr const char* kGrid =
    "# a comment line\n"
    "m,n,k,dtype,time\n"
    "256,256,256,bf16,10us\n"
    "1024,256,256,bf16,40us\n"
    "256,1024,256,bf16,40us\n"
    "1024,1024,256,bf16,160us\n"
    "256,256,1024,bf16,20us\n"
    "1024,256,1024,bf16,80us\n"
    "256,1024,1024,bf16,80us\n"
    "1024,1024,1024,bf16,320us\n";

TEST(GemmTable, GridPointsAreExactAndBetweenIsLogLinear) {
  const GemmTable t = GemmTable::from_csv(kGrid, "grid.csv");
  ASSERT_EQ(t.rows().size(), 8u);
  EXPECT_EQ(t.rows()[0].line, 3);
  EXPECT_EQ(t.lookup({256, 256, 256, 1}, GemmDtype::kBf16), Time::us(10));
  EXPECT_EQ(t.lookup({1024, 1024, 1024, 1}, GemmDtype::kBf16), Time::us(320));
  // m = 512 is half-way in log2 between 256 and 1024: the geometric mean of 10 and 40 us.
  EXPECT_EQ(t.lookup({512, 256, 256, 1}, GemmDtype::kBf16), Time::us(20));
  // All three half-way: 10 us * 2 * 2 * sqrt(2).
  const std::optional<Time> mid = t.lookup({512, 512, 512, 1}, GemmDtype::kBf16);
  ASSERT_TRUE(mid);
  EXPECT_NEAR(mid->microseconds(), 40 * std::sqrt(2.0), 1e-6);
  // Outside the range, another batch or another type: no answer.
  EXPECT_FALSE(t.lookup({2048, 256, 256, 1}, GemmDtype::kBf16));
  EXPECT_FALSE(t.lookup({128, 256, 256, 1}, GemmDtype::kBf16));
  EXPECT_FALSE(t.lookup({256, 256, 256, 2}, GemmDtype::kBf16));
  EXPECT_FALSE(t.lookup({256, 256, 256, 1}, GemmDtype::kFp8));
}

TEST(GemmTable, AModelWithATableUsesItInsideItsRange) {
  GemmModel m(*gemm_params_preset("h100"));
  m.set_table(std::make_shared<const GemmTable>(GemmTable::from_csv(kGrid, "grid.csv")));
  const GemmEstimate in = m.estimate({512, 256, 256, 1}, GemmDtype::kBf16);
  EXPECT_EQ(in.source, GemmSource::kTable);
  EXPECT_EQ(in.time, Time::us(20));
  EXPECT_DOUBLE_EQ(in.flops_per_s, 2.0 * 512 * 256 * 256 / 20e-6);
  EXPECT_EQ(m.estimate({4096, 256, 256, 1}, GemmDtype::kBf16).source, GemmSource::kModel);
  m.set_table(nullptr);
  EXPECT_EQ(m.estimate({512, 256, 256, 1}, GemmDtype::kBf16).source, GemmSource::kModel);
}

TEST(GemmTable, MissingCornerMeansNoAnswer) {
  const GemmTable t = GemmTable::from_csv(
      "m,n,k,dtype,time_ns\n256,256,256,bf16,1000\n1024,1024,1024,bf16,9000\n", "sparse.csv");
  EXPECT_EQ(t.lookup({256, 256, 256, 1}, GemmDtype::kBf16), Time::ns(1000));
  EXPECT_FALSE(t.lookup({512, 512, 512, 1}, GemmDtype::kBf16));
  EXPECT_FALSE(t.lookup({256, 1024, 256, 1}, GemmDtype::kBf16));  // inside the axes, not a row
}

TEST(GemmTable, ReadsXlaColumnsAndSkipsMixedInputs) {
  const GemmTable t = GemmTable::from_csv(
      "b,m,n,k,lhs_dtype,rhs_dtype,out_dtype,flops_per_sec,time_ns,tflops\n"
      "2,256,256,256,bf16,bf16,bf16,1,4992,1\n"
      "2,256,256,256,f32,f32,f32,1,5568,1\n"
      "2,256,256,256,f8e4m3fn,f8e4m3fn,bf16,1,5600,1\n"
      "2,256,256,256,f8e4m3fn,f8e5m2,bf16,1,5601,1\n",
      "xla.csv");
  ASSERT_EQ(t.rows().size(), 3u);
  EXPECT_EQ(t.lookup({256, 256, 256, 2}, GemmDtype::kBf16), Time::ns(4992));
  EXPECT_EQ(t.lookup({256, 256, 256, 2}, GemmDtype::kTf32), Time::ns(5568));
  EXPECT_EQ(t.lookup({256, 256, 256, 2}, GemmDtype::kFp8), Time::ns(5600));
}

TEST(GemmTable, QuotedFieldsMayHoldCommas) {
  const GemmTable t = GemmTable::from_csv(
      "M,N,K,dtype,time_s,note\n256,256,256,fp8e4m3,1.5e-05,\"per-tensor, bf16 out\"\n", "q.csv");
  EXPECT_EQ(t.lookup({256, 256, 256, 1}, GemmDtype::kFp8), Time::us(15));
}

void expect_error(const std::string& csv, const std::vector<std::string>& parts) {
  try {
    (void)GemmTable::from_csv(csv, "user.csv");
    FAIL() << "no error for:\n" << csv;
  } catch (const InputError& e) {
    for (const std::string& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << " lacks " << p;
    }
  }
}

TEST(GemmTable, BadRowsNameTheFileTheRowTheColumnAndTheValue) {
  const std::string header = "m,n,k,dtype,time\n256,256,256,bf16,5us\n";
  expect_error(header + "256,256,abc,bf16,5us\n", {"user.csv:3", "column 'k'", "'abc'"});
  expect_error(header + "256,-4,256,bf16,5us\n", {"user.csv:3", "column 'n'", "'-4'"});
  expect_error(header + "256,256,256,int8,5us\n", {"user.csv:3", "column 'dtype'", "'int8'"});
  expect_error(header + "512,256,256,bf16,5 parsecs\n", {"user.csv:3", "column 'time'", "parsecs"});
  expect_error(header + "512,256,256,bf16,5\n", {"user.csv:3", "column 'time'"});
  expect_error(header + "512,256,256,bf16\n", {"user.csv:3", "4 fields", "5"});
  expect_error(header + "256,256,256,bf16,6us\n", {"user.csv:3", "second row", "m=256"});
  expect_error("m,n,k,dtype,time_ns\n256,256,256,bf16,0\n",
               {"user.csv:2", "column 'time_ns'", "'0'"});
  expect_error("m,n,dtype,time\n256,256,bf16,5us\n", {"user.csv:1", "column 'k'"});
  expect_error("m,n,k,time\n256,256,256,5us\n", {"user.csv:1", "column 'dtype'"});
}

TEST(GemmTable, UnreliableSm90Fp8RowsAreDropped) {
  // bf16 at 100 TFLOP/s; fp8 rows at 150 (kept), 250 (over twice bf16) and one over the 1979
  // TFLOP/s peak.
  const double flops = 2.0 * 4096 * 4096 * 4096;
  const auto ns = [&](double tflops) { return std::to_string(std::llround(flops / tflops / 1e3)); };
  const GemmTable t = GemmTable::from_csv(
      "b,m,n,k,dtype,time_ns\n1,4096,4096,4096,bf16," + ns(100) + "\n1,4096,4096,4096,fp8," +
          ns(150) + "\n2,4096,4096,4096,bf16," + ns(1500) + "\n2,4096,4096,4096,fp8," + ns(250) +
          "\n4,4096,4096,4096,bf16," + ns(1200) + "\n4,4096,4096,4096,fp8," + ns(2000) + "\n",
      "t.csv");
  const GemmTable kept = without_unreliable_sm90_fp8_rows(t);
  EXPECT_EQ(kept.rows().size(), 5u);  // only the 2000 TFLOP/s row goes
  EXPECT_TRUE(kept.lookup({4096, 4096, 4096, 1}, GemmDtype::kFp8));
  EXPECT_TRUE(kept.lookup({4096, 4096, 4096, 2}, GemmDtype::kFp8));
  EXPECT_FALSE(kept.lookup({4096, 4096, 4096, 4}, GemmDtype::kFp8));
  const GemmTable ratio_only =
      GemmTable::from_csv("m,n,k,dtype,time_ns\n4096,4096,4096,bf16," + ns(100) +
                              "\n4096,4096,4096,fp8," + ns(250) + "\n",
                          "r.csv");
  EXPECT_FALSE(
      without_unreliable_sm90_fp8_rows(ratio_only).lookup({4096, 4096, 4096, 1}, GemmDtype::kFp8));
}

}  // namespace
}  // namespace stepsim::workloads::kernels
