// The pi harness (harnesses/pi): its rpc-mode parser driven directly with the lines pi
// 0.73.1 printed in real runs against tests/support/fake_model_server.py, driven by this
// parser (so the request ids are the ones it gives; each message_update's repeated
// "partial" message, turn_start/turn_end, the user's and tools' message_end, timestamps
// and most of get_state's fields left out, and paths moved to /home/u/project), and the
// built plugin loaded by the real loader.
#include "pi/rpc_mode.hpp"

#include "unit/harnesses/harness_test_support.hpp"
#include "support/fakes.hpp"

#include <boost/json/serialize.hpp>

#include <fstream>
#include <initializer_list>
#include <iterator>
#include <stdexcept>

// Named as well, for unity builds (scripts/test.sh): helpers of the same name in
// other test files then do not meet.
namespace pi_test {
namespace {

namespace json = boost::json;
using handler::pi::RpcModeParser;
using handler::plugin_common::Event;
using handler::plugins::LaunchMode;
using handler::plugins::LaunchRequest;
using handler::plugins::StartMode;
using handler::testing::harnesses::describe;
using handler::testing::harnesses::payload;

std::string lines(std::initializer_list<std::string_view> each) {
    std::string out;
    for (std::string_view line : each) out.append(line).push_back('\n');
    return out;
}

std::string prompt_payload(std::string_view text) {
    return json::serialize(json::object{{"content", json::object{{"type", "text"}, {"text", text}}}});
}

// One pi session as handlerd drives its parser: what pi prints goes in, and what the
// parser writes for pi's stdin is collected, one command a line.
class Pi {
public:
    std::vector<Event> feed(std::string_view output) { return take(parser_.feed(output)); }
    std::vector<Event> prompt(std::string_view text) { return take(parser_.prompt(prompt_payload(text))); }
    std::vector<Event> cancel() { return take(parser_.cancel()); }
    std::vector<Event> set(std::string_view name, std::string_view value) { return take(parser_.set(name, value)); }
    // The commands written since the last call.
    std::vector<std::string> written() {
        std::vector<std::string> commands;
        for (std::size_t start = 0, end; (end = written_.find('\n', start)) != std::string::npos; start = end + 1)
            commands.push_back(written_.substr(start, end - start));
        written_.clear();
        return commands;
    }

private:
    std::vector<Event> take(std::vector<Event> events) {
        written_ += parser_.take_reply().input;
        return events;
    }
    RpcModeParser parser_;
    std::string written_;
};

using Commands = std::vector<std::string>;

const std::string kOpening = lines({
    R"pi({"id":"handler-opening-state:/home/u/project","type":"response","command":"get_state","success":true,"data":{"model":{"id":"claude-opus-4-7","name":"Claude Opus 4.7","api":"anthropic-messages","provider":"anthropic","contextWindow":1000000},"thinkingLevel":"medium","isStreaming":false,"sessionFile":"/state/01a23252-f658-7718-98dd-f4e23d2f9790.jsonl","sessionId":"01a23252-f658-7718-98dd-f4e23d2f9790","messageCount":0}})pi",
    R"pi({"id":"handler-opening-commands","type":"response","command":"get_commands","success":true,"data":{"commands":[]}})pi"});

const std::string kFirstTurn = lines({
    R"pi({"id":"handler-1","type":"response","command":"prompt","success":true})pi",
    R"pi({"type":"agent_start"})pi",
    R"pi({"type":"message_start","message":{"role":"user","content":[{"type":"text","text":"create hello.txt containing hi"}]}})pi",
    R"pi({"id":"handler-2","type":"response","command":"get_state","success":true,"data":{"model":{"id":"claude-opus-4-7","name":"Claude Opus 4.7","api":"anthropic-messages","provider":"anthropic","contextWindow":1000000},"thinkingLevel":"medium","isStreaming":true,"sessionFile":"/state/01a23252-f658-7718-98dd-f4e23d2f9790.jsonl","sessionId":"01a23252-f658-7718-98dd-f4e23d2f9790","messageCount":1}})pi",
    R"pi({"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":10,"output":1,"cost":{"total":7.500000000000001e-05}},"stopReason":"stop"}})pi",
    R"pi({"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"I'll create the file."}})pi",
    R"pi({"type":"message_update","assistantMessageEvent":{"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"toolu_fake","name":"write","arguments":{"path":"/home/u/project/hello.txt","content":"hi\n"}}}})pi",
    R"pi({"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"I'll create the file."},{"type":"toolCall","id":"toolu_fake","name":"write","arguments":{"path":"/home/u/project/hello.txt","content":"hi\n"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":10,"output":20,"cost":{"total":0.00055}},"stopReason":"toolUse","responseId":"msg_fake"}})pi",
    R"pi({"type":"tool_execution_start","toolCallId":"toolu_fake","toolName":"write","args":{"path":"/home/u/project/hello.txt","content":"hi\n"}})pi",
    R"pi({"type":"tool_execution_end","toolCallId":"toolu_fake","toolName":"write","result":{"content":[{"type":"text","text":"Successfully wrote 3 bytes to /home/u/project/hello.txt"}]},"isError":false})pi",
    R"pi({"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"stop"}})pi",
    R"pi({"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Done: wrote the file."}})pi",
    R"pi({"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Done: wrote the file."}],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":10,"output":20,"cost":{"total":0.00055}},"stopReason":"stop","responseId":"msg_fake"}})pi",
    R"pi({"type":"agent_end","messages":[]})pi"});

const std::string kFirstTurnStats = lines({
    R"pi({"id":"handler-3","type":"response","command":"get_session_stats","success":true,"data":{"sessionFile":"/state/01a23252-f658-7718-98dd-f4e23d2f9790.jsonl","sessionId":"01a23252-f658-7718-98dd-f4e23d2f9790","cost":0.0011,"contextUsage":{"tokens":30,"contextWindow":1000000,"percent":0.003}}})pi"});

const std::string kSecondTurn = lines({
    R"pi({"id":"handler-4","type":"response","command":"prompt","success":true})pi",
    R"pi({"type":"agent_start"})pi",
    R"pi({"type":"message_start","message":{"role":"user","content":[{"type":"text","text":"what did you just do?"}]}})pi",
    R"pi({"id":"handler-5","type":"response","command":"get_state","success":true,"data":{"model":{"id":"claude-opus-4-7","name":"Claude Opus 4.7","api":"anthropic-messages","provider":"anthropic","contextWindow":1000000},"thinkingLevel":"medium","isStreaming":true,"sessionFile":"/state/01a23252-f658-7718-98dd-f4e23d2f9790.jsonl","sessionId":"01a23252-f658-7718-98dd-f4e23d2f9790","messageCount":5}})pi",
    R"pi({"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":10,"output":1,"cost":{"total":7.500000000000001e-05}},"stopReason":"stop"}})pi",
    R"pi({"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Done: wrote the file."}})pi",
    R"pi({"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Done: wrote the file."}],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":10,"output":20,"cost":{"total":0.00055}},"stopReason":"stop","responseId":"msg_fake"}})pi",
    R"pi({"type":"agent_end","messages":[]})pi",
    R"pi({"id":"handler-6","type":"response","command":"get_session_stats","success":true,"data":{"sessionFile":"/state/01a23252-f658-7718-98dd-f4e23d2f9790.jsonl","sessionId":"01a23252-f658-7718-98dd-f4e23d2f9790","cost":0.00165,"contextUsage":{"tokens":30,"contextWindow":1000000,"percent":0.003}}})pi"});

