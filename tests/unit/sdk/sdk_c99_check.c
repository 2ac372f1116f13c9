/* Compiles handler/sdk.h as strict C99 (-std=c99 -Wall -Wextra -Wpedantic -Werror):
 * the ABI waist must stay plain C, so a plugin can be written in C or in any language
 * with a C FFI. It also records the layout the C compiler chose, which the C++ layout
 * test compares field by field. */
#include <handler/sdk.h>

#include <stddef.h>
#include <string.h>

#include "abi_fields.h"

#define HD_TEST_SIZE_FACT(type) {"sizeof " #type, sizeof(type)},
#define HD_TEST_OFFSET_FACT(type, field) {#type "." #field, offsetof(type, field)},

const hd_test_layout_fact hd_test_c99_facts[] = {
    HD_TEST_ABI_TYPES(HD_TEST_SIZE_FACT)
    HD_TEST_ABI_FIELDS(HD_TEST_OFFSET_FACT)
};
const size_t hd_test_c99_fact_count = sizeof hd_test_c99_facts / sizeof hd_test_c99_facts[0];

/* C99 has no _Static_assert; a negative array size stops the build just the same. */
typedef char hd_test_ok_is_not_zero[HD_STATUS_OK != 0 ? 1 : -1];
typedef char hd_test_info_starts_with_size[offsetof(hd_plugin_info, struct_size) == 0 ? 1 : -1];

typedef struct collected {
    char text[64];
    size_t length;
} collected;

static void collect(void* context, hd_str piece) {
    collected* out = (collected*)context;
    if (out->length + piece.size < sizeof out->text) {
        memcpy(out->text + out->length, piece.data, piece.size);
        out->length += piece.size;
    }
}

static hd_status get_hello(void* context, hd_str key, hd_sink out_value) {
    static const char value[] = "hello";
    hd_str text;
    (void)context;
    if (key.size != 3 || memcmp(key.data, "key", 3) != 0) return HD_STATUS_NOT_FOUND;
    text.data = value;
    text.size = sizeof value - 1;
    out_value.append(out_value.context, text);
    return HD_STATUS_OK;
}

int hd_test_c99_exercise(void) {
    int failures = 0;
    collected out;
    hd_host_api api;
    hd_sink sink;
    hd_str key;
    memset(&out, 0, sizeof out);
    memset(&api, 0, sizeof api);
    api.struct_size = (uint32_t)sizeof api;
    api.abi_major = HD_ABI_MAJOR;
    api.abi_minor = HD_ABI_MINOR;
    api.storage_get = get_hello;
    sink.context = &out;
    sink.append = collect;
    key.data = "key";
    key.size = 3;
    if (api.storage_get(api.context, key, sink) != HD_STATUS_OK) ++failures;
    if (out.length != 5 || memcmp(out.text, "hello", 5) != 0) ++failures;
    key.size = 2;
    if (api.storage_get(api.context, key, sink) != HD_STATUS_NOT_FOUND) ++failures;
    if (api.log != NULL) ++failures; /* zero-filled means "not provided" (rule 4) */
    return failures;
}
