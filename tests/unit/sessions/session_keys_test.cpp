// Local model servers as a session reaches them: a server on the host's loopback gets a
// name of its own that the proxy leads back (the container's loopback is not the host's);
// any other host is kept, and either way one exact host:port rule admits it.
#include "sessions/session_keys.hpp"

#include "store/store.hpp"
#include "support/fakes.hpp"

#include <gtest/gtest.h>

namespace handler::sessions {
namespace {

store::Account account(const std::string& kind, const std::string& url) {
    store::Account made;
    made.name = "local";
    made.kind = kind;
    made.base_url = url;
    return made;
}

TEST(LocalServer, AServerOnTheHostsLoopbackGetsANameTheProxyLeadsBack) {
    for (const std::string url : {"http://127.0.0.1:11434", "http://localhost:11434", "http://[::1]:11434"}) {
        auto server = local_server(account("ollama", url));
        ASSERT_TRUE(server.ok()) << url << ": " << server.error().message;
        EXPECT_EQ(server->container_url, "http://ollama.handler.internal:11434") << url;
        EXPECT_EQ(server->rule, "ollama.handler.internal:11434");
        ASSERT_TRUE(server->pinned.has_value());
    }
    auto with_path = local_server(account("llama-cpp", "https://127.0.0.2/base"));
    ASSERT_TRUE(with_path.ok());
    EXPECT_EQ(with_path->container_url, "https://llama-cpp.handler.internal:443/base");
    EXPECT_EQ(with_path->port, 443);
}

TEST(LocalServer, AnyOtherHostIsKeptAndAdmittedByAnExactRule) {
    auto lan = local_server(account("ollama", "http://192.168.1.20:11434"));
    ASSERT_TRUE(lan.ok());
    EXPECT_EQ(lan->container_url, "http://192.168.1.20:11434");
    EXPECT_EQ(lan->rule, "192.168.1.20:11434");
    EXPECT_FALSE(lan->pinned.has_value());
    auto v6 = local_server(account("ollama", "http://[fd00::5]:8080"));
    ASSERT_TRUE(v6.ok());
    EXPECT_EQ(v6->rule, "[fd00::5]:8080");
}

TEST(LocalServer, OnlyLocalKindsWithAnHttpUrlHaveOne) {
    EXPECT_FALSE(local_server(account("anthropic-api-key", "http://127.0.0.1:1")).ok());
    EXPECT_FALSE(local_server(account("ollama", "ftp://127.0.0.1:1")).ok());
    store::Account none = account("ollama", "");
    none.base_url.reset();
    EXPECT_FALSE(local_server(none).ok());
}

// Without an agent's own account, the key comes from the one account of its kind in the
// project's context; untagged is a context of its own, so an untagged key never serves a
// Work project, nor a Work key an untagged one (docs/domain-model.md, "Contexts").
TEST(AccountFor, AKeyIsTakenOnlyFromTheProjectsOwnContext) {
    testing::FakeClock clock;
    auto opened = store::Store::open_in_memory(clock);
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    store::Store& store = **opened;
    ASSERT_TRUE(store.create_context("Work").ok());
    auto work = store.create_project({"work", "/work/app", "Work", {}});
    auto untagged = store.create_project({"mine", "/work/mine", std::nullopt, {}});
    ASSERT_TRUE(work.ok() && untagged.ok());
    ASSERT_TRUE(store.create_account({"personal", "anthropic-api-key", std::nullopt, std::nullopt}).ok());

    auto refused = account_for(store, "anthropic-api-key", std::nullopt, *work);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::not_found);
    auto same = account_for(store, "anthropic-api-key", std::nullopt, *untagged);
    ASSERT_TRUE(same.ok()) << same.error().message;
    EXPECT_EQ(same->name, "personal");

    ASSERT_TRUE(store.create_account({"office", "anthropic-api-key", "Work", std::nullopt}).ok());
    auto office = account_for(store, "anthropic-api-key", std::nullopt, *work);
    ASSERT_TRUE(office.ok()) << office.error().message;
    EXPECT_EQ(office->name, "office");
    auto still_personal = account_for(store, "anthropic-api-key", std::nullopt, *untagged);
    ASSERT_TRUE(still_personal.ok()) << still_personal.error().message;
    EXPECT_EQ(still_personal->name, "personal");
}

} // namespace
} // namespace handler::sessions