const std::string kSettings = lines({
    R"pi({"type":"thinking_level_changed","level":"high"})pi",
    R"pi({"id":"handler-7","type":"response","command":"set_thinking_level","success":true})pi",
    R"pi({"id":"handler-8","type":"response","command":"get_state","success":true,"data":{"model":{"id":"claude-opus-4-7","name":"Claude Opus 4.7","api":"anthropic-messages","provider":"anthropic","contextWindow":1000000},"thinkingLevel":"high","isStreaming":false,"sessionFile":"/state/01a23252-f658-7718-98dd-f4e23d2f9790.jsonl","sessionId":"01a23252-f658-7718-98dd-f4e23d2f9790","messageCount":6}})pi",
    R"pi({"id":"handler-9","type":"response","command":"set_model","success":true,"data":{"id":"claude-sonnet-4-5","name":"Claude Sonnet 4.5 (latest)","api":"anthropic-messages","provider":"anthropic","contextWindow":200000}})pi",
    R"pi({"id":"handler-10","type":"response","command":"get_state","success":true,"data":{"model":{"id":"claude-sonnet-4-5","name":"Claude Sonnet 4.5 (latest)","api":"anthropic-messages","provider":"anthropic","contextWindow":200000},"thinkingLevel":"high","isStreaming":false,"sessionFile":"/state/01a23252-f658-7718-98dd-f4e23d2f9790.jsonl","sessionId":"01a23252-f658-7718-98dd-f4e23d2f9790","messageCount":6}})pi",
    R"pi({"id":"handler-11","type":"response","command":"set_model","success":false,"error":"Model not found: nope/none"})pi"});

const std::string kAbortedTurn = lines({
    R"pi({"id":"handler-12","type":"response","command":"prompt","success":true})pi",
    R"pi({"type":"agent_start"})pi",
    R"pi({"type":"message_start","message":{"role":"user","content":[{"type":"text","text":"write it again"}]}})pi",
    R"pi({"id":"handler-13","type":"response","command":"get_state","success":true,"data":{"model":{"id":"claude-sonnet-4-5","name":"Claude Sonnet 4.5 (latest)","api":"anthropic-messages","provider":"anthropic","contextWindow":200000},"thinkingLevel":"high","isStreaming":true,"sessionFile":"/state/01a23252-f658-7718-98dd-f4e23d2f9790.jsonl","sessionId":"01a23252-f658-7718-98dd-f4e23d2f9790","messageCount":7}})pi",
    R"pi({"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"aborted","errorMessage":"Request was aborted."}})pi",
    R"pi({"type":"message_end","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"aborted","errorMessage":"Request was aborted."}})pi",
    R"pi({"type":"agent_end","messages":[]})pi",
    R"pi({"id":"handler-14","type":"response","command":"abort","success":true})pi",
    R"pi({"id":"handler-15","type":"response","command":"get_session_stats","success":true,"data":{"sessionFile":"/state/01a23252-f658-7718-98dd-f4e23d2f9790.jsonl","sessionId":"01a23252-f658-7718-98dd-f4e23d2f9790","cost":0.00165,"contextUsage":{"tokens":34,"contextWindow":200000,"percent":0.017}}})pi"});

const std::string kAfterAbort = lines({
    R"pi({"id":"handler-16","type":"response","command":"prompt","success":true})pi",
    R"pi({"type":"agent_start"})pi",
    R"pi({"type":"message_start","message":{"role":"user","content":[{"type":"text","text":"try again"}]}})pi",
    R"pi({"id":"handler-17","type":"response","command":"get_state","success":true,"data":{"model":{"id":"claude-sonnet-4-5","name":"Claude Sonnet 4.5 (latest)","api":"anthropic-messages","provider":"anthropic","contextWindow":200000},"thinkingLevel":"high","isStreaming":true,"sessionFile":"/state/01a23252-f658-7718-98dd-f4e23d2f9790.jsonl","sessionId":"01a23252-f658-7718-98dd-f4e23d2f9790","messageCount":9}})pi",
    R"pi({"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"stop"}})pi",
    R"pi({"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Done: wrote the file."}})pi",
    R"pi({"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Done: wrote the file."}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":20,"cost":{"total":0.00033000000000000005}},"stopReason":"stop","responseId":"msg_fake"}})pi",
    R"pi({"type":"agent_end","messages":[]})pi",
    R"pi({"id":"handler-18","type":"response","command":"get_session_stats","success":true,"data":{"sessionFile":"/state/01a23252-f658-7718-98dd-f4e23d2f9790.jsonl","sessionId":"01a23252-f658-7718-98dd-f4e23d2f9790","cost":0.00198,"contextUsage":{"tokens":30,"contextWindow":200000,"percent":0.015}}})pi"});

const std::string kRetry = lines({
    R"pi({"id":"handler-1","type":"response","command":"prompt","success":true})pi",
    R"pi({"type":"agent_start"})pi",
    R"pi({"type":"message_start","message":{"role":"user","content":[{"type":"text","text":"create hello.txt containing hi"}]}})pi",
    R"pi({"id":"handler-2","type":"response","command":"get_state","success":true,"data":{"model":{"id":"claude-opus-4-7","name":"Claude Opus 4.7","api":"anthropic-messages","provider":"anthropic","contextWindow":1000000},"thinkingLevel":"medium","isStreaming":true,"sessionId":"01a23253-da19-7323-b871-66d02fd36235","messageCount":1}})pi",
    R"pi({"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"error","errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}})pi",
    R"pi({"type":"message_end","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"error","errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}})pi",
    R"pi({"type":"agent_end","messages":[]})pi",
    R"pi({"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"})pi",
    R"pi({"id":"handler-3","type":"response","command":"get_session_stats","success":true,"data":{"sessionId":"01a23253-da19-7323-b871-66d02fd36235","cost":0,"contextUsage":{"tokens":8,"contextWindow":1000000,"percent":0.0007999999999999999}}})pi",
    R"pi({"type":"agent_start"})pi",
    R"pi({"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"stop"}})pi",
    R"pi({"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"I'll create the file."}})pi",
    R"pi({"type":"message_update","assistantMessageEvent":{"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"toolu_fake","name":"write","arguments":{"path":"/home/u/project/hello.txt","content":"hi\n"}}}})pi",
    R"pi({"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"I'll create the file."},{"type":"toolCall","id":"toolu_fake","name":"write","arguments":{"path":"/home/u/project/hello.txt","content":"hi\n"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":10,"output":20,"cost":{"total":0.00055}},"stopReason":"toolUse","responseId":"msg_fake"}})pi",
    R"pi({"type":"auto_retry_end","success":true,"attempt":1})pi",
    R"pi({"type":"tool_execution_start","toolCallId":"toolu_fake","toolName":"write","args":{"path":"/home/u/project/hello.txt","content":"hi\n"}})pi",
    R"pi({"type":"tool_execution_end","toolCallId":"toolu_fake","toolName":"write","result":{"content":[{"type":"text","text":"Successfully wrote 3 bytes to /home/u/project/hello.txt"}]},"isError":false})pi",
    R"pi({"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"stop"}})pi",
    R"pi({"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Done: wrote the file."}})pi",
    R"pi({"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Done: wrote the file."}],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":10,"output":20,"cost":{"total":0.00055}},"stopReason":"stop","responseId":"msg_fake"}})pi",
    R"pi({"type":"agent_end","messages":[]})pi",
    R"pi({"id":"handler-4","type":"response","command":"get_session_stats","success":true,"data":{"sessionId":"01a23253-da19-7323-b871-66d02fd36235","cost":0.0011,"contextUsage":{"tokens":30,"contextWindow":1000000,"percent":0.003}}})pi"});

