// The real Conversations port against a real API server on a temporary unix socket, with
// handlerd's answers scripted: what each call asks, and how an answer (or its absence)
// comes back to the agent.
#include "acp/handlerd_port.hpp"

#include "unit/api/server_test_fixture.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <optional>

namespace handler::acp {
namespace {
namespace json = boost::json;
using api::testing::RunningServer;

api::Response json_answer(unsigned status, const json::value& body) {
    return api::Response{status, json::serialize(body), "application/json", {}};
}

// Runs the port's calls on an io_context of this thread until they are answered.
template <class T, class Call>
Result<T> ask(const std::filesystem::path& socket, Call call) {
    boost::asio::io_context io;
    auto port = make_handlerd_port(io, socket, 5'000);
    std::optional<Result<T>> answer;
    call(*port, [&answer](Result<T> got) { answer.emplace(std::move(got)); });
    io.run();
    if (!answer) return make_error(ErrorCode::internal, "no answer");
    return std::move(*answer);
}

TEST(AcpHandlerdPort, APromptIsPostedAndItsIdRead) {
    RunningServer server;
    server.handler().respond_with([](const api::Request&) {
        return json_answer(202, json::parse(R"({"promptId":"p_7","queued":true})"));
    });
    auto accepted = ask<PromptAccepted>(server.socket(), [](Conversations& port, Reply<PromptAccepted> reply) {
        port.prompt("s_1", {"line one\nline \"two\"", {{"image/png", "iVBORw0KGgo="}}}, std::move(reply));
    });
    ASSERT_TRUE(accepted) << accepted.error().message;
    EXPECT_EQ(accepted->prompt_id, "p_7");
    EXPECT_TRUE(accepted->queued);
    const auto requests = server.handler().requests();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0].method, "POST");
    EXPECT_EQ(requests[0].target, "/api/v1/sessions/s_1/prompts");
    EXPECT_EQ(json::parse(requests[0].body),
              json::parse(R"({"text":"line one\nline \"two\"","images":[{"mimeType":"image/png","data":"iVBORw0KGgo="}]})"));
}

// The agent's cancel and withdraw logic turns on these codes: 409 once a prompt started
// or when no turn runs, 404 when another client answered first.
TEST(AcpHandlerdPort, HandlerdsRefusalsKeepTheirMeaningAndMessage) {
    RunningServer server;
    server.handler().respond_with([](const api::Request& request) {
        if (request.method == "DELETE")
            return json_answer(409, json::parse(R"({"error":{"code":"conflict","message":"prompt p_1 has started"}})"));
        return json_answer(404, json::parse(R"({"error":{"code":"not_found","message":"no open permission request"}})"));
    });
    auto withdrawn = ask<void>(server.socket(), [](Conversations& port, Reply<void> reply) {
        port.withdraw("s_1", "p_1", std::move(reply));
    });
    ASSERT_FALSE(withdrawn);
    EXPECT_EQ(withdrawn.error().code, ErrorCode::conflict);
    EXPECT_EQ(withdrawn.error().message, "prompt p_1 has started");
    auto answered = ask<void>(server.socket(), [](Conversations& port, Reply<void> reply) {
        port.answer("s_1", "t1", "allow", std::move(reply));
    });
    ASSERT_FALSE(answered);
    EXPECT_EQ(answered.error().code, ErrorCode::not_found);
    const auto requests = server.handler().requests();
    EXPECT_EQ(requests[0].target, "/api/v1/sessions/s_1/prompts/p_1");
    EXPECT_EQ(requests[1].target, "/api/v1/sessions/s_1/answers");
    EXPECT_EQ(json::parse(requests[1].body), json::parse(R"({"toolCallId":"t1","optionId":"allow"})"));
}

TEST(AcpHandlerdPort, TheHistoryIsReadPageByPage) {
    RunningServer server;
    server.handler().respond_with([](const api::Request& request) {
        const bool first = request.target.find("after=0&") != std::string::npos;
        json::array events;
        const int count = first ? 1000 : 3;
        for (int index = 1; index <= count; ++index)
            events.push_back({{"session", "s_1"}, {"seq", (first ? 0 : 1000) + index}, {"at", 1},
                              {"kind", "agent_message_chunk"}, {"payload", {{"content", {{"type", "text"}, {"text", "x"}}}}}});
        return json_answer(200, json::object{{"events", std::move(events)}});
    });
    auto history = ask<std::vector<ConversationEvent>>(
        server.socket(), [](Conversations& port, Reply<std::vector<ConversationEvent>> reply) {
            port.history("s_1", 0, std::move(reply));
        });
    ASSERT_TRUE(history) << history.error().message;
    ASSERT_EQ(history->size(), 1003u);
    EXPECT_EQ(history->back().seq, 1003);
    const auto requests = server.handler().requests();
    ASSERT_EQ(requests.size(), 2u);
    EXPECT_EQ(requests[0].target, "/api/v1/sessions/s_1/events?after=0&limit=1000");
    EXPECT_EQ(requests[1].target, "/api/v1/sessions/s_1/events?after=1000&limit=1000");
}

TEST(AcpHandlerdPort, APathIsAskedForEncodedAndNoProjectIsNone) {
    RunningServer server;
    server.handler().respond_with([](const api::Request&) { return json_answer(200, json::parse(R"({"projects":[]})")); });
    auto found = ask<std::optional<json::object>>(server.socket(),
                                                  [](Conversations& port, Reply<std::optional<json::object>> reply) {
                                                      port.find_project("/home/u/my app&x", std::move(reply));
                                                  });
    ASSERT_TRUE(found);
    EXPECT_FALSE(found->has_value());
    EXPECT_EQ(server.handler().requests()[0].target, "/api/v1/projects?path=%2Fhome%2Fu%2Fmy%20app%26x");
}

TEST(AcpHandlerdPort, AnAnswerOfAnotherShapeOrNoDaemonIsAnError) {
    RunningServer server;
    server.handler().respond_with([](const api::Request&) { return json_answer(200, json::parse(R"({"sessions":{}})")); });
    auto odd = ask<json::array>(server.socket(), [](Conversations& port, Reply<json::array> reply) {
        port.sessions(std::move(reply));
    });
    ASSERT_FALSE(odd);
    EXPECT_EQ(odd.error().code, ErrorCode::internal);

    const auto missing = server.folder() / "nobody.sock";
    auto none = ask<json::array>(missing, [](Conversations& port, Reply<json::array> reply) { port.plugins(std::move(reply)); });
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().code, ErrorCode::unavailable);
    EXPECT_NE(none.error().message.find("handlerd is not running"), std::string::npos);
}

} // namespace
} // namespace handler::acp
