// The plugin ABI's layout, pinned. A field moved, removed or resized in handler/sdk.h
// fails the build here (x86-64, the platform handlerd ships for) before it can break
// every plugin in the field; appending a field means adding its line below, which is
// the reminder to bump HD_ABI_MINOR.
#include "unit/sdk/abi_fields.h"

#include <handler/sdk.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#if defined(__x86_64__) && defined(__linux__)
static_assert(HD_ABI_MAJOR == 1 && HD_ABI_MINOR == 1, "update the layout below with the ABI");

static_assert(sizeof(hd_status) == 4 && sizeof(hd_plugin_kind) == 4 && sizeof(hd_log_level) == 4);
static_assert(sizeof(hd_launch_mode) == 4 && sizeof(hd_start_mode) == 4 && sizeof(hd_event_kind) == 4);

static_assert(sizeof(hd_str) == 16 && offsetof(hd_str, data) == 0 && offsetof(hd_str, size) == 8);
static_assert(sizeof(hd_sink) == 16 && offsetof(hd_sink, context) == 0 && offsetof(hd_sink, append) == 8);

static_assert(sizeof(hd_container_spec) == 88);
static_assert(offsetof(hd_container_spec, session_id) == 8);
static_assert(offsetof(hd_container_spec, image) == 24);
static_assert(offsetof(hd_container_spec, argv) == 40);
static_assert(offsetof(hd_container_spec, argc) == 48);
static_assert(offsetof(hd_container_spec, env) == 56);
static_assert(offsetof(hd_container_spec, env_count) == 64);
static_assert(offsetof(hd_container_spec, workdir) == 72);

static_assert(sizeof(hd_host_api) == 96);
static_assert(offsetof(hd_host_api, abi_major) == 4);
static_assert(offsetof(hd_host_api, abi_minor) == 6);
static_assert(offsetof(hd_host_api, context) == 8);
static_assert(offsetof(hd_host_api, log) == 16);
static_assert(offsetof(hd_host_api, network_allow_host) == 24);
static_assert(offsetof(hd_host_api, network_bind_secret) == 32);
static_assert(offsetof(hd_host_api, secret_stand_in) == 40);
static_assert(offsetof(hd_host_api, container_spawn) == 48);
static_assert(offsetof(hd_host_api, container_exec) == 56);
static_assert(offsetof(hd_host_api, container_stop) == 64);
static_assert(offsetof(hd_host_api, storage_get) == 72);
static_assert(offsetof(hd_host_api, storage_set) == 80);
static_assert(offsetof(hd_host_api, storage_remove) == 88);

static_assert(sizeof(hd_launch_request) == 184);
static_assert(offsetof(hd_launch_request, mode) == 4);
static_assert(offsetof(hd_launch_request, start_mode) == 8);
static_assert(offsetof(hd_launch_request, session_id) == 16);
static_assert(offsetof(hd_launch_request, project_path) == 32);
static_assert(offsetof(hd_launch_request, prompt) == 48);
static_assert(offsetof(hd_launch_request, model) == 64);
static_assert(offsetof(hd_launch_request, account_kind) == 80);
static_assert(offsetof(hd_launch_request, extra_args) == 96);
static_assert(offsetof(hd_launch_request, extra_arg_count) == 104);
static_assert(offsetof(hd_launch_request, account_base_url) == 112);
static_assert(offsetof(hd_launch_request, thinking_level) == 128);
static_assert(offsetof(hd_launch_request, conversation) == 144);
static_assert(offsetof(hd_launch_request, resume) == 152);
static_assert(offsetof(hd_launch_request, mcp_servers) == 168);

static_assert(sizeof(hd_launch_builder) == 96);
static_assert(offsetof(hd_launch_builder, context) == 8);
static_assert(offsetof(hd_launch_builder, set_image) == 16);
static_assert(offsetof(hd_launch_builder, add_argument) == 24);
static_assert(offsetof(hd_launch_builder, set_env) == 32);
static_assert(offsetof(hd_launch_builder, set_workdir) == 40);
static_assert(offsetof(hd_launch_builder, allow_host) == 48);
static_assert(offsetof(hd_launch_builder, set_env_from_secret) == 56);
static_assert(offsetof(hd_launch_builder, add_file) == 64);
static_assert(offsetof(hd_launch_builder, keep_account_state) == 72);
static_assert(offsetof(hd_launch_builder, add_input) == 80);
static_assert(offsetof(hd_launch_builder, keep_session_state) == 88);