const std::string kRetryCancelled = lines({
    R"pi({"id":"handler-1","type":"response","command":"prompt","success":true})pi",
    R"pi({"type":"agent_start"})pi",
    R"pi({"type":"message_start","message":{"role":"user","content":[{"type":"text","text":"create hello.txt containing hi"}]}})pi",
    R"pi({"id":"handler-2","type":"response","command":"get_state","success":true,"data":{"model":{"id":"claude-opus-4-7","name":"Claude Opus 4.7","api":"anthropic-messages","provider":"anthropic","contextWindow":1000000},"thinkingLevel":"medium","isStreaming":true,"sessionId":"01a23254-4bf0-711d-85f2-9c6a37cbb1e4","messageCount":1}})pi",
    R"pi({"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"error","errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}})pi",
    R"pi({"type":"message_end","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"error","errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}})pi",
    R"pi({"type":"agent_end","messages":[]})pi",
    R"pi({"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"})pi",
    R"pi({"id":"handler-3","type":"response","command":"get_session_stats","success":true,"data":{"sessionId":"01a23254-4bf0-711d-85f2-9c6a37cbb1e4","cost":0,"contextUsage":{"tokens":8,"contextWindow":1000000,"percent":0.0007999999999999999}}})pi",
    R"pi({"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"})pi",
    R"pi({"id":"handler-4","type":"response","command":"abort","success":true})pi"});

// pi's failed model call, the same each time it retries.
const std::string kFailedAttempt = lines({
    R"pi({"type":"agent_start"})pi",
    R"pi({"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"error","errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}})pi",
    R"pi({"type":"message_end","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"error","errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}})pi",
    R"pi({"type":"agent_end","messages":[]})pi"});

// Every attempt fails: the first, three retries (the same attempt each time), the end.
const std::string kRetriesFail = lines({
    R"pi({"id":"handler-1","type":"response","command":"prompt","success":true})pi",
    R"pi({"type":"agent_start"})pi",
    R"pi({"type":"message_start","message":{"role":"user","content":[{"type":"text","text":"create hello.txt containing hi"}]}})pi",
    R"pi({"id":"handler-2","type":"response","command":"get_state","success":true,"data":{"model":{"id":"claude-opus-4-7","name":"Claude Opus 4.7","api":"anthropic-messages","provider":"anthropic","contextWindow":1000000},"thinkingLevel":"medium","isStreaming":true,"sessionId":"01a23254-71ad-700e-bed6-4691c1b502ea","messageCount":1}})pi",
    R"pi({"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"error","errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}})pi",
    R"pi({"type":"message_end","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"error","errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}})pi",
    R"pi({"type":"agent_end","messages":[]})pi",
    R"pi({"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"})pi",
    R"pi({"id":"handler-3","type":"response","command":"get_session_stats","success":true,"data":{"sessionId":"01a23254-71ad-700e-bed6-4691c1b502ea","cost":0,"contextUsage":{"tokens":8,"contextWindow":1000000,"percent":0.0007999999999999999}}})pi"}) +
    kFailedAttempt + lines({
    R"pi({"type":"auto_retry_start","attempt":2,"maxAttempts":3,"delayMs":4000,"errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"})pi",
    R"pi({"id":"handler-4","type":"response","command":"get_session_stats","success":true,"data":{"sessionId":"01a23254-71ad-700e-bed6-4691c1b502ea","cost":0,"contextUsage":{"tokens":8,"contextWindow":1000000,"percent":0.0007999999999999999}}})pi"}) +
    kFailedAttempt + lines({
    R"pi({"type":"auto_retry_start","attempt":3,"maxAttempts":3,"delayMs":8000,"errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"})pi",
    R"pi({"id":"handler-5","type":"response","command":"get_session_stats","success":true,"data":{"sessionId":"01a23254-71ad-700e-bed6-4691c1b502ea","cost":0,"contextUsage":{"tokens":8,"contextWindow":1000000,"percent":0.0007999999999999999}}})pi"}) +
    kFailedAttempt + lines({
    R"pi({"type":"auto_retry_end","success":false,"attempt":3,"finalError":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"})pi",
    R"pi({"id":"handler-6","type":"response","command":"get_session_stats","success":true,"data":{"sessionId":"01a23254-71ad-700e-bed6-4691c1b502ea","cost":0,"contextUsage":{"tokens":8,"contextWindow":1000000,"percent":0.0007999999999999999}}})pi"});

const std::string kRefused = lines({
    R"pi({"id":"handler-opening-state:/home/u/project","type":"response","command":"get_state","success":true,"data":{"model":{"id":"claude-sonnet-4-5","name":"Claude Sonnet 4.5 (latest)","api":"anthropic-messages","provider":"anthropic","contextWindow":200000},"thinkingLevel":"high","isStreaming":false,"sessionId":"01a23253-2e8a-7607-b762-a052b144e8ac","messageCount":0}})pi",
    R"pi({"id":"handler-opening-commands","type":"response","command":"get_commands","success":true,"data":{"commands":[]}})pi",
    R"pi({"id":"handler-1","type":"response","command":"prompt","success":false,"error":"No API key found for anthropic.\n\nUse /login to log into a provider via OAuth or API key. See:\n  /usr/local/lib/node_modules/@mariozechner/pi-coding-agent/docs/providers.md\n  /usr/local/lib/node_modules/@mariozechner/pi-coding-agent/docs/models.md"})pi"});

const std::string kExtension = lines({
    R"pi({"id":"handler-opening-state:/home/u/project","type":"response","command":"get_state","success":true,"data":{"model":{"id":"claude-sonnet-4-5","name":"Claude Sonnet 4.5 (latest)","api":"anthropic-messages","provider":"anthropic","contextWindow":200000},"thinkingLevel":"high","isStreaming":false,"sessionId":"01a23253-574b-702d-8e6b-7b1bc532e477","messageCount":0}})pi",
    R"pi({"id":"handler-opening-commands","type":"response","command":"get_commands","success":true,"data":{"commands":[{"name":"hello","description":"Say hello","source":"extension","sourceInfo":{"path":"/home/u/project/.pi/extensions/ask.ts","source":"local","scope":"temporary","origin":"top-level"}},{"name":"ask","description":"Ask something","source":"extension","sourceInfo":{"path":"/home/u/project/.pi/extensions/ask.ts","source":"local","scope":"temporary","origin":"top-level"}}]}})pi",
    R"pi({"type":"extension_ui_request","id":"ccd5146f-e49e-4d98-9d72-23d898403900","method":"notify","message":"Hello there!","notifyType":"info"})pi",
    R"pi({"id":"handler-1","type":"response","command":"prompt","success":true})pi",
    R"pi({"id":"handler-2","type":"response","command":"get_state","success":true,"data":{"model":{"id":"claude-sonnet-4-5","name":"Claude Sonnet 4.5 (latest)","api":"anthropic-messages","provider":"anthropic","contextWindow":200000},"thinkingLevel":"high","isStreaming":false,"sessionId":"01a23253-574b-702d-8e6b-7b1bc532e477","messageCount":0}})pi",
    R"pi({"type":"extension_ui_request","id":"459c1786-1ead-43f7-ac7b-75c66f8eb9ad","method":"confirm","title":"Really?","message":"Go on?"})pi",
    R"pi({"type":"extension_ui_request","id":"0b13076f-a65e-4f08-a389-1a941a5668f7","method":"notify","message":"answer false","notifyType":"info"})pi",
    R"pi({"id":"handler-3","type":"response","command":"prompt","success":true})pi",
    R"pi({"id":"handler-4","type":"response","command":"get_state","success":true,"data":{"model":{"id":"claude-sonnet-4-5","name":"Claude Sonnet 4.5 (latest)","api":"anthropic-messages","provider":"anthropic","contextWindow":200000},"thinkingLevel":"high","isStreaming":false,"sessionId":"01a23253-574b-702d-8e6b-7b1bc532e477","messageCount":0}})pi"});


