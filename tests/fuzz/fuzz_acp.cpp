// `handler acp` (host/acp): the editor's JSON-RPC lines (rpc.*, LineSplitter) through the
// agent's state machine (agent.*) over the fake handlerd of the unit tests
// (tests/support/fake_conversations.hpp), and the conversation's events, which come from
// a harness inside a container, turned into updates (updates.*).
//
// Input: lines. "@event KIND {PAYLOAD}" records an event in the newest conversation,
// "@finish REASON" ends its running turn and "@end" its container; every other line is
// the editor's, fed to the line splitter (limit 4 KiB) in pieces.
//
// Properties: every line written is one line of a JSON object with "jsonrpc":"2.0"; an
// answer carries a result or an error, and an id the editor sent (or null);
// the only requests and notifications sent are session/update, session/request_permission
// and $/cancel_request, whatever an event holds; a session/update names its session and
// an update kind.
#include "acp/agent.hpp"
#include "acp/rpc.hpp"

#include "fuzz/fuzz_support.hpp"
#include "support/fake_conversations.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <set>
#include <string>

namespace {

namespace json = boost::json;
using handler::fuzz::check;
using namespace handler;

constexpr std::size_t kLineLimitBytes = 4096;

class Editor {
public:
    // A line the editor sent: its id may be answered (a request's, or a malformed message's).
    void sent(std::string_view line) {
        boost::system::error_code error;
        const json::value value = json::parse(line, error);
        if (error || !value.is_object()) return;
        if (const auto* id = value.as_object().if_contains("id")) ids_.insert(json::serialize(*id));
    }

    void received(const std::string& line) {
        check(line.find('\n') == std::string::npos && line.find('\r') == std::string::npos,
              "a message written is one line", line);
        boost::system::error_code error;
        const json::value value = json::parse(line, error);
        check(!error && value.is_object(), "a message written is a JSON object", line);
        const auto& message = value.as_object();
        check(message.contains("jsonrpc") && message.at("jsonrpc") == "2.0", "a message written is JSON-RPC 2.0", line);
        if (const auto* method = message.if_contains("method")) {
            check(method->is_string(), "a method is a string", line);
            const std::string_view name = method->as_string();
            check(name == "session/update" || name == "session/request_permission" || name == "$/cancel_request",
                  "only session/update, session/request_permission and $/cancel_request go to the editor", line);
            if (name == "session/update") {
                const auto* params = message.at("params").if_object();
                check(params && params->contains("sessionId") && params->at("sessionId").is_string(),
                      "a session/update names its session", line);
                const auto* update = params->at("update").if_object();
                check(update && update->contains("sessionUpdate") && update->at("sessionUpdate").is_string(),
                      "a session/update holds an update of a kind", line);
            }
            return;
        }
        check(message.contains("result") != message.contains("error"), "an answer has a result or an error", line);
        check(message.contains("id"), "an answer has an id", line);
        const auto& id = message.at("id");
        check(id.is_null() || ids_.contains(json::serialize(id)), "an answer goes to a request the editor made", line);
    }

private:
    std::set<std::string> ids_;
};

// The conversation made last, if any.
std::string newest(const testing::FakeConversations& handlerd) {
    std::string id;
    std::size_t number = 0;
    for (const auto& [name, conversation] : handlerd.conversations) {
        const std::size_t n = std::stoul(name.substr(2));
        if (n >= number) {
            number = n;
            id = name;
        }
    }
    return id;
}

void harness_line(testing::FakeConversations& handlerd, std::string_view line) {
    const std::string id = newest(handlerd);
    if (id.empty()) return;
    if (line.starts_with("@end")) return handlerd.end(id);
    if (line.starts_with("@finish ")) {
        if (handlerd.conversations.at(id).running) handlerd.finish_turn(id, std::string(line.substr(8)));
        return;
    }
    if (!line.starts_with("@event ")) return;
    line.remove_prefix(7);
    const auto space = line.find(' ');
    if (space == std::string_view::npos) return;
    boost::system::error_code error;
    json::value payload = json::parse(line.substr(space + 1), error);
    if (error || !payload.is_object()) return;
    handlerd.emit(id, std::string(line.substr(0, space)), std::move(payload.as_object()));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view input = handler::fuzz::as_text(data, size);
    testing::FakeConversations handlerd;
    handlerd.add_claude_project();
    Editor editor;
    acp::AgentOptions options;
    options.prompt_limit_bytes = 1000;
    acp::Agent agent(handlerd, options, [&editor](std::string line) { editor.received(line); });
    acp::rpc::LineSplitter splitter(kLineLimitBytes);
    auto deliver = [&](const acp::rpc::LineSplitter::Line& line) {
        if (line.oversized) return agent.receive_oversized(kLineLimitBytes);
        editor.sent(line.text);
        agent.receive(line.text);
    };
    while (!input.empty()) {
        const auto end = input.find('\n');
        const std::string_view line = input.substr(0, end == std::string_view::npos ? input.size() : end + 1);
        input.remove_prefix(line.size());
        if (line.starts_with('@')) {
            harness_line(handlerd, line.substr(0, line.size() - (line.ends_with('\n') ? 1 : 0)));
        } else {
            for (const auto piece : handler::fuzz::pieces_of(line))
                for (const auto& whole : splitter.feed(piece)) deliver(whole);
        }
        handlerd.run();
    }
    if (auto last = splitter.finish()) deliver(*last);
    handlerd.run();
    agent.shut_down();
    handlerd.run();
    return 0;
}
