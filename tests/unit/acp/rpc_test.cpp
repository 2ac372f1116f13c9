#include "acp/rpc.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace handler::acp::rpc {
namespace {
namespace json = boost::json;

Invalid as_invalid(const Message& message) {
    EXPECT_TRUE(std::holds_alternative<Invalid>(message));
    return std::holds_alternative<Invalid>(message) ? std::get<Invalid>(message) : Invalid{};
}

TEST(AcpRpc, MalformedJsonIsAParseErrorWithANullId) {
    const auto invalid = as_invalid(parse(R"({"jsonrpc":"2.0","id":1,"method":)"));
    EXPECT_EQ(invalid.error.code, kParseError);
    EXPECT_TRUE(invalid.id.is_null());
}

TEST(AcpRpc, ShapesThatAreNoMessageAreInvalidRequestsSayingWhy) {
    auto batch = as_invalid(parse(R"([{"jsonrpc":"2.0","id":1,"method":"initialize"}])"));
    EXPECT_EQ(batch.error.code, kInvalidRequest);
    EXPECT_NE(batch.error.message.find("batch"), std::string::npos);

    auto version = as_invalid(parse(R"({"jsonrpc":"1.0","id":4,"method":"initialize"})"));
    EXPECT_EQ(version.error.code, kInvalidRequest);
    EXPECT_EQ(version.id, json::value(4)); // the id is known, so the error goes to it
    EXPECT_NE(version.error.message.find("jsonrpc"), std::string::npos);

    auto id = as_invalid(parse(R"({"jsonrpc":"2.0","id":{"x":1},"method":"initialize"})"));
    EXPECT_EQ(id.error.code, kInvalidRequest);
    EXPECT_TRUE(id.id.is_null());

    auto method = as_invalid(parse(R"({"jsonrpc":"2.0","id":"a","method":7})"));
    EXPECT_EQ(method.error.code, kInvalidRequest);
    EXPECT_EQ(method.id, json::value("a"));

    auto params = as_invalid(parse(R"({"jsonrpc":"2.0","id":2,"method":"session/new","params":"cwd"})"));
    EXPECT_EQ(params.error.code, kInvalidRequest);
    EXPECT_NE(params.error.message.find("params"), std::string::npos);

    EXPECT_EQ(as_invalid(parse("42")).error.code, kInvalidRequest);
    EXPECT_EQ(as_invalid(parse(R"({"jsonrpc":"2.0"})")).error.code, kInvalidRequest);
    EXPECT_EQ(as_invalid(parse(R"({"jsonrpc":"2.0","id":3,"result":1,"error":{}})")).error.code, kInvalidRequest);
}

TEST(AcpRpc, ReadsRequestsNotificationsAndResponses) {
    auto request = parse(R"({"jsonrpc":"2.0","id":"r1","method":"session/new","params":{"cwd":"/a"}})");
    ASSERT_TRUE(std::holds_alternative<Request>(request));
    EXPECT_EQ(std::get<Request>(request).id, json::value("r1"));
    EXPECT_EQ(std::get<Request>(request).method, "session/new");

    auto notification = parse(R"({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}})");
    ASSERT_TRUE(std::holds_alternative<Notification>(notification));

    auto answer = parse(R"({"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}})");
    ASSERT_TRUE(std::holds_alternative<Response>(answer));
    EXPECT_TRUE(std::get<Response>(answer).result.has_value());

    auto failed = parse(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}})");
    ASSERT_TRUE(std::holds_alternative<Response>(failed));
    EXPECT_EQ(std::get<Response>(failed).error->code, -32601);
}

TEST(AcpRpc, WrittenMessagesAreOneLineWhateverTheirStringsHold) {
    const std::string line = notification_message(
        "session/update", json::object{{"text", "two\nlines\r\nand a {\"jsonrpc\":\"2.0\",\"id\":1}\u2028"}});
    EXPECT_EQ(line.find('\n'), std::string::npos);
    EXPECT_EQ(line.find('\r'), std::string::npos);
    auto back = parse(line);
    ASSERT_TRUE(std::holds_alternative<Notification>(back));
    EXPECT_EQ(std::get<Notification>(back).params.as_object().at("text").as_string(),
              "two\nlines\r\nand a {\"jsonrpc\":\"2.0\",\"id\":1}\u2028");
}

