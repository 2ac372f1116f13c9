// Which session events a client of the events socket is sent (docs/api.md, "Following").
// Every session.event goes to every client unless it says otherwise: a page that shows
// one conversation while fifty stream would otherwise read, and handlerd write, fifty
// conversations' events to show one. A client that follows gets the events of the
// sessions it names, those of the kinds it names from every session (a page's
// notifications), and every other message of the hub as before.
#pragma once

#include "api/event_hub.hpp"
#include "core/result.hpp"

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace handler::api {

// The most sessions and kinds one follow may name: a page names the few it shows.
inline constexpr std::size_t kFollowLimit = 256;

struct EventFilter {
    bool everything = true;
    std::set<std::string, std::less<>> sessions;
    std::set<std::string, std::less<>> kinds;

    bool wants(const Topic& topic) const {
        return everything || topic.session.empty() || sessions.contains(topic.session) || kinds.contains(topic.kind);
    }
};

// {"type":"follow","sessions":[ID, ...] or "*","kinds":[KIND, ...]}. Nothing when the text
// is not a follow message (another message of the socket, or no JSON: its own parser says
// what is wrong); otherwise the filter, or an Error that names the field.
std::optional<Result<EventFilter>> parse_follow(std::string_view text);

// {"type":"following","sessions":[...] or "*","kinds":[...]}: from its arrival on, the
// client gets what the filter lets through; what came before is read with
// GET /api/v1/sessions/{id}/events?after=SEQ.
std::string following_message(const EventFilter& filter);

// A session id's shape: what the store makes ("s_" and hex digits) and nothing that is not
// plain text, so an answer that quotes one quotes text.
bool is_session_id_shape(std::string_view id);

} // namespace handler::api
