/* Every struct and field of handler/sdk.h, as X-macros, so the C99 check and the C++
 * layout test enumerate exactly the same list. A field added to sdk.h belongs here too:
 * the layout test then proves C and C++ compilers place it identically. C99. */
#ifndef HANDLER_TESTS_ABI_FIELDS_H
#define HANDLER_TESTS_ABI_FIELDS_H

#include <stddef.h>

#define HD_TEST_ABI_TYPES(X)                                                                   \
    X(hd_status) X(hd_plugin_kind) X(hd_log_level) X(hd_launch_mode) X(hd_start_mode)          \
    X(hd_event_kind) X(hd_str) X(hd_sink) X(hd_container_spec) X(hd_host_api)                  \
    X(hd_launch_request) X(hd_launch_builder) X(hd_recipe_builder) X(hd_event_sink)            \
    X(hd_harness_vtable) X(hd_addon_vtable) X(hd_plugin_info)

#define HD_TEST_ABI_FIELDS(X)                                                                  \
    X(hd_str, data) X(hd_str, size)                                                            \
    X(hd_sink, context) X(hd_sink, append)                                                     \
    X(hd_container_spec, struct_size) X(hd_container_spec, session_id)                         \
    X(hd_container_spec, image) X(hd_container_spec, argv) X(hd_container_spec, argc)          \
    X(hd_container_spec, env) X(hd_container_spec, env_count) X(hd_container_spec, workdir)    \
    X(hd_host_api, struct_size) X(hd_host_api, abi_major) X(hd_host_api, abi_minor)            \
    X(hd_host_api, context) X(hd_host_api, log) X(hd_host_api, network_allow_host)             \
    X(hd_host_api, network_bind_secret) X(hd_host_api, secret_stand_in)                        \
    X(hd_host_api, container_spawn) X(hd_host_api, container_exec)                             \
    X(hd_host_api, container_stop) X(hd_host_api, storage_get) X(hd_host_api, storage_set)     \
    X(hd_host_api, storage_remove)                                                             \
    X(hd_launch_request, struct_size) X(hd_launch_request, mode)                               \
    X(hd_launch_request, start_mode) X(hd_launch_request, session_id)                          \
    X(hd_launch_request, project_path) X(hd_launch_request, prompt)                            \
    X(hd_launch_request, model) X(hd_launch_request, account_kind)                             \
    X(hd_launch_request, extra_args) X(hd_launch_request, extra_arg_count)                     \
    X(hd_launch_request, account_base_url) X(hd_launch_request, thinking_level)                \
    X(hd_launch_request, conversation) X(hd_launch_request, resume)                            \
    X(hd_launch_request, mcp_servers)                                                          \
    X(hd_launch_builder, struct_size) X(hd_launch_builder, context)                            \
    X(hd_launch_builder, set_image) X(hd_launch_builder, add_argument)                         \
    X(hd_launch_builder, set_env) X(hd_launch_builder, set_workdir)                            \
    X(hd_launch_builder, allow_host) X(hd_launch_builder, set_env_from_secret)                 \
    X(hd_launch_builder, add_file) X(hd_launch_builder, keep_account_state)                    \
    X(hd_launch_builder, add_input) X(hd_launch_builder, keep_session_state)                   \
    X(hd_recipe_builder, struct_size) X(hd_recipe_builder, context)                            \
    X(hd_recipe_builder, add_run) X(hd_recipe_builder, set_env)                                \
    X(hd_event_sink, struct_size) X(hd_event_sink, context) X(hd_event_sink, emit)             \
    X(hd_harness_vtable, struct_size) X(hd_harness_vtable, describe)                           \
    X(hd_harness_vtable, image_recipe) X(hd_harness_vtable, launch)                            \
    X(hd_harness_vtable, events_open) X(hd_harness_vtable, events_feed)                        \
    X(hd_harness_vtable, events_close) X(hd_harness_vtable, events_answer)                     \
    X(hd_harness_vtable, events_prompt) X(hd_harness_vtable, events_cancel)                    \
    X(hd_harness_vtable, events_set) X(hd_harness_vtable, events_reopen)                       \
    X(hd_addon_vtable, struct_size) X(hd_addon_vtable, describe)                               \
    X(hd_addon_vtable, image_recipe) X(hd_addon_vtable, contribute)                            \
    X(hd_plugin_info, struct_size) X(hd_plugin_info, abi_major) X(hd_plugin_info, abi_minor)   \
    X(hd_plugin_info, kind) X(hd_plugin_info, id) X(hd_plugin_info, version)                   \
    X(hd_plugin_info, name) X(hd_plugin_info, description) X(hd_plugin_info, create)           \
    X(hd_plugin_info, destroy) X(hd_plugin_info, harness) X(hd_plugin_info, addon)

/* One measurement, as the C compiler saw it: "sizeof hd_str" or "hd_str.data". */
typedef struct hd_test_layout_fact {
    const char* what;
    size_t value;
} hd_test_layout_fact;

#ifdef __cplusplus
extern "C" {
#endif

/* Defined in sdk_c99_check.c, compiled as strict C99. */
extern const hd_test_layout_fact hd_test_c99_facts[];
extern const size_t hd_test_c99_fact_count;

/* Drives a sink and a host API through plain C, so the header is used, not just parsed.
 * Returns the number of checks that failed. */
int hd_test_c99_exercise(void);

#ifdef __cplusplus
}
#endif

#endif
