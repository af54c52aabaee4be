cmake_minimum_required(VERSION 3.25)  # policies of a script run with -P
# Writes bash completion for cco from docs/cli/*.md: the commands, and for each the options its
# help page lists (every "-x" or "--long-name" that starts an option line). tests/app/cli/
# test_completion.sh checks the result against each command's parser (CCO_LIST_OPTIONS=1). Run with -DOUT=...
# -DDOCS=a.md|b.md.
string(REPLACE "|" ";" DOCS "${DOCS}")
set(cases "")
set(commands "")
foreach(doc ${DOCS})
  get_filename_component(name ${doc} NAME_WE)
  file(STRINGS ${doc} lines)
  set(opts "")
  foreach(line IN LISTS lines)
    # Option lines: two spaces, then -x or --name. Every spelling in the names column (up to the
    # first run of two spaces: "-b, --minbytes SIZE", or a line of names only "-g N, -b SIZE")
    # counts; the description after it may name other commands' options and does not.
    if(line MATCHES "^  -[A-Za-z-]")
      string(SUBSTRING "${line}" 2 -1 rest)
      string(FIND "${rest}" "  " gap)
      if(gap GREATER 0)
        string(SUBSTRING "${rest}" 0 ${gap} rest)
      endif()
      string(REGEX MATCHALL "(^|[ ,])--?[A-Za-z][A-Za-z0-9_-]*" names "${rest}")
      foreach(n IN LISTS names)
        string(REGEX REPLACE "^[ ,]" "" n "${n}")
        list(APPEND opts ${n})
      endforeach()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES opts)
  list(JOIN opts " " opts)
  if(name STREQUAL "cco")
    set(top "${opts}")
  else()
    list(APPEND commands ${name})
    string(APPEND cases "    ${name}) opts=\"${opts}\" ;;\n")
  endif()
endforeach()
list(JOIN commands " " commands)
file(WRITE ${OUT}.tmp "# bash completion for cco (generated from docs/cli/*.md by cmake/Completion.cmake)
_cco() {
  local cur=\${COMP_WORDS[COMP_CWORD]} cmd=\${COMP_WORDS[1]} opts
  if [ \"\$COMP_CWORD\" -eq 1 ]; then
    COMPREPLY=( \$(compgen -W \"${commands} help ${top}\" -- \"\$cur\") )
    return
  fi
  case \"\$cmd\" in
${cases}    help) opts=\"${commands}\" ;;
    *) opts=\"\" ;;
  esac
  if [[ \"\$cur\" == -* || \"\$cmd\" == help ]]; then
    COMPREPLY=( \$(compgen -W \"\$opts\" -- \"\$cur\") )
  else
    COMPREPLY=( \$(compgen -f -- \"\$cur\") )
  fi
}
complete -F _cco cco
")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
