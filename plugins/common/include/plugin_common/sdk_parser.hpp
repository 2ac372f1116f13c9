// A harness's JSON-lines parser (plugin_common::JsonLinesParser) as the SDK's event
// parser, which is what a plugin's open_events() hands handlerd.
#pragma once

#include <plugin_common/events.hpp>

#include <handler/plugin.hpp>

#include <string_view>

namespace handler::plugin_common {

template <class Parser>
class SdkEventParser final : public handler::sdk::EventParser {
public:
    void feed(std::string_view bytes, handler::sdk::EventSink& sink) override {
        for (const Event& event : parser_.feed(bytes)) sink.emit(event.kind, event.json);
    }

private:
    Parser parser_;
};

} // namespace handler::plugin_common
