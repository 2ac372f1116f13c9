# Installs the SDK component into a temporary prefix, builds plugins/template against
# it in a temporary folder, installs the plugin into a user plugin folder layout, and
# asks handler_plugin_probe (the real loader) to load it. Then checks that the package
# version rule refuses a plugin asking for another major.
cmake_minimum_required(VERSION 3.25)

foreach(var HANDLER_BUILD_DIR TEMPLATE_SOURCE_DIR WORK_DIR PROBE GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_template_test.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN}
    RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${what} failed (${result}):\n${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(sdk_prefix ${WORK_DIR}/sdk)

# 1. The SDK, alone.
run("installing the sdk component"
  ${CMAKE_COMMAND} --install ${HANDLER_BUILD_DIR} --prefix ${sdk_prefix} --component sdk)
foreach(header sdk.h plugin.hpp host.hpp waist.hpp)
  if(NOT EXISTS ${sdk_prefix}/include/handler/${header})
    message(FATAL_ERROR "the sdk component did not install include/handler/${header}")
  endif()
endforeach()
file(GLOB_RECURSE configs ${sdk_prefix}/*/HandlerSDKConfig.cmake)
if(NOT configs)
  message(FATAL_ERROR "the sdk component did not install HandlerSDKConfig.cmake")
endif()
file(GLOB_RECURSE stray_binaries ${sdk_prefix}/*.so ${sdk_prefix}/bin/*)
if(stray_binaries)
  message(FATAL_ERROR "the sdk component installed more than the SDK: ${stray_binaries}")
endif()

# 2. The template, out of tree, against that prefix only.
set(configure_args -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${sdk_prefix}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=RelWithDebInfo)
if(CXX_COMPILER_LAUNCHER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_COMPILER_LAUNCHER})
endif()
run("configuring plugins/template"
  ${CMAKE_COMMAND} -S ${TEMPLATE_SOURCE_DIR} -B ${WORK_DIR}/build ${configure_args})
run("building plugins/template" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run("installing plugins/template"
  ${CMAKE_COMMAND} --install ${WORK_DIR}/build --prefix ${WORK_DIR}/user)

set(plugin_dir ${WORK_DIR}/user/share/handler/plugins)
foreach(file my-harness/libmy-harness.so my-harness/plugin.toml)
  if(NOT EXISTS ${plugin_dir}/${file})
    message(FATAL_ERROR "the template did not install ${plugin_dir}/${file}")
  endif()
endforeach()

# 3. It loads, and answers, in the real loader.
run("probing the installed template" ${PROBE} --require-loaded my-harness ${plugin_dir})
message(STATUS "probe: ${last_output}")
string(JSON state GET "${last_output}" plugins 0 state)
string(JSON abi GET "${last_output}" plugins 0 abi)
string(JSON first_argument GET "${last_output}" plugins 0 launch arguments 0)
string(JSON default_host GET "${last_output}" plugins 0 describe default_hosts 0)
if(NOT state STREQUAL "loaded" OR NOT abi STREQUAL "1.1" OR NOT first_argument STREQUAL "my-agent"
   OR NOT default_host STREQUAL "api.example.com")
  message(FATAL_ERROR "unexpected probe result: ${last_output}")
endif()

# 4. SameMajorVersion: a plugin asking for SDK 2.0 must not configure against 1.x.
file(WRITE ${WORK_DIR}/wants-v2/CMakeLists.txt
  "cmake_minimum_required(VERSION 3.20)\nproject(wants_v2 LANGUAGES CXX)\nfind_package(HandlerSDK 2.0 REQUIRED)\n")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK_DIR}/wants-v2 -B ${WORK_DIR}/wants-v2/build ${configure_args}
  RESULT_VARIABLE result OUTPUT_QUIET ERROR_QUIET)
if(result EQUAL 0)
  message(FATAL_ERROR "find_package(HandlerSDK 2.0) accepted the 1.x SDK")
endif()

message(STATUS "plugins/template builds out of tree against the installed SDK and loads")
