// The host-side helpers (handler/host.hpp): reading structs across ABI minors, sinks,
// and the version rule.
#include <handler/host.hpp>

#include <gtest/gtest.h>

#include <cstring>

namespace {

using handler::sdk::abi_incompatibility;
using handler::sdk::read_struct;
using handler::sdk::StringSink;

TEST(SdkReadStruct, ShorterWriterLeavesTheTailZero) {
    hd_plugin_info written;
    std::memset(&written, 0xab, sizeof written); // garbage everywhere
    written.struct_size = offsetof(hd_plugin_info, harness);
    written.abi_major = 1;
    const hd_plugin_info read = read_struct(&written);
    EXPECT_EQ(read.struct_size, offsetof(hd_plugin_info, harness)); // the writer's size is kept
    EXPECT_EQ(read.abi_major, 1);
    EXPECT_EQ(read.harness, nullptr);
    EXPECT_EQ(read.addon, nullptr);
    EXPECT_NE(read.destroy, nullptr); // inside the writer's size: copied as written
}

TEST(SdkReadStruct, LongerWriterIsReadUpToOurSize) {
    // A writer from a newer minor: our struct followed by fields we do not know.
    struct Newer {
        hd_event_sink known;
        void* unknown;
    } newer{};
    newer.known.struct_size = sizeof newer;
    newer.known.context = &newer;
    newer.unknown = &newer;
    const hd_event_sink read = read_struct(&newer.known);
    EXPECT_EQ(read.struct_size, sizeof newer);
    EXPECT_EQ(read.context, &newer);
}

TEST(SdkReadStruct, NullReadsAsAllZero) {
    const hd_host_api read = read_struct<hd_host_api>(nullptr);
    EXPECT_EQ(read.struct_size, 0u);
    EXPECT_EQ(read.log, nullptr);
    EXPECT_EQ(read.storage_remove, nullptr);
}

TEST(SdkStr, ConvertsBothWays) {
    const std::string text = "abc";
    const hd_str borrowed = handler::sdk::to_str(text);
    EXPECT_EQ(borrowed.data, text.data());
    EXPECT_EQ(borrowed.size, 3u);
    EXPECT_EQ(handler::sdk::to_view(borrowed), "abc");
    EXPECT_EQ(handler::sdk::to_view(hd_str{nullptr, 5}), ""); // zero-filled data is empty
}

TEST(SdkStringSink, ConcatenatesPieces) {
    StringSink sink;
    const hd_sink raw = sink.sink();
    raw.append(raw.context, {"ab", 2});
    raw.append(raw.context, {nullptr, 0});
    raw.append(raw.context, {"c", 1});
    EXPECT_EQ(sink.text(), "abc");
    EXPECT_FALSE(sink.truncated());
    EXPECT_EQ(sink.take(), "abc");
}

TEST(SdkStringSink, StopsAtItsLimit) {
    StringSink sink(4);
    const hd_sink raw = sink.sink();
    raw.append(raw.context, {"abc", 3});
    raw.append(raw.context, {"def", 3});
    raw.append(raw.context, {"g", 1});
    EXPECT_EQ(sink.text(), "abcd");
    EXPECT_TRUE(sink.truncated());
}

TEST(SdkStringSink, WriteToToleratesAnEmptySink) {
    handler::sdk::write_to(hd_sink{}, "nobody listens"); // must not crash
    SUCCEED();
}

TEST(SdkAbiCheck, SameMajorAndOlderOrEqualMinorLoads) {
    EXPECT_EQ(abi_incompatibility(1, 0, 1, 0), std::nullopt);
    EXPECT_EQ(abi_incompatibility(1, 0, 1, 3), std::nullopt);
    EXPECT_EQ(abi_incompatibility(1, 3, 1, 3), std::nullopt);
    EXPECT_EQ(abi_incompatibility(HD_ABI_MAJOR, HD_ABI_MINOR), std::nullopt);
}

TEST(SdkAbiCheck, NewerMajorNamesBothVersionsAndTheFix) {
    const auto message = abi_incompatibility(2, 0, 1, 0);
    ASSERT_TRUE(message);
    EXPECT_EQ(*message, "built for plugin ABI 2.0, but this handlerd speaks 1.0: rebuild it against "
                        "SDK 1.x or upgrade handlerd");
}

TEST(SdkAbiCheck, NewerMinorIsRefused) {
    const auto message = abi_incompatibility(1, 1, 1, 0);
    ASSERT_TRUE(message);
    EXPECT_NE(message->find("1.1"), std::string::npos);
    EXPECT_NE(message->find("1.0"), std::string::npos);
    EXPECT_NE(message->find("upgrade handlerd"), std::string::npos);
}

TEST(SdkAbiCheck, OlderMajorIsRefused) {
    const auto message = abi_incompatibility(1, 4, 2, 0);
    ASSERT_TRUE(message);
    EXPECT_NE(message->find("1.4"), std::string::npos);
    EXPECT_NE(message->find("2.0"), std::string::npos);
    EXPECT_NE(message->find("rebuild it against SDK 2.x"), std::string::npos);
}

TEST(SdkStatusName, NamesEveryStatus) {
    EXPECT_STREQ(handler::sdk::status_name(HD_STATUS_OK), "OK");
    EXPECT_STREQ(handler::sdk::status_name(HD_STATUS_FAILED), "FAILED");
    EXPECT_STREQ(handler::sdk::status_name(static_cast<hd_status>(0)), "UNKNOWN");
}

} // namespace
