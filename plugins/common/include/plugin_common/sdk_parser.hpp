// A harness's JSON-lines parser (plugin_common::JsonLinesParser) as the SDK's event
// parser, which is what a plugin's open_events() hands handlerd.
#pragma once

#include <plugin_common/events.hpp>

#include <handler/plugin.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace handler::plugin_common {

// What a parser whose harness reads a protocol on its stdin writes there.
struct Reply {
    std::string input;
    bool close = false; // the run's input ends here
};

// A parser that talks back (Claude Code's control channel) also has
// `Reply take_reply()`, `std::vector<Event> answer(request, answer)` and
// `std::vector<Event> prompt(prompt)`; one that holds conversations also
// `std::vector<Event> cancel()` and may have `std::vector<Event> set(name, value)`.
template <class Parser>
class SdkEventParser final : public handler::sdk::EventParser {
public:
    SdkEventParser() = default;
    template <class First, class... Rest>
    explicit SdkEventParser(First&& first, Rest&&... rest)
        : parser_(std::forward<First>(first), std::forward<Rest>(rest)...) {}

    void feed(std::string_view bytes, handler::sdk::EventSink& sink) override {
        for (const Event& event : parser_.feed(bytes)) sink.emit(event.kind, event.json);
        if constexpr (kTalksBack) send(parser_.take_reply(), sink);
    }

    void answer(std::string_view request, std::string_view answer, handler::sdk::EventSink& sink) override {
        if constexpr (kTalksBack) {
            for (const Event& event : parser_.answer(request, answer)) sink.emit(event.kind, event.json);
            send(parser_.take_reply(), sink);
        } else {
            handler::sdk::EventParser::answer(request, answer, sink);
        }
    }

    void prompt(std::string_view prompt, handler::sdk::EventSink& sink) override {
        if constexpr (kTalksBack) {
            for (const Event& event : parser_.prompt(prompt)) sink.emit(event.kind, event.json);
            send(parser_.take_reply(), sink);
        }
    }

    void cancel(handler::sdk::EventSink& sink) override {
        if constexpr (kCancels) {
            for (const Event& event : parser_.cancel()) sink.emit(event.kind, event.json);
            send(parser_.take_reply(), sink);
        } else {
            handler::sdk::EventParser::cancel(sink);
        }
    }

    void set(std::string_view name, std::string_view value, handler::sdk::EventSink& sink) override {
        if constexpr (kSets) {
            for (const Event& event : parser_.set(name, value)) sink.emit(event.kind, event.json);
            send(parser_.take_reply(), sink);
        } else {
            handler::sdk::EventParser::set(name, value, sink);
        }
    }

    // The wrapped parser, for a plugin that sets it up (a reopened conversation's).
    Parser& parser() { return parser_; }

private:
    static constexpr bool kCancels = requires(Parser parser) { parser.cancel(); };
    static constexpr bool kSets = requires(Parser parser, std::string_view text) { parser.set(text, text); };
    static constexpr bool kTalksBack = requires(Parser parser) { parser.take_reply(); };

    static void send(const Reply& reply, handler::sdk::EventSink& sink) {
        if (!reply.input.empty()) sink.write_input(reply.input);
        if (reply.close) sink.close_input();
    }

    Parser parser_;
};

} // namespace handler::plugin_common
