// plugins/common: the line splitting, JSON line parsing and event payloads the harness
// plugins share.
#include <plugin_common/events.hpp>
#include <plugin_common/json_line.hpp>
#include <plugin_common/line_buffer.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using handler::plugin_common::LineBuffer;
namespace common = handler::plugin_common;

// What a LineBuffer handed out: lines as they are, overflows as "<overflow N>".
struct Collected {
    std::vector<std::string> items;

    void feed(LineBuffer& buffer, std::string_view bytes) {
        buffer.feed(
            bytes, [&](std::string_view line) { items.emplace_back(line); },
            [&](std::size_t length) { items.push_back("<overflow " + std::to_string(length) + ">"); });
    }
    void finish(LineBuffer& buffer) {
        buffer.finish([&](std::string_view line) { items.emplace_back(line); },
                      [&](std::size_t length) { items.push_back("<overflow " + std::to_string(length) + ">"); });
    }
};

std::vector<std::string> split_and_collect(std::string_view input, std::size_t cut, std::size_t max_line) {
    LineBuffer buffer(max_line);
    Collected collected;
    collected.feed(buffer, input.substr(0, cut));
    collected.feed(buffer, input.substr(cut));
    collected.finish(buffer);
    return collected.items;
}

TEST(PluginCommonLineBuffer, GivesTheSameLinesWhereverThePiecesSplit) {
    const std::string input = "first\nsecond caf\xc3\xa9 \xf0\x9f\x98\x80\r\n\nlast without LF";
    const std::vector<std::string> expected = {"first", "second caf\xc3\xa9 \xf0\x9f\x98\x80", "",
                                               "last without LF"};
    for (std::size_t cut = 0; cut <= input.size(); ++cut)
        EXPECT_EQ(split_and_collect(input, cut, LineBuffer::kDefaultMaxLine), expected) << "cut at " << cut;

    LineBuffer buffer;
    Collected bytewise;
    for (char byte : input) bytewise.feed(buffer, std::string_view(&byte, 1));
    EXPECT_EQ(bytewise.items, std::vector<std::string>(expected.begin(), expected.end() - 1));
    EXPECT_EQ(buffer.pending_size(), std::string("last without LF").size());
    bytewise.finish(buffer);
    EXPECT_EQ(bytewise.items, expected);
}

TEST(PluginCommonLineBuffer, HoldsASplitCharacterUntilItsLineEnds) {
    LineBuffer buffer;
    Collected collected;
    collected.feed(buffer, "caf\xc3"); // "é" cut after its lead byte
    EXPECT_TRUE(collected.items.empty());
    collected.feed(buffer, "\xa9\n");
    EXPECT_EQ(collected.items, std::vector<std::string>{"caf\xc3\xa9"});
}

TEST(PluginCommonLineBuffer, DropsAnOverLongLineAndReportsItsLength) {
    const std::string input = "0123456789abc\nok\n01234567\n";
    const std::vector<std::string> expected = {"<overflow 13>", "ok", "01234567"};
    for (std::size_t cut = 0; cut <= input.size(); ++cut)
        EXPECT_EQ(split_and_collect(input, cut, 8), expected) << "cut at " << cut;
}

TEST(PluginCommonLineBuffer, DoesNotHoldTheBytesOfAnOverLongLine) {
    LineBuffer buffer(8);
    Collected collected;
    collected.feed(buffer, "0123456");
    EXPECT_EQ(buffer.pending_size(), 7u);
    collected.feed(buffer, "789");
    EXPECT_EQ(buffer.pending_size(), 0u);
    collected.feed(buffer, std::string(100, 'x'));
    EXPECT_EQ(buffer.pending_size(), 0u);
    EXPECT_TRUE(collected.items.empty());
    collected.finish(buffer); // the stream ended inside it
    EXPECT_EQ(collected.items, std::vector<std::string>{"<overflow 110>"});
    collected.feed(buffer, "next\n");
    EXPECT_EQ(collected.items, (std::vector<std::string>{"<overflow 110>", "next"}));
}

TEST(PluginCommonJsonLine, ParsesObjectsAndRefusesWhatIsNotJson) {
    auto value = common::parse_json_line(R"({"type":"x","n":[1,2]})");
    ASSERT_TRUE(value);
    EXPECT_EQ(value->at("type").as_string(), "x");
    EXPECT_FALSE(common::parse_json_line(""));
    EXPECT_FALSE(common::parse_json_line("Loading... done"));
    EXPECT_FALSE(common::parse_json_line(R"({"type":"x")"));
}

TEST(PluginCommonJsonLine, AllowsDeepNesting) {
    const std::string deep = std::string(200, '[') + std::string(200, ']');
    EXPECT_TRUE(common::parse_json_line(deep)); // Boost's default stops at 32
}

TEST(PluginCommonJsonLine, ReplacesUnpairedSurrogatesAndInvalidBytes) {
    // Node writes half a surrogate pair as an escape; Boost.JSON refuses the line.
    auto lone = common::parse_json_line(R"({"text":"a\ud83d b"})");
    ASSERT_TRUE(lone);
    EXPECT_EQ(lone->at("text").as_string(), "a\xef\xbf\xbd b");
    auto trailing = common::parse_json_line(R"({"text":"\ude00"})");
    ASSERT_TRUE(trailing);
    EXPECT_EQ(trailing->at("text").as_string(), "\xef\xbf\xbd");
    auto pair = common::parse_json_line(R"({"text":"\ud83d\ude00"})");
    ASSERT_TRUE(pair);
    EXPECT_EQ(pair->at("text").as_string(), "\xf0\x9f\x98\x80");
    auto bad_byte = common::parse_json_line("{\"text\":\"a\xff\"}");
    ASSERT_TRUE(bad_byte);
    EXPECT_EQ(bad_byte->at("text").as_string(), "a\xef\xbf\xbd");
}

TEST(PluginCommonJsonLine, LeavesAnEscapedBackslashBeforeUAlone) {
    // "\\ud800" is a backslash and the text "ud800", not an escape.
    EXPECT_EQ(common::sanitize_json_text(R"({"t":"\\ud800 \ud800"})"), R"({"t":"\\ud800 \ufffd"})");
}

TEST(PluginCommonEvents, TruncatesAtACharacterBoundary) {
    EXPECT_EQ(common::truncate_utf8("caf\xc3\xa9", 4), "caf\xe2\x80\xa6");
    EXPECT_EQ(common::truncate_utf8("caf\xc3\xa9", 5), "caf\xc3\xa9");
    EXPECT_EQ(common::truncate_utf8("abcdef", 3), "abc\xe2\x80\xa6");
}

TEST(PluginCommonEvents, LeavesOutOptionalFieldsThatAreNotKnown) {
    common::ToolCall call;
    call.id = "t1";
    call.title = "Think";
    call.raw_input = boost::json::object();
    const auto tool = boost::json::parse(common::tool_call(call).json).as_object();
    EXPECT_EQ(tool.at("kind").as_string(), "other");
    EXPECT_EQ(tool.at("status").as_string(), "pending");
    EXPECT_FALSE(tool.contains("name"));
    EXPECT_FALSE(tool.contains("locations"));

    const common::Event result = common::result(common::TurnResult());
    EXPECT_EQ(result.kind, HD_EVENT_RESULT);
    EXPECT_EQ(result.json, R"({"stopReason":"end_turn","isError":false})");
    EXPECT_EQ(common::mode_changed("plan").json, R"({"modeId":"plan"})");
}

} // namespace
