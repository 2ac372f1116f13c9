# Sourced by the benchmarks that run a handlerd of their own as a rootless podman user
# (events.sh, soak.sh).

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
