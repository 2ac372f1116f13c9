# Sourced by the benchmarks that run a handlerd of their own as a rootless podman user
# (events.sh, soak.sh, ui.sh).

# The user's podman folders, read before use_private_handler_home changes the variables.
remember_podman_folders() {
  real_runtime=${XDG_RUNTIME_DIR:?XDG_RUNTIME_DIR must be set for rootless podman}
  real_data=${XDG_DATA_HOME:-$HOME/.local/share}
  real_config=${XDG_CONFIG_HOME:-$HOME/.config}
}

# use_private_handler_home WORK PREFIX: handlerd's own HOME, config and database under
# WORK, PREFIX's programs first on PATH; podman's settings and storage stay the user's (its
# storage.conf names the graph and run roots, which would otherwise follow the XDG
# folders into the private HOME).
use_private_handler_home() {
  local work=$1 prefix=$2 driver
  export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_DATA_HOME="$work/home/.local/share"
  export XDG_RUNTIME_DIR="$work/run" PATH="$prefix/bin:$PATH"
  mkdir -p "$XDG_CONFIG_HOME/handler" "$XDG_CONFIG_HOME/containers" "$XDG_DATA_HOME" && install -d -m 0700 "$XDG_RUNTIME_DIR"
  [ ! -d "$real_config/containers" ] || cp -r "$real_config/containers/." "$XDG_CONFIG_HOME/containers/"
  driver=$(podman info --format '{{.Store.GraphDriverName}}' 2>/dev/null || echo overlay)
  printf '[storage]\ndriver = "%s"\ngraphroot = "%s"\nrunroot = "%s"\n' "$driver" "$real_data/containers/storage" \
    "$real_runtime/containers" > "$XDG_CONFIG_HOME/containers/storage.conf"
}

# end_private_podman WORK BEFORE: removes the containers the run started (not those in
# BEFORE, the user's own) and the rootless pause process of the run's private
# XDG_RUNTIME_DIR (podman keeps one per runtime folder), which would outlive the run.
end_private_podman() {
  local work=$1 before=$2 pause
  comm -13 <(printf '%s\n' "$before") <(podman ps -aq --filter label=io.handler.managed=1 | sort) |
    xargs -r podman rm -f -t 0 >/dev/null 2>&1 || true
  pause=$(cat "$work/run/libpod/tmp/pause.pid" 2>/dev/null || true)
  if [ -n "$pause" ] && [ "$pause" != "$(cat "$real_runtime/libpod/tmp/pause.pid" 2>/dev/null || true)" ]; then
    kill "$pause" 2>/dev/null || true
  fi
}

# end_private_handler WORK BEFORE CODE: the end of a run in use_private_handler_home's
# folders: stops its handlerd, removes what end_private_podman removes, and keeps WORK with
# the last of handlerd.log shown when the run broke (CODE not 0) or KEEP_WORK=1; otherwise
# removes it.
end_private_handler() {
  local work=$1 before=$2 code=$3
  if [ -s "$work/run/handler/handlerd.pid" ]; then
    kill "$(cat "$work/run/handler/handlerd.pid")" 2>/dev/null || true
  fi
  end_private_podman "$work" "$before"
  if [ "$code" -ne 0 ]; then
    echo "--- handlerd.log (last lines)" >&2
    tail -n 30 "$work/home/.local/share/handler/handlerd.log" >&2 2>/dev/null || true
    echo "(logs kept in $work)" >&2
  elif [ "${KEEP_WORK:-0}" = 1 ]; then
    echo "(logs kept in $work)" >&2
  else
    rm -rf "$work"
  fi
}