TEST(PiRpcMode, ItsOpeningAsksForItsStateAndCommands) {
    EXPECT_EQ(RpcModeParser::opening("/home/u/project"),
              R"({"id":"handler-opening-state:/home/u/project","type":"get_state"})"
              "\n"
              R"({"id":"handler-opening-commands","type":"get_commands"})"
              "\n");
}

TEST(PiRpcMode, APromptsImagesGoInItsCommand) {
    RpcModeParser parser;
    EXPECT_TRUE(parser.prompt(R"({"content":{"type":"text","text":""},"images":[{"mimeType":"image/jpeg","data":"/9j/"}]})")
                    .empty());
    EXPECT_EQ(parser.take_reply().input,
              R"({"type":"prompt","message":"","images":[{"type":"image","data":"/9j/","mimeType":"image/jpeg"}],)"
              R"("id":"handler-1"})"
              "\n")
        << "an image alone is a turn";
}

TEST(PiRpcMode, ATurnOfARealConversation) {
    Pi pi;
    EXPECT_TRUE(pi.prompt("create hello.txt containing hi").empty());
    EXPECT_EQ(pi.written(), (Commands{R"({"type":"prompt","message":"create hello.txt containing hi","id":"handler-1"})"}));

    // The opening's answers: what --session takes, the model and level, the commands.
    const auto opened = pi.feed(kOpening);
    ASSERT_EQ(opened.size(), 3u) << describe(opened);
    EXPECT_EQ(opened[0].kind, HD_EVENT_SESSION_INFO);
    EXPECT_EQ(opened[0].json, R"({"harnessSessionId":"01a23252-f658-7718-98dd-f4e23d2f9790"})");
    EXPECT_EQ(opened[1].kind, HD_EVENT_MODE_CHANGED);
    EXPECT_EQ(opened[1].json, R"({"modeId":"default","model":"anthropic/claude-opus-4-7","thinkingLevel":"medium"})");
    EXPECT_EQ(opened[2].kind, HD_EVENT_AVAILABLE_COMMANDS);
    EXPECT_EQ(opened[2].json, R"({"availableCommands":[]})");

    const auto events = pi.feed(kFirstTurn);
    // Once pi has taken the prompt, whether it runs; once its run ends, what it used.
    EXPECT_EQ(pi.written(), (Commands{R"({"type":"get_state","id":"handler-2"})",
                                      R"({"type":"get_session_stats","id":"handler-3"})"}));
    ASSERT_EQ(events.size(), 5u) << describe(events);
    EXPECT_EQ(events[0].json, R"({"content":{"type":"text","text":"I'll create the file."}})");
    EXPECT_EQ(events[1].kind, HD_EVENT_TOOL_CALL);
    const json::object call = payload(events[1]);
    EXPECT_EQ(call.at("toolCallId").as_string(), "toolu_fake");
    EXPECT_EQ(call.at("title").as_string(), "write hello.txt") << "relative to the folder the opening named";
    EXPECT_EQ(call.at("kind").as_string(), "edit");
    EXPECT_EQ(json::serialize(call.at("rawInput")), R"({"path":"/home/u/project/hello.txt","content":"hi\n"})");
    EXPECT_EQ(json::serialize(call.at("locations")), R"([{"path":"/home/u/project/hello.txt"}])");
    EXPECT_EQ(events[2].json, R"({"toolCallId":"toolu_fake","status":"in_progress","content":[]})");
    EXPECT_EQ(events[3].json, R"({"toolCallId":"toolu_fake","status":"completed","content":[{"type":"content",)"
                              R"("content":{"type":"text","text":"Successfully wrote 3 bytes to /home/u/project/hello.txt"}}]})");
    EXPECT_EQ(events[4].json, R"({"content":{"type":"text","text":"Done: wrote the file."}})");

    // The result waits for pi's answer to the request sent on agent_end.
    const auto ended = pi.feed(kFirstTurnStats);
    ASSERT_EQ(ended.size(), 2u) << describe(ended);
    EXPECT_EQ(ended[0].kind, HD_EVENT_USAGE);
    EXPECT_EQ(payload(ended[0]), json::parse(R"({"used":30,"size":1000000,"cost":{"amount":0.0011,"currency":"USD"}})"));
    EXPECT_EQ(ended[1].kind, HD_EVENT_RESULT);
    const json::object result = payload(ended[1]);
    EXPECT_EQ(result.at("stopReason").as_string(), "end_turn");
    EXPECT_EQ(result.at("isError").as_bool(), false);
    EXPECT_EQ(result.at("result").as_string(), "Done: wrote the file.");
    EXPECT_DOUBLE_EQ(result.at("costUsd").as_double(), 0.0011);
    EXPECT_EQ(result.at("numTurns").as_int64(), 2);
    EXPECT_TRUE(pi.written().empty());
}

TEST(PiRpcMode, TwoTurnsEachEndInOneResultAndAPromptWaitsForTheTurn) {
    Pi pi;
    pi.prompt("create hello.txt containing hi");
    pi.feed(kOpening + kFirstTurn);
    // pi would refuse it, and its refusal would end the turn that runs.
    EXPECT_THROW(pi.prompt("meanwhile"), std::invalid_argument);
    const auto first = pi.feed(kFirstTurnStats);
    ASSERT_EQ(first.size(), 2u) << describe(first);
    EXPECT_EQ(first[1].kind, HD_EVENT_RESULT);
    pi.written();

    pi.prompt("what did you just do?");
    EXPECT_EQ(pi.written(), (Commands{R"({"type":"prompt","message":"what did you just do?","id":"handler-4"})"}));
    const auto second = pi.feed(kSecondTurn);
    ASSERT_EQ(second.size(), 3u) << describe(second);
    EXPECT_EQ(second[0].json, R"({"content":{"type":"text","text":"Done: wrote the file."}})");
    EXPECT_EQ(second[1].kind, HD_EVENT_USAGE);
    EXPECT_EQ(second[2].json, R"({"stopReason":"end_turn","isError":false,"result":"Done: wrote the file.",)"
                              R"("costUsd":5.5E-4,"numTurns":1})");
}

// The lines of `text` from the one holding `from` to the one before the one holding `to`
// (to the end when `to` is empty).
std::string from_to(const std::string& text, std::string_view from, std::string_view to = {}) {
    const std::size_t start = text.rfind('\n', text.find(from)) + 1;
    const std::size_t end = to.empty() ? text.size() : text.rfind('\n', text.find(to)) + 1;
    return text.substr(start, end - start);
}

// Then, as run for real: the thinking level and the model changed live, a model pi does
// not have, a turn cancelled while pi waited for the model, and the next one.
TEST(PiRpcMode, SettingsChangeLiveAndACancelledTurnSaysSoAndTheNextRuns) {
    Pi pi;
    pi.prompt("create hello.txt containing hi");
    pi.feed(kOpening + kFirstTurn + kFirstTurnStats);
    pi.prompt("what did you just do?");
    pi.feed(kSecondTurn);
    pi.written();

    EXPECT_TRUE(pi.set("thinking_level", "high").empty());
    auto events = pi.feed(from_to(kSettings, "thinking_level_changed", R"("id":"handler-8")"));
    EXPECT_TRUE(events.empty()) << "not before pi says what it runs now: " << describe(events);
    EXPECT_EQ(pi.written(), (Commands{R"({"type":"set_thinking_level","level":"high","id":"handler-7"})",
                                      R"({"type":"get_state","id":"handler-8"})"}));
    events = pi.feed(from_to(kSettings, R"("id":"handler-8")", R"("id":"handler-9")"));
    ASSERT_EQ(events.size(), 1u) << describe(events);
    EXPECT_EQ(events[0].json, R"({"modeId":"default","model":"anthropic/claude-opus-4-7","thinkingLevel":"high"})");

    EXPECT_TRUE(pi.set("model", "anthropic/claude-sonnet-4-5").empty());
    events = pi.feed(from_to(kSettings, R"("id":"handler-9")", R"("id":"handler-11")"));
    ASSERT_EQ(events.size(), 1u) << describe(events);
    EXPECT_EQ(events[0].json, R"({"modeId":"default","model":"anthropic/claude-sonnet-4-5","thinkingLevel":"high"})");
    EXPECT_EQ(pi.written(), (Commands{R"({"type":"set_model","provider":"anthropic","modelId":"claude-sonnet-4-5","id":"handler-9"})",
                                      R"({"type":"get_state","id":"handler-10"})"}));

    EXPECT_TRUE(pi.set("model", "nope/none").empty());
    events = pi.feed(from_to(kSettings, R"("id":"handler-11")"));
    ASSERT_EQ(events.size(), 1u) << describe(events);
    EXPECT_EQ(events[0].json, R"({"message":"pi did not change its model: Model not found: nope/none"})");
    EXPECT_EQ(pi.written(), (Commands{R"({"type":"set_model","provider":"nope","modelId":"none","id":"handler-11"})"}));

    // Cancelled while the model request hung (the fake server's --hold).
    const std::string reply = R"({"type":"message_start","message":{"role":"assistant")";
    pi.prompt("write it again");
    events = pi.feed(from_to(kAbortedTurn, R"("id":"handler-12")", reply));
    EXPECT_TRUE(events.empty()) << describe(events);
    EXPECT_TRUE(pi.cancel().empty());
    EXPECT_EQ(pi.written(), (Commands{R"({"type":"prompt","message":"write it again","id":"handler-12"})",
                                      R"({"type":"get_state","id":"handler-13"})", R"({"type":"abort","id":"handler-14"})"}));
    events = pi.feed(from_to(kAbortedTurn, reply));
    ASSERT_EQ(events.size(), 2u) << describe(events);
    EXPECT_EQ(events[0].json, R"({"used":34,"size":200000,"cost":{"amount":1.65E-3,"currency":"USD"}})");
    EXPECT_EQ(events[1].json, R"({"stopReason":"cancelled","isError":false,"result":"","costUsd":0E0,"numTurns":1})");

    // The conversation goes on.
    pi.prompt("try again");
    EXPECT_EQ(pi.written(), (Commands{R"({"type":"get_session_stats","id":"handler-15"})",
                                      R"({"type":"prompt","message":"try again","id":"handler-16"})"}));
    events = pi.feed(kAfterAbort);
    ASSERT_EQ(events.size(), 3u) << describe(events);
    EXPECT_EQ(payload(events[2]).at("stopReason").as_string(), "end_turn");
    EXPECT_EQ(payload(events[2]).at("result").as_string(), "Done: wrote the file.");
}

TEST(PiRpcMode, ACancelBeforePiTookThePromptWaitsForIt) {
    Pi pi;
    pi.prompt("create hello.txt containing hi");
    pi.written();
    // An abort that came first would find no run, and the run would go on.
    pi.cancel();
    EXPECT_TRUE(pi.written().empty());
    pi.feed(lines({R"({"id":"handler-1","type":"response","command":"prompt","success":true})"}));
    EXPECT_EQ(pi.written(), (Commands{R"({"type":"abort","id":"handler-2"})", R"({"type":"get_state","id":"handler-3"})"}));
}

TEST(PiRpcMode, ASettingPiCannotTakeIsRefusedBeforeItIsSent) {
    Pi pi;
    // No provider known yet: an id alone names none.
    EXPECT_THROW(pi.set("model", "claude-sonnet-4-5"), std::invalid_argument);
    EXPECT_THROW(pi.set("model", "anthropic/"), std::invalid_argument);
    // pi would take any word and quietly turn it into "off".
    EXPECT_THROW(pi.set("thinking_level", "max"), std::invalid_argument);
    EXPECT_THROW(pi.set("mode", "plan"), std::invalid_argument);
    EXPECT_THROW(pi.set("colour", "blue"), std::invalid_argument);
    EXPECT_TRUE(pi.written().empty());

    pi.feed(kOpening);
    pi.set("model", "claude-haiku-4-5");
    EXPECT_EQ(pi.written(), (Commands{R"({"type":"set_model","provider":"anthropic","modelId":"claude-haiku-4-5","id":"handler-1"})"}));
    const auto mode = pi.set("mode", "default");
    ASSERT_EQ(mode.size(), 1u);
    EXPECT_EQ(mode[0].json, R"({"modeId":"default","model":"anthropic/claude-opus-4-7","thinkingLevel":"medium"})");
}

// A model call that fails (529, after the Anthropic client's own retries) and pi's own
// retry, which starts a new run after agent_end: one turn, one result.
TEST(PiRpcMode, ARetryKeepsTheTurnOpenUntilItsRunEnds) {
    Pi pi;
    pi.prompt("create hello.txt containing hi");
    const std::string cut = R"({"type":"agent_start"})";
    const std::size_t second_run = kRetry.find(cut, kRetry.find(cut) + 1);
    auto events = pi.feed(kOpening + kRetry.substr(0, second_run));
    ASSERT_EQ(events.size(), 5u) << describe(events);
    EXPECT_EQ(events[3].json, R"({"message":"retrying after: 529 {\"type\":\"error\",\"error\":{\"type\":)"
                              R"(\"overloaded_error\",\"message\":\"Overloaded\"}}"})");
    EXPECT_EQ(events[4].kind, HD_EVENT_USAGE) << "and no result: pi tries again";
    events = pi.feed(kRetry.substr(second_run));
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().kind, HD_EVENT_RESULT);
    EXPECT_EQ(payload(events.back()).at("result").as_string(), "Done: wrote the file.");
    EXPECT_EQ(payload(events.back()).at("isError").as_bool(), false);
    EXPECT_EQ(std::count_if(events.begin(), events.end(), [](const Event& e) { return e.kind == HD_EVENT_RESULT; }), 1);
}