static_assert(sizeof(hd_recipe_builder) == 32);
static_assert(offsetof(hd_recipe_builder, context) == 8);
static_assert(offsetof(hd_recipe_builder, add_run) == 16);
static_assert(offsetof(hd_recipe_builder, set_env) == 24);

static_assert(sizeof(hd_event_sink) == 40);
static_assert(offsetof(hd_event_sink, context) == 8);
static_assert(offsetof(hd_event_sink, emit) == 16);
static_assert(offsetof(hd_event_sink, write_input) == 24);
static_assert(offsetof(hd_event_sink, close_input) == 32);

static_assert(sizeof(hd_harness_vtable) == 96);
static_assert(offsetof(hd_harness_vtable, describe) == 8);
static_assert(offsetof(hd_harness_vtable, image_recipe) == 16);
static_assert(offsetof(hd_harness_vtable, launch) == 24);
static_assert(offsetof(hd_harness_vtable, events_open) == 32);
static_assert(offsetof(hd_harness_vtable, events_feed) == 40);
static_assert(offsetof(hd_harness_vtable, events_close) == 48);
static_assert(offsetof(hd_harness_vtable, events_answer) == 56);
static_assert(offsetof(hd_harness_vtable, events_prompt) == 64);
static_assert(offsetof(hd_harness_vtable, events_cancel) == 72);
static_assert(offsetof(hd_harness_vtable, events_set) == 80);
static_assert(offsetof(hd_harness_vtable, events_reopen) == 88);

static_assert(sizeof(hd_addon_vtable) == 32);
static_assert(offsetof(hd_addon_vtable, describe) == 8);
static_assert(offsetof(hd_addon_vtable, image_recipe) == 16);
static_assert(offsetof(hd_addon_vtable, contribute) == 24);

// Rule 8: these three never move, in any major.
static_assert(offsetof(hd_plugin_info, struct_size) == 0);
static_assert(offsetof(hd_plugin_info, abi_major) == 4);
static_assert(offsetof(hd_plugin_info, abi_minor) == 6);
static_assert(sizeof(hd_plugin_info) == 80);
static_assert(offsetof(hd_plugin_info, kind) == 8);
static_assert(offsetof(hd_plugin_info, id) == 16);
static_assert(offsetof(hd_plugin_info, version) == 24);
static_assert(offsetof(hd_plugin_info, name) == 32);
static_assert(offsetof(hd_plugin_info, description) == 40);
static_assert(offsetof(hd_plugin_info, create) == 48);
static_assert(offsetof(hd_plugin_info, destroy) == 56);
static_assert(offsetof(hd_plugin_info, harness) == 64);
static_assert(offsetof(hd_plugin_info, addon) == 72);
#endif

// Rule 4: zero is never a meaningful enum value.
static_assert(HD_STATUS_OK != 0 && HD_PLUGIN_KIND_HARNESS != 0 && HD_LOG_TRACE != 0);
static_assert(HD_LAUNCH_INTERACTIVE != 0 && HD_START_LOCKED_DOWN != 0 && HD_EVENT_USER_PROMPT != 0);

namespace {

#define HD_TEST_SIZE_FACT(type) {"sizeof " #type, sizeof(type)},
#define HD_TEST_OFFSET_FACT(type, field) {#type "." #field, offsetof(type, field)},

struct Fact {
    std::string what;
    std::size_t value;
};

const std::vector<Fact> kCxxFacts = {
    HD_TEST_ABI_TYPES(HD_TEST_SIZE_FACT) HD_TEST_ABI_FIELDS(HD_TEST_OFFSET_FACT)};

TEST(SdkAbiLayout, CAndCxxCompilersAgreeOnEveryField) {
    ASSERT_EQ(hd_test_c99_fact_count, kCxxFacts.size());
    for (std::size_t i = 0; i < kCxxFacts.size(); ++i) {
        EXPECT_EQ(std::string(hd_test_c99_facts[i].what), kCxxFacts[i].what);
        EXPECT_EQ(hd_test_c99_facts[i].value, kCxxFacts[i].value) << kCxxFacts[i].what;
    }
}

TEST(SdkAbiLayout, HeaderWorksFromPlainC) {
    EXPECT_EQ(hd_test_c99_exercise(), 0);
}

} // namespace
