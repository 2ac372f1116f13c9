// A session service for the terminal tests (the terminal route and the events socket's
// channels): two sessions, s_000001 and s_000002, that replay a line when attached and
// record what each attach was sent. Everything runs on the server's io thread; a test
// reads it through RunningServer::on_io().
#pragma once

#include "api/session_control.hpp"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace handler::api::testing {

class FakeSessions final : public SessionControl {
public:
    using Size = std::pair<std::uint16_t, std::uint16_t>;

    // What one attach received.
    struct Attach {
        std::string session;
        AttachOptions options;
        std::weak_ptr<TerminalClient> client;
        std::string typed;
        std::vector<Size> sizes;
        int eofs = 0;
        bool detached = false;
    };

    Result<store::Session> start(const StartRequest&) override { return unavailable(); }
    Result<store::Session> stop(std::string_view) override { return unavailable(); }
    Result<void> remove(std::string_view) override { return unavailable(); }
    Result<SessionLog> log(std::string_view) override { return unavailable(); }

    Result<Attached> attach(std::string_view id, std::weak_ptr<TerminalClient> attaching,
                            const AttachOptions& options) override {
        const auto replay = replays.find(std::string(id));
        if (replay == replays.end())
            return make_error(ErrorCode::not_found, "session '" + std::string(id) + "' does not exist");
        last_options = options;
        client = attaching;
        const auto attach_id = next_attach_id++;
        attaches[attach_id] = Attach{std::string(id), options, attaching, {}, {}, 0, false};
        if (auto alive = attaching.lock())
            alive->output(OutputStream::terminal, 0, replay->second.size(), std::make_shared<const std::string>(replay->second));
        Attached attached;
        attached.attach_id = attach_id;
        attached.produced = 9;
        attached.tty = true;
        attached.state = store::SessionState::running;
        attached.events = options.events ? "structured" : "none";
        return attached;
    }
    void detach(std::uint64_t attach_id) override {
        detached.push_back(attach_id);
        if (auto found = attaches.find(attach_id); found != attaches.end()) found->second.detached = true;
    }
    void input(std::uint64_t attach_id, std::string_view bytes) override {
        typed += bytes;
        if (auto found = attaches.find(attach_id); found != attaches.end()) found->second.typed += bytes;
    }
    void input_eof(std::uint64_t attach_id) override {
        ++eofs;
        if (auto found = attaches.find(attach_id); found != attaches.end()) ++found->second.eofs;
    }
    void resize(std::uint64_t attach_id, std::uint16_t rows, std::uint16_t cols) override {
        sizes.emplace_back(rows, cols);
        if (auto found = attaches.find(attach_id); found != attaches.end()) found->second.sizes.emplace_back(rows, cols);
    }
    Result<void> answer(std::string_view, std::string_view, std::string_view) override { return unavailable(); }

    // To the latest attach.
    void say(OutputStream stream, const std::string& text) {
        if (auto alive = client.lock()) alive->output(stream, 0, text.size(), std::make_shared<const std::string>(text));
    }
    void exit(std::int64_t code) {
        if (auto alive = client.lock()) alive->exited(code);
    }
    void event(std::int64_t seq, const std::string& kind, const std::string& payload) {
        if (auto alive = client.lock()) alive->event(store::SessionEvent{"s_000001", seq, 1000 + seq, kind, payload});
    }
    // To every live attach of `session`, as the output from `offset` on (default: right
    // after the replay).
    void say_to(const std::string& session, OutputStream stream, const std::string& text,
                std::uint64_t offset = 9) {
        for (auto& [id, attach] : attaches)
            if (auto alive = attach.client.lock(); alive && attach.session == session && !attach.detached)
                alive->output(stream, offset, offset + text.size(), std::make_shared<const std::string>(text));
    }
    void exit_of(const std::string& session, std::int64_t code) {
        for (auto& [id, attach] : attaches)
            if (auto alive = attach.client.lock(); alive && attach.session == session && !attach.detached)
                alive->exited(code);
    }
    // The attaches of `session`, oldest first.
    std::vector<Attach> of(const std::string& session) const {
        std::vector<Attach> found;
        for (const auto& [id, attach] : attaches)
            if (attach.session == session) found.push_back(attach);
        return found;
    }

    // The sessions that exist, with what attaching to each replays.
    std::map<std::string, std::string> replays = {{"s_000001", "replayed;"}, {"s_000002", "second;"}};
    std::map<std::uint64_t, Attach> attaches;
    std::uint64_t next_attach_id = 7;
    // Across all attaches, for the tests with one.
    std::weak_ptr<TerminalClient> client;
    AttachOptions last_options;
    std::string typed;
    int eofs = 0;
    std::vector<Size> sizes;
    std::vector<std::uint64_t> detached;

private:
    static Error unavailable() { return make_error(ErrorCode::unavailable, "not in this test"); }
};

} // namespace handler::api::testing