TEST(PiRpcMode, ACancelWhilePiWaitsToRetryEndsTheTurn) {
    Pi pi;
    pi.prompt("create hello.txt containing hi");
    const std::string cancelled_retry = R"({"type":"auto_retry_end")";
    const std::size_t at = kRetryCancelled.find(cancelled_retry);
    auto events = pi.feed(kOpening + kRetryCancelled.substr(0, at));
    ASSERT_FALSE(events.empty());
    EXPECT_NE(events.back().kind, HD_EVENT_RESULT);
    pi.written();
    pi.cancel();
    EXPECT_EQ(pi.written(), (Commands{R"({"type":"abort","id":"handler-4"})"}));
    events = pi.feed(kRetryCancelled.substr(at));
    ASSERT_EQ(events.size(), 1u) << describe(events) << "(pi's \"Retry cancelled\" is no news)";
    EXPECT_EQ(events[0].json, R"({"stopReason":"cancelled","isError":false,"result":"","costUsd":0E0,"numTurns":1})");
}

TEST(PiRpcMode, RetriesThatAllFailEndInOneFailedResult) {
    Pi pi;
    pi.prompt("create hello.txt containing hi");
    const auto events = pi.feed(kOpening + kRetriesFail);
    const std::string overloaded = R"(529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})";
    ASSERT_GE(events.size(), 3u) << describe(events);
    EXPECT_EQ(std::count_if(events.begin(), events.end(), [](const Event& e) { return e.kind == HD_EVENT_RESULT; }), 1);
    EXPECT_EQ(events.back().kind, HD_EVENT_RESULT);
    const json::object result = payload(events.back());
    EXPECT_EQ(result.at("isError").as_bool(), true);
    EXPECT_EQ(result.at("result").as_string(), overloaded);
    EXPECT_EQ(result.at("numTurns").as_int64(), 4);
    EXPECT_EQ(events[events.size() - 2].kind, HD_EVENT_ERROR);
}