TEST(AcpRpc, LinesSplitOnNewlinesAcrossPiecesAndOversizedOnesAreSkipped) {
    LineSplitter splitter(16);
    auto lines = splitter.feed("{\"a\":1}\r\n{\"b\"");
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0].text, "{\"a\":1}");
    lines = splitter.feed(":2}\n\n");
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0].text, "{\"b\":2}");

    lines = splitter.feed(std::string(10, 'x'));
    EXPECT_TRUE(lines.empty());
    lines = splitter.feed(std::string(10, 'y')); // now past 16: reported once
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_TRUE(lines[0].oversized);
    lines = splitter.feed(std::string(100, 'z') + "\n{\"c\":3}\n");
    ASSERT_EQ(lines.size(), 1u); // the rest of the long line is dropped, the next is read
    EXPECT_EQ(lines[0].text, "{\"c\":3}");

    splitter.feed("{\"d\":4}");
    auto last = splitter.finish();
    ASSERT_TRUE(last.has_value());
    EXPECT_EQ(last->text, "{\"d\":4}");
}

TEST(AcpRpc, OutgoingRequestsAreSettledOnceAndWithdrawnWithCancelRequest) {
    OutgoingRequests requests;
    int answers = 0;
    std::int64_t first = -1, second = -1;
    const auto line = requests.start(ClientMethod::request_permission, json::object{{"sessionId", "s"}},
                                     [&](const Response&) { ++answers; }, first);
    const auto parsed = json::parse(line).as_object();
    EXPECT_EQ(parsed.at("method"), "session/request_permission");
    EXPECT_EQ(parsed.at("id"), json::value(first));
    requests.start(ClientMethod::request_permission, json::object{}, [&](const Response&) { ++answers; }, second);
    EXPECT_NE(first, second);

    EXPECT_TRUE(requests.settle(Response{json::value(first), json::value(nullptr), std::nullopt}));
    EXPECT_FALSE(requests.settle(Response{json::value(first), json::value(nullptr), std::nullopt}));
    EXPECT_EQ(answers, 1);

    auto cancel = requests.withdraw(second);
    ASSERT_TRUE(cancel.has_value());
    EXPECT_EQ(json::parse(*cancel).as_object().at("method"), "$/cancel_request");
    EXPECT_EQ(json::parse(*cancel).as_object().at("params").as_object().at("requestId"), json::value(second));
    // Its late answer goes nowhere.
    EXPECT_FALSE(requests.settle(Response{json::value(second), json::value(nullptr), std::nullopt}));
    EXPECT_EQ(answers, 1);
    EXPECT_FALSE(requests.withdraw(second).has_value());
    EXPECT_EQ(requests.pending(), 0u);
}

TEST(AcpRpc, ParamReaderNamesTheFieldItRefuses) {
    const json::value params = json::parse(R"({"cwd":7,"list":{},"n":"x"})");
    ParamReader reader(params);
    try {
        (void)reader.string("cwd");
        FAIL();
    } catch (const InvalidParams& error) {
        EXPECT_STREQ(error.what(), "params.cwd must be a string, not a number");
    }
    EXPECT_THROW((void)reader.string("sessionId"), InvalidParams);
    EXPECT_THROW((void)reader.array("list"), InvalidParams);
    EXPECT_THROW((void)reader.integer("n"), InvalidParams);
    EXPECT_FALSE(reader.optional_string("missing").has_value());
    EXPECT_THROW(ParamReader(json::value(json::array{})), InvalidParams);
    EXPECT_NO_THROW(ParamReader(json::value(nullptr)));
}

} // namespace
} // namespace handler::acp::rpc
