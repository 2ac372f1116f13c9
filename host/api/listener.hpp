// Private to server.cpp (see server_state.hpp). Accepts connections on one bound,
// listening socket (the unix socket or the loopback TCP port) and starts an HttpSession
// for each.
#pragma once

#include "api/http_session.hpp"
#include "api/server_state.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference" // see server_state.hpp
#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/steady_timer.hpp>
#pragma GCC diagnostic pop

#include <spdlog/spdlog.h>

namespace handler::api::detail {

class Listener final : public std::enable_shared_from_this<Listener> {
public:
    using Acceptor = net::basic_socket_acceptor<Protocol>;

    Listener(std::shared_ptr<ServerState> state, Acceptor acceptor, bool over_tcp)
        : state_(std::move(state)), acceptor_(std::move(acceptor)),
          retry_timer_(state_->io), over_tcp_(over_tcp) {}

    void start() { accept(); }

    void close() {
        beast::error_code ignored;
        acceptor_.close(ignored);
        retry_timer_.cancel();
    }

private:
    // Out of file descriptors (EMFILE) and the like fail every accept until a connection
    // closes: wait a little instead of spinning on the io thread.
    static constexpr std::chrono::milliseconds kAcceptRetry{100};

    void accept() {
        acceptor_.async_accept([self = shared_from_this()](beast::error_code error,
                                                           Protocol::socket socket) {
            self->on_accept(error, std::move(socket));
        });
    }

    void on_accept(beast::error_code error, Protocol::socket socket) {
        if (state_->stopping || !acceptor_.is_open() || error == net::error::operation_aborted)
            return;
        if (error) {
            spdlog::warn("api: accept failed on the {} listener: {}; retrying",
                         over_tcp_ ? "TCP" : "unix socket", error.message());
            retry_timer_.expires_after(kAcceptRetry);
            retry_timer_.async_wait([self = shared_from_this()](beast::error_code wait_error) {
                if (!wait_error) self->accept();
            });
            return;
        }
        set_close_on_exec(socket.native_handle());
        if (over_tcp_ &&
            state_->tcp_connection_count() >= state_->options.max_tcp_connections) {
            if (!warned_full_)
                spdlog::warn("api: {} TCP connections are open, the most allowed; closing new "
                             "ones until some end",
                             state_->tcp_connection_count());
            warned_full_ = true;
            beast::error_code ignored;
            socket.close(ignored);
            return accept();
        }
        warned_full_ = false;
        std::make_shared<HttpSession>(Stream(std::move(socket)), state_, over_tcp_)->start();
        accept();
    }

    std::shared_ptr<ServerState> state_;
    Acceptor acceptor_;
    net::steady_timer retry_timer_;
    const bool over_tcp_;
    bool warned_full_ = false; // one warning per episode, not one per refused connection
};

} // namespace handler::api::detail