TEST(PiRpcMode, APromptPiRefusesEndsTheTurnAsAFailure) {
    Pi pi;
    pi.prompt("hello");
    const auto events = pi.feed(kRefused);
    // A run with --no-session has no session file: nothing to resume, no session_info.
    ASSERT_EQ(events.size(), 4u) << describe(events);
    EXPECT_EQ(events[0].kind, HD_EVENT_MODE_CHANGED);
    EXPECT_EQ(events[1].kind, HD_EVENT_AVAILABLE_COMMANDS);
    EXPECT_EQ(events[2].kind, HD_EVENT_ERROR);
    EXPECT_TRUE(handler::testing::contains(events[2].json, "No API key found for anthropic.")) << events[2].json;
    EXPECT_EQ(payload(events[3]).at("isError").as_bool(), true);
    EXPECT_TRUE(pi.written().size() == 1) << "the prompt, and nothing after it";
    // The turn is over: the next prompt is sent.
    pi.prompt("again");
    EXPECT_EQ(pi.written(), (Commands{R"({"type":"prompt","message":"again","id":"handler-2"})"}));
}

// A project's pi extension, run for real: its commands are listed, one runs without an
// agent (its turn ends all the same), and its question, which nobody can answer, is
// dismissed at once rather than holding pi.
TEST(PiRpcMode, AnExtensionCommandEndsItsTurnAndItsQuestionIsDismissed) {
    Pi pi;
    const std::size_t second = kExtension.find(R"({"type":"extension_ui_request","id":"459c)");
    pi.prompt("/hello there");
    auto events = pi.feed(kExtension.substr(0, second));
    ASSERT_EQ(events.size(), 3u) << describe(events);
    EXPECT_EQ(events[1].json, R"({"availableCommands":[{"name":"hello","description":"Say hello"},)"
                              R"({"name":"ask","description":"Ask something"}]})");
    EXPECT_EQ(events[2].json, R"({"stopReason":"end_turn","isError":false,"result":""})");
    pi.written();

    pi.prompt("/ask");
    events = pi.feed(kExtension.substr(second));
    ASSERT_EQ(events.size(), 2u) << describe(events);
    EXPECT_EQ(events[0].json, R"({"message":"a pi extension asked \"Really?\"; Handler cannot show its questions, so it was dismissed"})");
    EXPECT_EQ(events[1].kind, HD_EVENT_RESULT);
    EXPECT_EQ(pi.written(), (Commands{R"({"type":"prompt","message":"/ask","id":"handler-3"})",
                                      R"({"type":"extension_ui_response","id":"459c1786-1ead-43f7-ac7b-75c66f8eb9ad","cancelled":true})",
                                      R"({"type":"get_state","id":"handler-4"})"}));
}

// A parser that did not send the prompt (handlerd restarted mid-turn) still ends the turn
// pi runs, wherever stdout is cut.
TEST(PiRpcMode, GivesTheSameEventsWhereverTheOutputIsSplit) {
    std::string turn = kFirstTurn.substr(kFirstTurn.find(R"({"type":"agent_start"})"));
    std::string stats = kFirstTurnStats;
    stats.replace(stats.find("handler-3"), 9, "handler-1");
    handler::testing::harnesses::expect_same_events_wherever_split<RpcModeParser>(kOpening + turn + stats, 10);
}

TEST(PiRpcMode, AnEndWithoutAnyAnswerIsAFailureAndAnAbortIsCancelled) {
    const std::string stats = R"({"id":"handler-1","type":"response","command":"get_session_stats","success":true,"data":{}})"
                              "\n";
    const auto none = handler::testing::harnesses::parse_all<RpcModeParser>(R"({"type":"agent_end","messages":[]})"
                                                                            "\n" + stats);
    ASSERT_EQ(none.size(), 2u) << describe(none);
    EXPECT_EQ(none[0].json, R"({"message":"pi ended without an answer from the model"})");
    EXPECT_EQ(payload(none[1]).at("isError").as_bool(), true);

    const auto aborted = handler::testing::harnesses::parse_all<RpcModeParser>(
        R"({"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"partial"}],"stopReason":"aborted"}})"
        "\n"
        R"({"type":"agent_end","messages":[]})"
        "\n" + stats);
    ASSERT_EQ(aborted.size(), 1u) << describe(aborted);
    EXPECT_EQ(aborted[0].json, R"({"stopReason":"cancelled","isError":false,"result":"partial","numTurns":1})");
}

TEST(PiRpcMode, ThinkingToolTitlesAndFailedTools) {
    const auto events = handler::testing::harnesses::parse_all<RpcModeParser>(
        R"({"id":"handler-opening-state:/p","type":"response","command":"get_state","success":true,"data":{}})"
        "\n"
        R"({"type":"message_update","assistantMessageEvent":{"type":"thinking_delta","delta":"Let me look"}})"
        "\n"
        R"({"type":"tool_execution_start","toolCallId":"t1","toolName":"bash","args":{"command":"ls -la\necho done"}})"
        "\n"
        R"({"type":"tool_execution_end","toolCallId":"t1","toolName":"bash","result":{"content":[{"type":"text","text":"exit 2"}]},"isError":true})"
        "\n"
        R"({"type":"tool_execution_start","toolCallId":"t2","toolName":"grep","args":{"pattern":"TODO","path":"/p/src"}})"
        "\n");
    ASSERT_EQ(events.size(), 6u) << describe(events);
    EXPECT_EQ(events[0].kind, HD_EVENT_AGENT_THOUGHT_CHUNK);
    // A call pi starts without the message that made it having ended is announced first.
    EXPECT_EQ(payload(events[1]).at("title").as_string(), "bash: ls -la \xe2\x80\xa6");
    EXPECT_EQ(payload(events[1]).at("kind").as_string(), "execute");
    EXPECT_EQ(payload(events[3]).at("status").as_string(), "failed");
    EXPECT_EQ(payload(events[4]).at("title").as_string(), "grep TODO in src");
    EXPECT_EQ(payload(events[4]).at("kind").as_string(), "search");
}

