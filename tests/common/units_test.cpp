// Parsing and printing of sizes, bandwidths and times (sim/common/units.hpp). Expected figures are
// the unit definitions: decimal prefixes are powers of 1000, binary ones powers of 1024, 8 bits
// make a byte, 1 s = 1e12 ps.
#include "sim/common/units.hpp"

#include <gtest/gtest.h>

#include "sim/common/input_error.hpp"

namespace stepsim {
namespace {

TEST(ParseBytes, DecimalAndBinaryPrefixes) {
  EXPECT_EQ(parse_bytes("1B").count(), 1);
  EXPECT_EQ(parse_bytes("1KB").count(), 1000);
  EXPECT_EQ(parse_bytes("1kB").count(), 1000);
  EXPECT_EQ(parse_bytes("25MB").count(), 25'000'000);
  EXPECT_EQ(parse_bytes("1GB").count(), 1'000'000'000);
  EXPECT_EQ(parse_bytes("2TB").count(), 2'000'000'000'000);
  EXPECT_EQ(parse_bytes("1KiB").count(), 1024);
  EXPECT_EQ(parse_bytes("25MiB").count(), 25 * 1024 * 1024);
  EXPECT_EQ(parse_bytes("16GiB").count(), 16LL << 30);
  EXPECT_EQ(parse_bytes("1TiB").count(), 1LL << 40);
}

TEST(ParseBytes, FractionsExponentsAndSpaces) {
  EXPECT_EQ(parse_bytes("1.5GiB").count(), 1'610'612'736);  // 1.5 * 2^30, exact
  EXPECT_EQ(parse_bytes("1.1GB").count(), 1'100'000'000);   // exact, no floating-point rounding
  EXPECT_EQ(parse_bytes("25 MiB").count(), 25 << 20);
  EXPECT_EQ(parse_bytes("  8B ").count(), 8);
  EXPECT_EQ(parse_bytes("1e3B").count(), 1000);
  EXPECT_EQ(parse_bytes("0.5KB").count(), 500);
  EXPECT_EQ(parse_bytes("0B").count(), 0);
  EXPECT_EQ(parse_bytes("+4KB").count(), 4000);
}

TEST(ParseBytes, Errors) {
  EXPECT_THROW(parse_bytes("400"), InputError);      // no unit
  EXPECT_THROW(parse_bytes("-1GB"), InputError);     // negative
  EXPECT_THROW(parse_bytes("1.5B"), InputError);     // not whole bytes
  EXPECT_THROW(parse_bytes("GB"), InputError);       // no number
  EXPECT_THROW(parse_bytes("1Gb"), InputError);      // bits are not a size
  EXPECT_THROW(parse_bytes("10GB/s"), InputError);   // a bandwidth
  EXPECT_THROW(parse_bytes("9EB"), InputError);      // unknown unit
  EXPECT_THROW(parse_bytes("10000PB"), InputError);  // beyond int64
  EXPECT_THROW(parse_bytes("1e400B"), InputError);   // exponent out of range
  EXPECT_THROW(parse_bytes(""), InputError);
  EXPECT_THROW(parse_bytes("1234567890123456789012345678901234B"), InputError);
}

TEST(ParseBytes, MessagesNameTheTextAndTheExpectation) {
  try {
    parse_bytes("400");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'400' has no unit"), std::string::npos);
  }
}

TEST(ParseBandwidth, BitsAndBytesAreNeverConfused) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbps").value(), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gb/s").value(), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("50GB/s").value(), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("900 GB/s").value(), 900e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8bps").value(), 1.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1Kbps").value(), 125.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1Mbps").value(), 125'000.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1Tbps").value(), 125e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1B/s").value(), 1.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1KB/s").value(), 1e3);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1MB/s").value(), 1e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1TB/s").value(), 1e12);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1GiB/s").value(), 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("2MiB/s").value(), 2097152.0);
}

TEST(ParseBandwidth, Errors) {
  EXPECT_THROW(parse_bandwidth("400"), InputError);
  EXPECT_THROW(parse_bandwidth("400GBps"), InputError);  // ambiguous: bits or bytes?
  EXPECT_THROW(parse_bandwidth("-5GB/s"), InputError);
  EXPECT_THROW(parse_bandwidth("5GB"), InputError);       // a size
  EXPECT_THROW(parse_bandwidth("5Gibps"), InputError);    // binary prefixes are for bytes only
  EXPECT_THROW(parse_bandwidth("1e30TB/s"), InputError);  // absurd
  try {
    parse_bandwidth("400GBps");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("GB/s"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Gbps"), std::string::npos);
  }
}

TEST(ParseTime, AllUnits) {
  EXPECT_EQ(parse_time("1ps").picoseconds(), 1);
  EXPECT_EQ(parse_time("1ns").picoseconds(), 1'000);
  EXPECT_EQ(parse_time("1.5us").picoseconds(), 1'500'000);
  EXPECT_EQ(parse_time("2µs").picoseconds(), 2'000'000);
  EXPECT_EQ(parse_time("10ms").picoseconds(), 10'000'000'000);
  EXPECT_EQ(parse_time("3s").picoseconds(), 3'000'000'000'000);
  EXPECT_EQ(parse_time("0.000001s").picoseconds(), 1'000'000);
}

TEST(ParseTime, Errors) {
  EXPECT_THROW(parse_time("5"), InputError);
  EXPECT_THROW(parse_time("1.5ps"), InputError);  // finer than the clock
  EXPECT_THROW(parse_time("-1us"), InputError);
  EXPECT_THROW(parse_time("1min"), InputError);
  EXPECT_THROW(parse_time("1e7s"), InputError);  // beyond int64 picoseconds (~106 days)
}

TEST(Format, RoundTripsExactValues) {
  for (const char* text : {"25 MiB", "16 GiB", "25 MB", "1 KiB", "8 B", "1 TB"}) {
    EXPECT_EQ(format_bytes(parse_bytes(text)), text);
  }
  for (const char* text : {"1.5 us", "10 ms", "3 s", "250 ns", "7 ps"}) {
    EXPECT_EQ(format_time(parse_time(text)), text);
  }
  EXPECT_EQ(format_bandwidth(parse_bandwidth("400Gbps")), "50 GB/s");
  EXPECT_EQ(format_bandwidth(parse_bandwidth("450GB/s")), "450 GB/s");
  EXPECT_EQ(format_bytes(Bytes(1'610'612'736)), "1.5 GiB");
  EXPECT_EQ(format_bytes(Bytes(1'234'567)), "1.18 MiB");
}

TEST(Time, ArithmeticAndConversions) {
  EXPECT_EQ((Time::us(1) + Time::ns(500)).picoseconds(), 1'500'000);
  EXPECT_DOUBLE_EQ(Time::ms(2).seconds(), 2e-3);
  EXPECT_EQ(Time::from_seconds(1.5e-6), Time::ns(1500));
  EXPECT_THROW(Time::from_seconds(-1), InputError);
  EXPECT_THROW(Time::from_seconds(1e8), InputError);
  // 1 GB at 50 GB/s = 20 ms.
  EXPECT_EQ(transfer_time(Bytes(1'000'000'000), BytesPerSecond::gigabytes(50)), Time::ms(20));
}

}  // namespace
}  // namespace stepsim
