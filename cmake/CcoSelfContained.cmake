# cco_self_contained_library(<target> OUTPUT_NAME <name> CORE <static core> EXPORTS <map>)
#
# The shared libraries ccoverlap puts into other people's processes (libcco_preload.so, loaded
# with LD_PRELOAD; libcco_tuner.so, dlopened by NCCL) are self-contained: only the symbols of
# their version script are exported (everything else hidden), their C++ runtime is static and
# hidden so it never clashes with the host program's, no undefined symbol is left for the host to
# provide, and they are never unloaded (exit-time statistics and static state stay valid).
function(cco_self_contained_library target)
  cmake_parse_arguments(L "" "OUTPUT_NAME;CORE;EXPORTS" "" ${ARGN})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${L_OUTPUT_NAME}
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${L_EXPORTS})
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow)
  target_link_libraries(${target} PRIVATE ${L_CORE})
  target_link_options(${target} PRIVATE
    -Wl,--version-script=${L_EXPORTS}
    -Wl,--no-undefined -Wl,-z,nodelete -static-libstdc++ -static-libgcc)
endfunction()