TEST(PiRpcMode, FieldsOfTheWrongTypeYieldNothingAndDoNotStopTheStream) {
    const auto events = handler::testing::harnesses::parse_all<RpcModeParser>(
        R"({"type":"message_end","message":"gone"})"
        "\n"
        R"({"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":7}})"
        "\n"
        R"({"type":"tool_execution_end","toolCallId":3,"result":"x"})"
        "\n"
        R"({"type":"message_end","message":{"role":"assistant","content":[1,{"type":"toolCall","id":"c","name":5,"arguments":"x"}],"usage":{"cost":{"total":"free"}}}})"
        "\n"
        R"({"id":"handler-opening-commands","type":"response","command":"get_commands","success":true,"data":{"commands":"none"}})"
        "\n"
        R"({"id":["handler-1"],"type":"response","command":"get_state","success":true,"data":"x"})"
        "\n"
        R"({"type":"extension_ui_request","id":7,"method":"confirm"})"
        "\n"
        R"({"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"still here"}})"
        "\n");
    ASSERT_EQ(events.size(), 2u) << describe(events);
    EXPECT_EQ(payload(events[0]).at("toolCallId").as_string(), "c");
    EXPECT_EQ(payload(events[0]).at("rawInput").as_string(), "x");
    EXPECT_EQ(events[1].json, R"({"content":{"type":"text","text":"still here"}})");
}

TEST(PiRpcMode, AFailedCommandPiAnswersWithoutItsIdIsAnError) {
    const auto events = handler::testing::harnesses::parse_all<RpcModeParser>(
        R"({"type":"response","command":"frobnicate","success":false,"error":"Unknown command: frobnicate"})"
        "\n");
    ASSERT_EQ(events.size(), 1u) << describe(events);
    EXPECT_EQ(events[0].json, R"({"message":"pi: Unknown command: frobnicate"})");
}

// ------------------------------------------------------------------ the loaded plugin

class PiPlugin : public handler::testing::harnesses::HarnessPluginTest {
protected:
    PiPlugin() : HarnessPluginTest("pi") {}

    static LaunchRequest request(LaunchMode mode, StartMode start, std::string prompt,
                                 std::string account_kind = "anthropic-api-key") {
        return HarnessPluginTest::request(mode, start, std::move(prompt), std::move(account_kind));
    }
    static LaunchRequest conversation(std::string resume = {}) {
        LaunchRequest r = request(LaunchMode::headless, StartMode::guarded, "");
        r.conversation = true;
        r.resume = std::move(resume);
        return r;
    }
};

TEST_F(PiPlugin, IsListedAndItsImageInstallsThePinnedCli) {
    const auto record = registry_.record("pi");
    ASSERT_TRUE(record);
    EXPECT_EQ(record->version, "0.1.0");
    EXPECT_TRUE(handler::testing::contains(record->library, "libpi.so"));
    auto recipe = harness_->image_recipe();
    ASSERT_TRUE(recipe) << recipe.error().message;
    EXPECT_EQ(recipe->run_steps,
              (std::vector<std::string>{"npm install -g --no-fund --no-audit @mariozechner/pi-coding-agent@0.73.1",
                                        "pi --version"}));
    auto text = harness_->describe();
    ASSERT_TRUE(text) << text.error().message;
    EXPECT_EQ(json::parse(*text).at("credentials").as_array().size(), 7u);
}

// handlerd reads "stdin" once per harness: every headless run of pi speaks rpc on it.
TEST_F(PiPlugin, OffersConversationsWithAProtocolOnItsStdin) {
    auto text = harness_->describe();
    ASSERT_TRUE(text) << text.error().message;
    const json::value described = json::parse(*text);
    EXPECT_EQ(described.at("launch_modes"), json::parse(R"(["interactive","headless","conversation"])"));
    EXPECT_EQ(described.at("stdin"), "protocol");
}

TEST_F(PiPlugin, AOneShotRunIsRpcModeWithoutASessionFile) {
    auto spec = harness_->launch(request(LaunchMode::headless, StartMode::guarded, "-v is broken"));
    ASSERT_TRUE(spec) << spec.error().message;
    // The prompt is not an argument: it is the parser's `prompt` command, after the opening.
    EXPECT_EQ(spec->arguments, (std::vector<std::string>{"pi", "--mode", "rpc", "--no-session", "--provider",
                                                         "anthropic", "--tools", "read,bash,edit,write"}));
    EXPECT_EQ(spec->input, RpcModeParser::opening("/home/u/project"));
    EXPECT_EQ(spec->session_state_env, "");
    EXPECT_EQ(spec->workdir, "/home/u/project");
    EXPECT_EQ(spec->secret_env,
              (std::vector<handler::plugins::SecretEnv>{{"ANTHROPIC_API_KEY", "anthropic-api-key"}}));
    EXPECT_EQ(spec->allowed_hosts, (std::vector<handler::plugins::AllowedHost>{{"api.anthropic.com", 443}}));
    EXPECT_EQ(spec->env, (std::vector<handler::plugins::EnvVar>{
                             {"PI_OFFLINE", "1"}, {"PI_SKIP_VERSION_CHECK", "1"}, {"PI_TELEMETRY", "0"}}));
}

TEST_F(PiPlugin, AConversationKeepsItsSessionInTheSessionsOwnFolder) {
    auto spec = harness_->launch(conversation());
    ASSERT_TRUE(spec) << spec.error().message << " (a conversation needs no first prompt)";
    EXPECT_EQ(spec->arguments, (std::vector<std::string>{"pi", "--mode", "rpc", "--provider", "anthropic", "--tools",
                                                         "read,bash,edit,write"}));
    EXPECT_EQ(spec->session_state_env, "PI_CODING_AGENT_SESSION_DIR");
    EXPECT_EQ(spec->input, RpcModeParser::opening("/home/u/project"));
}

TEST_F(PiPlugin, AResumeContinuesPisSessionOfThatId) {
    auto spec = harness_->launch(conversation("01a2324e-88ae-70b0-a640-6b7efc57e908"));
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->arguments,
              (std::vector<std::string>{"pi", "--mode", "rpc", "--session", "01a2324e-88ae-70b0-a640-6b7efc57e908",
                                        "--provider", "anthropic", "--tools", "read,bash,edit,write"}));
    EXPECT_EQ(spec->session_state_env, "PI_CODING_AGENT_SESSION_DIR");
}

// The id came from the session's last container: pi would open a path, or read an option.
TEST_F(PiPlugin, AResumeOfAnythingButOneOfPisSessionIdsIsRefused) {
    for (const std::string hostile : {"/etc/passwd", "../../state/x.jsonl", "--help", "01a2324e",
                                      "01A2324E-88AE-70B0-A640-6B7EFC57E908", "01a2324e-88ae-70b0-a640-6b7efc57e9088",
                                      "01a2324e_88ae-70b0-a640-6b7efc57e908", "01a2324e-88ae-70b0-a640-6b7efc57e9\n8",
                                      "\x1b]0;pwned\x07-88ae-70b0-a640-6b7efc57e908"}) {
        auto refused = harness_->launch(conversation(hostile));
        ASSERT_FALSE(refused) << hostile;
        EXPECT_EQ(refused.error().code, handler::ErrorCode::invalid_argument) << hostile;
        EXPECT_TRUE(handler::testing::contains(refused.error().message, "not one of pi's session ids"))
            << refused.error().message;
        EXPECT_EQ(refused.error().message.find('\x1b'), std::string::npos) << "escapes are quoted, not passed on";
    }
}

