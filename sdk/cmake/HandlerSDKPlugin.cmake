# handler_add_plugin(): builds a Handler plugin the way handlerd loads it (see
# docs/plugin-authoring.md). Used in the Handler tree and, installed with the SDK, by
# third-party plugins after find_package(HandlerSDK).
#
#   handler_add_plugin(<target>
#     SOURCES <file>...
#     MANIFEST <plugin.toml>
#     [OUTPUT_DIRECTORY <dir>]      default: <build>/handler-plugins/<id>
#     [INSTALL_DESTINATION <dir>]   default: share/handler/plugins/<id>, so that
#                                   `cmake --install build --prefix ~/.local` lands in
#                                   handlerd's user plugin folder
#     [COMPONENT <name>]            install component (default: CMake's default)
#     [NO_INSTALL]                  build only (test fixtures)
#     [ALLOW_UNDEFINED])            do not link with --no-undefined (test fixtures)
#
# The manifest is the single source of truth for the plugin's id and library file name:
# the module is named exactly as its `library` key says, and the manifest is copied
# beside it, so the output folder is a complete plugin folder. Visibility is hidden and
# a version script exports hd_plugin_entry alone, so two plugins built against
# different library versions cannot interpose each other's symbols.
include_guard(GLOBAL)

# Reads a `key = "value"` (or 'value') line at the top of a manifest. Deliberately
# simple: id and library must be one-line strings, which the manifest format requires.
function(_handler_manifest_string manifest key out_var)
  file(STRINGS ${manifest} lines REGEX "^[ \t]*${key}[ \t]*=")
  list(LENGTH lines count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "${manifest}: expected exactly one line `${key} = \"...\"`, found ${count}")
  endif()
  # Two separate if()s: a later failed MATCHES in the same if() clears CMAKE_MATCH_1.
  if(lines MATCHES "^[ \t]*${key}[ \t]*=[ \t]*\"([^\"]+)\"")
    set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  elseif(lines MATCHES "^[ \t]*${key}[ \t]*=[ \t]*'([^']+)'")
    set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  else()
    message(FATAL_ERROR "${manifest}: `${key}` must be a one-line string, like ${key} = \"...\"")
  endif()
endfunction()

function(handler_add_plugin target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "NO_INSTALL;ALLOW_UNDEFINED"
                        "MANIFEST;OUTPUT_DIRECTORY;INSTALL_DESTINATION;COMPONENT" "SOURCES")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "handler_add_plugin(${target}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SOURCES OR NOT arg_MANIFEST)
    message(FATAL_ERROR "handler_add_plugin(${target}): SOURCES and MANIFEST are required")
  endif()
  get_filename_component(manifest ${arg_MANIFEST} ABSOLUTE)
  if(NOT EXISTS ${manifest})
    message(FATAL_ERROR "handler_add_plugin(${target}): manifest ${manifest} does not exist")
  endif()
  _handler_manifest_string(${manifest} id plugin_id)
  _handler_manifest_string(${manifest} library library_file)
  if(library_file MATCHES "/")
    message(FATAL_ERROR "${manifest}: library must be a file name beside the manifest, not ${library_file}")
  endif()

  if(arg_OUTPUT_DIRECTORY)
    set(output_dir ${arg_OUTPUT_DIRECTORY})
  else()
    set(output_dir ${PROJECT_BINARY_DIR}/handler-plugins/${plugin_id})
  endif()

  add_library(${target} MODULE ${arg_SOURCES})
  target_link_libraries(${target} PRIVATE handler::sdk)
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    SUFFIX ""
    OUTPUT_NAME ${library_file}
    LIBRARY_OUTPUT_DIRECTORY ${output_dir}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  set(exports_map ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/plugin_exports.map)
  target_link_options(${target} PRIVATE "LINKER:--version-script=${exports_map}")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${exports_map})
  if(NOT arg_ALLOW_UNDEFINED)
    # A symbol left undefined would only show up when handlerd loads the plugin.
    target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  endif()
  # configure_file re-runs when the manifest changes, so the copy never goes stale.
  configure_file(${manifest} ${output_dir}/plugin.toml COPYONLY)

  if(NOT arg_NO_INSTALL)
    if(arg_INSTALL_DESTINATION)
      set(destination ${arg_INSTALL_DESTINATION})
    else()
      set(destination share/handler/plugins/${plugin_id})
    endif()
    set(component_args)
    if(arg_COMPONENT)
      set(component_args COMPONENT ${arg_COMPONENT})
    endif()
    install(TARGETS ${target} LIBRARY DESTINATION ${destination} ${component_args})
    install(FILES ${manifest} DESTINATION ${destination} RENAME plugin.toml ${component_args})
  endif()
endfunction()