TEST_F(PiPlugin, EachAccountKindHasItsVariableAndHost) {
    const std::vector<std::array<std::string, 4>> cases = {
        {"claude-subscription", "ANTHROPIC_OAUTH_TOKEN", "api.anthropic.com", "anthropic"},
        {"openai-api-key", "OPENAI_API_KEY", "api.openai.com", "openai"},
        {"openrouter-api-key", "OPENROUTER_API_KEY", "openrouter.ai", "openrouter"},
        {"mistral-api-key", "MISTRAL_API_KEY", "api.mistral.ai", "mistral"},
    };
    for (const auto& [kind, variable, host, provider] : cases) {
        auto spec = harness_->launch(request(LaunchMode::headless, StartMode::guarded, "go", kind));
        ASSERT_TRUE(spec) << kind << ": " << spec.error().message;
        EXPECT_EQ(spec->secret_env, (std::vector<handler::plugins::SecretEnv>{{variable, kind}})) << kind;
        EXPECT_EQ(spec->allowed_hosts, (std::vector<handler::plugins::AllowedHost>{{host, 443}})) << kind;
        const auto at = std::find(spec->arguments.begin(), spec->arguments.end(), "--provider");
        ASSERT_LT(at + 1, spec->arguments.end()) << kind;
        EXPECT_EQ(*(at + 1), provider) << kind;
    }
}

TEST_F(PiPlugin, StartModesPickItsTools) {
    const auto tools_of = [&](StartMode start) {
        const auto argv = arguments(request(LaunchMode::headless, start, "go"));
        const auto at = std::find(argv.begin(), argv.end(), "--tools");
        return at == argv.end() || at + 1 == argv.end() ? std::string("(none)") : *(at + 1);
    };
    EXPECT_EQ(tools_of(StartMode::locked_down), "read,grep,find,ls");
    EXPECT_EQ(tools_of(StartMode::guarded), "read,bash,edit,write");
    EXPECT_EQ(tools_of(StartMode::open), "read,bash,edit,write,grep,find,ls");
}

TEST_F(PiPlugin, AModelWithItsProviderAndAnOptionLikePrompt) {
    LaunchRequest r = request(LaunchMode::interactive, StartMode::guarded, "-v is broken");
    r.model = "openrouter/qwen/qwen3-coder";
    // pi takes no "--": a leading space keeps the prompt from being read as an option.
    EXPECT_EQ(arguments(r), (std::vector<std::string>{"pi", "--model", "openrouter/qwen/qwen3-coder", "--tools",
                                                      "read,bash,edit,write", " -v is broken"}));
}

// A local server is a provider of pi's own models.json, written into the session's home
// before pi starts (the script run here for real by /bin/sh, with echo standing in for pi).
TEST_F(PiPlugin, ALocalServerIsAProviderInItsModelsFile) {
    LaunchRequest r = request(LaunchMode::headless, StartMode::guarded, "go", "ollama");
    r.account_base_url = "http://ollama.handler.internal:11434";
    r.model = "qwen3-coder";
    auto spec = harness_->launch(r);
    ASSERT_TRUE(spec) << spec.error().message;
    ASSERT_GE(spec->arguments.size(), 5u);
    EXPECT_EQ(std::vector<std::string>(spec->arguments.begin() + 5, spec->arguments.end()),
              (std::vector<std::string>{"--mode", "rpc", "--no-session", "--provider", "handler-local", "--model",
                                        "qwen3-coder", "--tools", "read,bash,edit,write"}));
    EXPECT_FALSE(handler::testing::contains(spec->arguments[2], "/dev/null")) << "its stdin is the protocol";
    EXPECT_TRUE(spec->secret_env.empty());
    EXPECT_TRUE(spec->allowed_hosts.empty()) << "handlerd adds the server's own rule";

    handler::testing::TempDir home;
    auto argv = spec->arguments;
    argv[3] = "echo";
    EXPECT_EQ(handler::testing::harnesses::run_argv(argv, home.path().string()),
              "--mode rpc --no-session --provider handler-local --model qwen3-coder --tools read,bash,edit,write\n");
    std::ifstream file(home.path() / ".pi/agent/models.json");
    const auto models = json::parse(std::string(std::istreambuf_iterator<char>(file), {}));
    EXPECT_EQ(models, json::parse(R"({"providers":{"handler-local":{"baseUrl":"http://ollama.handler.internal:11434/v1",)"
                                  R"("api":"openai-completions","apiKey":"handler-local","models":[{"id":"qwen3-coder"}]}}})"));

    r.model.clear();
    auto unnamed = harness_->launch(r);
    ASSERT_FALSE(unnamed);
    EXPECT_TRUE(handler::testing::contains(unnamed.error().message, "--model NAME")) << unnamed.error().message;
}

TEST_F(PiPlugin, AThinkingLevelIsItsThinking) {
    LaunchRequest r = request(LaunchMode::interactive, StartMode::guarded, "");
    r.thinking_level = "off";
    EXPECT_EQ(arguments(r), (std::vector<std::string>{"pi", "--provider", "anthropic", "--thinking", "off", "--tools",
                                                      "read,bash,edit,write"}));
    r.thinking_level = "max";
    auto refused = harness_->launch(r);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, handler::ErrorCode::invalid_argument);
}

TEST_F(PiPlugin, RefusesOtherAccountsAndAOneShotRunWithoutAPrompt) {
    auto other = harness_->launch(request(LaunchMode::headless, StartMode::guarded, "go", "chatgpt-login"));
    ASSERT_FALSE(other);
    EXPECT_EQ(other.error().code, handler::ErrorCode::invalid_argument);
    EXPECT_TRUE(handler::testing::contains(other.error().message, "'chatgpt-login'")) << other.error().message;
    auto empty = harness_->launch(request(LaunchMode::headless, StartMode::guarded, ""));
    ASSERT_FALSE(empty);
    EXPECT_TRUE(handler::testing::contains(empty.error().message, "needs a prompt")) << empty.error().message;
}

TEST_F(PiPlugin, ItsEventStreamParsesAcrossFeeds) {
    const std::string turn = kOpening + kFirstTurn.substr(kFirstTurn.find(R"({"type":"agent_start"})"));
    expect_plugin_events(turn, handler::testing::harnesses::parse_all<RpcModeParser>(turn));
}

// Through the plugin's ABI, as handlerd calls it: prompt, cancel and set write pi's
// commands, and a setting pi cannot take is refused there.
TEST_F(PiPlugin, ItsEventStreamTakesPromptsCancelsAndSettings) {
    auto stream = harness_->open_events("s_1");
    ASSERT_TRUE(stream) << stream.error().message;
    auto prompted = (*stream)->prompt(prompt_payload("create hello.txt containing hi"));
    ASSERT_TRUE(prompted) << prompted.error().message;
    EXPECT_EQ(prompted->input, R"({"type":"prompt","message":"create hello.txt containing hi","id":"handler-1"})"
                               "\n");
    auto fed = (*stream)->feed(lines({R"({"id":"handler-1","type":"response","command":"prompt","success":true})"}));
    ASSERT_TRUE(fed) << fed.error().message;
    EXPECT_EQ(fed->input, R"({"type":"get_state","id":"handler-2"})"
                          "\n");
    auto cancelled = (*stream)->cancel();
    ASSERT_TRUE(cancelled) << cancelled.error().message;
    EXPECT_EQ(cancelled->input, R"({"type":"abort","id":"handler-3"})"
                                "\n");
    auto set = (*stream)->set("thinking_level", "low");
    ASSERT_TRUE(set) << set.error().message;
    EXPECT_EQ(set->input, R"({"type":"set_thinking_level","level":"low","id":"handler-4"})"
                          "\n");
    auto refused = (*stream)->set("thinking_level", "max");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, handler::ErrorCode::invalid_argument);
    EXPECT_TRUE(handler::testing::contains(refused.error().message, "off, minimal, low, medium, high, xhigh"))
        << refused.error().message;
    auto answered = (*stream)->answer("{}", R"({"optionId":"allow"})");
    EXPECT_FALSE(answered);
}

} // namespace
} // namespace pi_test
